//! Size bands: which configuration is best for small, medium, large and
//! huge messages, and whether it beats the baseline by more than the noise.
//!
//! A band's throughput is the median, over the band's sizes, of each size's
//! median throughput, and a configuration's change against the baseline is
//! the median over those sizes of the ratio of the two throughputs: one
//! unlucky size cannot make or break a setting.
//!
//! Whether a difference exceeds the noise is decided size by size from the
//! 95% confidence intervals of the median time that every point carries: a
//! size counts as *better* when the configuration's whole interval lies
//! below the baseline's (faster), *worse* when it lies above; a size where
//! either point has too few trials for a 95% interval counts as neither. A band is
//! better (worse) when more than half of its sizes are better (worse) and
//! none goes the other way; anything else is within the noise. Disjoint
//! intervals are a conservative test (two medians can differ significantly
//! while their intervals still touch), so "beyond noise" here is a finding a
//! user can act on, not a coin toss.

use serde::{Deserialize, Serialize};

use super::plan::Factor;
use super::summary::ConfigRun;
use crate::result::Point;

/// What the band analysis needs of a point.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PointStat {
    /// Message size.
    pub bytes: u64,
    /// Median time per message, ns.
    pub median_ns: f64,
    /// Lower end of the median's 95% confidence interval, ns.
    pub ci_low_ns: f64,
    /// Upper end of the median's 95% confidence interval, ns.
    pub ci_high_ns: f64,
    /// Throughput at the median, bit/s.
    pub bits_per_s: f64,
    /// Kept trials.
    pub trials: u64,
}

impl PointStat {
    /// The figures of a result point.
    pub fn of(p: &Point) -> PointStat {
        PointStat {
            bytes: p.bytes,
            median_ns: p.median_ns,
            ci_low_ns: p.ci_low_ns,
            ci_high_ns: p.ci_high_ns,
            bits_per_s: p.bits_per_s,
            trials: p.trials,
        }
    }

    /// Whether the point's interval is a real 95% interval of the median.
    pub fn has_ci(&self) -> bool {
        self.trials >= MIN_TRIALS_FOR_CI
    }
}

/// Fewest trials whose order statistics give a 95% interval of the median
/// (see `stats::median_ci`); with fewer, a point's interval is just its
/// range, whose coverage is too low to call anything beyond the noise.
pub const MIN_TRIALS_FOR_CI: u64 = 6;

/// A range of message sizes, `[min_bytes, max_bytes)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Band {
    /// Name shown in tables.
    pub label: &'static str,
    /// Smallest size in the band.
    pub min_bytes: u64,
    /// First size above the band; None: unbounded.
    pub max_bytes: Option<u64>,
}

impl Band {
    /// Whether `bytes` falls in this band.
    pub fn contains(&self, bytes: u64) -> bool {
        bytes >= self.min_bytes && self.max_bytes.is_none_or(|m| bytes < m)
    }
}

/// The bands: latency-bound messages, messages within a default socket
/// buffer, messages that need a larger window, and bulk transfers.
pub const BANDS: [Band; 4] = [
    Band {
        label: "< 1 KiB",
        min_bytes: 0,
        max_bytes: Some(1 << 10),
    },
    Band {
        label: "1 KiB - 64 KiB",
        min_bytes: 1 << 10,
        max_bytes: Some(64 << 10),
    },
    Band {
        label: "64 KiB - 1 MiB",
        min_bytes: 64 << 10,
        max_bytes: Some(1 << 20),
    },
    Band {
        label: ">= 1 MiB",
        min_bytes: 1 << 20,
        max_bytes: None,
    },
];

/// Outcome of comparing a configuration with the baseline in a band.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Faster than the baseline beyond the noise.
    Better,
    /// Slower than the baseline beyond the noise.
    Worse,
    /// No difference the intervals can vouch for.
    WithinNoise,
}

/// One configuration against the baseline in one band.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Comparison {
    /// Configuration label.
    pub config: String,
    /// Band label.
    pub band: String,
    /// Sizes of the band both measured.
    pub sizes_compared: u64,
    /// Sizes where the configuration's interval lies wholly below the
    /// baseline's (faster).
    pub sizes_better: u64,
    /// Sizes where it lies wholly above (slower).
    pub sizes_worse: u64,
    /// Band throughput of the configuration over the compared sizes, bit/s.
    pub bits_per_s: f64,
    /// Band throughput of the baseline over the same sizes, bit/s.
    pub baseline_bits_per_s: f64,
    /// `bits_per_s / baseline_bits_per_s - 1` (0.13 = 13% faster).
    pub change: f64,
    /// Whether the difference exceeds the noise, and which way.
    pub verdict: Verdict,
}

