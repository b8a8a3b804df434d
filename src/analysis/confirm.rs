//! The confirmation rule: which sizes to measure again after a sweep, and
//! whether the fresh trials confirm each candidate event.
//!
//! Trials within one point share that point's conditions: a burst of
//! other work on the machine slows all of them together, so their interval
//! is narrow and wrong, and the point looks like a drop-out or the start
//! of a regime that is not there on the next run. Only a second,
//! independent measurement tells such a point from a real one, so after
//! the sweep the engine ([`crate::sweep::confirm`]) measures again the
//! sizes around every candidate event ([`sizes_to_remeasure`]: the event's
//! own sizes and [`CONTEXT_POINTS`] neighbours each side, which give the
//! baseline a drop-out is judged against), with fresh trials.
//!
//! An event is **confirmed** ([`judge`]) when the analysis of the curve
//! with the fresh medians and intervals in place of the first ones finds
//! the same event again: a drop-out overlapping the same sizes, or a
//! switch-over among the sizes measured again around it, and the fresh
//! points of the event's window, alone, do not lie on one straight time
//! line (a pass run later may be slower or faster as a whole, and set
//! among first-pass points its window would look like a dip or a step;
//! see [`bends_in_fresh`]; a pass whose window ran at another level than
//! the first by more than [`SPLIT_RATIO`] is set at the first pass's level
//! first, see [`analyse_at_level`]). An independent
//! fluke has to strike the same sizes twice to survive, so the false
//! events of a sweep fall from the rate of one pass to about its square,
//! while a real event, which the fresh trials show as clearly as the first
//! ones, stays.
//!
//! A drop-out where a staircase the transport stated steps (cma's page:
//! each page spanned adds a fixed cost) is a known step, which
//! [`judge_known`] also confirms by its rising edge alone
//! ([`edges::stated_step_holds`]): a staircase has no end edge.

use serde::{Deserialize, Serialize};

use super::{analyse_curve, Analysis, CauseHints};
use crate::result::RemeasuredPoint;

/// Neighbours measured again on each side of a candidate event: three,
/// so that with NetPIPE's sizes (clusters of three, 3 bytes apart) the
/// window reaches into the clusters before and after the event's own.
/// [`judge`] asks the fresh points alone to bend, and a line fits any two
/// clusters: only a third tells a step or a dip from a slope.
pub const CONTEXT_POINTS: usize = 3;

/// Most sizes measured again in one sweep (about half of NetPIPE's
/// schedule): a sweep of nothing but noise must not spend its budget
/// re-measuring itself.
pub const MAX_REMEASURED: usize = 64;

/// Least ratio between the slowest trial of a size's fast mode and the
/// fastest of its slow mode for its fresh trials to count as split in two
/// ([`fast_mode`]): wider than the spread of a quiet point's trials (the
/// sweep's precision is 2%), narrower than the 2-4x of a trial that lost
/// its CPU for part of its block.
pub const SPLIT_RATIO: f64 = 1.25;

/// Fewest trials each of the two modes must hold: one fast trial could be
/// a fluke of its own, and one slow trial is an outlier the median already
/// ignores (setting it aside would only narrow the interval).
pub const MIN_MODE_TRIALS: usize = 2;

/// The fresh trials of one size to judge on, and how many were set aside
/// as a slow mode.
///
/// Why: a confirmation pass of shm on a quiet machine was bimodal (its
/// sizes' 6 trials near the first pass's times or 2-4x slower, as if the
/// two ends shared a CPU for part of the pass), so its medians were a
/// lottery between the modes and it confirmed nothing, not even the 8 KiB
/// change of message path the other run confirmed. Interference only adds
/// time: a block cannot run faster than the machine allows, so when the
/// trials split in two clusters the fast one is the undisturbed machine.
/// The trials split when, sorted, the largest ratio between neighbours
/// is at least [`SPLIT_RATIO`], at least [`MIN_MODE_TRIALS`] lie on each
/// side of it, and it is more than twice the spread of the trials below
/// it (two modes, not a slope of scattered trials). Otherwise every trial
/// is kept.
pub fn fast_mode(trials: &[f64]) -> (Vec<f64>, usize) {
    let mut sorted: Vec<f64> = trials
        .iter()
        .copied()
        .filter(|t| t.is_finite() && *t > 0.0)
        .collect();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    let split = (MIN_MODE_TRIALS.max(1) - 1..n.saturating_sub(MIN_MODE_TRIALS.max(1)))
        .map(|k| (k, (sorted[k + 1] / sorted[k]).ln()))
        .max_by(|x, y| x.1.total_cmp(&y.1))
        .filter(|&(k, gap)| gap >= SPLIT_RATIO.ln() && gap > 2.0 * (sorted[k] / sorted[0]).ln());
    match split {
        Some((k, _)) => {
            sorted.truncate(k + 1);
            (sorted, n - (k + 1))
        }
        None => (sorted, 0),
    }
}

