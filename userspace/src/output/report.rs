//! The text report of a profile: hottest functions by self samples, in the columns of
//! `perf report --stdio --no-children` (Overhead, Command, Shared Object, Symbol).

use std::fmt::Write as _;

use crate::stacks::{FrameKind, HotFunction};

/// Renders the `limit` hottest functions of `ranked` (from [`crate::stacks::hottest`]) under
/// a `# header` line. `total` is the number of samples the shares are of. Functions with a
/// cgroup (`--by cgroup`) get a Cgroup column first, as `perf report --sort cgroup,comm,...`.
///
/// ```
/// use tracekit::{output::report::render, stacks::{FrameKind, HotFunction}};
/// let ranked = [HotFunction {
///     samples: 3, comm: "burner".into(), cgroup: None, module: "burner".into(),
///     symbol: "leaf".into(), kind: FrameKind::User,
/// }];
/// let text = render("3 samples", &ranked, 4, 20);
/// let rows: Vec<&str> = text.lines().collect();
/// assert_eq!(rows[2], "# Overhead  Samples  Command  Shared Object  Symbol");
/// assert_eq!(rows[4], "    75.00%        3  burner   burner         [.] leaf");
/// ```
pub fn render(header: &str, ranked: &[HotFunction], total: u64, limit: usize) -> String {
    let shown = &ranked[..ranked.len().min(limit)];
    let width = |title: &str, column: &dyn Fn(&HotFunction) -> usize| {
        shown.iter().map(column).max().unwrap_or(0).max(title.len())
    };
    let comm_w = width("Command", &|f| f.comm.len());
    let module_w = width("Shared Object", &|f| f.module.len());
    let by_cgroup = shown.iter().any(|f| f.cgroup.is_some());
    let cgroup_w = width("Cgroup", &|f| {
        f.cgroup.as_deref().map_or(0, |c| c.chars().count())
    });
    let cgroup_column = |text: &str| {
        if by_cgroup {
            format!("{text:cgroup_w$}  ")
        } else {
            String::new()
        }
    };

    let mut out = String::new();
    let _ = writeln!(out, "# {header}\n#");
    let _ = writeln!(
        out,
        "# Overhead  Samples  {}{:comm_w$}  {:module_w$}  Symbol",
        cgroup_column("Cgroup"),
        "Command",
        "Shared Object"
    );
    let _ = writeln!(
        out,
        "# ........  .......  {}{}  {}  ......",
        cgroup_column(&".".repeat(cgroup_w)),
        ".".repeat(comm_w),
        ".".repeat(module_w)
    );
    for function in shown {
        let share = if total == 0 {
            0.0
        } else {
            100.0 * function.samples as f64 / total as f64
        };
        let mark = match function.kind {
            FrameKind::User => "[.]",
            FrameKind::Kernel => "[k]",
        };
        let _ = writeln!(
            out,
            "{:>10}  {:>7}  {}{:comm_w$}  {:module_w$}  {mark} {}",
            format!("{share:.2}%"),
            function.samples,
            cgroup_column(function.cgroup.as_deref().unwrap_or("-")),
            function.comm,
            function.module,
            function.symbol,
        );
    }
    if ranked.len() > shown.len() {
        let rest: u64 = ranked[shown.len()..].iter().map(|f| f.samples).sum();
        let _ = writeln!(
            out,
            "#\n# {} the other {}; -o FILE.folded keeps every stack",
            super::plural(
                ranked.len() - shown.len(),
                "more function holds",
                "more functions hold"
            ),
            super::plural(rest, "sample", "samples")
        );
    }
    out
}

/// Renders the `limit` heaviest folded stacks under a `# header` line, their weight in
/// `unit` first (off-CPU time, where every stack ends in the scheduler and only the whole
/// stack says why).
///
/// ```
/// let text = tracekit::output::report::render_stacks(
///     "2 stacks", &[("app;main;sleep".to_string(), 2000), ("app;main;read".to_string(), 10)], "us", 1,
/// );
/// assert_eq!(text, "# 2 stacks\n#\n#       us  stack\n      2000  app;main;sleep\n#\n# 1 more stack holds the other 10 us\n");
/// ```
pub fn render_stacks(header: &str, folded: &[(String, u64)], unit: &str, limit: usize) -> String {
    let mut sorted: Vec<&(String, u64)> = folded.iter().collect();
    sorted.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    let mut out = format!("# {header}\n#\n# {unit:>8}  stack\n");
    for (path, count) in sorted.iter().take(limit) {
        let _ = writeln!(out, "{count:>10}  {path}");
    }
    if sorted.len() > limit {
        let rest: u64 = sorted[limit..].iter().map(|(_, c)| c).sum();
        let _ = writeln!(
            out,
            "#\n# {} the other {}",
            super::plural(sorted.len() - limit, "more stack holds", "more stacks hold"),
            super::in_unit(rest, unit)
        );
    }
    out
}

