//! Results compared run against run: per size band and in the summary
//! figures, saying which changes exceed the variation between runs.
//!
//! # Why runs, not trials
//!
//! The trials of one run share that run's conditions (CPU placement, cache
//! and page layout, the host's load), so a test on the trials of one run
//! per side finds the two runs different even when nothing changed in
//! between: on a shared machine, two `wulf run`s of the same build differ
//! by more than most real changes. So a comparison works at the level of
//! runs:
//!
//! * Each side is one or more result files of the same transport and mode
//!   (repeated runs). A band's figure in a run is the geometric mean of its
//!   sizes' median times, a side's figure the geometric mean over its runs
//!   (one run that met a busy CPU must not decide alone), and the
//!   change is B's figure / A's figure - 1 (+: B slower).
//! * Its interval is a hierarchical bootstrap over runs, then trials
//!   (Kalibera & Jones 2013, [`crate::stats::hier_bootstrap`]). With one
//!   run per side it can only resample trials: it then says nothing about
//!   run-to-run variation, and the output says so.
//! * The run-to-run band ([`floor`]) is estimated from the data compared:
//!   the spread between the runs of a side, a floor `wulf run --repeat N`
//!   recorded, or (one run per side) the runs' own trials and per-size
//!   changes. Three verdicts follow ([`Verdict::of`]):
//!   - "A faster" / "B faster" when the whole interval of the change lies
//!     beyond the band (a change is shown);
//!   - "no change" only when equivalence is shown: the interval widened by
//!     the band lies inside +-`margin` (10% unless `--margin` says);
//!   - "inconclusive" otherwise: too noisy to say either; more runs per
//!     side (`--repeat`) narrow it.
//!
//! # Figures
//!
//! Latency is tested the same way at the smallest common size, the peak at
//! the size where both sides together are fastest (the geometric mean of
//! their rates: the same size whichever side is A), both sides' rates read
//! there so that like is compared with like. A tested figure is one size
//! of a band: its run-to-run band is at least the band's, and it shows a
//! change only where its band shows the same one; n_1/2 and the
//! saturation point are read off many sizes (the median over a side's
//! runs) and carry no test.
//!
//! # Regression gate
//!
//! `--fail-if-slower PCT` fails (exit 4) only on a shown slowdown: a band,
//! the latency or the peak is "A faster" and B's time exceeds A's by more
//! than PCT percent. Where nothing is shown but a verdict is inconclusive
//! and its widened interval reaches beyond PCT, it cannot pass either: its
//! own exit code (5) says "rerun with more runs".

use crate::result::SweepResult;
use crate::stats::hier_bootstrap::{
    hierarchical_ratio, log_spread, pooled_spread, run_figure, BootstrapOptions, RatioInterval, Run,
};

pub mod drift;
mod figures;
pub mod floor;
pub mod options;
pub mod single;
pub mod spread;
pub use floor::{Floor, FloorInputs, FloorSource, MIN_FLOOR_FRACTION};
pub use options::{
    CompareOptions, DEFAULT_LEVEL, DEFAULT_MARGIN, MAX_BOOTSTRAP_DRAWS, MIN_RESAMPLES,
};

/// The size bands of the comparison table: name, first and last size.
pub const SIZE_BANDS: [(&str, u64, u64); 5] = [
    ("<= 64 B", 0, 64),
    ("64 B - 4 KiB", 65, 4 << 10),
    ("4 - 64 KiB", (4 << 10) + 1, 64 << 10),
    ("64 KiB - 1 MiB", (64 << 10) + 1, 1 << 20),
    ("> 1 MiB", (1 << 20) + 1, u64::MAX),
];

/// Whether B differs from A in a band or figure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// No change: the interval widened by the run-to-run band lies within
    /// the equivalence margin.
    Same,
    /// Neither a change nor its absence is shown: too noisy.
    Inconclusive,
    /// A takes less time: B is slower.
    AFaster,
    /// B takes less time.
    BFaster,
    /// Not tested (a derived figure, or no data).
    Untested,
}

