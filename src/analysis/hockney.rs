//! Hockney fits t(n) = alpha + n / beta: one line, and a piecewise fit whose
//! change points are the switch-overs.
//!
//! Each line is the physical fit of [`super::line_fit`]: weighted least
//! squares on relative residuals, constrained to alpha >= 0 and
//! 1 / beta >= 0, with an interval for each parameter. The segmentation
//! below compares the residuals of the free lines, so that the switch-over
//! of a curve bent by a cache size is found where the bend is; each
//! segment it chooses is then fitted under the constraints.
//!
//! The piecewise fit is the global least-squares segmentation with the
//! number of segments chosen by the Bayesian information criterion, as in
//! Bai & Perron (2003, "Computation and analysis of multiple structural
//! change models", J. Applied Econometrics 18:1-22): for each k up to
//! [`MAX_SEGMENTS`], dynamic programming over breakpoints (optimal
//! partitioning, Auger & Lawrence 1989) finds the k contiguous segments of
//! at least [`MIN_SEGMENT_POINTS`] points with the least total residual sum
//! of squares RSS_k; then k minimises
//! BIC(k) = m ln(max(RSS_k, F) / m) + 3k ln m,
//! m the number of points, 3k - 1 line and breakpoint parameters plus the
//! variance. F = sum over the points of max(f, h_i / t_i)^2 is a floor on
//! the residuals: h_i is the half-width of point i's confidence interval,
//! f = [`NOISE_FLOOR_REL`]. Structure smaller than what the points' own
//! intervals allow, or than 1% (runs of one configuration differ by more),
//! is not called a regime, so a curve whose single-line fit is already that
//! good is always one segment; the CI term keeps sweeps with few, noisy
//! trials from being split on noise that BIC's penalty alone would let
//! through about one time in twenty.

/// Fewest points in a segment when a curve is split. With about six sizes
/// per octave this is under an octave; fewer points would let a segment
/// chase two or three noisy points.
pub const MIN_SEGMENT_POINTS: usize = 5;

/// Most segments considered. Real curves show two or three regimes (eager,
/// rendezvous, out of cache); more would describe noise.
pub const MAX_SEGMENTS: usize = 8;

/// Relative residual (1%) below which the piecewise fit sees no structure,
/// whatever the confidence intervals say.
pub const NOISE_FLOOR_REL: f64 = 0.01;

pub use super::line_fit::LineFit;
use super::line_fit::Moments;

/// One segment of a piecewise fit, by index into the curve's points.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct SegmentFit {
    /// First point covered (inclusive).
    pub first: usize,
    /// Last point covered (inclusive).
    pub last: usize,
    /// The line fitted to the included points of the range.
    pub line: LineFit,
}

/// Piecewise Hockney fit of the curve `(bytes, time_ns)` (ascending sizes)
/// using only points with `include[i]`; see the module notes.
///
/// Excluded points (drop-outs) do not shape any line. Those lying between
/// two segments join the earlier or later one, wherever the split of the
/// gap leaves the smaller relative error: a switch to a slower protocol
/// often starts with a dip, and the switch-over is where that dip begins.
/// The returned segments cover every point, in order.
/// `half_width_rel[i]` is the half-width of point i's confidence interval
/// relative to its time, for the residual floor.
pub(crate) fn fit_segments(
    bytes: &[f64],
    time_ns: &[f64],
    half_width_rel: &[f64],
    include: &[bool],
) -> Vec<SegmentFit> {
    let kept: Vec<usize> = (0..bytes.len()).filter(|&i| include[i]).collect();
    let n: Vec<f64> = kept.iter().map(|&i| bytes[i]).collect();
    let t: Vec<f64> = kept.iter().map(|&i| time_ns[i]).collect();
    if n.len() < 2 {
        return Vec::new();
    }
    let floor: f64 = kept
        .iter()
        .map(|&i| half_width_rel[i].max(NOISE_FLOOR_REL).powi(2))
        .sum();
    let starts = best_partition(&n, &t, free_rss(&n, &t), floor);
    let mut segments: Vec<SegmentFit> = starts
        .iter()
        .enumerate()
        .map(|(s, &start)| {
            let end = starts.get(s + 1).copied().unwrap_or(kept.len());
            SegmentFit {
                first: kept[start],
                last: kept[end - 1],
                line: LineFit::fit(&n[start..end], &t[start..end]).expect(">= 2 points"),
            }
        })
        .collect();
    segments[0].first = 0;
    let last = segments.len() - 1;
    segments[last].last = bytes.len() - 1;
    for s in 0..last {
        let (gap_from, gap_to) = (segments[s].last + 1, segments[s + 1].first);
        let split = best_gap_split(
            bytes,
            time_ns,
            gap_from,
            gap_to,
            &segments[s].line,
            &segments[s + 1].line,
        );
        segments[s].last = split - 1;
        segments[s + 1].first = split;
    }
    segments
}

