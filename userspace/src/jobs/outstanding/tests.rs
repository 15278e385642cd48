//! The report's grouping and exact text, from synthetic outstanding entries.

use tracekit_common::engine::{Outstanding, stat};

use super::*;

fn entry(size: u64, stack: u64, ts_ns: u64) -> Outstanding {
    Outstanding {
        size,
        stack,
        ts_ns,
        pid: 7,
        _pad: 0,
    }
}

fn frames(names: &[&str]) -> Vec<Frame> {
    names
        .iter()
        .map(|n| Frame::user(*n, Some("/usr/bin/tk_leak")))
        .collect()
}

/// Stack 1 leaks 3 x 4096, stack 2 one 100 and one 28; stack 0 was not recorded.
fn entries() -> Vec<(u64, Outstanding)> {
    vec![
        (0x1000, entry(4096, 1, 1_000_000_000)),
        (0x3000, entry(4096, 1, 2_000_000_000)),
        (0x2000, entry(4096, 1, 3_000_000_000)),
        (0x9000, entry(100, 2, 3_000_000_000)),
        (0x9100, entry(28, 2, 3_500_000_000)),
        (0x9200, entry(8, 0, 3_500_000_000)),
    ]
}

fn stack_of(hash: u64, pid: u32) -> Vec<Frame> {
    assert_eq!(pid, 7);
    match hash {
        1 => frames(&["leak_inner", "leak_outer", "main"]),
        2 => frames(&["churn", "main"]),
        _ => Vec::new(),
    }
}

#[test]
fn report_groups_by_stack_biggest_first() {
    let totals = group(
        &OutstandingJob::default(),
        &entries(),
        4_000_000_000,
        stack_of,
    );
    assert_eq!(
        render(&totals, 10, "14:02:11"),
        "[14:02:11] Top 3 stacks with outstanding allocations:
\t12288 bytes in 3 allocations from stack
\t\tleak_inner [tk_leak]
\t\tleak_outer [tk_leak]
\t\tmain [tk_leak]
\t128 bytes in 2 allocations from stack
\t\tchurn [tk_leak]
\t\tmain [tk_leak]
\t8 bytes in 1 allocations from stack
\t\t[stack not recorded]
"
    );
    assert_eq!(
        render(&totals, 1, "14:02:11"),
        "[14:02:11] Top 1 stacks with outstanding allocations:
\t12288 bytes in 3 allocations from stack
\t\tleak_inner [tk_leak]
\t\tleak_outer [tk_leak]
\t\tmain [tk_leak]
"
    );
}

#[test]
fn filters_age_and_size_and_lists_addresses() {
    let job = OutstandingJob {
        older_ms: Some(1500),
        min_size: Some(50),
        show_allocs: true,
        ..OutstandingJob::default()
    };
    // At 4 s, 1500 ms old: allocated at or before 2.5 s.
    let totals = group(&job, &entries(), 4_000_000_000, stack_of);
    assert_eq!(
        render(&totals, 10, "00:00:01"),
        "[00:00:01] Top 1 stacks with outstanding allocations:
\taddr = 1000 size = 4096
\taddr = 3000 size = 4096
\t8192 bytes in 2 allocations from stack
\t\tleak_inner [tk_leak]
\t\tleak_outer [tk_leak]
\t\tmain [tk_leak]
"
    );
    let none = OutstandingJob {
        max_size: Some(7),
        ..OutstandingJob::default()
    };
    assert_eq!(
        render(&group(&none, &entries(), 0, stack_of), 10, "00:00:02"),
        "[00:00:02] Top 0 stacks with outstanding allocations:\n"
    );
}

#[test]
fn kernel_frames_have_no_module() {
    let totals = vec![StackTotal {
        bytes: 64,
        allocations: 1,
        frames: vec![
            Frame::kernel("__kmalloc_noprof"),
            Frame::kernel("do_sys_open"),
        ],
        allocs: Vec::new(),
    }];
    assert_eq!(
        render(&totals, 10, "1"),
        "[1] Top 1 stacks with outstanding allocations:
\t64 bytes in 1 allocations from stack
\t\t__kmalloc_noprof
\t\tdo_sys_open
"
    );
}

#[test]
fn drops_are_reported_one_line_each() {
    assert_eq!(lost_lines(&[(stat::OUTSTANDING_FULL, 0)]), "");
    assert_eq!(
        lost_lines(&[(stat::OUTSTANDING_FULL, 3), (stat::STACK_MAP_FULL, 2)]),
        "memleak: lost 3 allocations not recorded: the outstanding map was full
memleak: lost 2 stacks not recorded: the stack map was full
"
    );
}