/// The kind of an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EventKind {
    /// A run of sizes below its neighbours ([`super::Dropout`]).
    Dropout,
    /// The start of a new Hockney segment ([`super::Segment`]).
    Switchover,
}

impl EventKind {
    /// The name used in result files (`dropout`, `switchover`).
    pub fn name(self) -> &'static str {
        match self {
            EventKind::Dropout => "dropout",
            EventKind::Switchover => "switchover",
        }
    }
}

/// A candidate event, by size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Event {
    /// Drop-out or switch-over.
    pub kind: EventKind,
    /// First size (a switch-over: the first size of the new segment).
    pub from_bytes: u64,
    /// Last size (a switch-over: `from_bytes`).
    pub to_bytes: u64,
}

/// Every event of an analysis, most telling first (the order in which
/// [`sizes_to_remeasure`] serves them): switch-overs, which the
/// segmentation already weighed against the whole curve, then drop-outs,
/// deepest first.
pub fn events(a: &Analysis) -> Vec<Event> {
    let mut by_depth: Vec<&super::Dropout> = a.dropouts.iter().collect();
    by_depth.sort_by(|x, y| y.depth_fraction.total_cmp(&x.depth_fraction));
    let dropouts = by_depth.into_iter().map(|d| Event {
        kind: EventKind::Dropout,
        from_bytes: d.from_bytes,
        to_bytes: d.to_bytes,
    });
    let switches = a.switchovers.iter().map(|&s| Event {
        kind: EventKind::Switchover,
        from_bytes: s,
        to_bytes: s,
    });
    switches.chain(dropouts).collect()
}

/// Index range of `bytes` (ascending) around `e`: its sizes and
/// [`CONTEXT_POINTS`] neighbours each side.
pub(crate) fn window(bytes: &[u64], e: &Event) -> std::ops::RangeInclusive<usize> {
    let first = bytes.partition_point(|&b| b < e.from_bytes);
    let last = bytes.partition_point(|&b| b <= e.to_bytes).max(first + 1) - 1;
    let lo = first.saturating_sub(CONTEXT_POINTS);
    let hi = (last + CONTEXT_POINTS).min(bytes.len().saturating_sub(1));
    lo..=hi
}

/// Indices of `bytes` (ascending) to measure again for `e`: its
/// [`window`], except that a drop-out longer than its two edge windows
/// ([`edges::window`]) gets those alone.
///
/// Why: a drop-out of 13 sizes (shm's 2 - 8 KiB, a first pass slow over
/// the whole span) took 19 sizes, more than its pass's share afforded, and
/// stayed unjudged while the other run confirmed the same 8 KiB edge. Its
/// edges say what holds ([`edges`]): their windows are 12 sizes whatever
/// the drop-out's length.
pub(crate) fn indices(bytes: &[u64], e: &Event) -> Vec<usize> {
    let w = window(bytes, e);
    if e.kind == EventKind::Switchover {
        return w.collect();
    }
    let mut picked: Vec<usize> = edges::of_dropout(bytes, e)
        .iter()
        .flat_map(|edge| edges::window(bytes, edge.index))
        .collect();
    picked.sort_unstable();
    picked.dedup();
    picked
}

/// The sizes to measure again for `events` on a sweep of `bytes`
/// (ascending), ascending and without repeats, at most
/// [`MAX_REMEASURED`]: events are taken in the order given until the next
/// one would not fit.
pub fn sizes_to_remeasure(bytes: &[u64], events: &[Event]) -> Vec<u64> {
    let mut picked = vec![false; bytes.len()];
    let mut count = 0;
    for e in events {
        let w = indices(bytes, e);
        let new = w.iter().filter(|&&i| !picked[i]).count();
        if count + new > MAX_REMEASURED {
            break;
        }
        w.iter().for_each(|&i| picked[i] = true);
        count += new;
    }
    (0..bytes.len())
        .filter(|&i| picked[i])
        .map(|i| bytes[i])
        .collect()
}

