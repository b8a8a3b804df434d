//! Tests of the confirmation pass (`confirm`).

use super::*;

/// Visits of `sizes`, 8 repeats each, within `budget_ns`, at 2%.
fn plan(sizes: &[u64], budget_ns: u64) -> Visits<'_> {
    Visits {
        sizes,
        repeats: &[8; 8][..sizes.len()],
        budget_ns,
        precision: 0.02,
    }
}

/// Keeps every size.
fn all(cost: &[f64], _: usize, _: u64) -> Vec<bool> {
    vec![true; cost.len()]
}

/// Neighbours are never visited one after the other, every size once
/// per round, and the order changes from round to round.
#[test]
fn rounds_never_visit_neighbours_in_a_row() {
    for n in 4..20 {
        for round in 0..2 {
            let o = visit_order(n, round);
            let mut sorted = o.clone();
            sorted.sort_unstable();
            assert_eq!(sorted, (0..n).collect::<Vec<_>>());
            assert!(
                o.windows(2).all(|w| w[0].abs_diff(w[1]) > 1),
                "n {n} round {round}: {o:?}"
            );
        }
        assert_ne!(visit_order(n, 0), visit_order(n, 1));
    }
    assert_eq!(visit_order(1, 0), [0]);
    assert!(visit_order(0, 0).is_empty());
}

/// Records the sizes it is asked to run, each block 1 us per operation.
struct Recorder(Vec<u64>);

impl crate::measure::policy::BlockRunner for Recorder {
    fn run(&mut self, bytes: u64, repeats: u64) -> Result<crate::measure::policy::BlockTiming> {
        self.0.push(bytes);
        Ok(crate::measure::policy::BlockTiming {
            op_ns: 1000.0 + bytes as f64,
            timed_ns: 1000 * repeats,
            wall_ns: 1000 * repeats,
            ..Default::default()
        })
    }
}

impl SweepRunner for Recorder {
    fn integrity(&mut self, _: u64) -> Result<()> {
        Ok(())
    }
    fn tails(&mut self, _: u64, _: f64) -> Result<Option<crate::result::Tails>> {
        Ok(None)
    }
}

/// Each size's trials come from several rounds, with the other sizes
/// measured between them; steady trials stop after the least rounds.
#[test]
fn fresh_trials_are_taken_in_interleaved_rounds() {
    let sizes = [100, 200, 300, 400, 500];
    let mut r = Recorder(Vec::new());
    let t = interleaved_trials(&mut r, plan(&sizes, u64::MAX), &all, &|| false).unwrap();
    assert!(t.iter().all(|x| x.len() == MIN_ROUNDS * TRIALS_PER_VISIT));
    // Visits: a dropped block and the kept ones, of one size.
    let visits: Vec<u64> = r.0.chunks(1 + TRIALS_PER_VISIT).map(|c| c[0]).collect();
    assert_eq!(visits.len(), MIN_ROUNDS * sizes.len());
    for w in visits.windows(2) {
        let (a, b) = (w[0] / 100, w[1] / 100);
        assert!(a.abs_diff(b) != 1, "neighbours in a row: {visits:?}");
    }
    // A size's visits are spread: one in each round.
    for s in sizes {
        let rounds: Vec<usize> = (0..visits.len())
            .filter(|&i| visits[i] == s)
            .map(|i| i / sizes.len())
            .collect();
        assert_eq!(rounds, (0..MIN_ROUNDS).collect::<Vec<_>>());
    }
    // Interrupted: an error, never a hang.
    assert!(interleaved_trials(&mut r, plan(&sizes, 0), &all, &|| true).is_err());
}

