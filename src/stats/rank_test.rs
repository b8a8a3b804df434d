//! Two-sample comparison of trial lists: the Mann–Whitney U test with the
//! Hodges–Lehmann shift, for `wulf compare`.
//!
//! Why a rank test: trial times are skewed, often bimodal and carry outliers
//! (a context switch, an interrupt storm), so a t-test's normality assumption
//! does not hold and a single outlier can hide or fake a difference. The
//! Wilcoxon–Mann–Whitney test only uses the order of the pooled trials
//! (Mann & Whitney 1947; Hollander, Wolfe & Chicken, *Nonparametric
//! Statistical Methods*, 3rd ed., 2014, sec. 4.1).
//!
//! Method:
//!
//! * U_a = R_a - n_a (n_a + 1) / 2, where R_a is the sum of sample a's ranks in
//!   the pooled sample, tied values getting the mean of their ranks (midranks).
//!   U_a counts the pairs (a_i, b_j) with a_i > b_j, ties counting one half.
//! * p-value, two-sided. Without ties and with n_a + n_b <= [`EXACT_MAX_TOTAL`]
//!   it is exact, from the permutation distribution of the rank sum (every
//!   n_a-subset of the ranks equally likely under the null hypothesis).
//!   Otherwise the normal approximation with the tie-corrected variance
//!   var(U) = n_a n_b / 12 * ((N + 1) - sum(t^3 - t) / (N (N - 1)))
//!   (t = size of each tie group, N = n_a + n_b) and a continuity correction of
//!   1/2 (Hollander et al. 2014, eqs. 4.7-4.10; Conover 1999, sec. 5.1).
//! * Effect size: the Hodges–Lehmann estimate of the shift, the median of all
//!   n_a n_b differences b_j - a_i (Hodges & Lehmann 1963; Hollander et al.
//!   sec. 4.2), the same on logarithms turned back into a ratio (timing
//!   differences are multiplicative: "12% slower"), and the plain ratio of
//!   medians. The median of the pairwise differences is found without
//!   materialising them: a bisection over the ordered bit patterns of f64
//!   values, counting the differences at most a value with two pointers over
//!   the sorted samples, so it is exact and costs O((n_a + n_b) * 64) even for
//!   the tens of thousands of trials a long run keeps.
//!
//! `wulf compare` tests one pair of points per message size, so across a
//! sweep of ~120 sizes about 6 "differences" would pass a 5% level by chance;
//! [`holm_reject`] applies Holm's step-down correction (Holm 1979) for that.

/// Largest pooled sample size for which the exact p-value is computed (when
/// there are no ties). Up to here the subset counts stay exact in an f64
/// (C(40, 20) < 2^53) and the table costs well under a millisecond.
pub const EXACT_MAX_TOTAL: usize = 40;

/// Outcome of comparing trial lists a (baseline) and b (candidate).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RankTest {
    /// Finite trials used from a.
    pub n_a: usize,
    /// Finite trials used from b.
    pub n_b: usize,
    /// Mann–Whitney U of sample a: pairs with a_i > b_j, ties counting 1/2.
    pub u_a: f64,
    /// U_b / (n_a n_b): estimated probability that a trial of b exceeds one
    /// of a (ties counting 1/2); 0.5 means no tendency either way.
    pub prob_b_greater: f64,
    /// Normal score of U_b with tie and continuity corrections; positive when
    /// b tends to be larger. 0 when every value is tied.
    pub z: f64,
    /// Two-sided p-value of "a and b come from the same distribution".
    pub p_value: f64,
    /// True when `p_value` is exact rather than the normal approximation.
    pub exact: bool,
    /// Median of a.
    pub median_a: f64,
    /// Median of b.
    pub median_b: f64,
    /// median_b / median_a; `None` when median_a is not positive.
    pub ratio_of_medians: Option<f64>,
    /// Hodges–Lehmann shift: median of all differences b_j - a_i (in the
    /// trials' unit; positive when b is larger).
    pub hodges_lehmann_shift: f64,
    /// exp(median of all ln b_j - ln a_i): the typical ratio b / a; `None`
    /// unless every trial is positive.
    pub hodges_lehmann_ratio: Option<f64>,
}

