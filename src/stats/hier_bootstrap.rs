//! The change between two groups of repeated runs, with an interval that
//! accounts for the variation between runs as well as between trials.
//!
//! # Method
//!
//! Kalibera & Jones, "Rigorous benchmarking in reasonable time", ISMM 2013
//! (sec. 4 and 6): trials of one run share that run's conditions (CPU
//! placement, cache and page layout, the host's load), so they are not
//! independent samples of the system. The random effects are nested: runs,
//! then trials within a run. A percentile bootstrap that resamples at every
//! level in turn (runs with replacement, then the trials of each chosen run
//! with replacement) gives an interval for the ratio of the two systems'
//! figures that widens with the between-run variation, where a test on the
//! trials of one run each would call every run-to-run difference real.
//!
//! The figure of one run over a set of message sizes is the geometric mean
//! of the sizes' median trial times ([`run_figure`]): medians because trial
//! times are skewed, the geometric mean so that every size weighs the same
//! whatever its time (sizes span seven decades). A group's figure is the
//! geometric mean of its runs' figures: Kalibera & Jones average runs
//! arithmetically, but on a shared machine the run-to-run variation is
//! heavy-tailed (a run that met a busy CPU can be 100 times slower), and in
//! log space one such run cannot decide the comparison alone, while the
//! spread below is the spread of the very quantity averaged. The change is
//! B's figure / A's figure.
//!
//! # Between-run noise
//!
//! [`log_spread`] estimates the standard deviation of ln(run figure) over
//! repeated runs of one configuration; [`noise_bound`] turns it into the
//! largest change two groups of runs of the *same* configuration show in
//! 95% of cases: a Student-t prediction bound, `t(0.975, df) * s *
//! sqrt(1/n_a + 1/n_b)` in log space, since the difference of two group
//! means of independent runs has variance `s^2 (1/n_a + 1/n_b)` and `s` is
//! itself estimated with `df` degrees of freedom.

/// How many resamples and which interval.
#[derive(Debug, Clone, Copy)]
pub struct BootstrapOptions {
    /// Asked between resamples: true ends the bootstrap without an
    /// interval (`wulf compare` passes its Ctrl-C flag: two thousand
    /// resamples of millions of trials take minutes).
    pub stop: fn() -> bool,
    /// Number of bootstrap resamples.
    pub resamples: usize,
    /// Coverage of the interval, e.g. 0.95.
    pub confidence: f64,
    /// Seed of the generator: the same data give the same interval.
    pub seed: u64,
}

impl Default for BootstrapOptions {
    fn default() -> Self {
        BootstrapOptions {
            stop: || false,
            resamples: 2000,
            confidence: crate::stats::CONFIDENCE,
            seed: 2013,
        }
    }
}

/// B's figure / A's figure with its bootstrap interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RatioInterval {
    /// The ratio on the data themselves (> 1: B takes longer).
    pub ratio: f64,
    /// Lower percentile bound of the ratio.
    pub low: f64,
    /// Upper percentile bound of the ratio.
    pub high: f64,
}

/// One run: the kept trials of each message size of the set compared, in
/// the same order for every run.
pub type Run<'a> = Vec<&'a [f64]>;

/// The figure of one run: the geometric mean of the sizes' median trial
/// times. `None` when the run has no sizes, a size has no trials, or a
/// median is not positive.
pub fn run_figure(run: &[&[f64]]) -> Option<f64> {
    let mut scratch = Vec::new();
    let mut sum_ln = 0.0;
    for trials in run {
        scratch.clear();
        scratch.extend_from_slice(trials);
        sum_ln += ln_median(&mut scratch)?;
    }
    (!run.is_empty()).then(|| (sum_ln / run.len() as f64).exp())
}

/// The geometric mean of the runs' figures (`None` if any run has none).
pub fn group_figure(runs: &[Run]) -> Option<f64> {
    let logs: Option<Vec<f64>> = runs.iter().map(|r| run_figure(r).map(f64::ln)).collect();
    let logs = logs?;
    (!logs.is_empty()).then(|| super::mean(&logs).exp())
}