/// A step's window measured again in a bimodal pass: each size's six
/// trials near its true time or 3.2x slower, neighbours alternately
/// mostly slow and mostly fast (run A of shm on the quiet machine).
/// The plain medians jump between the modes and confirm nothing; the
/// fast modes confirm the dip both passes show, and no fluke.
#[test]
fn a_bimodal_pass_is_judged_on_its_fast_modes() {
    use crate::analysis::confirm::{events, judge, sizes_to_remeasure};
    let b: Vec<u64> = (0..40).map(|i| 1000 + 100 * i).collect();
    let t = |x: u64| 5000.0 + x as f64;
    let curve = |bump: f64| -> Vec<f64> {
        b.iter()
            .map(|&x| t(x) * if x == 2500 { bump } else { 1.0 })
            .collect()
    };
    let pass = |bump: f64, ev: &[crate::analysis::confirm::Event], fast: bool| {
        sizes_to_remeasure(&b, ev)
            .iter()
            .enumerate()
            .map(|(j, &x)| {
                let m = t(x) * if x == 2500 { bump } else { 1.0 };
                let slow_count = if j % 2 == 0 { 4 } else { 2 };
                let trials: Vec<f64> = (0..6)
                    .map(|k| {
                        if k < slow_count {
                            3.2 * m
                        } else {
                            m * (1.0 + 0.002 * k as f64)
                        }
                    })
                    .collect();
                if fast {
                    fresh_point(x, &trials, 0.02).unwrap()
                } else {
                    let s = Summary::of(&trials).unwrap();
                    RemeasuredPoint {
                        bytes: x,
                        trials: 6,
                        median_ns: s.median,
                        ci_low_ns: s.ci_low,
                        ci_high_ns: s.ci_high,
                        noisy: true,
                        slow_trials: 0,
                    }
                }
            })
            .collect::<Vec<_>>()
    };
    for (first_bump, fresh_bump, want) in [(2.0, 2.0, true), (1.5, 1.0, false)] {
        let med = curve(first_bump);
        let lo: Vec<f64> = med.iter().map(|m| m * 0.99).collect();
        let hi: Vec<f64> = med.iter().map(|m| m * 1.01).collect();
        let ev = events(&crate::analysis::analyse_curve(
            &b,
            &med,
            &lo,
            &hi,
            &crate::analysis::CauseHints::default(),
        ));
        assert_eq!(ev.len(), 1, "{ev:?}");
        let fresh = pass(fresh_bump, &ev, true);
        assert!(fresh.iter().all(|p| p.slow_trials > 0 && p.noisy));
        assert_eq!(judge(&b, &med, &lo, &hi, &fresh, &ev), vec![want]);
        // The plain medians of the same trials confirm nothing.
        let plain = pass(fresh_bump, &ev, false);
        assert_eq!(judge(&b, &med, &lo, &hi, &plain, &ev), vec![false]);
    }
}

/// A size whose trials split in two is not settled: the pass goes on
/// past the least rounds while its budget lasts, and stops at it.
#[test]
fn a_split_size_is_measured_again_within_the_budget() {
    struct Bimodal(u64);
    impl crate::measure::policy::BlockRunner for Bimodal {
        fn run(&mut self, _: u64, repeats: u64) -> Result<crate::measure::policy::BlockTiming> {
            self.0 += 1;
            let slow = if (self.0 / 2).is_multiple_of(3) {
                3.0
            } else {
                1.0
            };
            Ok(crate::measure::policy::BlockTiming {
                op_ns: 1000.0 * slow,
                timed_ns: 1000 * repeats,
                wall_ns: 1000 * repeats,
                ..Default::default()
            })
        }
    }
    impl SweepRunner for Bimodal {
        fn integrity(&mut self, _: u64) -> Result<()> {
            Ok(())
        }
        fn tails(&mut self, _: u64, _: f64) -> Result<Option<crate::result::Tails>> {
            Ok(None)
        }
    }
    let sizes = [100, 200, 300, 400, 500];
    let t = interleaved_trials(&mut Bimodal(0), plan(&sizes, u64::MAX), &all, &|| false).unwrap();
    assert!(t.iter().all(|x| x.len() == MAX_ROUNDS * TRIALS_PER_VISIT));
    let t = interleaved_trials(&mut Bimodal(0), plan(&sizes, 0), &all, &|| false).unwrap();
    assert!(t.iter().all(|x| x.len() == MIN_ROUNDS * TRIALS_PER_VISIT));
}

/// A block's overhead is its own wall time beyond its timed part, per
/// block run, whatever else the points spent time on; never below the
/// floor.
#[test]
fn a_blocks_overhead_is_counted_block_by_block() {
    assert_eq!(block_overhead_ns(100, 30_000_000), 300_000.0);
    assert_eq!(block_overhead_ns(100, 1_000), BLOCK_OVERHEAD_NS);
    assert_eq!(block_overhead_ns(0, 0), BLOCK_OVERHEAD_NS);
}

/// A pass with events that measured nothing says so; one that measured
/// or had nothing to check says nothing.
#[test]
fn a_pass_that_measured_nothing_says_why() {
    let event = CheckedEvent {
        kind: "dropout".into(),
        from_bytes: 4099,
        to_bytes: 4099,
        confirmed: false,
        edges: Vec::new(),
    };
    let mut c = Confirmation {
        budget_s: 2.0,
        wall_s: 0.0,
        points: Vec::new(),
        events: vec![event],
    };
    let w = nothing_measured(&c).expect("a warning");
    assert!(
        w.contains("measured nothing (0.0 s of its 2.0 s)") && w.contains("1 candidate"),
        "{w}"
    );
    c.points = fresh_point(4096, &[1.0, 1.0, 1.0], 0.02)
        .into_iter()
        .collect();
    assert_eq!(nothing_measured(&c), None);
    c.points.clear();
    c.events.clear();
    assert_eq!(nothing_measured(&c), None);
}