impl Verdict {
    /// Words for tables.
    pub fn text(self) -> &'static str {
        match self {
            Verdict::Same => "no change (within the margin)",
            Verdict::Inconclusive => "inconclusive: too noisy, rerun with --repeat",
            Verdict::AFaster => "A faster",
            Verdict::BFaster => "B faster",
            Verdict::Untested => "not tested",
        }
    }

    /// The verdict of a time ratio B / A with its interval, the run-to-run
    /// band `floor` and the equivalence `margin` (a fraction), all
    /// compared in log space, where they are symmetric.
    pub fn of(interval: &RatioInterval, floor: &Floor, margin: f64) -> Verdict {
        let band = floor.log();
        let (low, high) = (interval.low.ln(), interval.high.ln());
        if !(low.is_finite() && high.is_finite()) {
            return Verdict::Inconclusive;
        }
        let margin = margin.ln_1p();
        if low > band {
            Verdict::AFaster
        } else if high < -band {
            Verdict::BFaster
        } else if floor.judges_sameness() && low - band >= -margin && high + band <= margin {
            Verdict::Same
        } else {
            Verdict::Inconclusive
        }
    }

    /// The largest time ratio B / A the evidence leaves possible: the
    /// interval's upper end widened by the band.
    pub fn worst_ratio(interval: &RatioInterval, floor: &Floor) -> f64 {
        if !floor.judges_sameness() {
            return f64::INFINITY;
        }
        interval.high * (1.0 + floor.fraction)
    }
}

/// The change in one size band.
#[derive(Debug, Clone, PartialEq)]
pub struct BandDiff {
    /// Band name, e.g. "4 - 64 KiB".
    pub name: &'static str,
    /// Sizes of the band measured in every run of both sides.
    pub sizes: usize,
    /// A's band figure: geometric mean of the median times, mean over runs, ns.
    pub a_ns: f64,
    /// B's band figure, ns.
    pub b_ns: f64,
    /// B's figure / A's with its interval (> 1: B slower).
    pub interval: RatioInterval,
    /// The noise floor applied.
    pub floor: Floor,
    /// The band's verdict.
    pub verdict: Verdict,
}

/// A summary figure of both sides and its change.
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
    /// Size whose times were tested, if a test applies.
    pub tested_at_bytes: Option<u64>,
    /// B's time / A's time at that size, with its interval.
    pub interval: Option<RatioInterval>,
    /// The noise floor applied there.
    pub floor: Option<Floor>,
    /// The verdict, or untested.
    pub verdict: Verdict,
    /// Whether the figure is a rate (the peak): more is faster, so its
    /// change is the inverse of the time's, as [`FigureDiff::own_interval`]
    /// gives it.
    pub rate: bool,
}

impl FigureDiff {
    /// The interval of the figure itself, in the direction of `change`
    /// (B's figure / A's): the time ratio's for a time, its inverse for a
    /// rate, so that a row's change and interval are of the same figure.
    pub fn own_interval(&self) -> Option<RatioInterval> {
        let i = self.interval?;
        Some(if self.rate {
            RatioInterval {
                ratio: 1.0 / i.ratio,
                low: 1.0 / i.high,
                high: 1.0 / i.low,
            }
        } else {
            i
        })
    }
}

/// A comparison of B's runs against the baseline A's.
#[derive(Debug, Clone, PartialEq)]
pub struct Comparison {
    /// Runs (result files) of A.
    pub runs_a: usize,
    /// Runs of B.
    pub runs_b: usize,
    /// 1 - the intervals' coverage.
    pub level: f64,
    /// Sizes measured in every run of both sides.
    pub sizes: usize,
    /// Per band with at least one common size.
    pub bands: Vec<BandDiff>,
    /// Latency, peak, n_1/2 and saturation point.
    pub figures: Vec<FigureDiff>,
    /// Sizes some run of A measured that are not common.
    pub only_in_a: usize,
    /// Sizes some run of B measured that are not common.
    pub only_in_b: usize,
    /// Common sizes marked noisy in some run.
    pub noisy_sizes: usize,
    /// The equivalence margin applied, as a fraction.
    pub margin: f64,
}