impl RankTest {
    /// Whether the difference is significant at `level` (e.g. 0.05).
    pub fn significant(&self, level: f64) -> bool {
        self.p_value < level
    }
}

/// Compare trial lists `a` and `b` (any order). Non-finite values are
/// ignored; `None` when either list has no finite value left.
pub fn mann_whitney(a: &[f64], b: &[f64]) -> Option<RankTest> {
    let mut a: Vec<f64> = a.iter().copied().filter(|v| v.is_finite()).collect();
    let mut b: Vec<f64> = b.iter().copied().filter(|v| v.is_finite()).collect();
    if a.is_empty() || b.is_empty() {
        return None;
    }
    a.sort_by(f64::total_cmp);
    b.sort_by(f64::total_cmp);
    let (n_a, n_b) = (a.len(), b.len());
    let ranks = RankSums::of(&a, &b);
    let m = n_a as f64;
    let pairs = m * n_b as f64;
    let u_a = ranks.rank_sum_a - m * (m + 1.0) / 2.0;
    let u_b = pairs - u_a;

    let total = (n_a + n_b) as f64;
    let var = pairs / 12.0 * ((total + 1.0) - ranks.tie_term / (total * (total - 1.0)));
    let z = if var > 0.0 {
        // Continuity correction: move |U - mean| half a step towards the mean.
        let d = u_b - pairs / 2.0;
        d.signum() * (d.abs() - 0.5).max(0.0) / var.sqrt()
    } else {
        0.0
    };
    let exact = ranks.tie_term == 0.0 && n_a + n_b <= EXACT_MAX_TOTAL;
    let p_value = if exact {
        exact_two_sided_p(n_a, n_b, u_a)
    } else if var > 0.0 {
        erfc(z.abs() / std::f64::consts::SQRT_2).min(1.0)
    } else {
        1.0
    };

    let median_a = super::quantile_sorted(&a, 0.5);
    let median_b = super::quantile_sorted(&b, 0.5);
    let logs = |v: &[f64]| -> Option<Vec<f64>> {
        v.iter()
            .map(|&x| (x > 0.0).then(|| x.ln()))
            .collect::<Option<Vec<f64>>>()
    };
    let hodges_lehmann_ratio = match (logs(&a), logs(&b)) {
        (Some(la), Some(lb)) => Some(median_of_differences(&la, &lb).exp()),
        _ => None,
    };
    Some(RankTest {
        n_a,
        n_b,
        u_a,
        prob_b_greater: u_b / pairs,
        z,
        p_value,
        exact,
        median_a,
        median_b,
        ratio_of_medians: (median_a > 0.0).then(|| median_b / median_a),
        hodges_lehmann_shift: median_of_differences(&a, &b),
        hodges_lehmann_ratio,
    })
}

/// Holm's step-down procedure (Holm 1979): which of `p_values` are rejected
/// at family-wise error rate `level`. Sort ascending; reject p_(i) while
/// p_(i) < level / (m - i + 1); stop at the first that is not.
pub fn holm_reject(p_values: &[f64], level: f64) -> Vec<bool> {
    let m = p_values.len();
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&i, &j| p_values[i].total_cmp(&p_values[j]));
    let mut reject = vec![false; m];
    for (rank, &i) in order.iter().enumerate() {
        if p_values[i] < level / (m - rank) as f64 {
            reject[i] = true;
        } else {
            break;
        }
    }
    reject
}

/// Rank sum of sample a in the pooled sample and the tie term sum(t^3 - t).
struct RankSums {
    rank_sum_a: f64,
    tie_term: f64,
}

