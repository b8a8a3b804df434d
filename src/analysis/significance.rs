//! Significance of switch-overs: a boundary between two Hockney segments
//! stays only when the measurements on one side cannot be explained by the
//! other side's line.
//!
//! The information criterion of the segmentation ([`super::hockney`])
//! weighs residuals against the number of parameters, but it trusts every
//! median equally. A handful of points slowed together by something
//! outside the measurement (another process, a frequency change) makes a
//! cheap extra segment. So each boundary is tested against the intervals
//! themselves: the points of the later segment are compared with the band
//! the earlier segment's line allows at their sizes (alpha and slope each
//! anywhere in their 95% intervals, which is wider than the line's own
//! confidence band, so the test is conservative), widened by the noise
//! floor [`NOISE_FLOOR_REL`]; and the points of the earlier segment with
//! the later line's band. A point is **apart** when its confidence interval
//! is disjoint from that band. The boundary is significant when at least
//! [`MIN_APART_POINTS`] points of each side are apart from the other side's
//! line: a real regime change (a step, a bend, a faster protocol) puts each
//! line off the other side's points, while a few points slowed together
//! only bend the line they join, and the other side's line still passes
//! through their intervals. Otherwise the two segments are merged and fitted again as one; the
//! test repeats until every remaining boundary is significant.

use super::hockney::{SegmentFit, NOISE_FLOOR_REL};
use super::line_fit::LineFit;

/// Points of a segment that must lie apart from the neighbouring line for
/// the boundary to count (a majority of the shortest segment allowed).
pub const MIN_APART_POINTS: usize = 3;

/// The band of times `line` allows at `n` bytes: both parameters anywhere
/// in their intervals, then widened by the noise floor.
fn band(line: &LineFit, n: f64) -> (f64, f64) {
    let (a_lo, a_hi) = line.alpha_ci_ns.unwrap_or((line.alpha_ns, line.alpha_ns));
    let (s_lo, s_hi) = line
        .ns_per_byte_ci
        .unwrap_or((line.ns_per_byte, line.ns_per_byte));
    (
        (a_lo + s_lo * n) / (1.0 + NOISE_FLOOR_REL),
        (a_hi + s_hi * n) * (1.0 + NOISE_FLOOR_REL),
    )
}

/// Points among `range` (included ones only) whose interval is disjoint
/// from `line`'s band.
fn apart(line: &LineFit, range: std::ops::RangeInclusive<usize>, curve: &Points<'_>) -> usize {
    range
        .filter(|&i| curve.include[i])
        .filter(|&i| {
            let (lo, hi) = band(line, curve.bytes[i]);
            curve.low[i] > hi || curve.high[i] < lo
        })
        .count()
}

/// The curve as the test sees it (ascending sizes, times in ns).
pub(crate) struct Points<'a> {
    /// Sizes.
    pub bytes: &'a [f64],
    /// Median times.
    pub median: &'a [f64],
    /// Lower bounds of the medians' intervals.
    pub low: &'a [f64],
    /// Upper bounds of the medians' intervals.
    pub high: &'a [f64],
    /// Points that shape lines (drop-outs excluded).
    pub include: &'a [bool],
}

/// Whether the boundary between `a` and the following `b` is significant.
fn significant(a: &SegmentFit, b: &SegmentFit, curve: &Points<'_>) -> bool {
    apart(&a.line, b.first..=b.last, curve) >= MIN_APART_POINTS
        && apart(&b.line, a.first..=a.last, curve) >= MIN_APART_POINTS
}

/// Merge neighbouring segments until every boundary left is significant
/// (see the module notes). Merges the least distinct pair first.
pub(crate) fn merge_insignificant(
    mut segments: Vec<SegmentFit>,
    curve: &Points<'_>,
) -> Vec<SegmentFit> {
    loop {
        let weakest = (1..segments.len())
            .filter(|&k| !significant(&segments[k - 1], &segments[k], curve))
            .min_by_key(|&k| {
                let (a, b) = (&segments[k - 1], &segments[k]);
                apart(&a.line, b.first..=b.last, curve) + apart(&b.line, a.first..=a.last, curve)
            });
        let Some(k) = weakest else {
            return segments;
        };
        if !merge_pair(&mut segments, k, curve) {
            return segments;
        }
    }
}

/// Merge every segment whose first point satisfies `vetoed` into the one
/// before it (a switch-over the analysis must not report).
pub(crate) fn merge_at(
    mut segments: Vec<SegmentFit>,
    curve: &Points<'_>,
    vetoed: impl Fn(usize) -> bool,
) -> Vec<SegmentFit> {
    let mut k = 1;
    while k < segments.len() {
        if vetoed(segments[k].first) && merge_pair(&mut segments, k, curve) {
            continue;
        }
        k += 1;
    }
    segments
}

/// Replace segments k - 1 and k by one line over both; false when too few
/// points are included to fit one.
fn merge_pair(segments: &mut Vec<SegmentFit>, k: usize, curve: &Points<'_>) -> bool {
    let (first, last) = (segments[k - 1].first, segments[k].last);
    let kept: Vec<usize> = (first..=last).filter(|&i| curve.include[i]).collect();
    let n: Vec<f64> = kept.iter().map(|&i| curve.bytes[i]).collect();
    let t: Vec<f64> = kept.iter().map(|&i| curve.median[i]).collect();
    let Some(line) = LineFit::fit(&n, &t) else {
        return false;
    };
    segments[k - 1] = SegmentFit { first, last, line };
    segments.remove(k);
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::hockney::fit_segments;

    fn sizes() -> Vec<f64> {
        (0..50).map(|i| 2f64.powf(i as f64 / 2.5)).collect()
    }

    fn run(t: &[f64], width: f64) -> Vec<SegmentFit> {
        let n = sizes();
        let low: Vec<f64> = t.iter().map(|x| x * (1.0 - width)).collect();
        let high: Vec<f64> = t.iter().map(|x| x * (1.0 + width)).collect();
        let include = vec![true; n.len()];
        let segs = fit_segments(&n, t, &vec![0.0; n.len()], &include);
        let curve = Points {
            bytes: &n,
            median: t,
            low: &low,
            high: &high,
            include: &include,
        };
        merge_insignificant(segs, &curve)
    }

    #[test]
    fn a_real_step_stays() {
        let t: Vec<f64> = sizes()
            .iter()
            .map(|&b| 1000.0 + b + if b >= 4096.0 { 20_000.0 } else { 0.0 })
            .collect();
        assert_eq!(run(&t, 0.01).len(), 2);
    }

    #[test]
    fn a_few_slow_points_inside_their_neighbours_intervals_merge() {
        // Five points 8% slow, but every interval is +-10%: the trials do
        // not vouch for a regime of their own.
        let t: Vec<f64> = sizes()
            .iter()
            .enumerate()
            .map(|(i, &b)| (1000.0 + b) * if (20..25).contains(&i) { 1.08 } else { 1.0 })
            .collect();
        let segs = run(&t, 0.10);
        assert_eq!(segs.len(), 1, "{segs:?}");
        assert_eq!((segs[0].first, segs[0].last), (0, 49));
    }
}
