//! Tests of where ends on busy CPUs go (`placement`).

use super::*;

const BUSY: f64 = 0.95;

#[test]
fn ends_on_quiet_cpus_stay_and_say_nothing() {
    let busy = [(0, 0.1), (1, 0.3), (2, 0.0)];
    assert_eq!(
        decide((Some(0), Some(1)), &busy, true, false),
        (Decision::Stay, None)
    );
    // Unpinned ends have nothing to move.
    let all_busy = [(0, BUSY), (1, BUSY)];
    assert_eq!(
        decide((None, None), &all_busy, true, false),
        (Decision::Stay, None)
    );
}

#[test]
fn ends_on_busy_cpus_move_to_the_least_busy_free_ones() {
    let busy = [(0, BUSY), (1, 0.2), (2, 0.4), (3, 0.05)];
    // CPU 1 is free and keeps its end; CPU 0's end takes CPU 3.
    let (d, note) = decide((Some(0), Some(1)), &busy, false, false);
    assert_eq!((d, note), (Decision::Move(3, Some(1)), None));
    // Both busy: the two least busy others, in that order.
    let busy = [(0, BUSY), (1, 0.7), (2, 0.4), (3, 0.05)];
    assert_eq!(
        decide((Some(0), Some(1)), &busy, true, false).0,
        Decision::Move(3, Some(2))
    );
    // A remote peer: only this end moves.
    assert_eq!(
        decide((Some(0), None), &busy, true, false).0,
        Decision::Move(3, None)
    );
}

#[test]
fn blocking_ends_with_nowhere_to_go_are_unpinned_and_the_result_says_why() {
    let busy = [(0, BUSY), (1, 0.6)];
    let (d, note) = decide((Some(0), Some(1)), &busy, true, false);
    assert_eq!(d, Decision::Unpin);
    let note = note.expect("a note");
    assert!(
        note.contains("not pinned") && note.contains("CPU 0 95%") && note.contains("CPU 1 60%"),
        "{note}"
    );
    // One free CPU for two ends is not enough.
    let busy = [(0, BUSY), (1, 0.1)];
    assert_eq!(
        decide((Some(0), Some(1)), &busy, true, false).0,
        Decision::Unpin
    );
}

#[test]
fn spinning_ends_and_named_cpus_stay_and_the_result_says_why() {
    let busy = [(0, BUSY), (1, BUSY)];
    let (d, note) = decide((Some(0), Some(1)), &busy, false, false);
    assert_eq!(d, Decision::Stay);
    assert!(note.unwrap().contains("spinning ends are kept apart"));
    // --cpus: kept even where another CPU is free, whether they block or not.
    let busy = [(0, BUSY), (1, BUSY), (2, 0.0), (3, 0.0)];
    for blocking in [false, true] {
        let (d, note) = decide((Some(0), Some(1)), &busy, blocking, true);
        assert_eq!(d, Decision::Stay);
        assert!(note.unwrap().contains("as --cpus asks"));
    }
}

#[test]
fn a_reading_of_this_machine_has_a_share_per_allowed_cpu() {
    let Some(shares) = busy_shares() else {
        return; // no /proc/stat here
    };
    let shares = allowed(shares);
    assert_eq!(shares.len(), crate::sys::cpu_count());
    assert!(shares.iter().all(|&(_, s)| (0.0..=1.0).contains(&s)));
    // Read again at once: the same reading, reused.
    assert_eq!(allowed(busy_shares().unwrap()), shares);
}
