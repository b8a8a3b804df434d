//! The confirmation pass at the end of a sweep: the sizes around each
//! candidate event are measured again with fresh trials, and an event is
//! kept as confirmed only when the fresh trials show it too (the rule and
//! why: [`crate::analysis::confirm`]).
//!
//! The fresh trials are taken **later and interleaved**: the pass visits
//! every size to measure again in rounds, each round in an order where
//! neighbours are never measured one after the other ([`visit_order`]), a
//! kept trial per visit, until each size has trials from at least
//! [`MIN_ROUNDS`] rounds. A burst of other work then slows trials of many
//! sizes a little instead of every trial of one neighbourhood, which once
//! made a step or dip "confirmed" by the very moment that caused it (two
//! back-to-back runs shared 0 of 12 confirmed events, issue 28).
//!
//! The pass runs inside the sweep's budget: the sizes share all but
//! [`CONFIRM_BUDGET_SHARE`] of the measuring time and the pass gets what
//! they left, never more than that share of the whole budget
//! ([`pass_budget_ns`]). Its rounds are scheduled to fit: the candidate
//! events are served most telling first, each with its whole window, as
//! long as [`MIN_ROUNDS`] rounds of the sizes chosen fit in the pass's
//! budget at what a visit of each costs ([`pick_events`]; estimated from
//! the first pass, then from the visits made). An event left out stays
//! unconfirmed, as one whose window did not fit [`confirm::MAX_REMEASURED`]
//! always did: the rule that judges an event is the same, it is only
//! applied to fewer events when time is short (a shm `--budget 5s` pass
//! once took 2.6 s against its 0.5 s). The pass stops
//! after [`MIN_ROUNDS`] rounds once its budget is spent (or the next round
//! would overrun it) or every size's median is
//! within the sweep's precision (a size whose trials split in two modes is
//! not), and after [`MAX_ROUNDS`] in any case. Each
//! size is measured with the repeat count the sweep used for it, so the
//! fresh trials are comparable.
//!
//! A pass can be **bimodal**: on a quiet machine, a shm pass's trials of
//! each size lay near the first pass's times or 2-4x slower (the two ends
//! sharing a CPU for part of the pass), so its medians jumped between the
//! modes from size to size and it confirmed nothing. Each size is judged
//! on its fast mode when its trials split ([`fresh_point`],
//! [`confirm::fast_mode`]), and the result records the trials set aside.

use std::time::{Duration, Instant};

use anyhow::Result;

use super::runner::SweepRunner;
use super::spec::SweepSpec;
use crate::analysis::confirm::edges;
use crate::analysis::{analyse_curve, confirm, CauseHints};
use crate::error::WulfError;
use crate::result::Mode;
use crate::result::{CheckedEdge, CheckedEvent, Confirmation, Point, RemeasuredPoint};
use crate::stats::Summary;

/// Share of a sweep's budget kept for the confirmation pass.
pub const CONFIRM_BUDGET_SHARE: f64 = 0.1;

/// The budget of the first pass over the sizes, ns, out of `measuring_ns`
/// (what the points and the pass may spend together, see
/// [`super::budget::SweepClock::measuring_left_ns`]).
pub fn main_budget_ns(measuring_ns: u64) -> u64 {
    (measuring_ns as f64 * (1.0 - CONFIRM_BUDGET_SHARE)) as u64
}

/// The pass's budget, ns: what the points left (`left_ns`), at most
/// [`CONFIRM_BUDGET_SHARE`] of the sweep's whole `budget` and at least half
/// of that: on a loaded machine the points' least work (124 sizes, eight
/// blocks each) overruns their share, and a pass given nothing would
/// confirm nothing; half its share still serves the most telling events.
pub fn pass_budget_ns(left_ns: u64, budget: Duration) -> u64 {
    let share_ns = (budget.as_nanos() as f64 * CONFIRM_BUDGET_SHARE) as u64;
    left_ns.clamp(share_ns / 2, share_ns)
}

/// What one block costs beyond its operations, ns, at least: two control
/// messages with the peer (0.05-0.2 ms on a loaded 2-vCPU VM's loopback).
const BLOCK_OVERHEAD_NS: f64 = 100_000.0;

/// Wall time of one operation of `p`, ns (a ping-pong operation is a
/// round trip of two one-way times).
fn op_wall_ns(p: &Point, mode: Mode) -> f64 {
    let legs = if mode == Mode::Pingpong { 2.0 } else { 1.0 };
    legs * p.median_ns
}

