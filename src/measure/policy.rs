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
//! 4. **Clean blocks**: a block whose ends waited for a CPU (their run
//!    delay, see [`crate::sys::thread_run_delay_ns`]) for
//!    [`DISTURBED_SHARE`] of its timed part or more is *disturbed*: it
//!    measured the machine's other work as much as the transport. The
//!    time the transport's own helper processes ran meanwhile (PVM's
//!    daemon: [`BlockTiming::helper_cpu_ns`]) is the transport's work,
//!    not a neighbour's, and is taken off that wait first. It is
//!    kept, flagged, and the point's convergence and headline figures come
//!    from the clean blocks, so a point with disturbed blocks goes on
//!    measuring (up to [`REMEASURE_SHARES`] times its budget) until its
//!    clean ones converge. With fewer than [`MIN_CLEAN_TRIALS`] clean
//!    blocks the figures come from every block and the point is marked
//!    noisy; under a load the user asked for ([`PointPlan::loaded`]) every
//!    block is the headline.
//!
//! The engine hands each point its least work and an even part of what the
//! sizes to come leave of the remaining budget (`sweep::link_fit`), so time
//! a small size saves by converging quickly goes to the larger sizes.

use anyhow::Result;

use crate::stats::Summary;

/// The precision a point of `wulf sweep` (and of `wulf run --thorough`)
/// stops at unless `--precision` says otherwise: the median's 95%
/// interval within +-2%.
pub const SWEEP_PRECISION: f64 = 0.02;

/// The precision of each point of `wulf run`'s overview (without
/// `--thorough`): +-5%. Its default 50 s are shared by some 20 transports
/// of about 120 sizes each, about 20 ms a point; a point then keeps the
/// fewest trials (six, whose interval is their whole range), and on the
/// idle 2-vCPU development VM, where each block waits for halted vCPUs to
/// wake, six blocks spread +-2-4% with nothing disturbing them: at +-2%
/// 49% of the default run's points were marked noisy, at +-5% 18% before
/// the transports stopped re-measuring the limits (issue 44).
pub const OVERVIEW_PRECISION: f64 = 0.05;

/// Trials kept even when the point's budget runs out: six is the fewest
/// whose order statistics give a real 95% interval of the median, and the
/// drop-out analysis needs real intervals to avoid false alarms.
pub const MIN_TRIALS_ON_BUDGET: usize = 6;

/// The share of a block's timed part its ends may wait for a CPU,
/// together, before the block counts as disturbed. 5%: a block at 5%
/// run delay is slower by 5% at most, inside the default precision's
/// reach, while one preemption by a neighbour (a scheduler slice, 1 to
/// 4 ms) in a block of the default 50 us to 50 ms is 2% to 8,000%.
pub const DISTURBED_SHARE: f64 = 0.05;

/// Fewest clean trials a point's headline figures come from; with fewer
/// they come from every trial and the point is marked noisy.
pub const MIN_CLEAN_TRIALS: usize = 3;

/// How many times its budget a point with disturbed blocks may spend
/// re-measuring until it has [`MIN_TRIALS_ON_BUDGET`] clean trials (the
/// sweep's deadline still cuts it).
pub const REMEASURE_SHARES: u64 = 2;

/// Trials after which a point whose every block so far was disturbed
/// shortens its blocks: a block longer than the neighbours' time slices
/// (1-4 ms) is never clean on a CPU they share.
pub const SHORTEN_AFTER_TRIALS: usize = 3;

/// The shortest block a point shortens to, ns: the default's shortest
/// trial target, long against the clock's cost (tens of ns).
pub const SHORTEST_BLOCK_NS: u64 = 50_000;

/// How many times shorter each shortening makes the blocks.
const SHORTEN_FACTOR: u64 = 4;

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
    /// Measured under a load the user asked for (`--load`): every block,
    /// disturbed or not, is the headline.
    pub loaded: bool,
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
    /// How long the measuring end waited for a CPU during the timed
    /// part, ns (None: not known).
    pub client_run_delay_ns: Option<u64>,
    /// How long the peer waited for a CPU during the timed part, ns
    /// (None: not known, counted as none).
    pub server_run_delay_ns: Option<u64>,
    /// How long the transport's helper processes of both ends were on a
    /// CPU during the timed part, ns (None: it has none): credited
    /// against the ends' run delay ([`BlockTiming::disturbed`]).
    pub helper_cpu_ns: Option<u64>,
}