/// `offwaketime`'s joined stacks (folded `target;...;--;...;waker`, [`crate::stacks::fold`])
/// in bcc's multi-line form, heaviest first, at most `limit`: the waker's name, its frames
/// from its root down to the wakeup, `--`, the blocked task's frames from the block up to
/// its root, its name, and the time:
///
/// ```text
///     waker:           tk_waker
///     waker_outer
///     try_to_wake_up_[k]
///     --               --
///     schedule_[k]
///     blocked_read
///     target:          tk_blocked
///         266696
/// ```
pub fn render_pairs(header: &str, folded: &[(String, u64)], unit: &str, limit: usize) -> String {
    let mut sorted: Vec<&(String, u64)> = folded.iter().collect();
    sorted.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    let mut out = format!("# {header}\n# (waker above `--`, blocked task below; {unit})\n\n");
    for (path, count) in sorted.iter().take(limit) {
        let frames: Vec<&str> = path.split(';').collect();
        let (target, rest) = frames.split_first().unwrap_or((&"", &[]));
        let Some(dash) = rest.iter().position(|f| *f == "--") else {
            // No waker was joined (its sample is missing): the blocked side alone.
            for frame in rest.iter().rev() {
                let _ = writeln!(out, "    {frame}");
            }
            let _ = writeln!(out, "    {:<16} {target}\n        {count}\n", "target:");
            continue;
        };
        let (blocked, waker) = (&rest[..dash], &rest[dash + 1..]);
        let (name, waker) = waker.split_last().unwrap_or((&"", &[]));
        let _ = writeln!(out, "    {:<16} {name}", "waker:");
        for frame in waker.iter().rev() {
            let _ = writeln!(out, "    {frame}");
        }
        let _ = writeln!(out, "    {:<16} --", "--");
        for frame in blocked.iter().rev() {
            let _ = writeln!(out, "    {frame}");
        }
        let _ = writeln!(out, "    {:<16} {target}\n        {count}\n", "target:");
    }
    if sorted.len() > limit {
        let rest: u64 = sorted[limit..].iter().map(|(_, c)| c).sum();
        let _ = writeln!(
            out,
            "# {} the other {}",
            super::plural(sorted.len() - limit, "more stack holds", "more stacks hold"),
            super::in_unit(rest, unit)
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hot(samples: u64, comm: &str, module: &str, symbol: &str, kind: FrameKind) -> HotFunction {
        HotFunction {
            samples,
            comm: comm.into(),
            cgroup: None,
            module: module.into(),
            symbol: symbol.into(),
            kind,
        }
    }

    #[test]
    fn renders_perf_report_columns_and_truncates() {
        let ranked = [
            hot(288, "burner", "burner", "leaf", FrameKind::User),
            hot(
                7,
                "syscall-loop",
                "[kernel.kallsyms]",
                "do_syscall_64",
                FrameKind::Kernel,
            ),
            hot(2, "burner", "libc.so.6", "clock_gettime", FrameKind::User),
        ];
        let text = render("297 samples", &ranked, 297, 2);
        assert_eq!(
            text,
            "# 297 samples\n\
             #\n\
             # Overhead  Samples  Command       Shared Object      Symbol\n\
             # ........  .......  ............  .................  ......\n\
             \x20   96.97%      288  burner        burner             [.] leaf\n\
             \x20    2.36%        7  syscall-loop  [kernel.kallsyms]  [k] do_syscall_64\n\
             #\n\
             # 1 more function holds the other 2 samples; -o FILE.folded keeps every stack\n"
        );
    }

    /// `--by cgroup`: a Cgroup column first, as `perf report --sort cgroup,comm,dso,sym`.
    #[test]
    fn renders_a_cgroup_column() {
        let in_cgroup = |samples, cgroup: &str| HotFunction {
            cgroup: Some(cgroup.into()),
            ..hot(samples, "burner", "burner", "leaf", FrameKind::User)
        };
        let ranked = [in_cgroup(30, "/tk.slice"), in_cgroup(10, "/")];
        assert_eq!(
            render("40 samples", &ranked, 40, 20),
            "# 40 samples\n\
             #\n\
             # Overhead  Samples  Cgroup     Command  Shared Object  Symbol\n\
             # ........  .......  .........  .......  .............  ......\n\
             \x20   75.00%       30  /tk.slice  burner   burner         [.] leaf\n\
             \x20   25.00%       10  /          burner   burner         [.] leaf\n"
        );
    }

    #[test]
    fn renders_empty_profile() {
        assert_eq!(
            render("0 samples", &[], 0, 20),
            "# 0 samples\n#\n\
             # Overhead  Samples  Command  Shared Object  Symbol\n\
             # ........  .......  .......  .............  ......\n"
        );
    }

    #[test]
    fn renders_offwaketime_pairs_as_bcc_does() {
        let folded = [
            (
                "tk_blocked;main;read;schedule_[k];--;try_to_wake_up_[k];write;waker_main;tk_waker"
                    .to_string(),
                300,
            ),
            ("tk_blocked;main;nanosleep".to_string(), 20),
        ];
        assert_eq!(
            render_pairs("h", &folded, "us", 1),
            "# h\n# (waker above `--`, blocked task below; us)\n\n    waker:           tk_waker\n    waker_main\n    write\n    try_to_wake_up_[k]\n    --               --\n    schedule_[k]\n    read\n    main\n    target:          tk_blocked\n        300\n\n# 1 more stack holds the other 20 us\n"
        );
    }
}
