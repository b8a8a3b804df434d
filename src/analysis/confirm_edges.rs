//! Edges: the sizes where the curve changes level, judged one by one.
//!
//! A switch-over is one edge (the first size of a new regime); a drop-out
//! has two, its start (time rises: slower from its first size) and its end
//! (time falls: faster from the first size after it). The first pass names
//! the same edge differently from run to run: on a quiet machine one shm
//! run called its 8 KiB change of message path a switch-over at 8,195 B,
//! the other, whose first pass was slow from 2 to 8 KiB, the end of a
//! drop-out 2,045..8,189 B, and left it unconfirmed (its pass could not
//! re-measure 2 - 12 KiB within its share). So each edge of a drop-out is
//! judged on its own ([`holds`]), on [`CONTEXT_POINTS`] fresh sizes either
//! side of it, and the edges that hold are reported even when the
//! drop-out as a whole is not; a drop-out measured at its edges alone is
//! confirmed only when both hold and the curve comes back to the level it
//! left ([`dropout_holds`]).

use serde::{Deserialize, Serialize};

use super::{bends_in_fresh, Event, EventKind, CONTEXT_POINTS};
use crate::analysis::dropout::{local_median, on_one_line, DROPOUT_MIN_DEPTH};
use crate::analysis::{Analysis, CauseHints};
use crate::result::RemeasuredPoint;

/// Which way the time per message goes at an edge, for the sizes from it
/// on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    /// Time rises beyond what the size explains (a drop-out's start, a
    /// slower protocol).
    Slower,
    /// Time falls, or grows less (a drop-out's end, a faster path).
    Faster,
}

impl Direction {
    /// The name used in result files (`slower`, `faster`).
    pub fn name(self) -> &'static str {
        match self {
            Direction::Slower => "slower",
            Direction::Faster => "faster",
        }
    }
}

/// One edge of an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Edge {
    /// Index in the sweep's sizes of the first size of the new level.
    pub index: usize,
    /// That size.
    pub bytes: u64,
    /// Which way the time goes there.
    pub direction: Direction,
}

/// The two edges of drop-out `e` on a sweep of `bytes` (ascending): its
/// first size, slower, and the first size after it, faster.
pub fn of_dropout(bytes: &[u64], e: &Event) -> [Edge; 2] {
    let last_index = bytes.len().saturating_sub(1);
    let first = bytes.partition_point(|&b| b < e.from_bytes).min(last_index);
    let after = bytes.partition_point(|&b| b <= e.to_bytes).min(last_index);
    [
        Edge {
            index: first,
            bytes: bytes[first],
            direction: Direction::Slower,
        },
        Edge {
            index: after,
            bytes: bytes[after],
            direction: Direction::Faster,
        },
    ]
}

/// Which way the time goes at switch-over `from_bytes` of `a`: the new
/// segment's line against the previous one's, extrapolated, at the new
/// segment's middle size (geometric). At the switch size itself two lines
/// of different bandwidth may cross; within the new segment the regime
/// that took over shows. None when `from_bytes` starts no segment.
pub fn switchover_direction(a: &Analysis, from_bytes: u64) -> Option<Direction> {
    let k = a
        .segments
        .iter()
        .position(|s| s.from_bytes == from_bytes)
        .filter(|&k| k > 0)?;
    let (old, new) = (&a.segments[k - 1], &a.segments[k]);
    let x = (new.from_bytes as f64 * new.to_bytes.max(new.from_bytes) as f64).sqrt();
    let t =
        |s: &crate::analysis::Segment| s.alpha_ns + s.beta_bits_per_s.map_or(0.0, |b| 8e9 * x / b);
    Some(if t(new) > t(old) {
        Direction::Slower
    } else {
        Direction::Faster
    })
}

/// Index range measured again for the edge at `index`: [`CONTEXT_POINTS`]
/// sizes before it and as many from it on.
pub fn window(bytes: &[u64], index: usize) -> std::ops::RangeInclusive<usize> {
    let lo = index.saturating_sub(CONTEXT_POINTS);
    let hi = (index + CONTEXT_POINTS - 1).min(bytes.len().saturating_sub(1));
    lo..=hi
}