impl Comparison {
    /// Whether both sides have one run: the run-to-run variation is then
    /// unknown to the intervals.
    pub fn single_runs(&self) -> bool {
        self.runs_a < 2 && self.runs_b < 2
    }
}

/// Compare B's runs against the baseline A's runs (each side one or more
/// results, meant to be of the same transport and mode).
pub fn compare(a: &[SweepResult], b: &[SweepResult], opts: &CompareOptions) -> Comparison {
    let common = common_sizes(a, b);
    let count_only = |side: &[SweepResult]| {
        let mut all: Vec<u64> = side
            .iter()
            .flat_map(|r| r.points.iter().map(|p| p.bytes))
            .collect();
        all.sort_unstable();
        all.dedup();
        all.iter()
            .filter(|s| common.binary_search(s).is_err())
            .count()
    };
    let ctx = Context { a, b, opts };
    let bands: Vec<BandDiff> = SIZE_BANDS
        .iter()
        .filter_map(|&(name, lo, hi)| {
            let sizes: Vec<u64> = common
                .iter()
                .copied()
                .filter(|&s| s >= lo && s <= hi)
                .collect();
            let (interval, floor, a_ns, b_ns) = ctx.test(&sizes, name)?;
            Some(BandDiff {
                name,
                sizes: sizes.len(),
                a_ns,
                b_ns,
                interval,
                verdict: Verdict::of(&interval, &floor, opts.margin),
                floor,
            })
        })
        .collect();
    let noisy_sizes = common
        .iter()
        .filter(|&&s| {
            a.iter()
                .chain(b)
                .any(|r| point(r, s).is_some_and(|p| p.noisy))
        })
        .count();
    let figures = ctx.figures(&common, &bands);
    Comparison {
        runs_a: a.len(),
        runs_b: b.len(),
        level: opts.level,
        sizes: common.len(),
        bands,
        figures,
        only_in_a: count_only(a),
        only_in_b: count_only(b),
        noisy_sizes,
        margin: opts.margin,
    }
}

/// The sizes every run of both sides measured, ascending.
fn common_sizes(a: &[SweepResult], b: &[SweepResult]) -> Vec<u64> {
    let Some(first) = a.first() else {
        return Vec::new();
    };
    let mut sizes: Vec<u64> = first.points.iter().map(|p| p.bytes).collect();
    sizes.sort_unstable();
    sizes.dedup();
    sizes.retain(|&s| a.iter().chain(b).all(|r| point(r, s).is_some()));
    if b.is_empty() {
        sizes.clear();
    }
    sizes
}

/// The point of `bytes` in `r`: a binary search, as a result's sizes
/// ascend (the reader checks it); a linear scan per size made `wulf
/// compare` quadratic in the points. Unsorted points (built by hand)
/// fall back to the scan.
fn point(r: &SweepResult, bytes: u64) -> Option<&crate::result::Point> {
    match r.points.binary_search_by_key(&bytes, |p| p.bytes) {
        Ok(i) => Some(&r.points[i]),
        Err(_) if r.points.windows(2).all(|w| w[0].bytes < w[1].bytes) => None,
        Err(_) => r.points.iter().find(|p| p.bytes == bytes),
    }
}

/// The runs of a side restricted to `sizes` (all present, see
/// [`common_sizes`]).
fn runs<'a>(side: &'a [SweepResult], sizes: &[u64]) -> Vec<Run<'a>> {
    side.iter()
        .map(|r| {
            sizes
                .iter()
                .filter_map(|&s| point(r, s).map(|p| &p.trials_ns[..]))
                .collect()
        })
        .collect()
}

/// The band `SIZE_BANDS` puts `bytes` in.
fn band_of(bytes: u64) -> &'static str {
    SIZE_BANDS
        .iter()
        .find(|b| bytes >= b.1 && bytes <= b.2)
        .map(|b| b.0)
        .unwrap_or(SIZE_BANDS[0].0)
}