/// What a block costs beyond its operations, ns: the wall time of the
/// points' `blocks` beyond their timed parts (`extra_ns`: control
/// messages, waiting for the peer), per block, at least
/// [`BLOCK_OVERHEAD_NS`]. Counted block by block: an estimate from the
/// points' whole wall time (limits, calibration and disturbed blocks'
/// time included, divided by the kept trials only) once put a block at
/// 100 ms on a busy VM, and a pass with 2 s to spend measured nothing.
pub fn block_overhead_ns(blocks: u64, extra_ns: u64) -> f64 {
    (extra_ns as f64 / blocks.max(1) as f64).max(BLOCK_OVERHEAD_NS)
}

/// Wall time one visit of `p` is expected to take, ns: the dropped block
/// of a quarter of its repeats and the kept one, at its first-pass median,
/// each with `overhead_ns`.
fn visit_estimate_ns(p: &Point, mode: Mode, overhead_ns: f64) -> f64 {
    let dropped = (p.repeats / 4).max(1) as f64;
    (dropped + p.repeats as f64) * op_wall_ns(p, mode) + 2.0 * overhead_ns
}

/// The events to serve (indices into `events`, in their order) and the
/// sizes to measure again for them: events are taken most telling first,
/// each with its whole window, skipping one whose sizes would make
/// `rounds` rounds cost more than `budget_ns` at `visit_ns` each (a size's
/// cost, by its index in `bytes`).
pub fn pick_events(
    bytes: &[u64],
    events: &[confirm::Event],
    visit_ns: &dyn Fn(usize) -> f64,
    rounds: usize,
    budget_ns: u64,
) -> (Vec<usize>, Vec<u64>) {
    let cost = |sizes: &[u64]| -> f64 {
        sizes
            .iter()
            .filter_map(|s| bytes.binary_search(s).ok())
            .map(visit_ns)
            .sum::<f64>()
            * rounds as f64
    };
    let mut chosen: Vec<usize> = Vec::new();
    let mut sizes = Vec::new();
    for i in 0..events.len() {
        let with: Vec<confirm::Event> = chosen.iter().chain([&i]).map(|&j| events[j]).collect();
        let s = confirm::sizes_to_remeasure(bytes, &with);
        // The window did not fit the pass's size limit.
        let all_in = confirm::sizes_to_remeasure(bytes, &with[with.len() - 1..])
            .iter()
            .all(|x| s.contains(x));
        if all_in && cost(&s) <= budget_ns as f64 {
            chosen.push(i);
            sizes = s;
        }
    }
    (chosen, sizes)
}

/// Split the outcome of `measure_all` into the error (if any) and the
/// confirmation record (when the sweep got that far).
pub fn split(
    outcome: Result<Option<Confirmation>>,
) -> (Option<anyhow::Error>, Option<Confirmation>) {
    match outcome {
        Ok(c) => (None, c),
        Err(e) => (Some(e), None),
    }
}

/// Run the pass over the candidate events of `points` (ascending sizes).
pub(super) fn confirmation_pass(
    spec: &SweepSpec,
    runner: &mut dyn SweepRunner,
    points: &[Point],
    (budget_ns, overhead_ns): (u64, f64),
    stop: &dyn Fn() -> bool,
) -> Result<Option<Confirmation>> {
    let started = Instant::now();
    let bytes: Vec<u64> = points.iter().map(|p| p.bytes).collect();
    let median: Vec<f64> = points.iter().map(|p| p.median_ns).collect();
    let low: Vec<f64> = points.iter().map(|p| p.ci_low_ns).collect();
    let high: Vec<f64> = points.iter().map(|p| p.ci_high_ns).collect();
    let analysis = analyse_curve(&bytes, &median, &low, &high, &CauseHints::default());
    let events = confirm::events(&analysis);
    let first_ns = |i: usize| visit_estimate_ns(&points[i], spec.mode, overhead_ns);
    let (chosen, sizes) = pick_events(&bytes, &events, &first_ns, MIN_ROUNDS, budget_ns);
    let picked: Vec<confirm::Event> = chosen.iter().map(|&i| events[i]).collect();
    // After each round short of the least, the events still affordable at
    // what the visits cost so far (a busy moment may make them dearer).
    let trim = |visit_ns: &[f64], rounds_left: usize, left_ns: u64| -> Vec<bool> {
        let cost = |i: usize| {
            sizes
                .binary_search(&bytes[i])
                .map_or(f64::INFINITY, |j| visit_ns[j])
        };
        let (_, keep) = pick_events(&bytes, &picked, &cost, rounds_left, left_ns);
        sizes.iter().map(|s| keep.contains(s)).collect()
    };
    let repeats: Vec<u64> = sizes
        .iter()
        .map(|s| {
            points
                .iter()
                .find(|p| p.bytes == *s)
                .map_or(1, |p| p.repeats)
        })
        .collect();
    let trials = interleaved_trials(
        runner,
        Visits {
            sizes: &sizes,
            repeats: &repeats,
            budget_ns,
            precision: spec.precision,
        },
        &trim,
        stop,
    )?;
    let fresh: Vec<RemeasuredPoint> = sizes
        .iter()
        .zip(&trials)
        .filter_map(|(&size, t)| fresh_point(size, t, spec.precision))
        .collect();
    let hints = runner.hints();
    let curve = (&median[..], &low[..], &high[..]);
    let verdicts = confirm::judge_known(&bytes, curve, &fresh, &events, &hints);
    let events = events
        .iter()
        .zip(verdicts)
        .map(|(e, confirmed)| CheckedEvent {
            kind: e.kind.name().into(),
            from_bytes: e.from_bytes,
            to_bytes: e.to_bytes,
            confirmed,
            edges: checked_edges(&bytes, (&analysis, &hints), &fresh, e, confirmed),
        })
        .collect();
    Ok(Some(Confirmation {
        budget_s: budget_ns as f64 / 1e9,
        wall_s: started.elapsed().as_secs_f64(),
        points: fresh,
        events,
    }))
}