/// The slack of a window's fresh points: the larger of a drop-out's depth
/// margin and their median interval width (as [`bends_in_fresh`]).
fn slack(pts: &[&RemeasuredPoint]) -> f64 {
    let widths: Vec<f64> = pts
        .iter()
        .map(|p| (p.ci_high_ns - p.ci_low_ns) / p.median_ns)
        .collect();
    let depth = DROPOUT_MIN_DEPTH / (1.0 - DROPOUT_MIN_DEPTH);
    depth.max(local_median(&widths))
}

/// Whether `edge` holds in the fresh points `fresh_at` (by index of
/// `bytes`): every size of its [`window`] measured again, those fresh
/// points not on one straight time line ([`bends_in_fresh`]), and across
/// the edge, from the size before it to its own and from the median of
/// the sizes before it to that of the sizes from it on (sizes and
/// interval bounds), the time moving its way beyond their intervals
/// widened by the window's [`slack`]: falling, for
/// a faster edge (time cannot fall as size grows within one regime), or
/// rising by more than in proportion to size (the most one regime allows,
/// alpha being >= 0), for a slower one.
pub(crate) fn holds_at(bytes: &[u64], fresh_at: &[Option<&RemeasuredPoint>], edge: &Edge) -> bool {
    let w = window(bytes, edge.index);
    if edge.index == 0 || !w.clone().all(|i| fresh_at[i].is_some()) {
        return false;
    }
    if !bends_in_fresh(&w, fresh_at) {
        return false;
    }
    let pts: Vec<&RemeasuredPoint> = w.clone().filter_map(|i| fresh_at[i]).collect();
    let s = slack(&pts);
    let (Some(before), Some(at)) = (fresh_at[edge.index - 1], fresh_at[edge.index]) else {
        return false;
    };
    let side = |r: std::ops::Range<usize>, f: fn(&RemeasuredPoint) -> f64| {
        let v: Vec<f64> = r.filter_map(|i| fresh_at[i]).map(f).collect();
        local_median(&v)
    };
    let (lo_side, hi_side) = (*w.start()..edge.index, edge.index..*w.end() + 1);
    let jumps = |b: (f64, f64, f64), a: (f64, f64, f64)| match edge.direction {
        // (bytes, ci_low_ns, ci_high_ns) before and after the edge.
        Direction::Faster => a.2 * (1.0 + s) < b.1,
        Direction::Slower => a.1 > b.2 * (1.0 + s) * (a.0 / b.0).max(1.0),
    };
    let point = |p: &RemeasuredPoint| (p.bytes as f64, p.ci_low_ns, p.ci_high_ns);
    let sides = |r: std::ops::Range<usize>| {
        (
            side(r.clone(), |p| p.bytes as f64),
            side(r.clone(), |p| p.ci_low_ns),
            side(r, |p| p.ci_high_ns),
        )
    };
    // The neighbours across the edge, and the two sides' medians: one
    // size's fast mode beside its neighbour's plain median (a pass 4-6x
    // slower than the first, one shm run's 1024 against 1027 B) is no edge.
    jumps(point(before), point(at)) && jumps(sides(lo_side), sides(hi_side))
}

/// The fresh points of `fresh` by index of `bytes` (sizes not in the sweep
/// and points without a positive median left out).
pub(crate) fn by_index<'a>(
    bytes: &[u64],
    fresh: &'a [RemeasuredPoint],
) -> Vec<Option<&'a RemeasuredPoint>> {
    let mut at = vec![None; bytes.len()];
    for p in fresh {
        if let Ok(i) = bytes.binary_search(&p.bytes) {
            if p.median_ns.is_finite() && p.median_ns > 0.0 {
                at[i] = Some(p);
            }
        }
    }
    at
}