struct Context<'a> {
    a: &'a [SweepResult],
    b: &'a [SweepResult],
    opts: &'a CompareOptions,
}

impl Context<'_> {
    /// Interval, floor and both sides' figures over `sizes`, whose recorded
    /// and default spreads are those of `band`.
    fn test(&self, sizes: &[u64], band: &'static str) -> Option<(RatioInterval, Floor, f64, f64)> {
        if sizes.is_empty() {
            return None;
        }
        let (ra, rb) = (runs(self.a, sizes), runs(self.b, sizes));
        let trials: usize = ra.iter().chain(&rb).flatten().map(|t| t.len()).sum();
        let boot = BootstrapOptions {
            resamples: self
                .opts
                .resamples
                .min((MAX_BOOTSTRAP_DRAWS / trials.max(1)).max(MIN_RESAMPLES)),
            confidence: 1.0 - self.opts.level,
            stop: self.opts.stop,
            ..BootstrapOptions::default()
        };
        let interval = hierarchical_ratio(&ra, &rb, &boot)?;
        let spreads: Vec<(f64, usize)> = [&ra, &rb]
            .iter()
            .filter_map(|side| {
                let figures: Option<Vec<f64>> = side.iter().map(|r| run_figure(r)).collect();
                log_spread(&figures?)
            })
            .collect();
        let inputs = FloorInputs {
            given: self.opts.noise_floor,
            runs: pooled_spread(&spreads),
            recorded: recorded_spread(self.a.iter().chain(self.b), band),
            trials: self.one_run_sd(sizes),
            drift: SIZE_BANDS
                .iter()
                .find(|b| b.0 == band)
                .and_then(|&(_, lo, hi)| drift::band_drift(self.a.iter().chain(self.b), lo, hi)),
            band,
            unclean: self.unclean(sizes),
            machine: self.machine_log_shift(),
        };
        let floor = floor::floor(&inputs, ra.len(), rb.len());
        let floor = self.single_run_floor(sizes, &interval, floor, inputs.drift);
        let group = |runs: &[Run]| crate::stats::hier_bootstrap::group_figure(runs);
        Some((interval, floor, group(&ra)?, group(&rb)?))
    }

    /// Whether a run of either side was made on a busy machine (a
    /// one-minute load average at or above its CPU count, before or
    /// after) or has most of `sizes` noisy: its whole-run shift is
    /// unknown (see [`floor`]).
    fn unclean(&self, sizes: &[u64]) -> bool {
        self.a.iter().chain(self.b).any(|r| {
            let noisy = sizes
                .iter()
                .filter(|&&s| point(r, s).is_some_and(|p| p.noisy))
                .count();
            single::busy(r) || 2 * noisy > sizes.len()
        })
    }

    /// The standard deviation of ln(B/A) of one run against one over
    /// `sizes`, from the runs' trials and per-size changes (see
    /// [`floor`]'s notes): `max(sqrt(2) * s_trial, s_step)`.
    fn one_run_sd(&self, sizes: &[u64]) -> Option<f64> {
        let (mut sum, mut n) = (0.0, 0usize);
        for r in self.a.iter().chain(self.b) {
            for &s in sizes {
                let Some(p) = point(r, s) else { continue };
                let logs: Vec<f64> = p.trials_ns.iter().map(|t| t.ln()).collect();
                if logs.len() < 3 {
                    continue;
                }
                if let Some((_, mad)) = crate::stats::robust::median_mad(&logs) {
                    // 1.4826 MAD estimates a normal standard deviation.
                    let sd = 1.4826 * mad;
                    sum += sd * sd;
                    n += 1;
                }
            }
        }
        let s_trial = (n > 0).then(|| (sum / n as f64).sqrt())?;
        let steps: Vec<f64> = sizes
            .iter()
            .filter_map(|&s| {
                Some(self.mean_median(self.b, s)?.ln() - self.mean_median(self.a, s)?.ln())
            })
            .collect::<Vec<f64>>()
            .windows(2)
            .map(|w| (w[1] - w[0]).powi(2))
            .collect();
        // The mean squared successive difference is twice the variance of
        // independent per-size noise; needs two steps to say anything.
        let s_step = if steps.len() >= 2 {
            (crate::stats::mean(&steps) / 2.0).sqrt()
        } else {
            0.0
        };
        Some((std::f64::consts::SQRT_2 * s_trial).max(s_step))
    }

    /// The geometric mean over a side's runs of the median time at
    /// `bytes`, as the tested figures are.
    fn mean_median(&self, side: &[SweepResult], bytes: u64) -> Option<f64> {
        let m: Option<Vec<f64>> = side
            .iter()
            .map(|r| point(r, bytes).map(|p| p.median_ns.ln()))
            .collect();
        let m = m?;
        (!m.is_empty()).then(|| crate::stats::mean(&m).exp())
    }
}