/// What a result says of a pass `c` that had events to check and
/// measured nothing: the sizes around them did not fit [`MIN_ROUNDS`]
/// rounds in its budget at what a block cost during the points (or at
/// what its first visits cost); the events stay unconfirmed.
pub fn nothing_measured(c: &Confirmation) -> Option<String> {
    (!c.events.is_empty() && c.points.is_empty()).then(|| {
        format!(
            "the confirmation pass measured nothing ({:.1} s of its {:.1} s): the sizes around its \
             {} candidate events would not fit {MIN_ROUNDS} rounds in it at what a block cost (during \
             the points, and in its own first rounds where it began: a busy machine makes each \
             block wait); the events stay unconfirmed (a larger --budget gives the pass more)",
            c.wall_s,
            c.budget_s,
            c.events.len()
        )
    })
}

/// The edges of event `e` with their verdicts: a drop-out's two, each
/// judged on its own fresh neighbours ([`edges::holds`]), so that a run
/// whose first pass saw a step as the end of a drop-out still reports the
/// edge that holds; a switch-over's own, with the event's verdict.
fn checked_edges(
    bytes: &[u64],
    (analysis, hints): (&crate::analysis::Analysis, &CauseHints),
    fresh: &[RemeasuredPoint],
    e: &confirm::Event,
    confirmed: bool,
) -> Vec<CheckedEdge> {
    // A drop-out's edges carry their own verdicts (a drop-out confirmed
    // as a whole is reported as such whatever they say).
    let edge = |bytes: u64, direction: edges::Direction, confirmed: bool| CheckedEdge {
        bytes,
        direction: direction.name().into(),
        confirmed,
    };
    match e.kind {
        confirm::EventKind::Switchover => edges::switchover_direction(analysis, e.from_bytes)
            .map(|d| edge(e.from_bytes, d, confirmed))
            .into_iter()
            .collect(),
        confirm::EventKind::Dropout => {
            let both = edges::of_dropout(bytes, e);
            let mut held = edges::holds(bytes, fresh, &both);
            // A known step's rising edge holds by the step's own rule.
            let at = edges::by_index(bytes, fresh);
            held[0] |= edges::stated_step_holds(bytes, &at, e, hints);
            both.iter()
                .zip(held)
                .map(|(x, h)| edge(x.bytes, x.direction, h))
                .collect()
        }
    }
}

/// The fresh point of `size` from its pass trials: the figures of its
/// fast mode when the trials split in two ([`confirm::fast_mode`]), of
/// all of them otherwise. None without a trial.
pub fn fresh_point(size: u64, trials: &[f64], precision: f64) -> Option<RemeasuredPoint> {
    let (kept, slow) = confirm::fast_mode(trials);
    let s = Summary::of(&kept)?;
    Some(RemeasuredPoint {
        bytes: size,
        trials: s.n as u64,
        median_ns: s.median,
        ci_low_ns: s.ci_low,
        ci_high_ns: s.ci_high,
        noisy: slow > 0 || !within(&s, precision),
        slow_trials: slow as u64,
    })
}

