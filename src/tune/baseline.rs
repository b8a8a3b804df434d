//! The baseline, measured first and again last.
//!
//! Configurations are swept one after another, so a machine whose speed
//! drifts during the session (other jobs, frequency scaling, thermal
//! limits) would make whichever configuration ran in a fast moment look
//! better. Measuring the baseline at both ends of the session bounds that
//! drift: the comparisons use, size by size, the mean of the two medians
//! and the *union* of the two confidence intervals, so a configuration only
//! counts as different when it is outside both the baseline's own noise and
//! the drift between its two runs. When the two runs disagree beyond the
//! noise the session says so, since every comparison is then weaker.

use super::bands::{compare, Band, Comparison, PointStat, Verdict};
use super::plan::Factor;
use super::summary::ConfigRun;

/// All sizes, for comparing two whole runs.
const ALL_SIZES: Band = Band {
    label: "all sizes",
    min_bytes: 0,
    max_bytes: None,
};

fn baselines(runs: &[ConfigRun]) -> Vec<&ConfigRun> {
    runs.iter()
        .filter(|r| r.summary.config.factor == Factor::Baseline)
        .collect()
}

/// Merge two measurements of one configuration point by point: mean of the
/// medians, union of the intervals. Sizes only one run has are kept as
/// they are. The summary is the first run's, with the merged latency and
/// the higher peak.
pub fn merge(first: &ConfigRun, second: &ConfigRun) -> ConfigRun {
    let points: Vec<PointStat> = first
        .points
        .iter()
        .map(
            |a| match second.points.iter().find(|b| b.bytes == a.bytes) {
                None => *a,
                Some(b) => {
                    let median_ns = (a.median_ns + b.median_ns) / 2.0;
                    PointStat {
                        bytes: a.bytes,
                        median_ns,
                        ci_low_ns: a.ci_low_ns.min(b.ci_low_ns),
                        ci_high_ns: a.ci_high_ns.max(b.ci_high_ns),
                        bits_per_s: a.bytes as f64 * 8.0 / (median_ns * 1e-9),
                        trials: a.trials.min(b.trials),
                    }
                }
            },
        )
        .collect();
    let mut summary = first.summary.clone();
    summary.latency_ns = points.first().map(|p| p.median_ns);
    let peaks = [
        first.summary.peak_bits_per_s,
        second.summary.peak_bits_per_s,
    ];
    if let Some(i) = (0..2)
        .filter(|&i| peaks[i].is_some())
        .max_by(|&i, &j| peaks[i].unwrap_or(0.0).total_cmp(&peaks[j].unwrap_or(0.0)))
    {
        let from = if i == 0 { first } else { second };
        summary.peak_bits_per_s = from.summary.peak_bits_per_s;
        summary.peak_bytes = from.summary.peak_bytes;
    }
    ConfigRun { summary, points }
}

/// The runs as the comparisons see them: the baseline runs merged into one
/// (first), then every other configuration in order.
pub fn effective_runs(runs: &[ConfigRun]) -> Vec<ConfigRun> {
    let bases = baselines(runs);
    let mut out = Vec::with_capacity(runs.len());
    if let Some(first) = bases.first() {
        let merged = bases[1..]
            .iter()
            .fold((*first).clone(), |acc, b| merge(&acc, b));
        out.push(merged);
    }
    out.extend(
        runs.iter()
            .filter(|r| r.summary.config.factor != Factor::Baseline)
            .cloned(),
    );
    out
}

/// The last baseline run against the first, over all sizes; None with
/// fewer than two baseline runs.
pub fn drift(runs: &[ConfigRun]) -> Option<Comparison> {
    let bases = baselines(runs);
    let (first, last) = (bases.first()?, bases.last()?);
    if bases.len() < 2 {
        return None;
    }
    compare(
        &last.summary.config.label,
        &last.points,
        &first.points,
        &ALL_SIZES,
    )
}

/// A warning when the baseline's two runs disagree beyond their noise.
pub fn drift_warning(c: &Comparison) -> Option<String> {
    (c.verdict != Verdict::WithinNoise || c.sizes_better + c.sizes_worse > c.sizes_compared / 4)
        .then(|| {
            format!(
                "the baseline measured last differed from the one measured first beyond the \
                 noise at {} of {} sizes (median {:+.1}%): the machine's speed drifted during \
                 the session, so only differences larger than that drift count; a quieter \
                 machine or a larger --budget gives sharper answers",
                c.sizes_better + c.sizes_worse,
                c.sizes_compared,
                c.change * 100.0
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tune::bands::tests::run;
    use crate::tune::plan::plan;

    #[test]
    fn merged_baseline_spans_both_runs() {
        let configs = plan(&[], &[]);
        let first = &configs[0];
        let last = configs.last().unwrap();
        assert_eq!(last.factor, Factor::Baseline);
        let sizes = [1u64, 1 << 20];
        let a = run(first, &sizes, 1.0, |_| 10e9);
        let b = run(last, &sizes, 1.0, |_| 8e9);
        let m = merge(&a, &b);
        let (pa, pb, pm) = (a.points[1], b.points[1], m.points[1]);
        assert_eq!(pm.ci_low_ns, pa.ci_low_ns);
        assert_eq!(pm.ci_high_ns, pb.ci_high_ns);
        assert_eq!(pm.median_ns, (pa.median_ns + pb.median_ns) / 2.0);
        assert_eq!(m.summary.peak_bits_per_s, a.summary.peak_bits_per_s);
        assert_eq!(m.summary.config.label, "default");

        // A configuration between the two baseline runs is within the
        // drift, so not better; one faster than both is.
        let eff = effective_runs(&[a.clone(), run(&configs[4], &sizes, 1.0, |_| 9e9), b.clone()]);
        assert_eq!(eff.len(), 2);
        let c = crate::tune::bands::all_comparisons(&eff);
        assert!(c.iter().all(|c| c.verdict == Verdict::WithinNoise), "{c:?}");
        let eff = effective_runs(&[
            a.clone(),
            run(&configs[4], &sizes, 1.0, |_| 12e9),
            b.clone(),
        ]);
        let c = crate::tune::bands::all_comparisons(&eff);
        assert!(c.iter().all(|c| c.verdict == Verdict::Better), "{c:?}");

        let d = drift(&[a.clone(), b]).unwrap();
        assert_eq!(d.verdict, Verdict::Worse);
        assert!(drift_warning(&d).unwrap().contains("drifted"));
        assert!(drift(&[a]).is_none());
    }
}