/// Whether each of `edges` holds in the `fresh` points of a sweep of
/// `bytes` (ascending); see [`holds_at`].
pub fn holds(bytes: &[u64], fresh: &[RemeasuredPoint], edges: &[Edge]) -> Vec<bool> {
    let at = by_index(bytes, fresh);
    edges.iter().map(|e| holds_at(bytes, &at, e)).collect()
}

/// Whether drop-out `e`, measured again at its edges, holds as a drop-out:
/// both edges hold and the fresh sizes before its start and from its end
/// on lie on one straight time line (within their intervals widened by
/// their [`slack`]): the curve comes back to the regime it left. Two
/// edges whose outer levels differ are a step, and only the edges that
/// hold are reported.
pub(crate) fn dropout_holds(
    bytes: &[u64],
    fresh_at: &[Option<&RemeasuredPoint>],
    e: &Event,
) -> bool {
    if e.kind != EventKind::Dropout {
        return false;
    }
    let [start, end] = of_dropout(bytes, e);
    if !(holds_at(bytes, fresh_at, &start) && holds_at(bytes, fresh_at, &end)) {
        return false;
    }
    let outer: Vec<&RemeasuredPoint> = (start.index.saturating_sub(CONTEXT_POINTS)..start.index)
        .chain(end.index..=*window(bytes, end.index).end())
        .filter_map(|i| fresh_at[i])
        .collect();
    let x: Vec<f64> = outer.iter().map(|p| p.bytes as f64).collect();
    let med: Vec<f64> = outer.iter().map(|p| p.median_ns).collect();
    let lo: Vec<f64> = outer.iter().map(|p| p.ci_low_ns).collect();
    let hi: Vec<f64> = outer.iter().map(|p| p.ci_high_ns).collect();
    let all: Vec<usize> = (0..outer.len()).collect();
    on_one_line(&all, &x, &med, &lo, &hi, slack(&outer))
}

/// Whether drop-out `e`, found where a staircase the transport stated
/// steps ([`CauseHints::staircase_step`]: cma pins one more page per page
/// spanned), holds as that step in the fresh points `fresh_at` (by index
/// of `bytes`): its rising edge, from the size before it to its first
/// size, rises beyond their intervals widened by their [`slack`] (by more
/// than in proportion to size, as [`holds_at`] asks of a slower edge),
/// and the curve stays up: the size after the drop-out is not faster than
/// its last size by more than that slack.
///
/// Why: a step between two sizes a page apart (4099 and 8192 B) is a
/// drop-out to the first pass, whose end edge (8192 B faster than 4099 B)
/// a staircase never has, so [`super::judge`] could not confirm cma's
/// page step that three of three quiet rounds named. A genuine dip at a
/// page boundary comes back (its next size is faster by more than the
/// slack) and is judged as any drop-out.
pub(crate) fn stated_step_holds(
    bytes: &[u64],
    fresh_at: &[Option<&RemeasuredPoint>],
    e: &Event,
    hints: &CauseHints,
) -> bool {
    let first = bytes.partition_point(|&b| b < e.from_bytes);
    let after = bytes.partition_point(|&b| b <= e.to_bytes);
    if e.kind != EventKind::Dropout || first == 0 || after >= bytes.len() || after <= first {
        return false;
    }
    if hints
        .staircase_step(bytes[first - 1], bytes[first])
        .is_none()
    {
        return false;
    }
    let at = |i: usize| fresh_at[i];
    let (Some(before), Some(up), Some(top), Some(next)) =
        (at(first - 1), at(first), at(after - 1), at(after))
    else {
        return false;
    };
    let s = slack(&[before, up, top, next]);
    let rises =
        up.ci_low_ns > before.ci_high_ns * (1.0 + s) * (up.bytes as f64 / before.bytes as f64);
    let stays = next.median_ns * (1.0 + s) >= top.median_ns;
    rises && stays
}

#[cfg(test)]
#[path = "confirm_edges_tests.rs"]
mod tests;