/// Whether each of `events` (found on the curve `bytes`, `median_ns`,
/// `ci_low_ns`, `ci_high_ns`, ascending sizes) is found again when the
/// `fresh` points replace the first ones (see the module notes). A
/// drop-out whose window was not all measured again (a long one, measured
/// at its edges alone: [`indices`]) is confirmed when both its edges hold
/// and the curve comes back to the level it left ([`edges::dropout_holds`]);
/// any other event whose sizes were not all measured again is not.
pub fn judge(
    bytes: &[u64],
    median_ns: &[f64],
    ci_low_ns: &[f64],
    ci_high_ns: &[f64],
    fresh: &[RemeasuredPoint],
    events: &[Event],
) -> Vec<bool> {
    let (mut med, mut lo, mut hi) = (median_ns.to_vec(), ci_low_ns.to_vec(), ci_high_ns.to_vec());
    let mut measured = vec![false; bytes.len()];
    let mut fresh_at: Vec<Option<&RemeasuredPoint>> = vec![None; bytes.len()];
    for p in fresh {
        if let Ok(i) = bytes.binary_search(&p.bytes) {
            if p.median_ns.is_finite() && p.median_ns > 0.0 {
                (med[i], lo[i], hi[i]) = (p.median_ns, p.ci_low_ns, p.ci_high_ns);
                measured[i] = true;
                fresh_at[i] = Some(p);
            }
        }
    }
    let again = analyse_curve(bytes, &med, &lo, &hi, &CauseHints::default());
    events
        .iter()
        .map(|e| {
            let w = window(bytes, e);
            if !w.clone().all(|i| measured[i]) {
                return e.kind == EventKind::Dropout && edges::dropout_holds(bytes, &fresh_at, e);
            }
            if !bends_in_fresh(&w, &fresh_at) {
                return false;
            }
            let level = pass_level(&w, median_ns, &fresh_at);
            let at_level;
            let a = if !(1.0 / SPLIT_RATIO..=SPLIT_RATIO).contains(&level) {
                at_level = analyse_at_level(
                    bytes, median_ns, ci_low_ns, ci_high_ns, &w, &fresh_at, level,
                );
                &at_level
            } else {
                &again
            };
            let (w_lo, w_hi) = (bytes[*w.start()], bytes[*w.end()]);
            match e.kind {
                EventKind::Dropout => a
                    .dropouts
                    .iter()
                    .any(|d| d.from_bytes <= e.to_bytes && d.to_bytes >= e.from_bytes),
                EventKind::Switchover => a.switchovers.iter().any(|&s| s > w_lo && s <= w_hi),
            }
        })
        .collect()
}

/// [`judge`], with each drop-out found where a staircase stated in
/// `hints` steps judged by its rising edge as well
/// ([`edges::stated_step_holds`]): such a known step is confirmed when
/// either rule confirms it; every other event is judged as by [`judge`].
pub fn judge_known(
    bytes: &[u64],
    (median_ns, ci_low_ns, ci_high_ns): (&[f64], &[f64], &[f64]),
    fresh: &[RemeasuredPoint],
    events: &[Event],
    hints: &CauseHints,
) -> Vec<bool> {
    let plain = judge(bytes, median_ns, ci_low_ns, ci_high_ns, fresh, events);
    let at = edges::by_index(bytes, fresh);
    events
        .iter()
        .zip(plain)
        .map(|(e, v)| v || edges::stated_step_holds(bytes, &at, e, hints))
        .collect()
}

/// How much slower the first pass ran than the confirmation pass over
/// window `w`: the median of their ratios (a real event bends both passes
/// alike, so its sizes do not move the median; the pass's own shift,
/// another moment's load, moves every size).
fn pass_level(
    w: &std::ops::RangeInclusive<usize>,
    first_ns: &[f64],
    fresh_at: &[Option<&RemeasuredPoint>],
) -> f64 {
    let mut ratios: Vec<f64> = w
        .clone()
        .filter_map(|i| fresh_at[i].map(|p| first_ns[i] / p.median_ns))
        .filter(|r| r.is_finite() && *r > 0.0)
        .collect();
    ratios.sort_by(f64::total_cmp);
    ratios.get(ratios.len() / 2).copied().unwrap_or(1.0)
}