impl BlockTiming {
    /// Whether the block's ends waited for a CPU for [`DISTURBED_SHARE`]
    /// of its timed part or more, less at most the time the transport's
    /// helper processes were on a CPU meanwhile; None when the measuring
    /// end's wait is not known.
    ///
    /// Why the credit: under `pvm(daemon)` every message passes through
    /// the pvmd, and an end woken by it waits, runnable, while it goes on
    /// relaying on that end's CPU. That wait is the transport's own work:
    /// at 64 KiB no block of the idle VM was clean without the credit,
    /// pinned or not. A helper can keep an end waiting no longer than it
    /// ran, so at most its time is taken off; what remains is the
    /// neighbours'.
    pub fn disturbed(&self) -> Option<bool> {
        let delay = self.client_run_delay_ns? + self.server_run_delay_ns.unwrap_or(0);
        let delay = delay.saturating_sub(self.helper_cpu_ns.unwrap_or(0));
        Some(delay as f64 >= DISTURBED_SHARE * self.timed_ns.max(1) as f64)
    }
}

/// Something that can run a block of `repeats` operations of `bytes`.
pub trait BlockRunner {
    /// Run and time one block.
    fn run(&mut self, bytes: u64, repeats: u64) -> Result<BlockTiming>;
}

/// The outcome of measuring one point.
#[derive(Debug, Clone, PartialEq, Default)]
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
    /// Summed measuring side CPU (user, sys) ns over the headline's
    /// trials ([`PointOutcome::headline_ns`]).
    pub client_cpu_ns: (u64, u64),
    /// Summed peer CPU (user, sys) ns over the headline's trials.
    pub server_cpu_ns: (u64, u64),
    /// Wall time spent on the point, ns.
    pub wall_ns: u64,
    /// Per kept trial, whether its block was disturbed.
    pub disturbed: Vec<bool>,
    /// Whether every kept block's run delay was known (false: `disturbed`
    /// is all false and says nothing).
    pub delay_known: bool,
    /// Whether the headline figures are from the clean trials alone.
    pub headline_clean: bool,
}

impl PointOutcome {
    /// The trials the point's figures come from: the clean ones, or every
    /// one (under a load, or with too few clean ones).
    pub fn headline_ns(&self) -> Vec<f64> {
        if !self.headline_clean {
            return self.trials_ns.clone();
        }
        self.trials_ns
            .iter()
            .zip(&self.disturbed)
            .filter(|(_, &d)| !d)
            .map(|(&t, _)| t)
            .collect()
    }

    /// The share of kept trials whose blocks were clean, when known.
    pub fn clean_share(&self) -> Option<f64> {
        let n = self.trials_ns.len();
        (self.delay_known && n > 0).then(|| {
            let clean = self.disturbed.iter().filter(|&&d| !d).count();
            clean as f64 / n as f64
        })
    }
}

/// A point's trials before its blocks were shortened.
struct Shortened {
    trials_ns: Vec<f64>,
    repeats: u64,
    sums: CpuSums,
}

/// CPU times summed over blocks: every one and the clean ones.
#[derive(Default)]
struct CpuSums {
    all: [(u64, u64); 2],
    clean: [(u64, u64); 2],
}

