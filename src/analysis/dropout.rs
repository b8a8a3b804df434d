//! Drop-outs: points whose throughput falls below their neighbours' by more
//! than the trials say noise can explain.
//!
//! Rule 1, deeper than the noise. For two points L < R at most
//! [`DROPOUT_MAX_SPAN_RATIO`] apart in size (and [`MAX_RUN_POINTS`] points
//! between them, which bounds the work), the baseline between them is
//! the straight time line through their conservative ends (the upper
//! confidence bound of each median time): between two sizes the Hockney
//! model says time is linear in size, so on a healthy curve every point
//! lies on or below that chord whatever its latency and bandwidth, while a
//! linear interpolation of throughput would sag below a rising curve and
//! cry wolf. Every point k strictly between L and R is a drop-out when, in
//! throughput terms,
//!
//! `upper CI bound of k's throughput < baseline / (1 + s)`,
//! `s = max(D / (1 - D), w_L, w_k, w_R, median of w around L..R)`,
//!
//! i.e. k's lower time bound exceeds the chord by the factor 1 + s, where
//! D = [`DROPOUT_MIN_DEPTH`] and w_i is the full width of point i's interval
//! relative to its median; "around" means from [`WIDTH_REACH`] points
//! before L to as many after R. Pitting the point's most favourable bound
//! against its neighbours' least favourable ones means a difference the
//! trials cannot vouch for is not flagged. The depth margin D keeps smooth,
//! significant but small departures from the Hockney shape (cache effects)
//! out. The width terms guard the many (L, R) pairs tried against the few
//! bounds that miss, and intervals that come out narrow by luck (the local
//! median): with well-measured points (w of a percent or two) they are
//! inactive; with six trials of 20% noise they keep a 10% dip unproven and
//! the rest of the sweep quiet, while an 80% drop still stands out.
//!
//! Rule 2, not a step. A drop-out is a fall from which the curve returns
//! to its regime; a lasting change is a switch-over, the segmented fit's
//! business. So the pair is rejected when its interior points lie on one
//! straight time line with the points of the octave ending at L (sizes
//! L / 2 to L, [`SIDE_SPAN_RATIO`]), or with those of the octave starting
//! at R: weighted least squares over those points, each then within its
//! interval widened by the factor 1 + max([`NOISE_FLOOR_REL`], median of w
//! around L..R). The tolerance of "one line" is the noise (1%, the
//! piecewise fit's floor, for well-measured points), not the depth margin,
//! or a tilted line would swallow a 12% dip. That is what a step looks
//! like: time jumping up at a slower protocol (LAM's short/long switch at
//! 128 KB in Farrell and Ong 2003, whose extra cost is then amortised: the points after
//! the switch sit on the new line with those beyond R) or down at a faster
//! one (the points before the switch sit on the old line with those before
//! L); the chord from one level to the other would otherwise make the
//! points beside the jump look like a dip. The side spans an octave rather
//! than a number of points because NetPIPE's sizes come in clusters 3
//! bytes apart: a line through two clusters fits any two clusters, and a
//! slope through two points of one cluster is all noise. A side of a
//! single point is not tested. Dips a point or two apart (the ACEnic
//! driver's many drop-outs in Farrell and Ong 2003) are each found: a side holding
//! another dip is not on a line with the first.
//!
//! Rule 3, it comes back. A drop-out is a dip the curve comes back from;
//! a lasting level change is a step, even where the sizes after it do not
//! lie on one line (a transition that goes on steepening past a cache
//! level, a staircase of later steps) and rule 2 cannot see it. A run with
//! bounding good points L and R is dropped when the throughput stays below
//! L's from R on: every point from R to 2R (the octave after R, or to the
//! end of the sweep) has its upper throughput bound below L's lower bound
//! by the factor 1 + s of rule 1. Throughput, not a line extrapolated from
//! before L, is what the regime could not have produced: with alpha >= 0 a
//! Hockney line's throughput never falls as sizes grow, so a healthy
//! curve that comes back has, at R, at least L's throughput. A step to a
//! slower protocol in the latency-bound sizes (where throughput still
//! grows past it) is left to rule 2.
//!
//! Runs. Points marked by any (L, R) pair are merged into maximal runs; a
//! run's depth is the largest relative throughput deficit of its medians
//! against the median chord between the unmarked points bounding it. The
//! first and last points can never be drop-outs: a dip needs a neighbour on
//! each side.
//!
//! Limits. The chord is the Hockney shape: a smooth curve whose time grows
//! markedly slower than linearly over two octaves (bandwidth rising with
//! size far faster than latency amortisation explains) sags below it and
//! can show as a shallow drop-out of the sizes between. A point with five
//! trials or fewer has only its min..max as an interval, with less than 95%
//! coverage (75% for three trials), and all its trials fall on one side of
//! the truth often enough that in a sweep of such points (three trials of
//! 20% noise) about one in ten shows a spurious drop-out. The repetition
//! policy should keep six trials or more.

