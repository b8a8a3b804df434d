//! One physical Hockney line t(n) = alpha + n / beta, fitted by constrained
//! weighted least squares, with a 95% interval for each parameter.
//!
//! # Weights
//!
//! Weights are 1 / t_i^2, i.e. the fit minimises the relative residuals
//! (t_i - fit) / t_i. Timing noise is roughly proportional to the time, and
//! the sizes span seven decades: unweighted least squares would let the
//! megabyte messages decide everything and fit the latency of small ones
//! with a 100% error.
//!
//! # Constraints
//!
//! A start-up time alpha < 0 or a bandwidth beta <= 0 has no physical
//! meaning, so the fit is constrained to alpha >= 0 and slope 1 / beta >= 0
//! (Lawson & Hanson 1974, *Solving Least Squares Problems*, ch. 23: the
//! objective is a convex quadratic, so when the unconstrained optimum breaks
//! a constraint the constrained one lies on that constraint's edge):
//!
//! * unconstrained optimum feasible: it is the answer;
//! * otherwise the better of the two edges: alpha = 0, the line through
//!   the origin, slope sum(u_i) / sum(u_i^2) with u_i = n_i / t_i (always
//!   positive); or slope = 0, a constant time (the weighted mean).
//!
//! A segment on the alpha = 0 edge is **bandwidth-bound**: its times grow in
//! proportion to size and carry no measurable fixed cost (typically the
//! large sizes of a curve bent by caches, where the unconstrained line would
//! extrapolate to a negative start-up time). A segment on the slope = 0 edge
//! is **latency-bound**: its time does not grow with size, beta is not
//! determined (reported as none, i.e. unbounded).
//!
//! # Intervals
//!
//! [`INTERVAL_METHOD`]: each parameter's 95% interval is estimate +-
//! t(0.975, df) standard errors from the covariance of the weighted linear
//! fit, sigma^2 (X' W X)^-1 with sigma^2 = RSS / df (Draper & Smith 1998,
//! *Applied Regression Analysis*, 3rd ed., sec. 9.2). df = m - 2 for a
//! free line, m - 1 on an edge (one parameter fixed). On an edge the fixed
//! parameter's interval runs from 0 to the upper bound of the unconstrained
//! fit's interval (at least 0), so it says how large the parameter could be
//! given the data. The bounds are clipped to the feasible region (alpha and
//! slope >= 0). Fewer than three points give no interval.

use crate::stats::student_t::t_975;

/// How the parameter intervals are computed, for the report and the notes.
pub const INTERVAL_METHOD: &str = "95% intervals from the covariance of the weighted linear fit \
     (sigma^2 (X'WX)^-1, sigma^2 = RSS / df, Student t)";

/// Which constraint, if any, holds the fitted line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bound {
    /// Neither: alpha > 0 and slope > 0 came out of the free fit.
    Free,
    /// alpha held at 0: time proportional to size.
    BandwidthBound,
    /// Slope held at 0: time independent of size.
    LatencyBound,
}

/// A fitted line t = alpha_ns + ns_per_byte * n with alpha_ns >= 0 and
/// ns_per_byte >= 0.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LineFit {
    /// Intercept in ns: the start-up time the line extrapolates to at 0
    /// bytes (never negative).
    pub alpha_ns: f64,
    /// Slope in ns per byte (1 / beta, never negative).
    pub ns_per_byte: f64,
    /// Sum of squared relative residuals of the fitted points.
    pub rss_rel: f64,
    /// Points fitted.
    pub points: usize,
    /// Which constraint holds the line.
    pub bound: Bound,
    /// 95% interval of alpha in ns (see the module notes); `None` with
    /// fewer than three points.
    pub alpha_ci_ns: Option<(f64, f64)>,
    /// 95% interval of the slope in ns per byte.
    pub ns_per_byte_ci: Option<(f64, f64)>,
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

    /// 95% interval of beta in bit/s as (low, high); high is `None` when
    /// the slope's interval reaches 0 (beta not bounded above).
    pub fn beta_ci_bits_per_s(&self) -> Option<(f64, Option<f64>)> {
        let (lo, hi) = self.ns_per_byte_ci?;
        (hi > 0.0).then(|| (8e9 / hi, (lo > 0.0).then(|| 8e9 / lo)))
    }

    /// Root mean square relative residual.
    pub fn rms_rel(&self) -> f64 {
        (self.rss_rel / self.points.max(1) as f64).sqrt()
    }
}

