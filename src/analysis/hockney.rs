//! Hockney fits t(n) = alpha + n / beta: one line, and a piecewise fit whose
//! change points are the switch-overs.
//!
//! Lines are fitted by weighted least squares on the median times with
//! weights 1 / t_i^2, i.e. on relative residuals (t_i - fit) / t_i. Timing
//! noise is roughly proportional to the time, and the sizes span seven
//! decades: unweighted least squares would let the megabyte messages decide
//! everything and fit the latency of small ones with a 100% error.
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

/// A fitted line t = alpha_ns + ns_per_byte * n.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LineFit {
    /// Intercept in ns: the latency the line extrapolates to at 0 bytes.
    pub alpha_ns: f64,
    /// Slope in ns per byte (1 / beta).
    pub ns_per_byte: f64,
    /// Sum of squared relative residuals of the fitted points.
    pub rss_rel: f64,
    /// Points fitted.
    pub points: usize,
}

impl LineFit {
    /// Fit a line to `(bytes, time_ns)` pairs; `None` for fewer than 2.
    pub fn fit(bytes: &[f64], time_ns: &[f64]) -> Option<LineFit> {
        let mut m = Moments::default();
        for (&n, &t) in bytes.iter().zip(time_ns) {
            m.push(n, t);
        }
        (m.count >= 2).then(|| m.fit())
    }

    /// Predicted time in ns for a message of `bytes`.
    pub fn predict_ns(&self, bytes: f64) -> f64 {
        self.alpha_ns + self.ns_per_byte * bytes
    }

    /// Asymptotic bandwidth beta in bit/s; `None` when time does not grow
    /// with size on this line (a latency-bound stretch).
    pub fn beta_bits_per_s(&self) -> Option<f64> {
        (self.ns_per_byte > 0.0 && self.ns_per_byte.is_finite()).then(|| 8e9 / self.ns_per_byte)
    }

    /// Root mean square relative residual.
    pub fn rms_rel(&self) -> f64 {
        (self.rss_rel / self.points.max(1) as f64).sqrt()
    }
}

/// Weighted first and second moments, updated one point at a time (West
/// 1979, "Updating mean and variance estimates", CACM 22:532): centred
/// co-moments avoid the cancellation of raw sums of n^2 over 8 MiB sizes.
#[derive(Debug, Clone, Copy, Default)]
struct Moments {
    count: usize,
    weight: f64,
    mean_n: f64,
    mean_t: f64,
    c_nn: f64,
    c_nt: f64,
    c_tt: f64,
}

impl Moments {
    fn push(&mut self, n: f64, t: f64) {
        let w = 1.0 / (t * t);
        self.count += 1;
        self.weight += w;
        let dn = n - self.mean_n;
        let dt = t - self.mean_t;
        self.mean_n += dn * w / self.weight;
        self.mean_t += dt * w / self.weight;
        self.c_nn += w * dn * (n - self.mean_n);
        self.c_nt += w * dn * (t - self.mean_t);
        self.c_tt += w * dt * (t - self.mean_t);
    }

    fn fit(&self) -> LineFit {
        let (slope, rss) = if self.c_nn > 0.0 {
            let s = self.c_nt / self.c_nn;
            (s, (self.c_tt - s * self.c_nt).max(0.0))
        } else {
            (0.0, self.c_tt.max(0.0))
        };
        LineFit {
            alpha_ns: self.mean_t - slope * self.mean_n,
            ns_per_byte: slope,
            rss_rel: rss,
            points: self.count,
        }
    }
}

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
    let Some(whole) = LineFit::fit(&n, &t) else {
        return Vec::new();
    };
    let floor: f64 = kept
        .iter()
        .map(|&i| half_width_rel[i].max(NOISE_FLOOR_REL).powi(2))
        .sum();
    let starts = best_partition(&n, &t, whole.rss_rel, floor);
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
    // prev[j]: least RSS covering points 0..=j with k - 1 segments.
    let mut prev: Vec<f64> = (0..m)
        .map(|j| {
            if j + 1 >= MIN_SEGMENT_POINTS {
                LineFit::fit(&n[..=j], &t[..=j]).unwrap().rss_rel
            } else {
                f64::INFINITY
            }
        })
        .collect();
    // starts_of[k - 2][j]: start of the last segment in the best k-split of 0..=j.
    let mut starts_of: Vec<Vec<usize>> = Vec::new();
    for k in 2..=max_k {
        let mut cur = vec![f64::INFINITY; m];
        let mut arg = vec![0usize; m];
        for j in (k * MIN_SEGMENT_POINTS - 1)..m {
            // Grow the last segment leftwards from j, one point at a time.
            let mut moments = Moments::default();
            for i in (1..=j).rev() {
                moments.push(n[i], t[i]);
                if j + 1 - i < MIN_SEGMENT_POINTS {
                    continue;
                }
                if i < (k - 1) * MIN_SEGMENT_POINTS {
                    break;
                }
                let total = prev[i - 1] + moments.fit().rss_rel;
                if total < cur[j] {
                    cur[j] = total;
                    arg[j] = i;
                }
            }
        }
        starts_of.push(arg);
        let score = bic(cur[m - 1], k);
        if score < best.0 {
            best = (score, backtrack(&starts_of, m));
        }
        prev = cur;
    }
    best.1
}

/// Segment starts of the best split of 0..m into `starts_of.len() + 1` parts.
fn backtrack(starts_of: &[Vec<usize>], m: usize) -> Vec<usize> {
    let mut starts = Vec::with_capacity(starts_of.len() + 1);
    let mut end = m - 1;
    for arg in starts_of.iter().rev() {
        let start = arg[end];
        starts.push(start);
        end = start - 1;
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
    fn exact_line_is_recovered() {
        let n = sizes();
        let t: Vec<f64> = n.iter().map(|&b| 5000.0 + b / 1.25).collect();
        let f = LineFit::fit(&n, &t).unwrap();
        assert!((f.alpha_ns - 5000.0).abs() < 1e-6);
        assert!((f.ns_per_byte - 0.8).abs() < 1e-12);
        assert!(f.rss_rel < 1e-20);
        assert!((f.beta_bits_per_s().unwrap() - 10e9).abs() < 1.0);
    }

    #[test]
    fn flat_line_has_no_beta() {
        let f = LineFit::fit(&[1.0, 2.0, 4.0], &[100.0, 100.0, 100.0]).unwrap();
        assert_eq!(f.beta_bits_per_s(), None);
        assert!(LineFit::fit(&[1.0], &[1.0]).is_none());
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
    fn too_few_points_for_a_split() {
        let n = [1.0, 2.0, 4.0, 8.0];
        let t = [10.0, 11.0, 500.0, 900.0];
        let segs = fit_segments(&n, &t, &[0.0; 4], &[true; 4]);
        assert_eq!(segs.len(), 1);
        assert!(fit_segments(&n[..1], &t[..1], &[0.0], &[true]).is_empty());
    }
}
