use super::*;
use crate::probe::fields::builtin;

/// A filter runs before the start lookup unless it reads the latency or a saved value.
#[test]
fn filter_first_only_when_the_filter_needs_no_start() {
    let with_filter = |kind: u32| {
        let mut builder = PlanBuilder::new();
        builder.needs_start();
        let read = builder.operand(simple_operand(kind)).unwrap();
        builder
            .push_insn(Insn {
                op: op::NE,
                operand: read,
                arg: 0,
            })
            .unwrap();
        builder.plan().filter_first
    };
    assert_eq!(with_filter(operand::CPU), 1);
    assert_eq!(with_filter(operand::LATENCY), 0);
    let mut no_filter = PlanBuilder::new();
    no_filter.needs_start();
    assert_eq!(no_filter.plan().filter_first, 0);
    let mut no_start = PlanBuilder::new();
    let cpu = no_start.operand(simple_operand(operand::CPU)).unwrap();
    no_start
        .push_insn(Insn {
            op: op::NE,
            operand: cpu,
            arg: 0,
        })
        .unwrap();
    assert_eq!(no_start.plan().filter_first, 0);
}

/// syscount's plain plan takes the fast path; anything more does not.
#[test]
fn fast_count_arg1_only_for_plain_counts_by_arg1() {
    let plain = || {
        let mut builder = PlanBuilder::new();
        let nr = builder.operand(arg_operand(1, 8, false)).unwrap();
        builder.key_part(nr).unwrap();
        builder
    };
    let mut builder = plain();
    builder.layout(Some(1024));
    assert!(fast_count_arg1(&builder.plan()));

    let mut filtered = plain();
    filtered
        .push_insn(Insn {
            op: tracekit_common::engine::op::EQ,
            operand: 0,
            arg: 39,
        })
        .unwrap();
    filtered.layout(Some(1024));
    assert!(!fast_count_arg1(&filtered.plan()));

    let mut histogram = plain();
    histogram.value(0);
    histogram.log2();
    histogram.layout(Some(1024));
    assert!(!fast_count_arg1(&histogram.plan()));

    let mut arg0 = PlanBuilder::new();
    let first = arg0.operand(arg_operand(0, 8, false)).unwrap();
    arg0.key_part(first).unwrap();
    arg0.layout(Some(1024));
    assert!(!fast_count_arg1(&arg0.plan()));
}

/// Counts keyed by the event and the pid, and a log2 histogram of a raw argument behind
/// one comparison, take the simple path (record fields too); two comparisons, a comm, a
/// string field or a linear histogram do not.
#[test]
fn fast_simple_only_for_plain_integer_plans() {
    let keyed = |kinds: &[Operand]| {
        let mut builder = PlanBuilder::new();
        for kind in kinds {
            let index = builder.operand(*kind).unwrap();
            builder.key_part(index).unwrap();
        }
        builder
    };
    let event = simple_operand(operand::EVENT_INDEX);
    let pid = simple_operand(operand::PID);
    let mut by_event = keyed(&[event]);
    by_event.layout(Some(64));
    assert!(fast_simple(&by_event.plan()));
    let mut by_pid = keyed(&[event, pid]);
    by_pid.layout(None);
    assert!(fast_simple(&by_pid.plan()));
    let mut narrow = keyed(&[event, arg_operand(0, 4, true)]);
    narrow.layout(None);
    assert!(fast_simple(&narrow.plan()));
    let mut field = keyed(&[event, simple_operand(operand::FIELD)]);
    field.layout(None);
    assert!(fast_simple(&field.plan()));
    let mut string = keyed(&[event, simple_operand(operand::FIELD_STRING)]);
    string.layout(None);
    assert!(!fast_simple(&string.plan()));
    let mut comm = keyed(&[event, builtin("comm").unwrap().operand]);
    comm.layout(None);
    assert!(!fast_simple(&comm.plan()));
    // ... until the loader keys it by thread (engine::names).
    let mut by_thread = comm.plan();
    assert!(crate::engine::names::key_by_task(&mut by_thread));
    assert!(fast_simple(&by_thread));
    let mut filtered = keyed(&[event, pid]);
    filtered
        .push_insn(Insn {
            op: tracekit_common::engine::op::EQ,
            operand: 1,
            arg: 39,
        })
        .unwrap();
    filtered.layout(None);
    assert!(fast_simple(&filtered.plan()));
    filtered
        .push_insn(Insn {
            op: tracekit_common::engine::op::EQ,
            operand: 1,
            arg: 40,
        })
        .unwrap();
    assert!(!fast_simple(&filtered.plan()));
    let mut histogram = keyed(&[event, pid]);
    histogram.value(1);
    histogram.log2();
    histogram.layout(None);
    assert!(fast_simple(&histogram.plan()));
    let mut linear = keyed(&[event]);
    let id = linear.operand(arg_operand(1, 8, false)).unwrap();
    linear.value(id);
    linear.linear(0, 10, 1).unwrap();
    linear.layout(Some(64));
    assert!(!fast_simple(&linear.plan()));
}