/// Weighted first and second moments, updated one point at a time (West
/// 1979, "Updating mean and variance estimates", CACM 22:532): centred
/// co-moments avoid the cancellation of raw sums of n^2 over 8 MiB sizes.
/// The raw sums of u = n / t and u^2 serve the line through the origin,
/// whose terms are all of order one.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Moments {
    count: usize,
    weight: f64,
    mean_n: f64,
    mean_t: f64,
    c_nn: f64,
    c_nt: f64,
    c_tt: f64,
    sum_u: f64,
    sum_uu: f64,
}

/// A candidate line: (alpha, slope, rss).
type Candidate = (f64, f64, f64);

impl Moments {
    /// Add the point (n bytes, t ns), t > 0.
    pub fn push(&mut self, n: f64, t: f64) {
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
        let u = n / t;
        self.sum_u += u;
        self.sum_uu += u * u;
    }

    /// Residual sum of squares of the free (unconstrained) line: what the
    /// segmentation compares, so that a regime whose line is not physical
    /// on its own (the bent part of a curve past a cache size) still gets
    /// its own segment, then fitted under the constraints.
    pub fn free_rss(&self) -> f64 {
        self.free().2
    }

    /// The free (unconstrained) optimum.
    fn free(&self) -> Candidate {
        if self.c_nn > 0.0 {
            let s = self.c_nt / self.c_nn;
            (
                self.mean_t - s * self.mean_n,
                s,
                (self.c_tt - s * self.c_nt).max(0.0),
            )
        } else {
            (self.mean_t, 0.0, self.c_tt.max(0.0))
        }
    }

    /// The best line through the origin (alpha = 0).
    fn through_origin(&self) -> Candidate {
        if self.sum_uu <= 0.0 {
            return (0.0, 0.0, self.count as f64);
        }
        let s = self.sum_u / self.sum_uu;
        // sum (1 - s u_i)^2 = m - 2 s sum u + s^2 sum u^2.
        let rss = (self.count as f64 - self.sum_u * self.sum_u / self.sum_uu).max(0.0);
        (0.0, s, rss)
    }

    /// The best constant (slope = 0).
    fn constant(&self) -> Candidate {
        (self.mean_t, 0.0, self.c_tt.max(0.0))
    }