/// The best configuration of one band.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BandBest {
    /// Band label.
    pub band: String,
    /// Smallest size of the band.
    pub min_bytes: u64,
    /// First size above the band; null: unbounded.
    pub max_bytes: Option<u64>,
    /// Label of the configuration with the highest band throughput.
    pub best: String,
    /// Its band throughput, bit/s.
    pub best_bits_per_s: f64,
    /// Its comparison with the baseline; null when the best is the
    /// baseline itself or there is no baseline.
    pub against_baseline: Option<Comparison>,
}

/// Median of a non-empty slice (mean of the middle two for even lengths).
pub fn median(values: &mut [f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let n = values.len();
    Some(if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    })
}

/// Band throughput: median over the band's sizes of the points' throughput.
pub fn band_bits_per_s(points: &[PointStat], band: &Band) -> Option<f64> {
    let mut v: Vec<f64> = points
        .iter()
        .filter(|p| band.contains(p.bytes))
        .map(|p| p.bits_per_s)
        .collect();
    median(&mut v)
}

/// The verdict for a band from its per-size counts (see the module docs).
pub fn verdict(compared: u64, better: u64, worse: u64) -> Verdict {
    if better * 2 > compared && worse == 0 {
        Verdict::Better
    } else if worse * 2 > compared && better == 0 {
        Verdict::Worse
    } else {
        Verdict::WithinNoise
    }
}

/// Compare `config` with `baseline` over the sizes of `band` both measured;
/// None when they share no size there.
pub fn compare(
    label: &str,
    config: &[PointStat],
    baseline: &[PointStat],
    band: &Band,
) -> Option<Comparison> {
    let pairs: Vec<(&PointStat, &PointStat)> = config
        .iter()
        .filter(|p| band.contains(p.bytes))
        .filter_map(|p| baseline.iter().find(|b| b.bytes == p.bytes).map(|b| (p, b)))
        .collect();
    if pairs.is_empty() {
        return None;
    }
    let n = pairs.len() as u64;
    let judged = || pairs.iter().filter(|(c, b)| c.has_ci() && b.has_ci());
    let better = judged().filter(|(c, b)| c.ci_high_ns < b.ci_low_ns).count() as u64;
    let worse = judged().filter(|(c, b)| c.ci_low_ns > b.ci_high_ns).count() as u64;
    let mut mine: Vec<f64> = pairs.iter().map(|(c, _)| c.bits_per_s).collect();
    let mut theirs: Vec<f64> = pairs.iter().map(|(_, b)| b.bits_per_s).collect();
    // Size by size, so that a band spanning two orders of magnitude of
    // throughput compares like with like.
    let mut ratios: Vec<f64> = pairs
        .iter()
        .filter(|(_, b)| b.bits_per_s > 0.0)
        .map(|(c, b)| c.bits_per_s / b.bits_per_s)
        .collect();
    Some(Comparison {
        config: label.to_string(),
        band: band.label.to_string(),
        sizes_compared: n,
        sizes_better: better,
        sizes_worse: worse,
        bits_per_s: median(&mut mine)?,
        baseline_bits_per_s: median(&mut theirs)?,
        change: median(&mut ratios).map_or(0.0, |r| r - 1.0),
        verdict: verdict(n, better, worse),
    })
}

/// The baseline run, if it was measured.
pub fn baseline(runs: &[ConfigRun]) -> Option<&ConfigRun> {
    runs.iter()
        .find(|r| r.summary.config.factor == Factor::Baseline)
}

/// Every non-baseline configuration against the baseline, band by band.
pub fn all_comparisons(runs: &[ConfigRun]) -> Vec<Comparison> {
    let Some(base) = baseline(runs) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for r in runs
        .iter()
        .filter(|r| r.summary.config.factor != Factor::Baseline)
    {
        for band in &BANDS {
            out.extend(compare(
                &r.summary.config.label,
                &r.points,
                &base.points,
                band,
            ));
        }
    }
    out
}