/// The largest one-run floor recorded for `band` by `wulf run --repeat` in
/// any of `results`, with its repetitions.
fn recorded_spread<'a>(
    results: impl Iterator<Item = &'a SweepResult>,
    band: &str,
) -> Option<(f64, usize)> {
    results
        .filter_map(|r| r.run_to_run.as_ref())
        .flat_map(|rr| rr.bands.iter())
        .filter(|b| b.band == band && b.df > 0)
        .map(|b| (b.one_run_floor_fraction, b.df as usize + 1))
        .max_by(|x, y| x.0.total_cmp(&y.0))
}

impl Comparison {
    /// The reasons B is shown slower than A by more than `pct` percent
    /// (a verdict "A faster" and a change beyond `pct`); empty when none.
    pub fn regressions(&self, pct: f64) -> Vec<String> {
        let limit = 1.0 + pct / 100.0;
        self.tested()
            .filter(|(_, i, _, v)| *v == Verdict::AFaster && i.ratio > limit)
            .map(|(name, i, f, _)| {
                format!(
                    "{name}: {:.1}% slower (interval {:+.1}% to {:+.1}%, run-to-run band {})",
                    100.0 * (i.ratio - 1.0),
                    100.0 * (i.low - 1.0),
                    100.0 * (i.high - 1.0),
                    f.band_text()
                )
            })
            .collect()
    }

    /// The bands and figures that are inconclusive and could hide a
    /// slowdown beyond `pct` percent (the interval widened by the band
    /// reaches past it): a gate can neither pass nor fail them.
    pub fn undecided(&self, pct: f64) -> Vec<String> {
        let limit = 1.0 + pct / 100.0;
        self.tested()
            .filter(|(_, i, f, v)| {
                *v == Verdict::Inconclusive && Verdict::worst_ratio(i, f) > limit
            })
            .map(|(name, i, f, _)| {
                format!(
                    "{name}: {:+.1}%, but up to {:+.1}% cannot be excluded",
                    100.0 * (i.ratio - 1.0),
                    100.0 * (Verdict::worst_ratio(&i, &f) - 1.0)
                )
            })
            .collect()
    }

    /// Every tested band and figure: its name, interval, floor and verdict.
    fn tested(&self) -> impl Iterator<Item = (String, RatioInterval, Floor, Verdict)> + '_ {
        let bands = self
            .bands
            .iter()
            .map(|b| (format!("sizes {}", b.name), b.interval, b.floor, b.verdict));
        let figures = self
            .figures
            .iter()
            .filter_map(|f| Some((f.name.to_string(), f.interval?, f.floor?, f.verdict)));
        bands.chain(figures)
    }

    /// Bands and tested figures that changed either way.
    pub fn changes(&self) -> usize {
        let changed = |v: Verdict| matches!(v, Verdict::AFaster | Verdict::BFaster);
        self.bands.iter().filter(|b| changed(b.verdict)).count()
            + self.figures.iter().filter(|f| changed(f.verdict)).count()
    }
}

#[cfg(test)]
mod single_tests;
#[cfg(test)]
mod tests;
