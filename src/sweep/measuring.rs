//! The measuring part of a sweep: the integrity pass, the warm-up, every
//! size in turn and the confirmation pass, all ended by one deadline.
//!
//! `--budget` is a deadline, an [`Instant`] fixed when measuring begins
//! ([`Deadlines::of`]: the budget less what set-up and the limits spent,
//! never less than a fifth of it), and every phase is held to it:
//!
//! * before each size, its least work ([`super::link_fit::LEAST_BLOCKS`]
//!   blocks) is estimated from what the sizes before it cost per
//!   operation (the last point's wall time per operation, and beyond it
//!   the sweep's rate, measured by one block after the warm-up: see
//!   [`super::least_work`]); a size whose
//!   least work would end past the deadline is left out with the larger
//!   ones, said in the result (`sizes_left_out`, reason `least_work`)
//!   instead of overrunning: one 8 MiB round trip through 4 KiB socket
//!   buffers on a busy VM takes seconds, and a point needs eight;
//! * between trials, the policy asks `stop`: past the deadline a point
//!   keeps the trials measured (at least [`DEADLINE_LEAST_TRIALS`]) and is
//!   marked cut (`points[].cut`), and the sizes after it are left out
//!   (reason `deadline`); a point that runs past [`POINT_SHARES`] of its
//!   even share of the time left is cut the same way, and the sizes after
//!   it are still measured;
//! * the confirmation pass stops at the deadline too (its points then
//!   stand unconfirmed).
//!
//! The deadline is checked between trials only: the timing loops never
//! read it.

use std::time::{Duration, Instant};

use anyhow::Result;

use super::budget::SweepClock;
use super::least_work::{measure_rate, LastCost, LEAST_RATE_NS_PER_BYTE};
use super::limits::Limits;
use super::link_fit::{self, LeftOutReason, RateModel};
use super::progress::Reporter;
use super::runner::{plan_for, SweepRunner};
use super::spec::SweepSpec;
use super::tails::MAX_BYTES as TAILS_MAX_BYTES;
use crate::error::WulfError;
use crate::measure::policy::{
    measure_point, BlockRunner, BlockTiming, PointPlan, MIN_TRIALS_ON_BUDGET, SHORTEST_BLOCK_NS,
};
use crate::result::{self, Point};

/// Trials a point keeps when its sweep's deadline passes before them.
pub(super) const DEADLINE_LEAST_TRIALS: usize = 3;

/// Longest trial a sweep with a caller's deadline (a matrix cell) aims
/// at, ns.
const DEADLINE_TRIAL_NS: u64 = 2_000_000;

/// The instants a sweep's measuring ends by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Deadlines {
    /// The points stop here (the pass keeps what is after it).
    pub points: Instant,
    /// The confirmation pass stops here: the end of measuring.
    pub pass: Instant,
}

impl Deadlines {
    /// The deadlines of a sweep that may measure for `measuring_ns` from
    /// `now`, held to the caller's `deadline` too (a matrix cell's): the
    /// points end when their share is spent
    /// ([`super::confirm::main_budget_ns`]), so the pass keeps its own
    /// for the most telling events.
    pub fn of(now: Instant, measuring_ns: u64, deadline: Option<Instant>) -> Deadlines {
        let own_pass = now + Duration::from_nanos(measuring_ns);
        let own_points = now + Duration::from_nanos(super::confirm::main_budget_ns(measuring_ns));
        let cap = |t: Instant| deadline.map_or(t, |d| d.min(t));
        Deadlines {
            points: cap(own_points),
            pass: cap(own_pass),
        }
    }
}