/// The curve analysed again with window `w`'s fresh points set among the
/// first pass's at the first pass's `level`.
///
/// Why: a pass that ran at another level (one shm run's first pass was
/// 3x slower over 4-16 KiB than its confirmation pass, on a quiet
/// machine) sets its window far below or above its neighbours, and the
/// re-analysis finds the step at the window's edge, not the event inside
/// it: the 8 KiB change of message path, plain in the fresh points alone
/// (278 -> 140 ns), went unconfirmed. Only a level beyond [`SPLIT_RATIO`]
/// is corrected: within it, the passes agree as two quiet points do, and
/// every fresh point stands as measured (scaling those confirmed a 6 MiB
/// switch-over of one run that the other lacked).
fn analyse_at_level(
    bytes: &[u64],
    median_ns: &[f64],
    ci_low_ns: &[f64],
    ci_high_ns: &[f64],
    w: &std::ops::RangeInclusive<usize>,
    fresh_at: &[Option<&RemeasuredPoint>],
    level: f64,
) -> Analysis {
    let (mut med, mut lo, mut hi) = (median_ns.to_vec(), ci_low_ns.to_vec(), ci_high_ns.to_vec());
    for i in w.clone() {
        if let Some(p) = fresh_at[i] {
            (med[i], lo[i], hi[i]) = (
                p.median_ns * level,
                p.ci_low_ns * level,
                p.ci_high_ns * level,
            );
        }
    }
    analyse_curve(bytes, &med, &lo, &hi, &CauseHints::default())
}

/// Whether the fresh points of window `w` alone show a departure from one
/// straight time line deeper than the depth margin of a drop-out
/// ([`super::dropout::DROPOUT_MIN_DEPTH`]) and the window's own noise.
///
/// Why: the re-analysis in [`judge`] sets fresh points among first-pass
/// ones, and the confirmation pass runs later, in other conditions. A
/// pass a few percent slower or faster as a whole (another moment's load,
/// cache or clock state) then shows its window as a dip or a step against
/// the first pass's points outside it, and confirms a fluke: two runs of
/// shm on a quiet machine confirmed single-size drop-outs at 21, 771 and
/// 1027 B whose fresh times lay between their fresh neighbours'. Judged
/// on the fresh points alone, such an offset cancels; a real dip or step
/// (a change of protocol) bends the window's fresh points as it bent the
/// first pass's.
pub(crate) fn bends_in_fresh(
    w: &std::ops::RangeInclusive<usize>,
    fresh_at: &[Option<&RemeasuredPoint>],
) -> bool {
    let pts: Vec<&RemeasuredPoint> = w.clone().filter_map(|i| fresh_at[i]).collect();
    if pts.len() < 3 {
        // Two points always lie on a line: nothing to tell from them.
        return false;
    }
    let x: Vec<f64> = pts.iter().map(|p| p.bytes as f64).collect();
    let med: Vec<f64> = pts.iter().map(|p| p.median_ns).collect();
    let lo: Vec<f64> = pts.iter().map(|p| p.ci_low_ns).collect();
    let hi: Vec<f64> = pts.iter().map(|p| p.ci_high_ns).collect();
    let widths: Vec<f64> = (0..pts.len()).map(|k| (hi[k] - lo[k]) / med[k]).collect();
    let depth = super::dropout::DROPOUT_MIN_DEPTH / (1.0 - super::dropout::DROPOUT_MIN_DEPTH);
    let slack = depth.max(super::dropout::local_median(&widths));
    let all: Vec<usize> = (0..pts.len()).collect();
    !super::dropout::on_one_line(&all, &x, &med, &lo, &hi, slack)
}

#[path = "confirm_edges.rs"]
pub mod edges;

#[cfg(test)]
#[path = "confirm_bimodal_tests.rs"]
mod bimodal_tests;

#[cfg(test)]
mod tests {
    use super::*;

    /// A fresh point of 20 trials at `m` ns, +-1%.
    pub(super) fn fresh_at(x: u64, m: f64) -> RemeasuredPoint {
        RemeasuredPoint {
            bytes: x,
            trials: 20,
            median_ns: m,
            ci_low_ns: m * 0.99,
            ci_high_ns: m * 1.01,
            noisy: false,
            slow_trials: 0,
        }
    }

    #[test]
    fn windows_cover_the_event_and_its_neighbours() {
        let b: Vec<u64> = (1..=30).collect();
        let e = Event {
            kind: EventKind::Dropout,
            from_bytes: 10,
            to_bytes: 11,
        };
        assert_eq!(sizes_to_remeasure(&b, &[e]), (7..=14).collect::<Vec<u64>>());
        let edge = Event {
            kind: EventKind::Switchover,
            from_bytes: 2,
            to_bytes: 2,
        };
        assert_eq!(
            sizes_to_remeasure(&b, &[edge]),
            (1..=5).collect::<Vec<u64>>()
        );
        // The cap keeps whole events only.
        let many: Vec<Event> = (0..20)
            .map(|k| Event {
                kind: EventKind::Dropout,
                from_bytes: 1 + k,
                to_bytes: 1 + k,
            })
            .collect();
        assert!(
            sizes_to_remeasure(&(1..=200).collect::<Vec<u64>>(), &many).len() <= MAX_REMEASURED
        );
    }