/// First index of the later segment among `gap_from..=gap_to`, the split
/// that minimises the squared relative errors of the gap's points.
fn best_gap_split(
    bytes: &[f64],
    time_ns: &[f64],
    gap_from: usize,
    gap_to: usize,
    before: &LineFit,
    after: &LineFit,
) -> usize {
    let rel =
        |line: &LineFit, i: usize| ((time_ns[i] - line.predict_ns(bytes[i])) / time_ns[i]).powi(2);
    let mut best = (f64::INFINITY, gap_to);
    for split in gap_from..=gap_to {
        let cost: f64 = (gap_from..split).map(|i| rel(before, i)).sum::<f64>()
            + (split..gap_to).map(|i| rel(after, i)).sum::<f64>();
        if cost < best.0 {
            best = (cost, split);
        }
    }
    best.1
}

/// Root mean square of the relative residuals of the free (unconstrained)
/// line through the included points `first..=last` of `(bytes, time_ns)`:
/// how well any straight line describes them, whatever the physical
/// constraints then make of it (a bandwidth-bound segment held at alpha =
/// 0 scatters more about its constrained line, and still fits).
pub(crate) fn free_rms_rel(
    bytes: &[f64],
    time_ns: &[f64],
    include: &[bool],
    first: usize,
    last: usize,
) -> f64 {
    let mut m = Moments::default();
    let mut count = 0usize;
    for i in (first..=last).filter(|&i| include[i]) {
        m.push(bytes[i], time_ns[i]);
        count += 1;
    }
    if count < 3 {
        return 0.0;
    }
    (m.free_rss().max(0.0) / count as f64).sqrt()
}

/// Residual sum of squares of the free line through `(n, t)`.
fn free_rss(n: &[f64], t: &[f64]) -> f64 {
    let mut m = Moments::default();
    for (&x, &y) in n.iter().zip(t) {
        m.push(x, y);
    }
    m.free_rss()
}

/// Most points whose every index the segmentation tries as a break.
/// Above it, breaks are first sought on a grid of about this many evenly
/// spaced indices, then each is moved to its best place within one grid
/// step: the work is then linear in the points (a full search is
/// quadratic, and a result of 4,096 dense sizes took seconds per fit).
/// Every schedule wulf makes has far fewer points: its fits are exact.
pub const MAX_EXACT_POINTS: usize = 512;