/// Integrity pass, warm-up, every size in turn, then the confirmation pass.
pub(super) fn measure_all(
    spec: &SweepSpec,
    clock: &mut SweepClock,
    runner: &mut dyn SweepRunner,
    limits: Option<&Limits>,
    points: &mut Vec<Point>,
    progress: &mut dyn Reporter,
) -> Result<Option<result::Confirmation>> {
    // `--cost whole`: soakers around every block (a plain pass-through
    // otherwise).
    let mut meter = super::whole::Meter::new(runner, spec.whole.as_ref());
    let runner = &mut meter;
    // What the points and the pass may spend: the budget less set-up, the
    // limits and what is kept for after (see `budget`). It is wall time
    // from here, so statistics, control messages and tail passes all
    // count and the sweep ends when the user was told.
    let t0 = Instant::now();
    let measuring_ns = clock.measuring_left_ns();
    let deadlines = Deadlines::of(t0, measuring_ns, spec.deadline);
    if spec.integrity {
        for &bytes in &spec.sizes {
            runner.integrity(bytes)?;
        }
    }
    warm_up(
        spec,
        runner,
        super::confirm::main_budget_ns(measuring_ns),
        deadlines.points,
    )?;
    // On this machine the sizes after a point are costed at the sweep's
    // rate (`least_work`); across a link the rate model plans them.
    let ns_per_byte = if clock.across_link {
        LEAST_RATE_NS_PER_BYTE
    } else {
        measure_rate(&spec.sizes, runner, deadlines.points)?
    };
    clock.mark("warmup");
    let blocks_before = runner.blocks_so_far();
    // Sizes left out or a point cut still leave the pass its own share
    // (the points stop before it): the points measured are confirmed.
    points_loop(
        spec,
        clock,
        runner,
        limits,
        points,
        progress,
        (deadlines, ns_per_byte),
    )?;
    clock.mark("points");
    // The pass takes what the points left of the measuring time, never
    // more than its share, and stops at the deadline.
    let past = || Instant::now() >= deadlines.pass;
    let stop = || super::interrupted() || past();
    let left_ns = measuring_ns.saturating_sub(t0.elapsed().as_nanos() as u64);
    let pass_ns = super::confirm::pass_budget_ns(left_ns, spec.budget);
    let overhead_ns = points_block_overhead_ns(blocks_before, runner.blocks_so_far());
    let r = match super::confirm::confirmation_pass(
        spec,
        runner,
        points,
        (pass_ns, overhead_ns),
        &stop,
    ) {
        // Cut at the deadline: the points stand unconfirmed.
        Err(_) if past() && !super::interrupted() => Ok(None),
        r => r,
    };
    clock.mark("confirm");
    r
}

/// What a block of the points cost beyond its operations, ns, on average:
/// from the meter's counts `before` and `after` the points (blocks, ns
/// beyond their timed parts), at least the confirmation pass's floor.
fn points_block_overhead_ns(before: (u64, u64), after: (u64, u64)) -> f64 {
    let blocks = after.0.saturating_sub(before.0);
    let extra_ns = after.1.saturating_sub(before.1);
    super::confirm::block_overhead_ns(blocks, extra_ns)
}

/// Sweep-wide warm-up (dropped): brings caches, the CPU frequency, the
/// scheduler's placement and TCP's state to steady state before the
/// first point, whose calibration would otherwise absorb it.
fn warm_up(
    spec: &SweepSpec,
    runner: &mut dyn SweepRunner,
    main_ns: u64,
    deadline: Instant,
) -> Result<()> {
    let Some(&first) = spec.sizes.first() else {
        return Ok(());
    };
    let t0 = Instant::now();
    let warmup_ns = (main_ns / 50).min(200_000_000);
    let mut repeats = 1;
    while (t0.elapsed().as_nanos() as u64) < warmup_ns && Instant::now() < deadline {
        let b = runner.run(first, repeats)?;
        // Doubling stops where one block would take the rest of the
        // warm-up: a slow first size must not overrun it.
        if b.timed_ns.saturating_mul(2) < warmup_ns {
            repeats = (repeats * 2).min(1 << 16);
        }
    }
    Ok(())
}