#[test]
fn builder_dedupes_operands_and_assigns_string_slots() {
    let mut b = PlanBuilder::new();
    let comm = builtin("comm").unwrap().operand;
    let pid = builtin("pid").unwrap().operand;
    assert_eq!(b.operand(comm).unwrap(), 0);
    assert_eq!(b.operand(pid).unwrap(), 1);
    assert_eq!(b.operand(comm).unwrap(), 0);
    let rwbs = Operand {
        kind: operand::FIELD_STRING,
        offset: 34,
        size: 10,
        ..Operand::NONE
    };
    assert_eq!(b.operand(rwbs).unwrap(), 2);
    let plan = b.plan();
    assert_eq!(plan.n_operands, 3);
    assert_eq!(
        (plan.operands[0].string_slot, plan.operands[2].string_slot),
        (0, 1)
    );
}

#[test]
fn layout_follows_the_key() {
    let mut b = PlanBuilder::new();
    b.layout(None);
    assert_eq!(
        (b.plan().layout, b.plan().array_key_bound),
        (layout::ARRAY, 0)
    );
    let id = b.operand(arg_operand(1, 8, false)).unwrap();
    b.key_part(id).unwrap();
    b.layout(Some(512));
    assert_eq!(
        (b.plan().layout, b.plan().array_key_bound),
        (layout::ARRAY, 512)
    );
    let comm = b.operand(builtin("comm").unwrap().operand).unwrap();
    b.key_part(comm).unwrap();
    b.layout(Some(512));
    assert_eq!(b.plan().layout, layout::HASH);
}

#[test]
fn key_budget_is_enforced() {
    let mut b = PlanBuilder::new();
    for offset in [8, 40] {
        let s = b
            .operand(Operand {
                kind: operand::FIELD_STRING,
                offset,
                size: 16,
                ..Operand::NONE
            })
            .unwrap();
        b.key_part(s).unwrap();
    }
    let pid = b.operand(builtin("pid").unwrap().operand).unwrap();
    assert_eq!(
        b.key_part(pid).unwrap_err().to_string(),
        "--by: the kernel engine keys a group by 8 words at most (a number takes 1, a string \
         4, an IPv6 address 2, the probe 1 when there are several)"
    );
}

/// A key of integers alone fills all 8 words (tcptop's probe, pid, comm as a thread
/// number, two addresses and two ports are 7); a string takes 4 of them.
#[test]
fn key_of_eight_integers() {
    let mut b = PlanBuilder::new();
    for arg in 0..8 {
        let id = b.operand(arg_operand(arg % 6, 8, false)).unwrap();
        b.key_part(id).unwrap();
    }
    assert_eq!(b.plan().n_key_parts, 8);
    assert_eq!(key_words(&b.plan()), 8);
    let pid = b.operand(builtin("pid").unwrap().operand).unwrap();
    assert!(b.key_part(pid).is_err());

    // A string of the record takes 4 words.
    let mut b = PlanBuilder::new();
    let s = b
        .operand(Operand {
            kind: operand::FIELD_STRING,
            offset: 8,
            size: 16,
            ..Operand::NONE
        })
        .unwrap();
    b.key_part(s).unwrap();
    for arg in 0..4 {
        let id = b.operand(arg_operand(arg, 8, false)).unwrap();
        b.key_part(id).unwrap();
    }
    let pid = b.operand(builtin("pid").unwrap().operand).unwrap();
    assert!(b.key_part(pid).is_err());
}

/// Raw bytes take the words their size fills (tcptop: two IPv6 addresses are 4 words, with
/// the probe, pid, comm and the two ports 8); a NUL-terminated string of the same size 4.
#[test]
fn raw_bytes_take_the_words_they_fill() {
    use tracekit_common::engine::PATH_BYTES;
    let bytes = |offset: u32, size: u32| Operand {
        kind: operand::FIELD_PATH,
        offset,
        size,
        flags: PATH_BYTES,
        aux: 1,
        ..Operand::NONE
    };
    assert_eq!(bytes(0, 16).key_words(), 2);
    assert_eq!(bytes(0, 4).key_words(), 1);
    assert_eq!(bytes(0, 17).key_words(), 3);
    assert_eq!(bytes(0, 32).key_words(), 4);
    let v6 = Operand {
        kind: operand::FIELD_BYTES,
        size: 16,
        ..Operand::NONE
    };
    assert_eq!(v6.key_words(), 2);
    let string = Operand {
        kind: operand::FIELD_STRING,
        size: 16,
        ..Operand::NONE
    };
    assert_eq!(string.key_words(), 4);
    let mut b = PlanBuilder::new();
    for offset in [0, 16] {
        let id = b.operand(bytes(offset, 16)).unwrap();
        b.key_part(id).unwrap();
    }
    for arg in 0..4 {
        let id = b.operand(arg_operand(arg, 8, false)).unwrap();
        b.key_part(id).unwrap();
    }
    assert_eq!(key_words(&b.plan()), 8);
    let pid = b.operand(builtin("pid").unwrap().operand).unwrap();
    assert!(b.key_part(pid).is_err(), "a ninth word does not fit");
}