/// The best configuration in each band that has points: among those
/// faster than the baseline beyond the noise, the one with the largest
/// change; failing any, the one with the largest change (marked within the
/// noise); the baseline itself unless some configuration is faster. So the
/// table names the setting the recommendations name. Without a baseline,
/// the highest band throughput.
pub fn best_by_band(runs: &[ConfigRun]) -> Vec<BandBest> {
    let base = baseline(runs);
    let mut out = Vec::new();
    for band in &BANDS {
        let row = match base {
            Some(b) => best_against(runs, b, band),
            None => runs
                .iter()
                .filter_map(|r| band_bits_per_s(&r.points, band).map(|x| (r, x)))
                .fold(None::<(&ConfigRun, f64)>, |acc, x| match acc {
                    Some(a) if a.1 >= x.1 => Some(a),
                    _ => Some(x),
                })
                .map(|(r, bits)| (r.summary.config.label.clone(), bits, None)),
        };
        if let Some((best, best_bits_per_s, against_baseline)) = row {
            out.push(BandBest {
                band: band.label.to_string(),
                min_bytes: band.min_bytes,
                max_bytes: band.max_bytes,
                best,
                best_bits_per_s,
                against_baseline,
            });
        }
    }
    out
}

/// The best of `runs` in `band` against `base`: label, band throughput and
/// comparison (None when the baseline is best).
fn best_against(
    runs: &[ConfigRun],
    base: &ConfigRun,
    band: &Band,
) -> Option<(String, f64, Option<Comparison>)> {
    let own = band_bits_per_s(&base.points, band);
    // Strictly faster only: changing a setting must earn it.
    let winner = runs
        .iter()
        .filter(|r| r.summary.config.factor != Factor::Baseline)
        .filter_map(|r| compare(&r.summary.config.label, &r.points, &base.points, band))
        .filter(|c| c.change > 0.0)
        .max_by(|a, b| {
            let proven = |c: &Comparison| c.verdict == Verdict::Better;
            proven(a)
                .cmp(&proven(b))
                .then(a.change.total_cmp(&b.change))
        });
    match (winner, own) {
        (Some(c), _) => Some((c.config.clone(), c.bits_per_s, Some(c))),
        (None, Some(bits)) => Some((base.summary.config.label.clone(), bits, None)),
        (None, None) => None,
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::tune::plan::{plan, TuneConfig};
    use crate::tune::summary::{ConfigSummary, EndSettings};

    /// A point of `bytes` with median one-way time `ns` and interval
    /// +-`half_pct` percent.
    pub fn pt(bytes: u64, ns: f64, half_pct: f64) -> PointStat {
        PointStat {
            bytes,
            median_ns: ns,
            ci_low_ns: ns * (1.0 - half_pct / 100.0),
            ci_high_ns: ns * (1.0 + half_pct / 100.0),
            bits_per_s: bytes as f64 * 8.0 / (ns * 1e-9),
            trials: 20,
        }
    }

    /// A synthetic run of `config` with points of throughput
    /// `bits_per_s(bytes)` and a +-`half_pct` interval.
    pub fn run(
        config: &TuneConfig,
        sizes: &[u64],
        half_pct: f64,
        bits_per_s: impl Fn(u64) -> f64,
    ) -> ConfigRun {
        let points: Vec<PointStat> = sizes
            .iter()
            .map(|&b| pt(b, b as f64 * 8.0 / bits_per_s(b) * 1e9, half_pct))
            .collect();
        ConfigRun {
            summary: ConfigSummary {
                config: config.clone(),
                file: config.file_name(),
                complete: true,
                error: None,
                client: EndSettings::default(),
                server: EndSettings::default(),
                latency_ns: points.first().map(|p| p.median_ns),
                peak_bits_per_s: points.iter().map(|p| p.bits_per_s).reduce(f64::max),
                peak_bytes: None,
                points: points.len() as u64,
                noisy_points: 0,
                whole_ns_per_byte: None,
                getrusage_ns_per_byte: None,
                applied: None,
            },
            points,
        }
    }

    #[test]
    fn bands_partition_sizes() {
        for b in [1u64, 1023, 1024, 65535, 65536, 1 << 20, 8 << 20] {
            assert_eq!(
                BANDS.iter().filter(|band| band.contains(b)).count(),
                1,
                "{b}"
            );
        }
        assert!(BANDS[1].contains(1024) && !BANDS[0].contains(1024));
    }

    #[test]
    fn verdict_needs_a_majority_and_no_contrary_size() {
        assert_eq!(verdict(4, 3, 0), Verdict::Better);
        assert_eq!(verdict(4, 2, 0), Verdict::WithinNoise);
        assert_eq!(verdict(4, 3, 1), Verdict::WithinNoise);
        assert_eq!(verdict(3, 0, 2), Verdict::Worse);
        assert_eq!(verdict(1, 1, 0), Verdict::Better);
    }

    #[test]
    fn disjoint_intervals_are_beyond_noise_overlapping_are_not() {
        let band = BANDS[3];
        let base = [pt(1 << 20, 1000.0, 1.0), pt(2 << 20, 2000.0, 1.0)];
        // 10% faster with +-1% intervals: disjoint.
        let fast = [pt(1 << 20, 900.0, 1.0), pt(2 << 20, 1800.0, 1.0)];
        let c = compare("x", &fast, &base, &band).unwrap();
        assert_eq!((c.sizes_compared, c.sizes_better, c.sizes_worse), (2, 2, 0));
        assert_eq!(c.verdict, Verdict::Better);
        assert!(
            (c.change - (1000.0 / 900.0 - 1.0)).abs() < 1e-9,
            "{}",
            c.change
        );
        // 3% faster with +-5% intervals: overlapping.
        let near = [pt(1 << 20, 970.0, 5.0), pt(2 << 20, 1940.0, 5.0)];
        assert_eq!(
            compare("x", &near, &base, &band).unwrap().verdict,
            Verdict::WithinNoise
        );
        // No shared size in the band.
        assert!(compare("x", &fast, &base, &BANDS[0]).is_none());
        // Too few trials for a 95% interval: never beyond noise.
        let few = fast.map(|p| PointStat { trials: 5, ..p });
        let c = compare("x", &few, &base, &band).unwrap();
        assert_eq!((c.sizes_better, c.verdict), (0, Verdict::WithinNoise));
    }

    #[test]
    fn best_by_band_names_the_winner_and_its_significance() {
        let configs = plan(&[], &[]);
        let sizes = [64u64, 512, 4096, 32768, 262144, 1 << 20, 4 << 20];
        // The baseline runs at 10 Gbit/s everywhere; 256 KiB buffers reach
        // 12 Gbit/s from 64 KiB on; 64 KiB buffers drop to 5 Gbit/s there.
        let runs = vec![
            run(&configs[0], &sizes, 1.0, |_| 10e9),
            run(&configs[1], &sizes, 1.0, |b| {
                if b >= 65536 {
                    5e9
                } else {
                    10e9
                }
            }),
            run(&configs[3], &sizes, 1.0, |b| {
                if b >= 65536 {
                    12e9
                } else {
                    10e9
                }
            }),
        ];
        let best = best_by_band(&runs);
        assert_eq!(best.len(), 4);
        let large = &best[3];
        assert_eq!(large.best, "buffers 256 KiB");
        let c = large.against_baseline.as_ref().unwrap();
        assert_eq!(c.verdict, Verdict::Better);
        assert!((c.change - 0.2).abs() < 1e-9);
        let all = all_comparisons(&runs);
        assert_eq!(all.len(), 2 * 4);
        let worse = all
            .iter()
            .find(|c| c.config == "buffers 64 KiB" && c.band == ">= 1 MiB")
            .unwrap();
        assert_eq!(worse.verdict, Verdict::Worse);
    }

    #[test]
    fn a_winner_beyond_the_noise_beats_a_larger_change_within_it() {
        let configs = plan(&[], &[]);
        let sizes = [1u64 << 20, 2 << 20, 4 << 20];
        let runs = vec![
            run(&configs[0], &sizes, 1.0, |_| 10e9),
            // +30% but with +-40% intervals: within the noise.
            run(&configs[1], &sizes, 40.0, |_| 13e9),
            // +10% with +-1% intervals: beyond it.
            run(&configs[3], &sizes, 1.0, |_| 11e9),
        ];
        let large_band = |runs: &[ConfigRun]| {
            best_by_band(runs)
                .into_iter()
                .find(|b| b.band == ">= 1 MiB")
                .unwrap()
        };
        let large = large_band(&runs);
        assert_eq!(large.best, configs[3].label);
        assert_eq!(
            large.against_baseline.as_ref().unwrap().verdict,
            Verdict::Better
        );
        // Without the proven one, the larger change wins, marked as noise.
        let large = large_band(&runs[..2]);
        assert_eq!(large.best, configs[1].label);
        assert_eq!(
            large.against_baseline.as_ref().unwrap().verdict,
            Verdict::WithinNoise
        );
    }
}