/// Every size in turn, each planned within the deadline. True when every
/// size was measured; false when the deadline cut one or left sizes out
/// (recorded in `clock.left_out`).
fn points_loop(
    spec: &SweepSpec,
    clock: &mut SweepClock,
    runner: &mut super::whole::Meter<'_>,
    limits: Option<&Limits>,
    points: &mut Vec<Point>,
    progress: &mut dyn Reporter,
    (deadlines, ns_per_byte): (Deadlines, f64),
) -> Result<bool> {
    let t0 = Instant::now();
    let budget_ns = deadlines
        .points
        .saturating_duration_since(t0)
        .as_nanos()
        .min(u64::MAX as u128) as u64;
    let past = || Instant::now() >= deadlines.points;
    // The policy asks before each trial: a point cut at the deadline, or
    // at the end of its own share of what is left (`point_end`), keeps at
    // least DEADLINE_LEAST_TRIALS of them. On this machine a point with
    // its least trials also ends where the time left would no longer
    // hold the least work of the sizes after it (`reserve`).
    let asked = std::cell::Cell::new(0usize);
    let point_end = std::cell::Cell::new(deadlines.points);
    let watched = Watched::default();
    let reserve = Reserve {
        watched: &watched,
        ns_per_byte,
        deadline: deadlines.points,
        after: std::cell::Cell::new(&[]),
        stopped: std::cell::Cell::new(false),
    };
    // Across a link the rate model plans the sizes (`plan_next`).
    let here = !clock.across_link;
    let stop = || {
        asked.set(asked.get() + 1);
        let now = Instant::now();
        super::interrupted()
            || (asked.get() > DEADLINE_LEAST_TRIALS && now >= point_end.get())
            || (asked.get() > MIN_TRIALS_ON_BUDGET && here && reserve.reached(now))
    };
    let mut max_repeats = u64::MAX;
    let mut last: Option<LastCost> = None;
    for (i, &bytes) in spec.sizes.iter().enumerate() {
        if super::interrupted() {
            return Err(WulfError::Interrupted.into());
        }
        let rest = &spec.sizes[i..];
        let left_ns = budget_ns.saturating_sub(t0.elapsed().as_nanos() as u64);
        let Some(next) = plan_next(spec, clock, points, rest, left_ns, max_repeats, last) else {
            return Ok(false);
        };
        let plan = next.plan;
        asked.set(0);
        watched.begin(bytes, Instant::now());
        reserve.after.set(&rest[1..]);
        reserve.stopped.set(false);
        point_end.set(point_end_of(
            Instant::now(),
            (plan.budget_ns, next.least_ns),
            (left_ns, next.sizes_planned),
            deadlines.points,
        ));
        let outcome = measure_point(&mut Watch(runner, &watched), bytes, &plan, &stop)?;
        // Stopped, not interrupted: at the deadline or at its own share
        // (cut); with its least trials to leave the sizes after it
        // theirs (not cut: the policy's own budget stop is the same).
        let stopped = outcome.interrupted && !super::interrupted();
        let cut = stopped && !reserve.stopped.get();
        if (outcome.interrupted && !stopped) || outcome.trials_ns.is_empty() {
            return Err(WulfError::Interrupted.into());
        }
        max_repeats = outcome.repeats;
        last = Some(LastCost::of(bytes, &outcome, ns_per_byte));
        let mut point = super::point::make_point(bytes, spec.mode, &outcome);
        point.cut = cut;
        if spec.tails && bytes <= TAILS_MAX_BYTES {
            if past() {
                // Said in the result: a pass after the deadline would
                // overrun it.
                clock.tails_left_out.push(bytes);
            } else {
                point.tails = runner.tails(bytes, point.median_ns)?;
            }
        }
        point.limits = limits.and_then(|l| l.at(bytes));
        point.cpu_whole = runner.take_point(&point, spec.mode);
        progress.point(&point);
        points.push(point);
        if past() && rest.len() > 1 {
            let after = &rest[1..];
            if !after.is_empty() {
                let budget_s = spec.budget.as_secs_f64();
                let mut l = if clock.across_link {
                    // The link's rate and the least work it gives them.
                    let model = RateModel::from_points(points, spec.mode, clock.link_bits_per_s);
                    let main_share = 1.0 - super::confirm::CONFIRM_BUDGET_SHARE;
                    link_fit::left_out(&model, after, 0, budget_s, main_share)
                } else {
                    let least = |b: u64| last.map_or(0.0, |l| l.least_ns(b, &plan));
                    link_fit::left_out_here(after, &least, 0, budget_s, LeftOutReason::Deadline)
                };
                l.reason = Some(LeftOutReason::Deadline.name().to_string());
                clock.left_out = Some(l);
            }
            return Ok(false);
        }
    }
    Ok(true)
}

/// The last block of the point being measured, seen on its way.
#[derive(Default)]
struct Watched {
    /// The point's size and when it began.
    point: std::cell::Cell<Option<(u64, Instant)>>,
    /// (repeats, wall ns) of its last block.
    last: std::cell::Cell<Option<(u64, u64)>>,
}

impl Watched {
    fn begin(&self, bytes: u64, now: Instant) {
        self.point.set(Some((bytes, now)));
        self.last.set(None);
    }
}

