//! The repetition policy: how many operations per trial and how many
//! trials per size.
//!
//! For each message size:
//!
//! 1. **Calibration** (2 blocks, dropped as warm-up): a block of 1
//!    operation, then a block sized from it; the faster estimate gives the
//!    repeat count that makes one trial last `trial_target_ns`. The count never exceeds the previous
//!    (smaller) size's count, so repeat counts never grow with size, and is
//!    at least 1.
//! 2. **Trials**: blocks of that many operations, each timed as one; the
//!    per-operation time of each is kept. After at least `min_trials`, stop
//!    as soon as the 95% confidence interval of the median (order
//!    statistics, see `stats`) lies within `precision` of the median.
//! 3. **Budget**: stop when the wall time spent on the point (calibration
//!    included) reaches its share of the budget, once at least six trials
//!    are kept (the fewest that give a real 95% interval), or at
//!    `max_trials`. A point stopped before its interval was
//!    narrow enough is marked **noisy**.
//!
//! The engine hands each point its least work and an even part of what the
//! sizes to come leave of the remaining budget (`sweep::link_fit`), so time
//! a small size saves by converging quickly goes to the larger sizes.

use anyhow::Result;

use crate::stats::Summary;

/// Trials kept even when the point's budget runs out: six is the fewest
/// whose order statistics give a real 95% interval of the median, and the
/// drop-out analysis needs real intervals to avoid false alarms.
pub const MIN_TRIALS_ON_BUDGET: usize = 6;

/// How one point is to be measured.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PointPlan {
    /// Wall time this point may use, ns.
    pub budget_ns: u64,
    /// Target relative half-width of the median's confidence interval.
    pub precision: f64,
    /// Trials before convergence is first checked (at least 6, the fewest
    /// that can give a 95% interval of the median).
    pub min_trials: usize,
    /// Hard cap on trials.
    pub max_trials: usize,
    /// Target duration of one trial, ns.
    pub trial_target_ns: u64,
    /// Largest repeat count allowed (the previous size's count).
    pub max_repeats: u64,
}

/// One block as the runner measured it.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct BlockTiming {
    /// Time per operation, ns (the figure kept as a trial).
    pub op_ns: f64,
    /// Timed part of the block, ns (used to size the next block).
    pub timed_ns: u64,
    /// Wall time of the whole block including control messages, ns
    /// (charged to the budget).
    pub wall_ns: u64,
    /// Measuring side CPU (user, sys) ns during the timed part.
    pub client_cpu_ns: (u64, u64),
    /// Peer CPU (user, sys) ns during the timed part.
    pub server_cpu_ns: (u64, u64),
}

/// Something that can run a block of `repeats` operations of `bytes`.
pub trait BlockRunner {
    /// Run and time one block.
    fn run(&mut self, bytes: u64, repeats: u64) -> Result<BlockTiming>;
}

/// The outcome of measuring one point.
#[derive(Debug, Clone, PartialEq)]
pub struct PointOutcome {
    /// Kept per-operation times, in order.
    pub trials_ns: Vec<f64>,
    /// Operations per trial.
    pub repeats: u64,
    /// Blocks run and dropped before the kept trials.
    pub warmup_trials: u64,
    /// Did not reach the precision.
    pub noisy: bool,
    /// Stopped early because the user interrupted.
    pub interrupted: bool,
    /// Summed measuring side CPU (user, sys) ns over kept trials.
    pub client_cpu_ns: (u64, u64),
    /// Summed peer CPU (user, sys) ns over kept trials.
    pub server_cpu_ns: (u64, u64),
    /// Wall time spent on the point, ns.
    pub wall_ns: u64,
}

/// Measure one point according to `plan`. `stop` is polled between blocks.
pub fn measure_point(
    runner: &mut dyn BlockRunner,
    bytes: u64,
    plan: &PointPlan,
    stop: &dyn Fn() -> bool,
) -> Result<PointOutcome> {
    let min_trials = plan.min_trials.max(6);
    let mut spent_ns = 0u64;
    let cap = plan.max_repeats.max(1);

    // Calibration: 1 operation, then a block sized from it, then the final size.
    // The faster of the two estimates is used: noise only ever slows a
    // block down, and an underestimate would shrink the count of every
    // larger size too (counts never grow with size).
    let first = runner.run(bytes, 1)?;
    spent_ns += first.wall_ns;
    let r1 = repeats_for(plan.trial_target_ns, first.timed_ns, 1).min(cap);
    let second = runner.run(bytes, r1)?;
    spent_ns += second.wall_ns;
    let r2 = repeats_for(plan.trial_target_ns, second.timed_ns, r1);
    let repeats = r1.max(r2).min(cap);
    let warmup_trials = 2;

    let mut out = PointOutcome {
        trials_ns: Vec::with_capacity(min_trials * 4),
        repeats,
        warmup_trials,
        noisy: true,
        interrupted: false,
        client_cpu_ns: (0, 0),
        server_cpu_ns: (0, 0),
        wall_ns: 0,
    };
    let mut next_check = min_trials;
    loop {
        if stop() {
            out.interrupted = true;
            break;
        }
        let t = runner.run(bytes, repeats)?;
        spent_ns += t.wall_ns;
        out.trials_ns.push(t.op_ns);
        out.client_cpu_ns.0 += t.client_cpu_ns.0;
        out.client_cpu_ns.1 += t.client_cpu_ns.1;
        out.server_cpu_ns.0 += t.server_cpu_ns.0;
        out.server_cpu_ns.1 += t.server_cpu_ns.1;
        let n = out.trials_ns.len();
        // Checking sorts the trials; do it at every trial early on, then
        // whenever the count has grown by a tenth, so a point with
        // thousands of trials does not spend its budget on statistics.
        if n >= min_trials && n >= next_check {
            next_check = n + (n / 10).max(1);
            if converged(&out.trials_ns, plan.precision) {
                out.noisy = false;
                break;
            }
        }
        if n >= plan.max_trials || (n >= MIN_TRIALS_ON_BUDGET && spent_ns >= plan.budget_ns) {
            out.noisy = !converged(&out.trials_ns, plan.precision);
            break;
        }
    }
    out.wall_ns = spent_ns;
    Ok(out)
}