/// comm with 7 numbers fits when the loader keys it by thread (one word), and is refused
/// at load when it stays a 4-word string.
#[test]
fn comm_keyed_by_thread_fits_seven_numbers() {
    let mut b = PlanBuilder::new();
    let comm = b.operand(builtin("comm").unwrap().operand).unwrap();
    b.key_part(comm).unwrap();
    for arg in 0..7 {
        let id = b.operand(arg_operand(arg % 6, 8, false)).unwrap();
        b.key_part(id).unwrap();
    }
    b.layout(None);
    let mut plan = b.plan();
    assert_eq!(key_words(&plan), 11);
    assert_eq!(
        check_key_words(&plan).unwrap_err().to_string(),
        "--by: the kernel engine keys a group by 8 words at most (a number takes 1, a string \
         4, an IPv6 address 2, the probe 1 when there are several); comm is a string here \
         (compared, or this kernel has no task:task_rename)"
    );
    assert!(crate::engine::names::key_by_task(&mut plan));
    assert_eq!(key_words(&plan), 8);
    check_key_words(&plan).unwrap();
}

#[test]
fn linear_buckets() {
    let mut b = PlanBuilder::new();
    b.linear(0, 100, 10).unwrap();
    assert_eq!((b.plan().slots, b.plan().linear_step), (12, 10));
    assert_eq!(
        b.linear(0, 100_000, 1).unwrap_err().to_string(),
        "--linear 0,100000,1: 100000 buckets; the kernel engine keeps at most 1000"
    );
    // The widest range does not wrap into a small one.
    assert_eq!(
        b.linear(i64::MIN, i64::MAX, 1).unwrap_err().to_string(),
        "--linear -9223372036854775808,9223372036854775807,1: 18446744073709551615 \
         buckets; the kernel engine keeps at most 1000"
    );
    b.linear(i64::MIN, i64::MAX, u64::MAX / 100).unwrap();
    assert_eq!(b.plan().slots, 103);
}

/// A start stage saves a comm in two words and four numbers beside it; a longer string
/// (fsslower's whole file name) takes four words and leaves two for numbers; a string after
/// numbers has no room.
#[test]
fn a_saved_string_leaves_the_other_words_for_numbers() {
    let mut builder = PlanBuilder::new();
    let comm = builder.operand(builtin("comm").unwrap().operand).unwrap();
    let numbers: Vec<u32> = [operand::PID, operand::CPU, operand::TID, operand::CGROUP]
        .into_iter()
        .map(|kind| builder.operand(simple_operand(kind)).unwrap())
        .collect();
    assert_eq!(builder.save(comm).unwrap(), 0);
    for (i, &number) in numbers.iter().enumerate() {
        assert_eq!(builder.save(number).unwrap(), 2 + i as u32);
    }
    let latency = builder.operand(simple_operand(operand::LATENCY)).unwrap();
    assert!(builder.save(latency).is_err());
    assert_eq!(
        builder.plan().saves,
        [comm, comm, numbers[0], numbers[1], numbers[2], numbers[3]]
    );
    assert_eq!(
        saved_string_operand(&builder.plan().operands[comm as usize]).size,
        16
    );

    let mut numbers_first = PlanBuilder::new();
    let pid = numbers_first.operand(simple_operand(operand::PID)).unwrap();
    let comm = numbers_first
        .operand(builtin("comm").unwrap().operand)
        .unwrap();
    numbers_first.save(pid).unwrap();
    assert!(numbers_first.save(comm).is_err());

    let mut long = PlanBuilder::new();
    let string = long
        .operand(Operand {
            kind: operand::USER_STR,
            size: STR_BYTES as u32,
            ..Operand::NONE
        })
        .unwrap();
    let pid = long.operand(simple_operand(operand::PID)).unwrap();
    let tid = long.operand(simple_operand(operand::TID)).unwrap();
    let cpu = long.operand(simple_operand(operand::CPU)).unwrap();
    assert_eq!(long.save(string).unwrap(), 0);
    assert_eq!(long.save(pid).unwrap(), 4);
    assert_eq!(long.save(tid).unwrap(), 5);
    assert!(long.save(cpu).is_err());
    assert_eq!(
        long.plan().saves,
        [string, string, string, string, pid, tid]
    );
    assert_eq!(
        saved_string_operand(&long.plan().operands[string as usize]).size,
        STR_BYTES as u32
    );
}