/// A runner whose blocks are seen by a [`Watched`].
struct Watch<'a, 'b>(&'a mut super::whole::Meter<'b>, &'a Watched);

impl BlockRunner for Watch<'_, '_> {
    fn run(&mut self, bytes: u64, repeats: u64) -> Result<BlockTiming> {
        let b = self.0.run(bytes, repeats)?;
        self.1.last.set(Some((repeats, b.wall_ns)));
        Ok(b)
    }
}

/// How much more than their estimated least work the sizes after a point
/// are left (the estimate rests on one block).
const RESERVE_MARGIN: f64 = 1.25;

/// The time the sizes after the point being measured need: their least
/// work (their least blocks, each of one operation or the shortest trial
/// a plan gives, [`SHORTEST_BLOCK_NS`]), estimated from its last block's
/// wall time per operation (scaled as [`LastCost`] scales), those that
/// fit at all from when it began. With this point's trial target in
/// their place, the sizes after a small one were reserved most of the
/// budget and every size below 64 KiB ended at its least six trials.
struct Reserve<'a> {
    watched: &'a Watched,
    /// The sweep's rate ([`LastCost::ns_per_byte`]).
    ns_per_byte: f64,
    deadline: Instant,
    after: std::cell::Cell<&'a [u64]>,
    /// The point was stopped here.
    stopped: std::cell::Cell<bool>,
}

impl Reserve<'_> {
    /// Whether at `now` the point must end to leave the sizes after it
    /// their least work (recorded in `stopped`).
    fn reached(&self, now: Instant) -> bool {
        let (Some((bytes, began)), Some((repeats, wall_ns))) =
            (self.watched.point.get(), self.watched.last.get())
        else {
            return false;
        };
        let cost = LastCost {
            bytes,
            op_wall_ns: wall_ns as f64 / repeats.max(1) as f64,
            ns_per_byte: self.ns_per_byte,
        };
        let room = self.deadline.saturating_duration_since(began).as_nanos() as f64;
        let mut need = 0.0;
        for &b in self.after.get() {
            // Blocks as short as a plan makes them: a later size's plan
            // shrinks its blocks with its share, so its least work is
            // its least blocks of the shortest trial, not of this point's.
            let l = cost.least_ns_at(b, SHORTEST_BLOCK_NS);
            if need + l > room {
                break;
            }
            need += l;
        }
        // A margin for the estimate and the block that may still come.
        let need = need * RESERVE_MARGIN + wall_ns as f64;
        let reached = need > 0.0 && now + Duration::from_nanos(need as u64) >= self.deadline;
        if reached {
            self.stopped.set(true);
        }
        reached
    }
}

/// How many times its planned share a point may take before it is cut
/// (keeping [`DEADLINE_LEAST_TRIALS`] trials or more) so that the sizes
/// after it keep theirs: the policy's own budget check comes only after
/// its least trials, and a block sized on a quick first operation can
/// make those take several shares (a tcp bidir 1 B point's single
/// operation took 17 us and each of a block's 107 us: six trials took a
/// whole 0.3 s sweep's points, and the sizes after it were left out; an
/// xdp bidir 1 B point across a lab link took 1.3 s of a 3 s sweep).
/// Normal points end far inside it: their trials are a 25th of their
/// share.
const POINT_SHARES: f64 = 3.0;

/// The instant a point begun at `now` is cut at, given `own`, its planned
/// share and its estimated least work (ns; 0 when unknown), and `left`,
/// the time to the points' `deadline` (ns) and the sizes still to measure
/// in it (its own included): [`POINT_SHARES`] shares, but never later
/// than leaves each size after it half an even share of what is left
/// (a point's least work is about a third of its share); never before
/// its least work, and never past the deadline.
fn point_end_of(
    now: Instant,
    (share_ns, least_ns): (u64, f64),
    (left_ns, sizes_left): (u64, usize),
    deadline: Instant,
) -> Instant {
    let n = sizes_left.max(1) as f64;
    let keep_for_after = left_ns as f64 * (n + 1.0) / (2.0 * n);
    let ns = (POINT_SHARES * share_ns as f64)
        .min(keep_for_after)
        .max(least_ns);
    (now + Duration::from_nanos(ns as u64)).min(deadline)
}

/// The next point as planned.
struct NextPlan {
    /// Its plan.
    plan: PointPlan,
    /// Its estimated least work, ns (0 before the first point on this
    /// machine).
    least_ns: f64,
    /// The sizes planned to fit in the time left, its own included: all
    /// on this machine, those whose least work fits across a link.
    sizes_planned: usize,
}