/// Start indices of the BIC-best segmentation of `(n, t)` (first is 0).
/// `floor` is F of the module notes.
fn best_partition(n: &[f64], t: &[f64], rss_one: f64, floor: f64) -> Vec<usize> {
    let m = n.len();
    let max_k = MAX_SEGMENTS.min(m / MIN_SEGMENT_POINTS).max(1);
    let bic = |rss: f64, k: usize| {
        let mf = m as f64;
        mf * (rss.max(floor) / mf).ln() + 3.0 * k as f64 * mf.ln()
    };
    let mut best = (bic(rss_one, 1), vec![0]);
    if rss_one <= floor {
        // No split can lower the floored criterion; skip the work.
        return best.1;
    }
    let step = m.div_ceil(MAX_EXACT_POINTS);
    // The indices a segment may start at (and m, the end of the last).
    let cuts: Vec<usize> = (0..m).step_by(step).chain([m]).collect();
    // prev[c]: least RSS covering points 0..cuts[c] with k - 1 segments.
    let mut prev: Vec<f64> = cuts
        .iter()
        .map(|&c| {
            if c >= MIN_SEGMENT_POINTS {
                free_rss(&n[..c], &t[..c])
            } else {
                f64::INFINITY
            }
        })
        .collect();
    // starts_of[k - 2][c]: the cut starting the last segment in the best
    // k-split of 0..cuts[c].
    let mut starts_of: Vec<Vec<usize>> = Vec::new();
    for k in 2..=max_k {
        let mut cur = vec![f64::INFINITY; cuts.len()];
        let mut arg = vec![0usize; cuts.len()];
        for (b, &end) in cuts.iter().enumerate() {
            if end < k * MIN_SEGMENT_POINTS {
                continue;
            }
            // Grow the last segment leftwards from end - 1, one point at a
            // time, trying the cuts it passes.
            let mut moments = Moments::default();
            let mut a = b;
            for i in (1..end).rev() {
                moments.push(n[i], t[i]);
                if i < (k - 1) * MIN_SEGMENT_POINTS {
                    break;
                }
                while cuts[a] > i {
                    a -= 1;
                }
                if cuts[a] != i || end - i < MIN_SEGMENT_POINTS {
                    continue;
                }
                let total = prev[a] + moments.free_rss();
                if total < cur[b] {
                    cur[b] = total;
                    arg[b] = a;
                }
            }
        }
        starts_of.push(arg);
        let last = cuts.len() - 1;
        if !cur[last].is_finite() {
            // No k-split (or an interrupted search): nothing to judge.
            prev = cur;
            continue;
        }
        let mut starts: Vec<usize> = backtrack(&starts_of, last)
            .iter()
            .map(|&c| cuts[c])
            .collect();
        // On a grid, each k is judged by its refined breaks: a change
        // between grid points would otherwise cost k - 1 segments more.
        let rss = if step > 1 {
            refine(n, t, &mut starts, step);
            partition_rss(n, t, &starts)
        } else {
            cur[last]
        };
        let score = bic(rss, k);
        if score < best.0 {
            best = (score, starts);
        }
        prev = cur;
    }
    best.1
}

/// Total residual of the free lines of the segments starting at `starts`.
fn partition_rss(n: &[f64], t: &[f64], starts: &[usize]) -> f64 {
    let ends = starts.iter().skip(1).copied().chain([n.len()]);
    starts
        .iter()
        .zip(ends)
        .map(|(&a, b)| free_rss(&n[a..b], &t[a..b]))
        .sum()
}

/// Move each break of `starts` (a segmentation of `(n, t)` found on a grid
/// of `step`) to the index within one step either side that leaves the
/// two segments beside it the least residual, each at least
/// [`MIN_SEGMENT_POINTS`] long.
fn refine(n: &[f64], t: &[f64], starts: &mut [usize], step: usize) {
    for s in 1..starts.len() {
        let from = starts[s - 1];
        let to = starts.get(s + 1).copied().unwrap_or(n.len());
        let lo = starts[s]
            .saturating_sub(step - 1)
            .max(from + MIN_SEGMENT_POINTS);
        let hi = (starts[s] + step - 1).min(to.saturating_sub(MIN_SEGMENT_POINTS));
        let mut best = (f64::INFINITY, starts[s]);
        for at in lo..=hi {
            let rss = free_rss(&n[from..at], &t[from..at]) + free_rss(&n[at..to], &t[at..to]);
            if rss < best.0 {
                best = (rss, at);
            }
        }
        starts[s] = best.1;
    }
}

