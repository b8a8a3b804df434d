//! Statistics over kept trials: pure functions, no I/O, no allocation beyond
//! the sorted copy a caller asks for.
//!
//! Every figure wulf reports about a point is computed here from the list of
//! per-trial times, so the rules live in one place:
//!
//! * quantiles use linear interpolation between order statistics
//!   (Hyndman & Fan 1996, definition 7; the default of R and NumPy);
//! * the standard deviation is the sample standard deviation (n - 1);
//! * the confidence interval of the median is distribution free, from order
//!   statistics and the binomial distribution (Conover, *Practical
//!   Nonparametric Statistics*, 3rd ed., 1999, sec. 3.2; Le Boudec,
//!   *Performance Evaluation of Computer and Communication Systems*, 2010,
//!   Theorem 2.1). Timing data are skewed and often bimodal, so a
//!   t-interval around the mean would claim precision the data do not have;
//! * two points' trial lists are compared with the Mann–Whitney U test and
//!   the Hodges–Lehmann shift ([`rank_test`]), for the same reason;
//! * two groups of repeated runs are compared with a hierarchical bootstrap
//!   over runs, then trials (Kalibera & Jones, ISMM 2013;
//!   [`hier_bootstrap`]), whose interval includes the run-to-run variation;
//! * two conditions measured in interleaved pairs are compared with a
//!   t-interval over the pairs' log ratios ([`paired`]).

pub mod hier_bootstrap;
mod median_ci;
pub mod paired;
pub mod rank_test;
pub mod robust;
pub mod student_t;

pub use median_ci::{median_ci, MedianCi};
pub use rank_test::{holm_reject, mann_whitney, RankTest};

/// Summary figures of one point's kept trials (all in the trials' unit).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Summary {
    /// Number of trials summarised.
    pub n: usize,
    /// Smallest trial: what the path can do at best.
    pub min: f64,
    /// Largest trial.
    pub max: f64,
    /// Median trial: what an application typically sees.
    pub median: f64,
    /// Arithmetic mean.
    pub mean: f64,
    /// Sample standard deviation (n - 1 in the denominator); 0 for n < 2.
    pub stddev: f64,
    /// 90th percentile (Hyndman & Fan definition 7).
    pub p90: f64,
    /// 99th percentile (Hyndman & Fan definition 7).
    pub p99: f64,
    /// Lower bound of the 95% confidence interval of the median.
    pub ci_low: f64,
    /// Upper bound of the 95% confidence interval of the median.
    pub ci_high: f64,
    /// Whether the interval really has 95% coverage; false when there are
    /// too few trials (fewer than 6), in which case the bounds are min and max.
    pub ci_attained: bool,
}

/// Confidence level used for every interval wulf reports.
pub const CONFIDENCE: f64 = 0.95;

impl Summary {
    /// Summarise `values` (any order). Returns `None` for an empty slice.
    pub fn of(values: &[f64]) -> Option<Summary> {
        if values.is_empty() {
            return None;
        }
        let mut sorted = values.to_vec();
        sorted.sort_by(f64::total_cmp);
        Some(Self::of_sorted(&sorted))
    }

    /// Summarise values already sorted ascending (not checked).
    pub fn of_sorted(sorted: &[f64]) -> Summary {
        let ci = median_ci(sorted, CONFIDENCE);
        Summary {
            n: sorted.len(),
            min: sorted[0],
            max: sorted[sorted.len() - 1],
            median: quantile_sorted(sorted, 0.5),
            mean: mean(sorted),
            stddev: stddev(sorted),
            p90: quantile_sorted(sorted, 0.90),
            p99: quantile_sorted(sorted, 0.99),
            ci_low: ci.low,
            ci_high: ci.high,
            ci_attained: ci.attained,
        }
    }

    /// Largest distance from the median to a confidence bound, relative to
    /// the median: the figure the repetition policy compares with
    /// `--precision`.
    pub fn relative_ci_halfwidth(&self) -> f64 {
        if self.median <= 0.0 {
            return f64::INFINITY;
        }
        (self.median - self.ci_low).max(self.ci_high - self.median) / self.median
    }
}

/// Quantile `q` in [0, 1] of ascending `sorted` by linear interpolation
/// (Hyndman & Fan definition 7). Panics on an empty slice.
pub fn quantile_sorted(sorted: &[f64], q: f64) -> f64 {
    assert!(!sorted.is_empty(), "quantile of an empty sample");
    let q = q.clamp(0.0, 1.0);
    let h = (sorted.len() - 1) as f64 * q;
    let lo = h.floor() as usize;
    let hi = h.ceil() as usize;
    sorted[lo] + (h - lo as f64) * (sorted[hi] - sorted[lo])
}

/// Arithmetic mean; NaN for an empty slice.
pub fn mean(values: &[f64]) -> f64 {
    values.iter().sum::<f64>() / values.len() as f64
}

/// Sample standard deviation (Bessel's correction); 0 for fewer than 2 values.
pub fn stddev(values: &[f64]) -> f64 {
    if values.len() < 2 {
        return 0.0;
    }
    let m = mean(values);
    let ss: f64 = values.iter().map(|v| (v - m) * (v - m)).sum();
    (ss / (values.len() - 1) as f64).sqrt()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hand_computed_summary() {
        let s = Summary::of(&[4.0, 1.0, 3.0, 2.0, 5.0]).unwrap();
        assert_eq!(s.n, 5);
        assert_eq!(s.min, 1.0);
        assert_eq!(s.max, 5.0);
        assert_eq!(s.median, 3.0);
        assert_eq!(s.mean, 3.0);
        // sum of squares 10, / 4 = 2.5
        assert!((s.stddev - 2.5f64.sqrt()).abs() < 1e-12);
        // h = 4 * 0.9 = 3.6 -> 4 + 0.6 * 1
        assert!((s.p90 - 4.6).abs() < 1e-12);
        assert!((s.p99 - 4.96).abs() < 1e-12);
        // 5 trials cannot give a 95% interval of the median.
        assert!(!s.ci_attained);
        assert_eq!((s.ci_low, s.ci_high), (1.0, 5.0));
    }

    #[test]
    fn degenerate_cases() {
        assert!(Summary::of(&[]).is_none());
        let one = Summary::of(&[7.0]).unwrap();
        assert_eq!(
            (one.min, one.median, one.max, one.stddev),
            (7.0, 7.0, 7.0, 0.0)
        );
        let same = Summary::of(&[2.0; 50]).unwrap();
        assert_eq!(same.relative_ci_halfwidth(), 0.0);
        assert!(same.ci_attained);
        let zero = Summary::of(&[0.0, 0.0]).unwrap();
        assert!(zero.relative_ci_halfwidth().is_infinite());
    }

    #[test]
    fn even_count_median_interpolates() {
        let s = Summary::of(&[1.0, 2.0, 3.0, 10.0]).unwrap();
        assert_eq!(s.median, 2.5);
    }
}