    #[test]
    fn a_dip_seen_twice_is_confirmed_and_a_fluke_is_not() {
        let b: Vec<u64> = (0..40).map(|i| 1000 + 100 * i).collect();
        let t = |x: u64| 5000.0 + x as f64;
        let dip = |x: u64| if x == 2500 { 2.0 } else { 1.0 };
        let med: Vec<f64> = b.iter().map(|&x| t(x) * dip(x)).collect();
        let lo: Vec<f64> = med.iter().map(|m| m * 0.99).collect();
        let hi: Vec<f64> = med.iter().map(|m| m * 1.01).collect();
        let a = analyse_curve(&b, &med, &lo, &hi, &CauseHints::default());
        let ev = events(&a);
        assert_eq!(ev.len(), 1, "{ev:?}");
        let again = |slow: f64| -> Vec<RemeasuredPoint> {
            sizes_to_remeasure(&b, &ev)
                .iter()
                .map(|&x| {
                    let m = t(x) * if x == 2500 { slow } else { 1.0 };
                    fresh_at(x, m)
                })
                .collect()
        };
        assert_eq!(judge(&b, &med, &lo, &hi, &again(2.0), &ev), vec![true]);
        assert_eq!(judge(&b, &med, &lo, &hi, &again(1.0), &ev), vec![false]);
        assert_eq!(judge(&b, &med, &lo, &hi, &[], &ev), vec![false]);
    }

    /// A confirmation pass slower as a whole (another moment's conditions)
    /// must not confirm a fluke: its window, set among first-pass points,
    /// looks like a dip, but its fresh points alone lie on one line.
    #[test]
    fn a_pass_slower_as_a_whole_confirms_no_fluke() {
        let b: Vec<u64> = (0..40).map(|i| 1000 + 100 * i).collect();
        let t = |x: u64| 5000.0 + x as f64;
        let fluke = |x: u64| if x == 2500 { 1.5 } else { 1.0 };
        let med: Vec<f64> = b.iter().map(|&x| t(x) * fluke(x)).collect();
        let lo: Vec<f64> = med.iter().map(|m| m * 0.99).collect();
        let hi: Vec<f64> = med.iter().map(|m| m * 1.01).collect();
        let ev = events(&analyse_curve(&b, &med, &lo, &hi, &CauseHints::default()));
        assert_eq!(ev.len(), 1, "{ev:?}");
        let pass = |scale: f64, dip: f64| -> Vec<RemeasuredPoint> {
            sizes_to_remeasure(&b, &ev)
                .iter()
                .map(|&x| {
                    let m = t(x) * scale * if x == 2500 { dip } else { 1.0 };
                    fresh_at(x, m)
                })
                .collect()
        };
        // Three times slower, no dip: the old rule saw the whole window
        // as a drop-out against the first pass's points around it.
        assert_eq!(judge(&b, &med, &lo, &hi, &pass(3.0, 1.0), &ev), vec![false]);
        // Three times slower with the dip: still confirmed.
        assert_eq!(judge(&b, &med, &lo, &hi, &pass(3.0, 1.5), &ev), vec![true]);
    }

    #[test]
    fn a_step_seen_by_a_pass_at_another_level_is_confirmed() {
        // A change of message path at 3000 B (the time halves), found by a
        // first pass that ran 3x slower than the confirmation pass.
        let b: Vec<u64> = (0..40).map(|i| 1000 + 100 * i).collect();
        let t = |x: u64| (200.0 + 0.01 * x as f64) * if x >= 3000 { 0.5 } else { 1.0 };
        let med: Vec<f64> = b.iter().map(|&x| 3.0 * t(x)).collect();
        let lo: Vec<f64> = med.iter().map(|m| m * 0.99).collect();
        let hi: Vec<f64> = med.iter().map(|m| m * 1.01).collect();
        let ev = events(&analyse_curve(&b, &med, &lo, &hi, &CauseHints::default()));
        assert!(!ev.is_empty(), "{ev:?}");
        let pass = |step: bool| -> Vec<RemeasuredPoint> {
            sizes_to_remeasure(&b, &ev)
                .iter()
                .map(|&x| {
                    let m = if step { t(x) } else { 200.0 + 0.01 * x as f64 };
                    fresh_at(x, m)
                })
                .collect()
        };
        assert!(
            judge(&b, &med, &lo, &hi, &pass(true), &ev)
                .iter()
                .all(|&c| c),
            "{ev:?}"
        );
        assert!(judge(&b, &med, &lo, &hi, &pass(false), &ev)
            .iter()
            .all(|&c| !c));
    }
}
