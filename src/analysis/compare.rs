//! Two results compared: per size, per size band and in the summary
//! figures, saying which differences exceed the noise of the kept trials.
//!
//! # The test
//!
//! For every size measured in both results, the kept trials of A (the
//! baseline) and B are compared with the two-sided Mann-Whitney U test
//! ([`mann_whitney`]): trial times are skewed and carry outliers, so a rank
//! test, not a t-test. Across a sweep of ~120 sizes some would pass a 5%
//! level by chance, so the p-values are corrected with Holm's step-down
//! procedure ([`holm_reject`]) over all common sizes: the chance of calling
//! any size different when none is stays below the level (default
//! [`DEFAULT_LEVEL`]). The size of a difference is the Hodges-Lehmann
//! estimate of B's time / A's time (the median of all pairwise ratios),
//! which one outlier cannot move.
//!
//! # Bands and figures
//!
//! * A size band ([`SIZE_BANDS`]) reports the median of its sizes' time
//!   ratios and how many sizes are significantly slower or faster; it is
//!   "slower" when at least half of its sizes are significantly slower (and
//!   "faster" likewise), "mixed" when some differ either way, else within
//!   the noise.
//! * Latency: the test at the smallest common size. Peak: the change of the
//!   peak throughput, tested at A's peak size. n_1/2 and the saturation
//!   point are derived from the medians of many sizes and carry no test.
//!
//! # Regression gate
//!
//! `--fail-if-slower PCT` fails when B is slower than A by more than PCT
//! percent *and* significantly so: a band that is "slower" with a median
//! time ratio above 1 + PCT/100, a latency significantly higher by more
//! than PCT, or a peak significantly lower such that A's peak / B's peak
//! exceeds 1 + PCT/100 (the same slowdown expressed in time).

use crate::result::SweepResult;
use crate::stats::{holm_reject, mann_whitney};

use super::Analysis;

/// Family-wise significance level used unless told otherwise.
pub const DEFAULT_LEVEL: f64 = 0.05;

/// The size bands of the comparison table: name, first and last size.
pub const SIZE_BANDS: [(&str, u64, u64); 5] = [
    ("<= 64 B", 0, 64),
    ("64 B - 4 KiB", 65, 4 << 10),
    ("4 - 64 KiB", (4 << 10) + 1, 64 << 10),
    ("64 KiB - 1 MiB", (64 << 10) + 1, 1 << 20),
    ("> 1 MiB", (1 << 20) + 1, u64::MAX),
];

/// The difference at one size.
#[derive(Debug, Clone, PartialEq)]
pub struct SizeDiff {
    /// Message size.
    pub bytes: u64,
    /// Median time of A, ns.
    pub a_median_ns: f64,
    /// Median time of B, ns.
    pub b_median_ns: f64,
    /// Hodges-Lehmann estimate of B's time / A's time (> 1: B slower).
    pub time_ratio: f64,
    /// Two-sided Mann-Whitney p-value, uncorrected.
    pub p_value: f64,
    /// Rejected by Holm's procedure at the comparison's level.
    pub significant: bool,
    /// Either point was marked noisy.
    pub noisy: bool,
}

/// Whether B differs from A in a band or figure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// B significantly slower.
    Slower,
    /// B significantly faster.
    Faster,
    /// Some sizes slower, some faster, neither a majority.
    Mixed,
    /// No difference beyond the noise.
    Same,
    /// Not tested (a derived figure, or no data).
    Untested,
}

impl Verdict {
    /// Words for tables.
    pub fn text(self) -> &'static str {
        match self {
            Verdict::Slower => "B slower",
            Verdict::Faster => "B faster",
            Verdict::Mixed => "mixed",
            Verdict::Same => "within noise",
            Verdict::Untested => "not tested",
        }
    }
}

/// The differences in one size band.
#[derive(Debug, Clone, PartialEq)]
pub struct BandDiff {
    /// Band name, e.g. "4 - 64 KiB".
    pub name: &'static str,
    /// Sizes measured in both results within the band.
    pub sizes: usize,
    /// Median over the band's sizes of B's time / A's time.
    pub time_ratio: Option<f64>,
    /// Sizes significantly slower in B.
    pub slower: usize,
    /// Sizes significantly faster in B.
    pub faster: usize,
    /// The band's verdict (see the module notes).
    pub verdict: Verdict,
}

/// A summary figure of both results and its difference.
#[derive(Debug, Clone, PartialEq)]
pub struct FigureDiff {
    /// "latency", "peak", "n_1/2", "saturation".
    pub name: &'static str,
    /// A's value (ns, bit/s or bytes, by figure).
    pub a: Option<f64>,
    /// B's value.
    pub b: Option<f64>,
    /// b / a - 1.
    pub change: Option<f64>,
    /// Size whose trials were tested, if a test applies.
    pub tested_at_bytes: Option<u64>,
    /// p-value of that test, uncorrected.
    pub p_value: Option<f64>,
    /// Slower, faster, same, or untested.
    pub verdict: Verdict,
}