use super::hockney::{LineFit, NOISE_FLOOR_REL};

/// Smallest throughput deficit reported (5%), measured from the point's
/// upper throughput bound to the neighbours' lower bounds.
pub const DROPOUT_MIN_DEPTH: f64 = 0.05;

/// Widest pair of bounding neighbours considered, as a size ratio R / L
/// (two octaves): wide enough for the 32-64 KB socket-buffer dip with its
/// neighbours, narrow enough that the chord stays a good local baseline.
pub const DROPOUT_MAX_SPAN_RATIO: f64 = 4.0;

/// Size ratio spanned by the side fitted with the run in the step test:
/// the points from L / 2 to L, or from R to 2 R (one octave; see the
/// module notes).
pub const SIDE_SPAN_RATIO: f64 = 2.0;

/// Most points between L and R, and most points of a side in the step
/// test: a bound on the work per pair whatever the sizes. A schedule has
/// about a dozen points in two octaves; only a sweep of sizes packed far
/// closer (`--sizes` of every byte) reaches it, and there a drop-out of
/// more points than this is a level that lasts, not a dip.
pub const MAX_RUN_POINTS: usize = 32;

/// How many points before L and after R also count towards the local
/// median width of the intervals (see the module notes).
pub const WIDTH_REACH: usize = 6;

/// A run of dropped points, by index.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Run {
    /// First dropped point.
    pub first: usize,
    /// Last dropped point.
    pub last: usize,
    /// Largest relative throughput deficit of the medians, in (0, 1).
    pub depth_fraction: f64,
}

/// Median of a few values (the local width of the intervals).
pub(crate) fn local_median(values: &[f64]) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    crate::stats::quantile_sorted(&v, 0.5)
}

/// Whether the points `pts` lie on one straight time line: a weighted
/// least-squares fit (relative residuals, as the Hockney fits) passes
/// within every point's interval widened by the factor 1 + `slack`.
pub(crate) fn on_one_line(
    pts: &[usize],
    bytes: &[f64],
    median_ns: &[f64],
    ci_low_ns: &[f64],
    ci_high_ns: &[f64],
    slack: f64,
) -> bool {
    let n: Vec<f64> = pts.iter().map(|&i| bytes[i]).collect();
    let t: Vec<f64> = pts.iter().map(|&i| median_ns[i]).collect();
    let Some(line) = LineFit::fit(&n, &t) else {
        return true;
    };
    pts.iter().all(|&i| {
        let fit = line.predict_ns(bytes[i]);
        fit >= ci_low_ns[i] / (1.0 + slack) && fit <= ci_high_ns[i] * (1.0 + slack)
    })
}

/// Time at `x` on the straight line through (x0, y0) and (x1, y1).
fn chord(x0: f64, y0: f64, x1: f64, y1: f64, x: f64) -> f64 {
    y0 + (y1 - y0) * (x - x0) / (x1 - x0)
}

