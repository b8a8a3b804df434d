//! The change between two conditions measured in interleaved pairs (ABAB..):
//! a t-interval over the pairs' log ratios.
//!
//! Each pair's ratio B/A is taken in log space (a time that doubles and one
//! that halves are changes of the same size) and the pairs' logs are
//! treated as independent draws: interleaving puts whatever drifts over the
//! run (other work, frequency, caches) into both halves alike, so the
//! spread between pairs is the run-to-run noise the verdict must beat.
//! With few pairs the t quantile is large (4.30 at 3 pairs), which is the
//! point: a verdict needs a change larger than the pairs' disagreement.

use super::student_t::t_975;

/// The change from A to B over interleaved pairs, as fractions (0.1 = B
/// takes 10% longer), with its two-sided 95% interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PairedChange {
    /// Geometric mean of the pairs' ratios, minus 1.
    pub change: f64,
    /// Lower end of the interval, as a change.
    pub low: f64,
    /// Upper end of the interval, as a change.
    pub high: f64,
    /// Pairs it rests on.
    pub pairs: usize,
}

impl PairedChange {
    /// +1 when B is larger beyond the interval, -1 when smaller, 0 when
    /// the interval includes no change.
    pub fn direction(&self) -> i8 {
        if self.low > 0.0 {
            1
        } else if self.high < 0.0 {
            -1
        } else {
            0
        }
    }
}

/// The change over `pairs` of (A, B) values; None with fewer than 2 pairs
/// or any value that is not positive and finite.
pub fn paired_change(pairs: &[(f64, f64)]) -> Option<PairedChange> {
    let n = pairs.len();
    if n < 2 {
        return None;
    }
    let mut logs = Vec::with_capacity(n);
    for &(a, b) in pairs {
        if !(a > 0.0 && b > 0.0 && a.is_finite() && b.is_finite()) {
            return None;
        }
        logs.push((b / a).ln());
    }
    let mean = logs.iter().sum::<f64>() / n as f64;
    let var = logs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
    let half = t_975(n - 1) * (var / n as f64).sqrt();
    Some(PairedChange {
        change: mean.exp() - 1.0,
        low: (mean - half).exp() - 1.0,
        high: (mean + half).exp() - 1.0,
        pairs: n,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_steady_doubling_is_a_change_and_disagreeing_pairs_are_not() {
        let c = paired_change(&[(10.0, 20.0), (11.0, 22.5), (9.0, 17.8)]).unwrap();
        assert!((c.change - 1.0).abs() < 0.03, "{c:?}");
        assert_eq!(c.direction(), 1);
        // Faster in one pair, slower in two: nothing can be said.
        let n = paired_change(&[(10.0, 8.0), (10.0, 13.0), (10.0, 11.0)]).unwrap();
        assert_eq!(n.direction(), 0, "{n:?}");
        assert!(n.low < 0.0 && n.high > 0.0);
        // By hand: logs ln 2, ln 2 and ln 4 -> mean 0.924, sd 0.400,
        // half width 4.303 * 0.400 / sqrt 3 = 0.994.
        let h = paired_change(&[(1.0, 2.0), (1.0, 2.0), (1.0, 4.0)]).unwrap();
        assert!((h.change - 1.52).abs() < 0.01, "{h:?}");
        assert!(
            (h.low - ((0.924f64 - 0.994).exp() - 1.0)).abs() < 0.01,
            "{h:?}"
        );
        assert_eq!(paired_change(&[(1.0, 2.0)]), None);
        assert_eq!(paired_change(&[(1.0, 2.0), (0.0, 1.0)]), None);
    }
}