/// A comparison of B against the baseline A.
#[derive(Debug, Clone, PartialEq)]
pub struct Comparison {
    /// Family-wise significance level.
    pub level: f64,
    /// Per common size, ascending.
    pub sizes: Vec<SizeDiff>,
    /// Per band with at least one common size.
    pub bands: Vec<BandDiff>,
    /// Latency, peak, n_1/2 and saturation point.
    pub figures: Vec<FigureDiff>,
    /// Sizes only A measured.
    pub only_in_a: usize,
    /// Sizes only B measured.
    pub only_in_b: usize,
}

/// Compare B against the baseline A at family-wise level `level`.
pub fn compare(a: &SweepResult, b: &SweepResult, level: f64) -> Comparison {
    let mut sizes = Vec::new();
    let mut p_values = Vec::new();
    for pa in &a.points {
        let Some(pb) = b.points.iter().find(|p| p.bytes == pa.bytes) else {
            continue;
        };
        let Some(t) = mann_whitney(&pa.trials_ns, &pb.trials_ns) else {
            continue;
        };
        let ratio = t
            .hodges_lehmann_ratio
            .or(t.ratio_of_medians)
            .unwrap_or(f64::NAN);
        p_values.push(t.p_value);
        sizes.push(SizeDiff {
            bytes: pa.bytes,
            a_median_ns: pa.median_ns,
            b_median_ns: pb.median_ns,
            time_ratio: ratio,
            p_value: t.p_value,
            significant: false,
            noisy: pa.noisy || pb.noisy,
        });
    }
    for (s, rejected) in sizes.iter_mut().zip(holm_reject(&p_values, level)) {
        s.significant = rejected;
    }
    let only = |r: &SweepResult| {
        r.points
            .iter()
            .filter(|p| !sizes.iter().any(|s| s.bytes == p.bytes))
            .count()
    };
    let (only_in_a, only_in_b) = (only(a), only(b));
    let bands = SIZE_BANDS
        .iter()
        .filter_map(|&(name, lo, hi)| {
            band(
                name,
                sizes.iter().filter(|s| s.bytes >= lo && s.bytes <= hi),
            )
        })
        .collect();
    let figures = figures(a, b, &sizes);
    Comparison {
        level,
        sizes,
        bands,
        figures,
        only_in_a,
        only_in_b,
    }
}

fn band<'a>(name: &'static str, it: impl Iterator<Item = &'a SizeDiff>) -> Option<BandDiff> {
    let members: Vec<&SizeDiff> = it.collect();
    if members.is_empty() {
        return None;
    }
    let mut ratios: Vec<f64> = members
        .iter()
        .map(|s| s.time_ratio)
        .filter(|r| r.is_finite())
        .collect();
    ratios.sort_by(f64::total_cmp);
    let time_ratio = (!ratios.is_empty()).then(|| crate::stats::quantile_sorted(&ratios, 0.5));
    let slower = members
        .iter()
        .filter(|s| s.significant && s.time_ratio > 1.0)
        .count();
    let faster = members
        .iter()
        .filter(|s| s.significant && s.time_ratio < 1.0)
        .count();
    let n = members.len();
    let verdict = if slower > 0 && 2 * slower >= n {
        Verdict::Slower
    } else if faster > 0 && 2 * faster >= n {
        Verdict::Faster
    } else if slower + faster > 0 {
        Verdict::Mixed
    } else {
        Verdict::Same
    };
    Some(BandDiff {
        name,
        sizes: n,
        time_ratio,
        slower,
        faster,
        verdict,
    })
}

/// The size tested, its p-value and the verdict of the test at `bytes`.
fn tested(sizes: &[SizeDiff], bytes: Option<u64>) -> (Option<u64>, Option<f64>, Verdict) {
    match bytes.and_then(|b| sizes.iter().find(|s| s.bytes == b)) {
        None => (None, None, Verdict::Untested),
        Some(s) => {
            let v = match (s.significant, s.time_ratio > 1.0) {
                (false, _) => Verdict::Same,
                (true, true) => Verdict::Slower,
                (true, false) => Verdict::Faster,
            };
            (Some(s.bytes), Some(s.p_value), v)
        }
    }
}