impl CpuSums {
    fn add(&mut self, t: &BlockTiming, clean: bool) {
        let add = |s: &mut [(u64, u64); 2]| {
            s[0].0 += t.client_cpu_ns.0;
            s[0].1 += t.client_cpu_ns.1;
            s[1].0 += t.server_cpu_ns.0;
            s[1].1 += t.server_cpu_ns.1;
        };
        add(&mut self.all);
        if clean {
            add(&mut self.clean);
        }
    }
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
    let mut repeats = r1.max(r2).min(cap);
    // The calibration's time per operation (the faster estimate): what
    // a shortened block is sized on, since a disturbed block's is not.
    let op_est_ns = (first.timed_ns as f64)
        .min(second.timed_ns as f64 / r1 as f64)
        .max(1.0);
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
        disturbed: Vec::with_capacity(min_trials * 4),
        delay_known: true,
        headline_clean: false,
    };
    // The clean trials, which converge and make the headline (every
    // trial under a load or where the run delay is not known).
    let mut clean: Vec<f64> = Vec::with_capacity(min_trials * 4);
    let mut sums = CpuSums::default();
    // The disturbed blocks of the last shortening.
    let mut set_aside: Option<Shortened> = None;
    let mut next_check = min_trials;
    // Whether the clean blocks are the faster ones ([`clean_blocks_faster`]),
    // looked at again as the trials grow by a tenth (it sorts them).
    let mut clean_faster = true;
    let mut next_look = min_trials;
    loop {
        if stop() {
            out.interrupted = true;
            if let (true, Some(b)) = (out.trials_ns.is_empty(), set_aside.take()) {
                // Stopped right after shortening: the disturbed blocks
                // are all it has (no figure from them is clean).
                out.warmup_trials -= b.trials_ns.len() as u64;
                out.disturbed = vec![true; b.trials_ns.len()];
                out.trials_ns = b.trials_ns;
                out.repeats = b.repeats;
                sums = b.sums;
            } else {
                // Stopped (its share of the sweep's deadline, or ended
                // with its least trials to leave the sizes after it
                // theirs): judged like a point its own budget ended. It
                // was marked noisy whatever its interval, and on the idle
                // VM most of `wulf run`'s points end so: six trials within
                // +-0.7%, "noisy" (issue 44).
                let judged = judged_trials(plan, &out, &clean);
                out.noisy = !converged(judged, plan.precision);
            }
            break;
        }
        let t = runner.run(bytes, repeats)?;
        spent_ns += t.wall_ns;
        let disturbed = t.disturbed();
        out.delay_known &= disturbed.is_some();
        let disturbed = disturbed.unwrap_or(false);
        out.trials_ns.push(t.op_ns);
        out.disturbed.push(disturbed);
        sums.add(&t, !disturbed);
        if !disturbed {
            clean.push(t.op_ns);
        }
        if let Some(r) = shorter_blocks(plan, &out, op_est_ns) {
            // Its blocks so far count as warm-up: the point starts again
            // with blocks that fit between the neighbours' slices. They
            // are kept aside in case it is stopped before any new one.
            out.warmup_trials += out.trials_ns.len() as u64;
            let before = Shortened {
                trials_ns: std::mem::take(&mut out.trials_ns),
                repeats: out.repeats,
                sums: std::mem::take(&mut sums),
            };
            set_aside = Some(before);
            out.disturbed.clear();
            clean.clear();
            next_check = min_trials;
            out.repeats = r;
            repeats = r;
            continue;
        }
        if out.trials_ns.len() >= next_look {
            next_look = out.trials_ns.len() + (out.trials_ns.len() / 10).max(1);
            clean_faster = clean_blocks_faster(&out.trials_ns, &out.disturbed);
        }
        let judged = if clean_faster {
            judged_trials(plan, &out, &clean)
        } else {
            &out.trials_ns
        };
        let n = judged.len();
        // Checking sorts the trials; do it at every trial early on, then
        // whenever the count has grown by a tenth, so a point with
        // thousands of trials does not spend its budget on statistics.
        if n >= min_trials && n >= next_check {
            next_check = n + (n / 10).max(1);
            if converged(judged, plan.precision) {
                out.noisy = false;
                break;
            }
        }
        let all = out.trials_ns.len();
        // Disturbed blocks are measured again while the point's extra
        // shares last: its budget ends it once it has enough clean ones.
        let budget_spent = spent_ns >= plan.budget_ns
            && (n >= MIN_TRIALS_ON_BUDGET
                || spent_ns >= plan.budget_ns.saturating_mul(REMEASURE_SHARES));
        if all >= plan.max_trials || (all >= MIN_TRIALS_ON_BUDGET && budget_spent) {
            out.noisy = !converged(judged, plan.precision);
            break;
        }
    }
    out.wall_ns = spent_ns;
    let clean_enough = clean.len() >= MIN_CLEAN_TRIALS;
    let clean_faster = clean_blocks_faster(&out.trials_ns, &out.disturbed);
    let judge_clean = !plan.loaded && out.delay_known && clean_faster;
    out.headline_clean = judge_clean && clean_enough;
    if judge_clean && !clean_enough {
        // Said in the result: every figure is from disturbed blocks.
        out.noisy = true;
    } else if !clean_faster && !out.interrupted {
        // Every block is the headline, as it was judged in the end.
        out.noisy = !converged(&out.trials_ns, plan.precision);
    }
    let s = if out.headline_clean {
        &sums.clean
    } else {
        &sums.all
    };
    (out.client_cpu_ns, out.server_cpu_ns) = (s[0], s[1]);
    Ok(out)
}