impl RankSums {
    /// `a` and `b` sorted ascending; a merge gives the pooled order directly.
    fn of(a: &[f64], b: &[f64]) -> RankSums {
        let (mut i, mut j) = (0, 0);
        let mut next_rank = 1.0;
        let mut rank_sum_a = 0.0;
        let mut tie_term = 0.0;
        while i < a.len() || j < b.len() {
            let v = match (a.get(i), b.get(j)) {
                (Some(&x), Some(&y)) => x.min(y),
                (Some(&x), None) => x,
                (None, Some(&y)) => y,
                (None, None) => unreachable!(),
            };
            let from_a = a[i..].iter().take_while(|&&x| x == v).count();
            let from_b = b[j..].iter().take_while(|&&y| y == v).count();
            let t = (from_a + from_b) as f64;
            // Members of a tie group share the mean of the ranks they span.
            let midrank = next_rank + (t - 1.0) / 2.0;
            rank_sum_a += midrank * from_a as f64;
            tie_term += t * t * t - t;
            next_rank += t;
            i += from_a;
            j += from_b;
        }
        RankSums {
            rank_sum_a,
            tie_term,
        }
    }
}

/// Exact two-sided p-value of U_a = `u_a` without ties: count the n_a-subsets
/// of ranks 1..=N by their sum (dynamic programming over ranks), then
/// p = min(1, 2 min(P(U <= u), P(U >= u))).
fn exact_two_sided_p(n_a: usize, n_b: usize, u_a: f64) -> f64 {
    let total = n_a + n_b;
    let max_sum = (total - n_a + 1..=total).sum::<usize>();
    // counts[k][s]: subsets of size k of the ranks seen so far summing to s.
    let mut counts = vec![vec![0.0f64; max_sum + 1]; n_a + 1];
    counts[0][0] = 1.0;
    for rank in 1..=total {
        for k in (1..=n_a.min(rank)).rev() {
            for s in (rank..=max_sum).rev() {
                let add = counts[k - 1][s - rank];
                counts[k][s] += add;
            }
        }
    }
    let offset = n_a * (n_a + 1) / 2;
    let u = u_a.round() as usize;
    let all: f64 = counts[n_a].iter().sum();
    let at_most: f64 = counts[n_a][offset..=offset + u].iter().sum();
    let at_least: f64 = counts[n_a][offset + u..].iter().sum();
    (2.0 * at_most.min(at_least) / all).min(1.0)
}

/// Median of all differences y_j - x_i of ascending `x`, `y`, exactly,
/// without building the n_x n_y differences (see the module notes).
fn median_of_differences(x: &[f64], y: &[f64]) -> f64 {
    let pairs = (x.len() * y.len()) as u64;
    if pairs % 2 == 1 {
        kth_difference(x, y, pairs / 2 + 1)
    } else {
        (kth_difference(x, y, pairs / 2) + kth_difference(x, y, pairs / 2 + 1)) / 2.0
    }
}