/// The cuts starting each segment of the best split of 0..cuts[last]
/// into `starts_of.len() + 1` parts (indices into the cuts).
fn backtrack(starts_of: &[Vec<usize>], last: usize) -> Vec<usize> {
    let mut starts = Vec::with_capacity(starts_of.len() + 1);
    let mut end = last;
    for arg in starts_of.iter().rev() {
        let start = arg[end];
        starts.push(start);
        end = start;
    }
    starts.push(0);
    starts.reverse();
    starts
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sizes() -> Vec<f64> {
        (0..40).map(|i| 2f64.powf(i as f64 / 2.0)).collect()
    }

    #[test]
    fn two_regimes_are_split_at_the_change() {
        let n = sizes();
        // Above 2^12 the slope doubles and the intercept jumps.
        let t: Vec<f64> = n
            .iter()
            .map(|&b| {
                if b < 4096.0 {
                    1000.0 + b
                } else {
                    9000.0 + 2.0 * b
                }
            })
            .collect();
        let segs = fit_segments(&n, &t, &vec![0.0; n.len()], &vec![true; n.len()]);
        assert_eq!(segs.len(), 2);
        assert_eq!(n[segs[1].first], 4096.0);
        assert!((segs[1].line.alpha_ns - 9000.0).abs() < 1e-6);
        assert_eq!((segs[0].first, segs[1].last), (0, n.len() - 1));
    }

    #[test]
    fn excluded_gap_points_join_the_line_they_fit() {
        let n = sizes();
        let t: Vec<f64> = n
            .iter()
            .map(|&b| {
                if b < 4096.0 {
                    1000.0 + b
                } else {
                    9000.0 + 2.0 * b
                }
            })
            .collect();
        let mut include = vec![true; n.len()];
        // Hide the first three points of the second regime.
        let at = n.iter().position(|&b| b == 4096.0).unwrap();
        for flag in &mut include[at..at + 3] {
            *flag = false;
        }
        let segs = fit_segments(&n, &t, &vec![0.0; n.len()], &include);
        assert_eq!(segs.len(), 2);
        assert_eq!(segs[1].first, at);
        assert_eq!(segs[0].last, at - 1);
    }

    #[test]
    fn noiseless_physical_pieces_are_recovered_exactly() {
        // Three regimes, each a physical line: eager, rendezvous (a
        // handshake added), then a faster zero-copy path with less start-up.
        let laws = [(1000.0, 0.5), (40_000.0, 0.5), (5000.0, 0.25)];
        let law = |b: f64| {
            let (a, s) = if b < 8192.0 {
                laws[0]
            } else if b < 262_144.0 {
                laws[1]
            } else {
                laws[2]
            };
            a + s * b
        };
        let n: Vec<f64> = (0..60).map(|i| 2f64.powf(i as f64 / 2.5)).collect();
        let t: Vec<f64> = n.iter().map(|&b| law(b)).collect();
        let segs = fit_segments(&n, &t, &vec![0.0; n.len()], &vec![true; n.len()]);
        assert_eq!(segs.len(), 3, "{segs:?}");
        for (seg, &(a, s)) in segs.iter().zip(&laws) {
            assert!((seg.line.alpha_ns - a).abs() < 1e-6 * a, "{seg:?}");
            assert!((seg.line.ns_per_byte - s).abs() < 1e-9, "{seg:?}");
            assert!(seg.line.rss_rel < 1e-20);
        }
        assert_eq!(
            n[segs[1].first],
            n.iter().copied().find(|&b| b >= 8192.0).unwrap()
        );
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 64, failure_persistence: None, ..Default::default() })]

        /// Whatever the curve (falling times, knees, wild points), no
        /// segment has a negative start-up time or a negative slope.
        #[test]
        fn no_segment_is_unphysical(times in proptest::collection::vec(1.0f64..1e8, 10..60)) {
            let n: Vec<f64> = (0..times.len()).map(|i| 2f64.powf(i as f64 / 3.0)).collect();
            let segs = fit_segments(&n, &times, &vec![0.0; n.len()], &vec![true; n.len()]);
            for s in &segs {
                proptest::prop_assert!(s.line.alpha_ns >= 0.0 && s.line.ns_per_byte >= 0.0, "{:?}", s);
            }
        }
    }

    /// Above [`MAX_EXACT_POINTS`] breaks are sought on a grid, then
    /// refined: a change between grid points is still found exactly.
    #[test]
    fn a_dense_curve_is_split_exactly_through_the_grid() {
        let m = 4 * MAX_EXACT_POINTS;
        let n: Vec<f64> = (1..=m).map(|b| b as f64).collect();
        // The change is at index 1001, off the grid of step 4.
        let t: Vec<f64> = n
            .iter()
            .map(|&b| {
                if b <= 1001.0 {
                    1000.0 + b
                } else {
                    9000.0 + 2.0 * b
                }
            })
            .collect();
        let segs = fit_segments(&n, &t, &vec![0.0; m], &vec![true; m]);
        assert_eq!(segs.len(), 2, "{segs:?}");
        assert_eq!(segs[1].first, 1001);
        assert!((segs[1].line.alpha_ns - 9000.0).abs() < 1e-6 * 9000.0);
    }

    #[test]
    fn too_few_points_for_a_split() {
        let n = [1.0, 2.0, 4.0, 8.0];
        let t = [10.0, 11.0, 500.0, 900.0];
        let segs = fit_segments(&n, &t, &[0.0; 4], &[true; 4]);
        assert_eq!(segs.len(), 1);
        assert!(fit_segments(&n[..1], &t[..1], &[0.0], &[true]).is_empty());
    }
}