fn figures(a: &SweepResult, b: &SweepResult, sizes: &[SizeDiff]) -> Vec<FigureDiff> {
    let (aa, ab) = (Analysis::of(a), Analysis::of(b));
    let change = |x: Option<f64>, y: Option<f64>| match (x, y) {
        (Some(x), Some(y)) if x > 0.0 => Some(y / x - 1.0),
        _ => None,
    };
    let mut out = Vec::new();
    let (at, p, verdict) = tested(sizes, sizes.first().map(|s| s.bytes));
    // Latency of the comparison: the smallest size both measured.
    let (la, lb) = match sizes.first() {
        Some(s) => (Some(s.a_median_ns), Some(s.b_median_ns)),
        None => (aa.latency_ns, ab.latency_ns),
    };
    out.push(FigureDiff {
        name: "latency",
        a: la,
        b: lb,
        change: change(la, lb),
        tested_at_bytes: at,
        p_value: p,
        verdict,
    });
    let (at, p, verdict) = tested(sizes, aa.peak_bytes);
    out.push(FigureDiff {
        name: "peak",
        a: aa.peak_bits_per_s,
        b: ab.peak_bits_per_s,
        change: change(aa.peak_bits_per_s, ab.peak_bits_per_s),
        tested_at_bytes: at,
        p_value: p,
        verdict,
    });
    for (name, x, y) in [
        ("n_1/2", aa.n_half_bytes, ab.n_half_bytes),
        ("saturation", aa.saturation_bytes, ab.saturation_bytes),
    ] {
        let (x, y) = (x.map(|v| v as f64), y.map(|v| v as f64));
        out.push(FigureDiff {
            name,
            a: x,
            b: y,
            change: change(x, y),
            tested_at_bytes: None,
            p_value: None,
            verdict: Verdict::Untested,
        });
    }
    out
}

impl Comparison {
    /// The reasons B counts as slower than A by more than `pct` percent in a
    /// statistically significant way (see the module notes); empty when it
    /// does not.
    pub fn regressions(&self, pct: f64) -> Vec<String> {
        let limit = 1.0 + pct / 100.0;
        let mut out = Vec::new();
        for b in &self.bands {
            if let (Verdict::Slower, Some(r)) = (b.verdict, b.time_ratio) {
                if r > limit {
                    out.push(format!(
                        "sizes {}: {:.1}% slower ({} of {} sizes significantly slower)",
                        b.name,
                        100.0 * (r - 1.0),
                        b.slower,
                        b.sizes
                    ));
                }
            }
        }
        for f in &self.figures {
            match (f.name, f.verdict, f.a, f.b) {
                ("latency", Verdict::Slower, Some(a), Some(b)) if b / a > limit => {
                    out.push(format!("latency {:.1}% higher", 100.0 * (b / a - 1.0)))
                }
                ("peak", Verdict::Slower, Some(a), Some(b)) if b > 0.0 && a / b > limit => {
                    out.push(format!("peak {:.1}% lower", 100.0 * (1.0 - b / a)))
                }
                _ => {}
            }
        }
        out
    }

    /// Number of sizes whose difference is significant.
    pub fn significant_sizes(&self) -> usize {
        self.sizes.iter().filter(|s| s.significant).count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture() -> SweepResult {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/tcp-pingpong.json"
        );
        crate::result::read_result(std::path::Path::new(path)).unwrap()
    }

    /// The result with every time multiplied by `factor`.
    fn scaled(r: &SweepResult, factor: f64) -> SweepResult {
        let mut r = r.clone();
        for p in &mut r.points {
            p.trials_ns.iter_mut().for_each(|t| *t *= factor);
            p.median_ns *= factor;
            p.ci_low_ns *= factor;
            p.ci_high_ns *= factor;
            p.bits_per_s /= factor;
        }
        r
    }

    #[test]
    fn identical_runs_differ_nowhere() {
        let a = fixture();
        let c = compare(&a, &a, DEFAULT_LEVEL);
        assert_eq!(c.sizes.len(), a.points.len());
        assert_eq!(c.significant_sizes(), 0);
        assert!(c.bands.iter().all(|b| b.verdict == Verdict::Same));
        assert!(c.regressions(0.0).is_empty());
        assert_eq!(c.only_in_a + c.only_in_b, 0);
    }

    #[test]
    fn a_uniform_slowdown_is_found_and_sized() {
        let a = fixture();
        let b = scaled(&a, 1.2);
        let c = compare(&a, &b, DEFAULT_LEVEL);
        assert!(
            c.significant_sizes() > c.sizes.len() / 2,
            "{}",
            c.significant_sizes()
        );
        assert!(c.sizes.iter().all(|s| (s.time_ratio - 1.2).abs() < 1e-9));
        let big = c.bands.iter().find(|b| b.name == "64 KiB - 1 MiB").unwrap();
        assert_eq!(big.verdict, Verdict::Slower);
        assert!(!c.regressions(10.0).is_empty());
        assert!(c.regressions(25.0).is_empty(), "{:?}", c.regressions(25.0));
        // And the other way round B is faster, which is no regression.
        let c = compare(&b, &a, DEFAULT_LEVEL);
        assert!(c.bands.iter().any(|b| b.verdict == Verdict::Faster));
        assert!(c.regressions(0.0).is_empty());
    }

    #[test]
    fn sizes_measured_by_one_side_only_are_counted() {
        let a = fixture();
        let mut b = a.clone();
        b.points.truncate(10);
        let c = compare(&a, &b, DEFAULT_LEVEL);
        assert_eq!(c.sizes.len(), 10);
        assert_eq!(c.only_in_a, a.points.len() - 10);
        assert_eq!(c.only_in_b, 0);
    }
}