/// Find the drop-out runs of a curve (ascending `bytes`; median and CI
/// bounds of the time in ns). See the module notes for the rule.
pub(crate) fn find_dropouts(
    bytes: &[f64],
    median_ns: &[f64],
    ci_low_ns: &[f64],
    ci_high_ns: &[f64],
) -> Vec<Run> {
    let len = bytes.len();
    let mut marked = vec![false; len];
    let factor = 1.0 / (1.0 - DROPOUT_MIN_DEPTH);
    let width: Vec<f64> = (0..len)
        .map(|i| (ci_high_ns[i] - ci_low_ns[i]) / median_ns[i])
        .collect();
    // Rule 1 for the pair (l, r) with the slack `slack` before the widths.
    let deeper = |l: usize, r: usize, slack: f64| {
        (l + 1..r).all(|k| {
            let base = chord(bytes[l], ci_high_ns[l], bytes[r], ci_high_ns[r], bytes[k]);
            let s = slack.max(width[l]).max(width[k]).max(width[r]);
            ci_low_ns[k] > (1.0 + s) * base
        })
    };
    for l in 0..len {
        for r in l + 2..len {
            if bytes[r] > DROPOUT_MAX_SPAN_RATIO * bytes[l] || r - l - 1 > MAX_RUN_POINTS {
                break;
            }
            // The slack is at least `factor - 1` and the widths, whatever
            // the local noise: a pair that is not deeper even so is not
            // deeper at all, and its median width is never sorted (that
            // sort, for every pair, made dense sweeps cubic).
            if !deeper(l, r, factor - 1.0) {
                continue;
            }
            let window = l.saturating_sub(WIDTH_REACH)..len.min(r + 1 + WIDTH_REACH);
            let noise = local_median(&width[window]);
            let slack = (factor - 1.0).max(noise);
            let line_slack = NOISE_FLOOR_REL.max(noise);
            let on_a_side_line = |side: std::ops::Range<usize>| {
                side.len() >= 2 && {
                    let pts: Vec<usize> = side.chain(l + 1..r).collect();
                    on_one_line(&pts, bytes, median_ns, ci_low_ns, ci_high_ns, line_slack)
                }
            };
            let left_from = (l.saturating_sub(MAX_RUN_POINTS)..=l)
                .find(|&i| bytes[i] * SIDE_SPAN_RATIO >= bytes[l])
                .unwrap_or(l);
            let right_to = (r..len)
                .take(MAX_RUN_POINTS + 1)
                .take_while(|&i| bytes[i] <= bytes[r] * SIDE_SPAN_RATIO)
                .last()
                .unwrap_or(r);
            let dip = deeper(l, r, slack)
                && !on_a_side_line(left_from..l + 1)
                && !on_a_side_line(r..right_to + 1);
            if dip {
                for flag in &mut marked[l + 1..r] {
                    *flag = true;
                }
            }
        }
    }
    let mut runs = Vec::new();
    let stays_down = |first: usize, last: usize| {
        let (l, r) = (first - 1, last + 1);
        let window = l.saturating_sub(WIDTH_REACH)..len.min(r + 1 + WIDTH_REACH);
        let s = (factor - 1.0).max(local_median(&width[window]));
        // Throughput bounds, bytes per ns.
        let l_low = bytes[l] / ci_high_ns[l];
        (r..len)
            .take(MAX_RUN_POINTS + 1)
            .take_while(|&j| j == r || bytes[j] <= bytes[r] * SIDE_SPAN_RATIO)
            .all(|j| bytes[j] / ci_low_ns[j] * (1.0 + s) < l_low)
    };
    let mut k = 0;
    while k < len {
        if !marked[k] {
            k += 1;
            continue;
        }
        let first = k;
        while k + 1 < len && marked[k + 1] {
            k += 1;
        }
        let last = k;
        k += 1;
        if stays_down(first, last) {
            continue;
        }
        let (l, r) = (first - 1, last + 1);
        let depth_fraction = (first..=last)
            .map(|i| {
                let base = chord(bytes[l], median_ns[l], bytes[r], median_ns[r], bytes[i]);
                1.0 - base / median_ns[i]
            })
            .fold(0.0f64, f64::max);
        runs.push(Run {
            first,
            last,
            depth_fraction,
        });
    }
    runs
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Hockney times with an exact interval of +-0.5% around each median.
    fn curve(bytes: &[f64], slow: impl Fn(f64) -> f64) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
        let med: Vec<f64> = bytes
            .iter()
            .map(|&b| (2000.0 + b / 2.0) * slow(b))
            .collect();
        let lo = med.iter().map(|t| t * 0.995).collect();
        let hi = med.iter().map(|t| t * 1.005).collect();
        (med, lo, hi)
    }

    fn sizes() -> Vec<f64> {
        (0..60).map(|i| 2f64.powf(i as f64 / 3.0).round()).collect()
    }

    #[test]
    fn clean_curve_has_none() {
        let b = sizes();
        let (m, lo, hi) = curve(&b, |_| 1.0);
        assert!(find_dropouts(&b, &m, &lo, &hi).is_empty());
    }

    #[test]
    fn single_point_dip_is_found_with_its_depth() {
        let b = sizes();
        let (m, lo, hi) = curve(&b, |x| if x == b[30] { 1.25 } else { 1.0 });
        let runs = find_dropouts(&b, &m, &lo, &hi);
        assert_eq!(runs.len(), 1);
        assert_eq!((runs[0].first, runs[0].last), (30, 30));
        // throughput falls to 1 / 1.25 = 80% of the baseline.
        assert!((runs[0].depth_fraction - 0.2).abs() < 1e-9);
    }

    #[test]
    fn a_run_of_points_is_one_dropout() {
        let b = sizes();
        let (m, lo, hi) = curve(&b, |x| {
            if (b[40]..=b[43]).contains(&x) {
                5.0
            } else {
                1.0
            }
        });
        let runs = find_dropouts(&b, &m, &lo, &hi);
        assert_eq!(runs.len(), 1);
        assert_eq!((runs[0].first, runs[0].last), (40, 43));
        assert!((runs[0].depth_fraction - 0.8).abs() < 1e-9);
    }

    #[test]
    fn shallow_or_uncertain_dips_are_not_flagged() {
        let b = sizes();
        // 3% deeper than the neighbours: significant but below the margin.
        let (m, lo, hi) = curve(&b, |x| if x == b[30] { 1.03 } else { 1.0 });
        assert!(find_dropouts(&b, &m, &lo, &hi).is_empty());
        // 15% slower median, but the trials spread +-20%: noise can explain it.
        let (m, mut lo, mut hi) = curve(&b, |x| if x == b[30] { 1.15 } else { 1.0 });
        lo[30] = m[30] * 0.8;
        hi[30] = m[30] * 1.2;
        assert!(find_dropouts(&b, &m, &lo, &hi).is_empty());
    }

    #[test]
    fn neighbouring_dips_are_each_found() {
        let b = sizes();
        let hit = [30usize, 32, 34];
        let (m, lo, hi) = curve(&b, |x| {
            if hit.iter().any(|&i| b[i] == x) {
                1.5
            } else {
                1.0
            }
        });
        let runs = find_dropouts(&b, &m, &lo, &hi);
        let found: Vec<(usize, usize)> = runs.iter().map(|r| (r.first, r.last)).collect();
        assert_eq!(found, vec![(30, 30), (32, 32), (34, 34)]);
    }

    #[test]
    fn steps_either_way_are_not_dips() {
        let b = sizes();
        // A faster protocol from b[40] on: time drops by 20%.
        let (m, lo, hi) = curve(&b, |x| if x >= b[40] { 0.8 } else { 1.0 });
        assert!(find_dropouts(&b, &m, &lo, &hi).is_empty());
        // A handshake from b[40] on: 30% of t(b[40]) added to every size,
        // amortised as sizes grow (LAM's short/long switch).
        let extra = 0.3 * (2000.0 + b[40] / 2.0);
        let med: Vec<f64> = b
            .iter()
            .map(|&x| 2000.0 + x / 2.0 + if x >= b[40] { extra } else { 0.0 })
            .collect();
        let lo: Vec<f64> = med.iter().map(|t| t * 0.995).collect();
        let hi: Vec<f64> = med.iter().map(|t| t * 1.005).collect();
        assert!(find_dropouts(&b, &med, &lo, &hi).is_empty());
    }

    #[test]
    fn ends_and_lasting_slowdowns_are_not_dips() {
        let b = sizes();
        let (m, lo, hi) = curve(&b, |x| if x == b[0] || x == b[59] { 2.0 } else { 1.0 });
        assert!(find_dropouts(&b, &m, &lo, &hi).is_empty());
        // Bandwidth halves for good from b[40] on: a regime, not a drop-out.
        let (m, lo, hi) = curve(&b, |x| if x >= b[40] { 2.0 } else { 1.0 });
        let runs = find_dropouts(&b, &m, &lo, &hi);
        assert!(runs.is_empty(), "{runs:?}");
    }
}