/// The plan of the next point of `rest` (the sizes still to measure)
/// with `left_ns` to the points' deadline, or None when it and the
/// larger sizes are left out (recorded in `clock.left_out`).
fn plan_next(
    spec: &SweepSpec,
    clock: &mut SweepClock,
    points: &[Point],
    rest: &[u64],
    left_ns: u64,
    max_repeats: u64,
    last: Option<LastCost>,
) -> Option<NextPlan> {
    let mut point_budget_ns = left_ns / rest.len() as u64;
    let mut least_ns = 0.0;
    let mut sizes_planned = rest.len();
    if clock.across_link {
        let model = RateModel::from_points(points, spec.mode, clock.link_bits_per_s);
        let next = link_fit::next_point(&model, rest, left_ns, points.is_empty());
        if next.keep == 0 {
            // Not even this size's least work fits: it and the larger
            // ones are left out, said in the result and on screen.
            let main_share = 1.0 - super::confirm::CONFIRM_BUDGET_SHARE;
            let budget_s = spec.budget.as_secs_f64();
            let l = link_fit::left_out(&model, rest, left_ns, budget_s, main_share);
            clock.left_out = Some(l);
            return None;
        }
        point_budget_ns = next.budget_ns;
        least_ns = model.least_ns(rest[0]);
        sizes_planned = next.keep;
    }
    let mut plan = plan_for(point_budget_ns, spec.precision, max_repeats);
    plan.loaded = spec.loaded;
    if spec.deadline.is_some() {
        // A block is never cut: short ones, so that a lossy link's
        // (repeats calibrated on a quick first message, then
        // retransmission timeouts of 200 ms) end near the deadline.
        plan.trial_target_ns = plan.trial_target_ns.min(DEADLINE_TRIAL_NS);
    }
    // On this machine the next size's least work, from what the last one
    // cost per operation, must end by the deadline (the first size is
    // always measured: a result without points tells nothing). Across a
    // link the rate model above has planned it.
    if let Some(l) = last.filter(|_| !points.is_empty() && !clock.across_link) {
        least_ns = l.least_ns(rest[0], &plan);
        if least_ns > left_ns as f64 {
            let budget_s = spec.budget.as_secs_f64();
            let reason = LeftOutReason::LeastWork;
            clock.left_out = Some(link_fit::left_out_here(
                rest,
                &|b| l.least_ns(b, &plan),
                left_ns,
                budget_s,
                reason,
            ));
            return None;
        }
    }
    Some(NextPlan {
        plan,
        least_ns,
        sizes_planned,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The pass's estimate of a block counts only the points' blocks:
    /// those before the points (limits, warm-up) are not theirs.
    #[test]
    fn the_points_block_overhead_is_theirs_alone() {
        let before = (10, 50_000_000);
        let after = (110, 50_000_000 + 20_000_000);
        assert_eq!(points_block_overhead_ns(before, after), 200_000.0);
    }

    /// A point may take three shares, never so much that a later size
    /// gets less than half an even share of what is left, and always its
    /// least work; never past the deadline.
    #[test]
    fn a_point_is_cut_at_its_shares_of_what_is_left() {
        let now = Instant::now();
        let left = 1_200_000_000u64;
        let far = now + Duration::from_secs(3600);
        let ms = |t: Instant| t.duration_since(now).as_millis();
        // Even shares (a sweep on this machine).
        let at = |n: usize| {
            let share = left / n as u64;
            ms(point_end_of(now, (share, 0.0), (left, n), far))
        };
        assert_eq!(at(1), 1200);
        // Two left: 3/4 (the other keeps half its share).
        assert_eq!(at(2), 900);
        // Three: 2/3; five: 3/5, both rules agree; twelve: 3 shares.
        assert_eq!(at(3), 800);
        assert_eq!(at(5), 720);
        assert_eq!(at(12), 300);
        // A planned share (a slow link's large size): three of it, or its
        // least work when that is longer.
        let big = point_end_of(now, (50_000_000, 0.0), (left, 12), far);
        assert_eq!(ms(big), 150);
        let least = point_end_of(now, (50_000_000, 400e6), (left, 12), far);
        assert_eq!(ms(least), 400);
        // Never past the points' deadline.
        let near = now + Duration::from_millis(100);
        assert_eq!(point_end_of(now, (left, 0.0), (left, 1), near), near);
    }
}