    /// The constrained fit with its intervals (see the module notes).
    pub fn fit(&self) -> LineFit {
        let m = self.count;
        let free = self.free();
        let (alpha, slope, rss, bound) = if free.0 >= 0.0 && free.1 >= 0.0 {
            (free.0, free.1, free.2, Bound::Free)
        } else {
            let origin = self.through_origin();
            let flat = self.constant();
            if origin.2 <= flat.2 {
                (origin.0, origin.1, origin.2, Bound::BandwidthBound)
            } else {
                (flat.0, flat.1, flat.2, Bound::LatencyBound)
            }
        };
        // Standard errors of the free fit (df = m - 2), used for its own
        // intervals and for the upper bound of a parameter held at 0.
        let free_se = (m > 2 && self.c_nn > 0.0).then(|| {
            let var = free.2 / (m - 2) as f64;
            let se_slope = (var / self.c_nn).sqrt();
            let se_alpha = (var * (1.0 / self.weight + self.mean_n.powi(2) / self.c_nn)).sqrt();
            (se_alpha * t_975(m - 2), se_slope * t_975(m - 2))
        });
        let clip = |lo: f64, hi: f64| (lo.max(0.0), hi.max(0.0));
        let edge_df = m.saturating_sub(1);
        let edge_half = |info: f64| {
            (m > 2 && info > 0.0).then(|| (rss / edge_df as f64 / info).sqrt() * t_975(edge_df))
        };
        let (alpha_ci_ns, ns_per_byte_ci) = match bound {
            Bound::Free => match free_se {
                Some((ha, hs)) => (
                    Some(clip(alpha - ha, alpha + ha)),
                    Some(clip(slope - hs, slope + hs)),
                ),
                None => (None, None),
            },
            Bound::BandwidthBound => (
                free_se.map(|(ha, _)| clip(0.0, free.0 + ha)),
                edge_half(self.sum_uu).map(|h| clip(slope - h, slope + h)),
            ),
            Bound::LatencyBound => (
                edge_half(self.weight).map(|h| clip(alpha - h, alpha + h)),
                free_se.map(|(_, hs)| clip(0.0, free.1 + hs)),
            ),
        };
        LineFit {
            alpha_ns: alpha,
            ns_per_byte: slope,
            rss_rel: rss,
            points: m,
            bound,
            alpha_ci_ns,
            ns_per_byte_ci,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn sizes() -> Vec<f64> {
        (0..40).map(|i| 2f64.powf(i as f64 / 2.0)).collect()
    }

    #[test]
    fn exact_line_is_recovered() {
        let n = sizes();
        let t: Vec<f64> = n.iter().map(|&b| 5000.0 + b / 1.25).collect();
        let f = LineFit::fit(&n, &t).unwrap();
        assert_eq!(f.bound, Bound::Free);
        assert!((f.alpha_ns - 5000.0).abs() < 1e-6);
        assert!((f.ns_per_byte - 0.8).abs() < 1e-12);
        assert!(f.rss_rel < 1e-20);
        assert!((f.beta_bits_per_s().unwrap() - 10e9).abs() < 1.0);
        // Noiseless: the intervals shrink to the values.
        let (lo, hi) = f.alpha_ci_ns.unwrap();
        assert!(lo <= 5000.0 && hi >= 5000.0 && hi - lo < 1e-3, "{lo} {hi}");
    }

    #[test]
    fn flat_line_has_no_beta() {
        let f = LineFit::fit(&[1.0, 2.0, 4.0], &[100.0, 100.0, 100.0]).unwrap();
        assert_eq!(f.beta_bits_per_s(), None);
        assert!(LineFit::fit(&[1.0], &[1.0]).is_none());
    }

    #[test]
    fn a_line_wanting_negative_alpha_is_bandwidth_bound() {
        // The out-of-cache part of a curve: t = 2 n - 200000 for n >= 1 MiB
        // would extrapolate to -200 us at 0 bytes.
        let n: Vec<f64> = (0..12)
            .map(|i| (1u64 << 20) as f64 * 1.2f64.powi(i))
            .collect();
        let t: Vec<f64> = n.iter().map(|&b| 2.0 * b - 200_000.0).collect();
        let f = LineFit::fit(&n, &t).unwrap();
        assert_eq!(f.bound, Bound::BandwidthBound);
        assert_eq!(f.alpha_ns, 0.0);
        assert!(
            f.ns_per_byte > 1.8 && f.ns_per_byte < 2.0,
            "{}",
            f.ns_per_byte
        );
        let (lo, hi) = f.alpha_ci_ns.unwrap();
        assert_eq!((lo, hi), (0.0, 0.0));
        let (slo, shi) = f.ns_per_byte_ci.unwrap();
        assert!(slo > 0.0 && slo <= f.ns_per_byte && shi >= f.ns_per_byte);
        let (blo, bhi) = f.beta_ci_bits_per_s().unwrap();
        assert!(blo <= f.beta_bits_per_s().unwrap() && bhi.unwrap() >= blo);
    }

    #[test]
    fn a_line_wanting_negative_slope_is_latency_bound() {
        let n = [1.0, 2.0, 4.0, 8.0, 16.0];
        let t = [110.0, 108.0, 104.0, 102.0, 100.0];
        let f = LineFit::fit(&n, &t).unwrap();
        assert_eq!(f.bound, Bound::LatencyBound);
        assert_eq!(f.ns_per_byte, 0.0);
        assert!(f.alpha_ns > 100.0 && f.alpha_ns < 110.0);
        let (lo, hi) = f.alpha_ci_ns.unwrap();
        assert!(lo < f.alpha_ns && hi > f.alpha_ns);
        assert_eq!(f.ns_per_byte_ci, Some((0.0, 0.0)));
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

        /// Whatever the data, alpha and the slope are never negative, the
        /// intervals contain the estimates, and the constrained fit is at
        /// least as good as any other feasible line tried.
        #[test]
        fn never_negative(
            times in proptest::collection::vec(1.0f64..1e7, 2..30),
            a in 0.0f64..1e5,
            s in 0.0f64..10.0,
        ) {
            let n: Vec<f64> = (0..times.len()).map(|i| 2f64.powf(i as f64 * 0.7)).collect();
            let f = LineFit::fit(&n, &times).unwrap();
            prop_assert!(f.alpha_ns >= 0.0 && f.ns_per_byte >= 0.0, "{:?}", f);
            if let Some((lo, hi)) = f.alpha_ci_ns {
                prop_assert!(lo >= 0.0 && lo <= f.alpha_ns * (1.0 + 1e-9) + 1e-9 && hi >= f.alpha_ns * (1.0 - 1e-9));
            }
            if let Some((lo, hi)) = f.ns_per_byte_ci {
                prop_assert!(lo >= 0.0 && hi >= lo);
            }
            let other: f64 = n.iter().zip(&times).map(|(&x, &t)| ((t - a - s * x) / t).powi(2)).sum();
            prop_assert!(f.rss_rel <= other * (1.0 + 1e-9) + 1e-9, "{} > {}", f.rss_rel, other);
        }
    }
}
