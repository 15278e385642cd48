use super::*;

/// The plan crosses to the kernel byte for byte: no implicit padding.
#[test]
fn plan_has_no_padding() {
    use core::mem::{offset_of, size_of};
    assert_eq!(offset_of!(Plan, group_cache), offset_of!(Plan, simple) + 4);
    assert_eq!(offset_of!(Plan, linear_min), offset_of!(Plan, simple) + 12);
    assert_eq!(offset_of!(Plan, simple), offset_of!(Plan, by_thread) + 8);
    assert_eq!(offset_of!(Plan, key_set), offset_of!(Plan, value_div) + 8);
    assert_eq!(
        offset_of!(Plan, release_events),
        offset_of!(Plan, key_set_used) + 8
    );
    assert_eq!(
        offset_of!(Plan, release),
        offset_of!(Plan, release_events) + 8
    );
    assert_eq!(
        offset_of!(Plan, alloc_size),
        offset_of!(Plan, release) + size_of::<Operand>()
    );
    assert_eq!(
        size_of::<Plan>(),
        offset_of!(Plan, alloc_size) + 4 * MAX_ALLOC_EVENTS
    );
    assert_eq!(size_of::<Outstanding>(), 32);
    assert_eq!(
        offset_of!(Plan, n_operands),
        offset_of!(Plan, saves) + 4 * SAVED_WORDS
    );
}

#[test]
fn log2_slots_and_their_bounds_agree() {
    assert_eq!(log2_slot(0), 0);
    assert_eq!(log2_slot(1), 0);
    assert_eq!(log2_slot(2), 1);
    assert_eq!(log2_slot(3), 1);
    assert_eq!(log2_slot(4096), 12);
    assert_eq!(log2_slot(65535), 15);
    assert_eq!(log2_slot(65536), 16);
    assert_eq!(log2_slot(u64::MAX), 63);
    assert_eq!(log2_slot_bounds(0), (0, 1));
    assert_eq!(log2_slot_bounds(16), (65536, 131071));
    assert_eq!(log2_slot_bounds(63), (1 << 63, u64::MAX));
    for value in [
        0,
        1,
        2,
        3,
        7,
        8,
        1000,
        4096,
        65535,
        1 << 40,
        u64::MAX - 1,
        u64::MAX,
    ] {
        let (low, high) = log2_slot_bounds(log2_slot(value));
        assert!(low <= value && value <= high, "{value} in [{low}, {high}]");
    }
    for slot in 0..LOG2_SLOTS {
        let (low, high) = log2_slot_bounds(slot);
        assert_eq!((log2_slot(low), log2_slot(high)), (slot, slot));
    }
}

#[test]
fn log_linear_slots_at_every_power_of_two_and_the_edges() {
    for precision in 0..=MAX_PRECISION {
        let slots = log_linear_slots(precision);
        assert_eq!(log_linear_slot(0, precision), 0);
        assert_eq!(log_linear_slot(1, precision), 1);
        assert_eq!(
            log_linear_slot(u64::MAX, precision),
            slots - 1,
            "p{precision}"
        );
        assert_eq!(
            log_linear_slot_bounds(slots - 1, precision).1,
            u64::MAX,
            "p{precision}"
        );
        assert_eq!(log_linear_slot_bounds(0, precision).0, 0);
        // Slots tile the u64 range: each starts one past the previous one's end.
        let mut next = 0u64;
        for slot in 0..slots {
            let (low, high) = log_linear_slot_bounds(slot, precision);
            assert_eq!(low, next, "p{precision} slot {slot}");
            assert!(high >= low);
            assert_eq!(log_linear_slot(low, precision), slot, "p{precision} {low}");
            assert_eq!(
                log_linear_slot(high, precision),
                slot,
                "p{precision} {high}"
            );
            // A bucket is at most 2^-precision of its low end wide.
            if low >= 1 << precision {
                assert!(
                    (high - low + 1) << precision <= low,
                    "p{precision} slot {slot}"
                );
            }
            next = high.wrapping_add(1);
        }
        assert_eq!(next, 0, "the last slot ends at u64::MAX");
        for e in 0..64 {
            for value in [1u64 << e, (1u64 << e) - 1, (1u64 << e) + 1] {
                let (low, high) =
                    log_linear_slot_bounds(log_linear_slot(value, precision), precision);
                assert!(low <= value && value <= high, "p{precision} {value}");
            }
            // A power of two starts a slot of its own, and folds into log2 slot e.
            let slot = log_linear_slot(1 << e, precision);
            assert_eq!(log_linear_slot_bounds(slot, precision).0, 1 << e);
            assert_eq!(log_linear_to_log2(slot, precision), log2_slot(1 << e));
        }
    }
}

/// The default precision's slots, by hand: 16 exact values, then 16 per power of two.
#[test]
fn log_linear_default_precision_by_hand() {
    let p = DEFAULT_PRECISION;
    assert_eq!(log_linear_slots(p), 976);
    assert_eq!(log_linear_slot(15, p), 15);
    assert_eq!(log_linear_slot(16, p), 16);
    assert_eq!(log_linear_slot(31, p), 31);
    assert_eq!(log_linear_slot(32, p), 32);
    assert_eq!(log_linear_slot(33, p), 32);
    assert_eq!(log_linear_slot(34, p), 33);
    assert_eq!(log_linear_slot_bounds(32, p), (32, 33));
    // 1 ms in ns: 2^19 <= 1_000_000 < 2^20, buckets 2^15 wide.
    let slot = log_linear_slot(1_000_000, p);
    assert_eq!(slot, 16 * 16 + 14);
    assert_eq!(log_linear_slot_bounds(slot, p), (983_040, 1_015_807));
    assert_eq!(
        log_linear_slot_bounds(975, p),
        (0xF800_0000_0000_0000, u64::MAX)
    );
    assert_eq!(
        log_linear_slot_bounds(5000, p),
        (0xF800_0000_0000_0000, u64::MAX)
    );
}