/// Rounds every size's fresh trials are spread over, at least: six, one
/// kept trial each, so that a size's trials come from six moments of the
/// machine and a fast mode ([`confirm::fast_mode`]) of two trials is two
/// moments that agree (three rounds of two trials a visit cost about as
/// much, 6.75 blocks a size against 7.5, but two trials of one visit
/// share its moment).
pub const MIN_ROUNDS: usize = 6;
/// Rounds at most, however far the budget reaches.
pub const MAX_ROUNDS: usize = 24;
/// Trials kept per size and visit.
const TRIALS_PER_VISIT: usize = 1;

/// Whether the median's interval of `s` is within `precision`.
fn within(s: &Summary, precision: f64) -> bool {
    s.ci_attained && (s.ci_high - s.ci_low) / 2.0 <= precision * s.median
}

/// The order of the `n` sizes (ascending) in round `round`: the odd
/// indices, then the even ones, reversed on odd rounds, so no two
/// neighbours are measured one after the other (from 4 sizes on; of 3,
/// the middle one neighbours both) and each size meets different moments
/// of the machine from round to round.
pub fn visit_order(n: usize, round: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (1..n).step_by(2).chain((0..n).step_by(2)).collect();
    if round % 2 == 1 {
        order.reverse();
    }
    order
}

/// The sizes a pass visits, each with its repeat count, and its limits.
struct Visits<'a> {
    sizes: &'a [u64],
    repeats: &'a [u64],
    budget_ns: u64,
    precision: f64,
}

/// Which sizes to keep visiting, given what a visit of each cost so far
/// (ns, mean), the least rounds still owed and the ns left.
type Trim<'a> = &'a dyn Fn(&[f64], usize, u64) -> Vec<bool>;

/// Trials (time per operation, ns) of each size of `v` with its repeats,
/// taken in interleaved rounds (see the module notes) within its budget.
/// After each round short of [`MIN_ROUNDS`], `trim` says which sizes the
/// rest of the budget still affords; the others are dropped, trials and
/// all (an event missing a size is not confirmed).
fn interleaved_trials(
    runner: &mut dyn SweepRunner,
    v: Visits,
    trim: Trim,
    stop: &dyn Fn() -> bool,
) -> Result<Vec<Vec<f64>>> {
    let started = Instant::now();
    let n = v.sizes.len();
    let mut trials: Vec<Vec<f64>> = (0..n)
        .map(|_| Vec::with_capacity(MAX_ROUNDS * TRIALS_PER_VISIT))
        .collect();
    let mut active = vec![true; n];
    let mut visit_wall_ns = vec![0.0; n];
    for round in 0..MAX_ROUNDS {
        let round_start = Instant::now();
        for i in visit_order(n, round) {
            if !active[i] {
                continue;
            }
            if stop() {
                return Err(WulfError::Interrupted.into());
            }
            let visit = Instant::now();
            // One dropped block first: the size the channel carried last
            // was another (a socket's window, the buffers' cache lines).
            runner.run(v.sizes[i], (v.repeats[i] / 4).max(1))?;
            for _ in 0..TRIALS_PER_VISIT {
                trials[i].push(runner.run(v.sizes[i], v.repeats[i])?.op_ns);
            }
            visit_wall_ns[i] += visit.elapsed().as_nanos() as f64;
        }
        let spent_ns = started.elapsed().as_nanos() as u64;
        let round_ns = round_start.elapsed().as_nanos() as u64;
        // A size whose trials split in two is not settled: more rounds
        // (within the budget) give its fast mode more trials.
        let settled = trials.iter().zip(&active).all(|(t, &on)| {
            let (kept, slow) = confirm::fast_mode(t);
            !on || (slow == 0 && Summary::of(&kept).is_some_and(|s| within(&s, v.precision)))
        });
        let over = spent_ns.saturating_add(round_ns) > v.budget_ns;
        if round + 1 >= MIN_ROUNDS && (over || settled) {
            break;
        }
        if round + 1 < MIN_ROUNDS {
            let mean: Vec<f64> = (0..n)
                .map(|i| {
                    if active[i] {
                        visit_wall_ns[i] / (round + 1) as f64
                    } else {
                        f64::INFINITY
                    }
                })
                .collect();
            let keep = trim(
                &mean,
                MIN_ROUNDS - round - 1,
                v.budget_ns.saturating_sub(spent_ns),
            );
            for i in 0..n {
                if active[i] && !keep[i] {
                    active[i] = false;
                    trials[i].clear();
                }
            }
        }
    }
    Ok(trials)
}

#[cfg(test)]
#[path = "confirm_tests.rs"]
mod tests;