/// The shorter repeat count a point measured so far as `out` starts
/// again with, if any: when its first [`SHORTEN_AFTER_TRIALS`] blocks were
/// all disturbed (not under a load asked for), a [`SHORTEN_FACTOR`]th,
/// never shorter than [`SHORTEST_BLOCK_NS`] at the calibration's
/// `op_ns` per operation.
fn shorter_blocks(plan: &PointPlan, out: &PointOutcome, op_ns: f64) -> Option<u64> {
    let all_disturbed = out.trials_ns.len() == SHORTEN_AFTER_TRIALS
        && out.delay_known
        && out.disturbed.iter().all(|&d| d);
    if plan.loaded || !all_disturbed {
        return None;
    }
    let least = (SHORTEST_BLOCK_NS as f64 / op_ns).ceil() as u64;
    let r = (out.repeats / SHORTEN_FACTOR).max(least).max(1);
    (r < out.repeats).then_some(r)
}

/// Whether a point's clean blocks ran faster than its disturbed ones:
/// false when the clean trials' median is at or above the disturbed
/// trials' (true when either set is empty: nothing to compare). Leaving
/// the disturbed blocks out is right when their run delay is what slowed
/// them (a neighbour's slice on a spinning end). It is not when nearly
/// every block waited a little for a CPU at each wake-up, as a blocking
/// ping-pong's ends do on a busy machine: the few blocks left clean are
/// then the ones slowed by what neither end's run delay shows (both ends
/// asleep), and would make the headline. `wulf sweep pvm` at 1 B, load
/// 3-4: 4 clean blocks of 2,889, 283-894 us one way against the others'
/// median of 8.9 us; the plain C probe (bench/pvm_vs_c.sh) 7-17 us.
pub fn clean_blocks_faster(trials_ns: &[f64], disturbed: &[bool]) -> bool {
    let median = |want: bool| -> Option<f64> {
        let mut v: Vec<f64> = trials_ns
            .iter()
            .zip(disturbed)
            .filter(|(_, &d)| d == want)
            .map(|(&t, _)| t)
            .collect();
        v.sort_by(f64::total_cmp);
        (!v.is_empty()).then(|| crate::stats::quantile_sorted(&v, 0.5))
    };
    match (median(false), median(true)) {
        (Some(clean), Some(dist)) => clean < dist,
        _ => true,
    }
}

/// Whether a measured point's figures are the machine's other work as
/// much as the transport's: some of its blocks were disturbed (an end
/// waited for a CPU), fewer than [`MIN_CLEAN_TRIALS`] were clean, and the
/// clean ones were the faster (so the run delay, not a wake-up's short
/// wait, is what slowed the others: see [`clean_blocks_faster`]). Such a
/// point keeps every block's figures, marked noisy; a table that compares
/// figures withholds them.
pub fn interfered(p: &crate::result::Point) -> bool {
    if p.disturbed_trials.is_empty() {
        return false;
    }
    let clean = (p.trials as usize).saturating_sub(p.disturbed_trials.len());
    clean < MIN_CLEAN_TRIALS && point_clean_faster(p)
}

/// [`clean_blocks_faster`] of a measured point's trials.
pub fn point_clean_faster(p: &crate::result::Point) -> bool {
    let mut disturbed = vec![false; p.trials_ns.len()];
    for &i in &p.disturbed_trials {
        if let Some(d) = disturbed.get_mut(i as usize) {
            *d = true;
        }
    }
    clean_blocks_faster(&p.trials_ns, &disturbed)
}

/// The trials a point converges on: the clean ones, or every one under a
/// load or where the run delay is not known.
fn judged_trials<'a>(plan: &PointPlan, out: &'a PointOutcome, clean: &'a [f64]) -> &'a [f64] {
    if plan.loaded || !out.delay_known {
        &out.trials_ns
    } else {
        clean
    }
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
#[path = "policy_tests.rs"]
mod tests;
