//! Distribution-free confidence interval of the median from order statistics.
//!
//! Method: for n sorted samples x(1) <= ... <= x(n), the number of samples
//! below the true median is Binomial(n, 1/2). The interval [x(j), x(k)] covers
//! the median with probability P(j <= B < k) where B ~ Bin(n, 1/2)
//! (Conover 1999, sec. 3.2; Le Boudec 2010, Theorem 2.1). We choose the
//! symmetric pair (j, k = n + 1 - j) with the largest j whose coverage is
//! still at least the requested confidence. For n <= 5 no pair reaches 95%.

/// A confidence interval of the median.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MedianCi {
    /// Lower bound (an order statistic of the sample).
    pub low: f64,
    /// Upper bound (an order statistic of the sample).
    pub high: f64,
    /// Coverage actually achieved by the chosen order statistics.
    pub coverage: f64,
    /// False when the sample is too small to reach the requested confidence;
    /// the bounds are then the sample minimum and maximum.
    pub attained: bool,
}

/// Confidence interval of the median of ascending `sorted` at `confidence`
/// (e.g. 0.95). Panics on an empty slice.
pub fn median_ci(sorted: &[f64], confidence: f64) -> MedianCi {
    let n = sorted.len();
    assert!(n > 0, "median interval of an empty sample");
    // Coverage of [x(j), x(n+1-j)] (1-based) is 1 - 2 * P(B <= j - 1); the
    // cumulative sum grows with j, so one pass over j adds one term each
    // (this runs after every block of a sweep: a quadratic or cubic walk
    // cost a busy 2-vCPU matrix a tenth of its CPU).
    let mut terms = BinomialHalfTerms::new(n);
    let mut below = 0.0;
    let mut best: Option<(usize, f64)> = None;
    for j in 1..=n.div_ceil(2) {
        below += terms.next_term();
        let coverage = 1.0 - 2.0 * below;
        if coverage + 1e-12 >= confidence {
            best = Some((j, coverage));
        } else {
            break;
        }
    }
    match best {
        Some((j, coverage)) => MedianCi {
            low: sorted[j - 1],
            high: sorted[n - j],
            coverage,
            attained: true,
        },
        None => MedianCi {
            low: sorted[0],
            high: sorted[n - 1],
            coverage: 1.0 - 2.0 * BinomialHalfTerms::new(n).next_term(),
            attained: false,
        },
    }
}

/// The probabilities P(B = 0), P(B = 1), ... of B ~ Binomial(n, 1/2), one
/// per call, each from the one before in log space (ln C(n, i+1) =
/// ln C(n, i) + ln(n - i) - ln(i + 1)), so they stay exact enough for the
/// tens of thousands of trials a long run keeps and cost O(1) each.
struct BinomialHalfTerms {
    n: usize,
    /// The next term's index.
    i: usize,
    /// ln C(n, i).
    ln_choose: f64,
    ln_half_pow_n: f64,
}

impl BinomialHalfTerms {
    fn new(n: usize) -> Self {
        BinomialHalfTerms {
            n,
            i: 0,
            ln_choose: 0.0,
            ln_half_pow_n: n as f64 * 0.5f64.ln(),
        }
    }

    /// P(B = i) for the next i (0 once past n).
    fn next_term(&mut self) -> f64 {
        if self.i > self.n {
            return 0.0;
        }
        let p = (self.ln_choose + self.ln_half_pow_n).exp();
        if self.i < self.n {
            self.ln_choose += ((self.n - self.i) as f64).ln() - ((self.i + 1) as f64).ln();
        }
        self.i += 1;
        p
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seq(n: usize) -> Vec<f64> {
        (1..=n).map(|i| i as f64).collect()
    }

    #[test]
    fn six_samples_use_the_extremes() {
        // P(B <= 0) = 1/64, coverage 1 - 2/64 = 0.96875 >= 0.95
        let ci = median_ci(&seq(6), 0.95);
        assert!(ci.attained);
        assert_eq!((ci.low, ci.high), (1.0, 6.0));
        assert!((ci.coverage - 0.96875).abs() < 1e-12);
    }

    #[test]
    fn five_samples_cannot_reach_95() {
        let ci = median_ci(&seq(5), 0.95);
        assert!(!ci.attained);
        assert!((ci.coverage - 0.9375).abs() < 1e-12);
    }

    #[test]
    fn textbook_n_20() {
        // Conover's table: n = 20 gives x(6), x(15) with coverage 0.9586.
        let ci = median_ci(&seq(20), 0.95);
        assert_eq!((ci.low, ci.high), (6.0, 15.0));
        assert!((ci.coverage - 0.958610).abs() < 1e-5);
    }

    #[test]
    fn large_n_close_to_normal_approximation() {
        let n = 10_000;
        let ci = median_ci(&seq(n), 0.95);
        // normal approximation: j = n/2 - 1.96 sqrt(n)/2 = 5000 - 98 = 4902
        assert!((ci.low - 4902.0).abs() <= 2.0, "{}", ci.low);
        assert!((ci.high - 5099.0).abs() <= 2.0, "{}", ci.high);
        assert!(ci.coverage >= 0.95 && ci.coverage < 0.96);
    }

    #[test]
    fn binomial_terms_match_the_exact_probabilities() {
        // C(n, i) / 2^n by exact products for n = 60 (within f64's range),
        // and the terms sum to 1 for a long run's n.
        let n = 60;
        let mut terms = BinomialHalfTerms::new(n);
        let mut choose = 1.0f64;
        for i in 0..=n {
            let exact = choose / 2f64.powi(n as i32);
            let t = terms.next_term();
            assert!(
                (t - exact).abs() <= 1e-12 * exact.max(1e-300),
                "i={i}: {t} vs {exact}"
            );
            choose = choose * (n - i) as f64 / (i + 1) as f64;
        }
        assert_eq!(terms.next_term(), 0.0);
        let mut long = BinomialHalfTerms::new(20_000);
        let total: f64 = (0..=20_000).map(|_| long.next_term()).sum();
        assert!((total - 1.0).abs() < 1e-9, "{total}");
    }
}