/// Whether the median's 95% interval of `trials` is within `precision`.
pub fn converged(trials: &[f64], precision: f64) -> bool {
    match Summary::of(trials) {
        Some(s) => s.ci_attained && s.relative_ci_halfwidth() <= precision,
        None => false,
    }
}

/// Repeat count that makes a block last `target_ns`, given that `repeats`
/// operations took `took_ns`. Growth is capped at 1000x per step so one
/// freak fast block cannot blow up the next.
fn repeats_for(target_ns: u64, took_ns: u64, repeats: u64) -> u64 {
    let per_op = (took_ns.max(1) as f64) / repeats as f64;
    let r = (target_ns as f64 / per_op).floor() as u64;
    r.clamp(1, repeats.saturating_mul(1000))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A transport whose operation takes a fixed time plus a scripted noise.
    struct Mock {
        op_ns: f64,
        noise: Box<dyn FnMut(usize) -> f64>,
        calls: Vec<u64>,
    }

    impl BlockRunner for Mock {
        fn run(&mut self, _bytes: u64, repeats: u64) -> Result<BlockTiming> {
            let i = self.calls.len();
            self.calls.push(repeats);
            let op = self.op_ns * (1.0 + (self.noise)(i));
            let timed = (op * repeats as f64) as u64;
            Ok(BlockTiming {
                op_ns: op,
                timed_ns: timed,
                wall_ns: timed + 1000,
                client_cpu_ns: (10, 5),
                server_cpu_ns: (20, 7),
            })
        }
    }

    fn plan() -> PointPlan {
        PointPlan {
            budget_ns: 100_000_000,
            precision: 0.02,
            min_trials: 10,
            max_trials: 1000,
            trial_target_ns: 1_000_000,
            max_repeats: u64::MAX,
        }
    }

    fn never() -> bool {
        false
    }

    #[test]
    fn quiet_transport_converges_at_min_trials() {
        let mut m = Mock {
            op_ns: 1000.0,
            noise: Box::new(|_| 0.0),
            calls: vec![],
        };
        let o = measure_point(&mut m, 8, &plan(), &never).unwrap();
        assert_eq!(o.trials_ns.len(), 10);
        assert_eq!(o.repeats, 1000, "1 ms target / 1 us per op");
        assert_eq!(o.warmup_trials, 2);
        assert_eq!(m.calls[0], 1);
        assert!(!o.noisy && !o.interrupted);
        assert_eq!(o.client_cpu_ns, (100, 50));
        assert_eq!(o.server_cpu_ns, (200, 70));
    }

    #[test]
    fn noisy_transport_is_stopped_by_budget_and_flagged() {
        let mut m = Mock {
            op_ns: 1000.0,
            noise: Box::new(|i| if i % 2 == 0 { 0.5 } else { -0.4 }),
            calls: vec![],
        };
        let o = measure_point(&mut m, 8, &plan(), &never).unwrap();
        assert!(o.noisy);
        assert!(o.wall_ns >= plan().budget_ns);
        // each trial ~1 ms: the 100 ms budget allows about 100 of them
        assert!(
            (50..=120).contains(&o.trials_ns.len()),
            "{}",
            o.trials_ns.len()
        );
    }

    #[test]
    fn repeats_never_exceed_the_cap() {
        let mut m = Mock {
            op_ns: 10.0,
            noise: Box::new(|_| 0.0),
            calls: vec![],
        };
        let p = PointPlan {
            max_repeats: 37,
            ..plan()
        };
        let o = measure_point(&mut m, 8, &p, &never).unwrap();
        assert_eq!(o.repeats, 37);
        assert!(m.calls.iter().all(|&r| r <= 37));
    }

    #[test]
    fn slow_operations_use_one_repeat() {
        let mut m = Mock {
            op_ns: 5e6,
            noise: Box::new(|_| 0.0),
            calls: vec![],
        };
        let o = measure_point(&mut m, 8 << 20, &plan(), &never).unwrap();
        assert_eq!(o.repeats, 1);
        assert!(!o.noisy);
    }

    #[test]
    fn interruption_stops_between_trials() {
        let mut m = Mock {
            op_ns: 1000.0,
            noise: Box::new(|_| 0.0),
            calls: vec![],
        };
        let o = measure_point(&mut m, 8, &plan(), &|| true).unwrap();
        assert!(o.interrupted);
        assert!(o.trials_ns.is_empty());
    }

    #[test]
    fn runner_errors_propagate() {
        struct Failing;
        impl BlockRunner for Failing {
            fn run(&mut self, _: u64, _: u64) -> Result<BlockTiming> {
                anyhow::bail!("peer died")
            }
        }
        let e = measure_point(&mut Failing, 8, &plan(), &never).unwrap_err();
        assert!(e.to_string().contains("peer died"));
    }
}
