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
    let cdf = BinomialHalf::new(n);
    // Coverage of [x(j), x(n+1-j)] (1-based) is 1 - 2 * P(B <= j - 1).
    let mut best: Option<(usize, f64)> = None;
    for j in 1..=n.div_ceil(2) {
        let coverage = 1.0 - 2.0 * cdf.at_most(j - 1);
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
            coverage: 1.0 - 2.0 * cdf.at_most(0),
            attained: false,
        },
    }
}

/// Cumulative distribution of Binomial(n, 1/2), computed in log space so it
/// stays exact enough for the tens of thousands of trials a long run keeps.
struct BinomialHalf {
    n: usize,
    ln_half_pow_n: f64,
    ln_fact_n: f64,
}

impl BinomialHalf {
    fn new(n: usize) -> Self {
        BinomialHalf {
            n,
            ln_half_pow_n: n as f64 * 0.5f64.ln(),
            ln_fact_n: ln_factorial(n),
        }
    }

    /// P(B <= k).
    fn at_most(&self, k: usize) -> f64 {
        let mut total = 0.0;
        for i in 0..=k.min(self.n) {
            let ln_choose = self.ln_fact_n - ln_factorial(i) - ln_factorial(self.n - i);
            total += (ln_choose + self.ln_half_pow_n).exp();
        }
        total
    }
}

fn ln_factorial(n: usize) -> f64 {
    // Exact sum for small n, Stirling's series beyond (error < 1e-10).
    if n < 256 {
        (2..=n).map(|i| (i as f64).ln()).sum()
    } else {
        let x = n as f64;
        x * x.ln() - x + 0.5 * (2.0 * std::f64::consts::PI * x).ln() + 1.0 / (12.0 * x)
            - 1.0 / (360.0 * x * x * x)
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
    fn ln_factorial_branches_agree() {
        let exact: f64 = (2..=300).map(|i| (i as f64).ln()).sum();
        assert!((ln_factorial(300) - exact).abs() < 1e-8);
    }
}