/// The hierarchical bootstrap of B's group figure / A's (see the module
/// notes). `None` when either group is empty or has a run without a figure,
/// or the runs do not all cover the same number of sizes.
pub fn hierarchical_ratio(a: &[Run], b: &[Run], opts: &BootstrapOptions) -> Option<RatioInterval> {
    let sizes = a.first()?.len();
    if b.is_empty() || a.iter().chain(b).any(|r| r.len() != sizes) {
        return None;
    }
    let ratio = group_figure(b)? / group_figure(a)?;
    let mut rng = fastrand::Rng::with_seed(opts.seed);
    let longest = a.iter().chain(b).flatten().map(|t| t.len()).max()?;
    let mut scratch = Vec::with_capacity(longest);
    let mut ratios = Vec::with_capacity(opts.resamples);
    for _ in 0..opts.resamples.max(1) {
        if (opts.stop)() {
            return None;
        }
        let fa = resampled_group(a, &mut rng, &mut scratch)?;
        let fb = resampled_group(b, &mut rng, &mut scratch)?;
        ratios.push(fb / fa);
    }
    ratios.sort_by(f64::total_cmp);
    let tail = (1.0 - opts.confidence) / 2.0;
    Some(RatioInterval {
        ratio,
        low: super::quantile_sorted(&ratios, tail),
        high: super::quantile_sorted(&ratios, 1.0 - tail),
    })
}

/// One resample of a group's figure: runs drawn with replacement, then each
/// drawn run's trials drawn with replacement, size by size.
fn resampled_group(runs: &[Run], rng: &mut fastrand::Rng, scratch: &mut Vec<f64>) -> Option<f64> {
    let mut sum = 0.0;
    for _ in 0..runs.len() {
        let run = &runs[rng.usize(0..runs.len())];
        let mut sum_ln = 0.0;
        for trials in run {
            scratch.clear();
            for _ in 0..trials.len() {
                scratch.push(trials[rng.usize(0..trials.len())]);
            }
            sum_ln += ln_median(scratch)?;
        }
        sum += sum_ln / run.len() as f64;
    }
    Some((sum / runs.len() as f64).exp())
}

/// ln of the median of `values` (reordered in place); `None` when empty or
/// not positive.
fn ln_median(values: &mut [f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    values.sort_unstable_by(f64::total_cmp);
    let m = super::quantile_sorted(values, 0.5);
    (m > 0.0).then(|| m.ln())
}

/// Between-run spread of one configuration's repeated runs: the sample
/// standard deviation of ln(run figure) and its degrees of freedom
/// (`figures.len() - 1`). `None` for fewer than two runs or a figure that
/// is not positive.
pub fn log_spread(figures: &[f64]) -> Option<(f64, usize)> {
    if figures.len() < 2 || figures.iter().any(|&f| f <= 0.0 || f.is_nan()) {
        return None;
    }
    let logs: Vec<f64> = figures.iter().map(|f| f.ln()).collect();
    Some((super::stddev(&logs), logs.len() - 1))
}

/// Pool several groups' spreads `(s, df)` into one: the square root of the
/// df-weighted mean variance, with the summed degrees of freedom.
pub fn pooled_spread(spreads: &[(f64, usize)]) -> Option<(f64, usize)> {
    let df: usize = spreads.iter().map(|s| s.1).sum();
    if df == 0 {
        return None;
    }
    let ss: f64 = spreads.iter().map(|(s, d)| s * s * *d as f64).sum();
    Some(((ss / df as f64).sqrt(), df))
}

/// The largest change, as a ratio above 1, between `n_a` and `n_b` runs of
/// the same configuration in 95% of cases, given the between-run spread
/// `s` (log space) estimated with `df` degrees of freedom (see the module
/// notes).
pub fn noise_bound(s: f64, df: usize, n_a: usize, n_b: usize) -> f64 {
    let se = s * (1.0 / n_a.max(1) as f64 + 1.0 / n_b.max(1) as f64).sqrt();
    (t_975(df) * se).exp()
}

/// Two-sided 95% quantile of Student's t (one implementation for the
/// crate, in [`super::student_t`]).
pub use super::student_t::t_975;

#[cfg(test)]
#[path = "hier_bootstrap_tests.rs"]
mod tests;