/// The k-th smallest (1-based) of the differences y_j - x_i.
fn kth_difference(x: &[f64], y: &[f64], k: u64) -> f64 {
    let mut lo = order_key(y[0] - x[x.len() - 1]);
    let mut hi = order_key(y[y.len() - 1] - x[0]);
    // Smallest value whose count of differences at most it reaches k: the
    // count only steps at difference values, so it is one of them.
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if count_at_most(x, y, from_order_key(mid)) >= k {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    from_order_key(lo)
}

/// Number of pairs with y_j - x_i <= d. For ascending y the first i with
/// y_j - x_i <= d only moves right, hence one pass.
fn count_at_most(x: &[f64], y: &[f64], d: f64) -> u64 {
    let mut first = 0;
    let mut count = 0u64;
    for &yj in y {
        while first < x.len() && yj - x[first] > d {
            first += 1;
        }
        count += (x.len() - first) as u64;
    }
    count
}

/// Map an f64 to a u64 whose unsigned order is the numeric order (for
/// finite values), so bisection over keys visits every representable value.
fn order_key(v: f64) -> u64 {
    let bits = v.to_bits();
    if bits >> 63 == 1 {
        !bits
    } else {
        bits | (1 << 63)
    }
}

fn from_order_key(key: u64) -> f64 {
    f64::from_bits(if key >> 63 == 1 {
        key & !(1 << 63)
    } else {
        !key
    })
}

/// Complementary error function, fractional error below 1.2e-7 everywhere
/// (Chebyshev fit, Press et al., *Numerical Recipes in C*, 2nd ed., 1992,
/// sec. 6.2, `erfcc`): ample for p-values.
fn erfc(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let poly = -z * z - 1.265_512_23
        + t * (1.000_023_68
            + t * (0.374_091_96
                + t * (0.096_784_18
                    + t * (-0.186_288_06
                        + t * (0.278_868_07
                            + t * (-1.135_203_98
                                + t * (1.488_515_87 + t * (-0.822_152_23 + t * 0.170_872_77))))))));
    let r = t * poly.exp();
    if x >= 0.0 {
        r
    } else {
        2.0 - r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn brute_hl(a: &[f64], b: &[f64]) -> f64 {
        let mut d: Vec<f64> = b
            .iter()
            .flat_map(|y| a.iter().map(move |x| y - x))
            .collect();
        d.sort_by(f64::total_cmp);
        super::super::quantile_sorted(&d, 0.5)
    }

    #[test]
    fn erfc_known_values() {
        assert!((erfc(0.0) - 1.0).abs() < 1e-7);
        // erfc(1.959964 / sqrt 2) = 0.05
        assert!((erfc(1.959_964 / std::f64::consts::SQRT_2) - 0.05).abs() < 1e-7);
        assert!((erfc(-1.0) - 1.842_700_79).abs() < 1e-6);
    }

    #[test]
    fn textbook_exact_example() {
        // a = {1,2,3}, b = {4,5,6}: U_a = 0, the most extreme of C(6,3) = 20
        // arrangements; two-sided p = 2/20.
        let t = mann_whitney(&[1.0, 2.0, 3.0], &[4.0, 5.0, 6.0]).unwrap();
        assert!(t.exact);
        assert_eq!(t.u_a, 0.0);
        assert_eq!(t.prob_b_greater, 1.0);
        assert!((t.p_value - 0.1).abs() < 1e-12);
        assert_eq!(t.hodges_lehmann_shift, 3.0);
        assert_eq!(t.ratio_of_medians, Some(2.5));
    }

    #[test]
    fn exact_matches_published_table() {
        // n_a = n_b = 5, U = 2: P(U <= 2) = 4/252 (Mann & Whitney 1947 table).
        let a = [1.0, 2.0, 3.5, 4.5, 2.5];
        let b = [3.0, 5.0, 6.0, 7.0, 8.0];
        let t = mann_whitney(&a, &b).unwrap();
        assert_eq!(t.u_a, 2.0);
        assert!((t.p_value - 8.0 / 252.0).abs() < 1e-12, "{}", t.p_value);
    }

    #[test]
    fn identical_samples_are_not_different() {
        let a: Vec<f64> = (0..50).map(|i| 100.0 + (i % 7) as f64).collect();
        let t = mann_whitney(&a, &a).unwrap();
        assert!(!t.exact, "ties force the normal approximation");
        assert!(t.p_value > 0.9);
        assert_eq!(t.hodges_lehmann_shift, 0.0);
        assert_eq!(t.hodges_lehmann_ratio, Some(1.0));
        let same = mann_whitney(&[5.0; 10], &[5.0; 12]).unwrap();
        assert_eq!((same.z, same.p_value), (0.0, 1.0));
    }

    #[test]
    fn normal_approximation_with_ties_by_hand() {
        // a = {1,1,2}, b = {2,3,3,3}: pooled ranks 1.5,1.5 | 3.5,3.5 | 6,6,6.
        // R_a = 1.5+1.5+3.5 = 6.5, U_a = 0.5, U_b = 11.5, mean 6.
        // Ties: groups 2,2,3 -> 6+6+24 = 36; var = 12/12 * (8 - 36/42).
        let a = [1.0, 1.0, 2.0];
        let b = [2.0, 3.0, 3.0, 3.0];
        let t = mann_whitney(&a, &b).unwrap();
        assert_eq!(t.u_a, 0.5);
        let var: f64 = 8.0 - 36.0 / 42.0;
        let z = (11.5 - 6.0 - 0.5) / var.sqrt();
        assert!((t.z - z).abs() < 1e-12);
        assert!((t.p_value - erfc(z / std::f64::consts::SQRT_2)).abs() < 1e-12);
    }

    #[test]
    fn clear_shift_is_significant_and_estimated() {
        // b is a times 1.10 plus nothing else: every estimate must say 10%.
        let a: Vec<f64> = (0..200).map(|i| 1000.0 + ((i * 37) % 101) as f64).collect();
        let b: Vec<f64> = a.iter().map(|x| x * 1.10).collect();
        let t = mann_whitney(&a, &b).unwrap();
        assert!(t.significant(1e-6), "p = {}", t.p_value);
        assert!(t.z > 0.0);
        assert!((t.hodges_lehmann_ratio.unwrap() - 1.10).abs() < 1e-9);
        assert!((t.ratio_of_medians.unwrap() - 1.10).abs() < 1e-9);
        assert!((t.hodges_lehmann_shift - brute_hl(&a, &b)).abs() < 1e-9);
    }

    #[test]
    fn hodges_lehmann_matches_brute_force() {
        let mut s = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s % 10_000) as f64 / 7.0 - 300.0
        };
        for (na, nb) in [(1, 1), (1, 4), (7, 3), (10, 10), (33, 58)] {
            let a: Vec<f64> = (0..na).map(|_| next()).collect();
            let b: Vec<f64> = (0..nb).map(|_| next()).collect();
            let t = mann_whitney(&a, &b).unwrap();
            assert!(
                (t.hodges_lehmann_shift - brute_hl(&a, &b)).abs() < 1e-9,
                "{na}x{nb}"
            );
        }
    }

    #[test]
    fn exact_and_normal_agree_roughly_at_the_border() {
        let a: Vec<f64> = (0..20).map(|i| i as f64 * 2.0).collect();
        let b: Vec<f64> = (0..20).map(|i| i as f64 * 2.0 + 9.0).collect();
        let t = mann_whitney(&a, &b).unwrap();
        assert!(t.exact);
        let normal = erfc(t.z.abs() / std::f64::consts::SQRT_2);
        assert!(
            (t.p_value - normal).abs() < 0.01,
            "{} vs {normal}",
            t.p_value
        );
    }

    #[test]
    fn empty_and_non_finite_inputs() {
        assert!(mann_whitney(&[], &[1.0]).is_none());
        assert!(mann_whitney(&[f64::NAN], &[1.0]).is_none());
        let t = mann_whitney(&[1.0, f64::INFINITY, 2.0], &[3.0]).unwrap();
        assert_eq!(t.n_a, 2);
        let neg = mann_whitney(&[-1.0, 2.0], &[3.0, 4.0]).unwrap();
        assert_eq!(neg.hodges_lehmann_ratio, None);
    }

    #[test]
    fn holm_step_down() {
        // m = 4: thresholds 0.0125, 0.0167, 0.025, 0.05.
        let r = holm_reject(&[0.04, 0.001, 0.03, 0.012], 0.05);
        assert_eq!(r, vec![false, true, false, true]);
        assert_eq!(holm_reject(&[0.2, 0.01], 0.05), vec![false, true]);
        assert!(holm_reject(&[], 0.05).is_empty());
    }
}
