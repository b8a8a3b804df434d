//! A run's drift over its own length, seen in one size band: the sizes
//! its confirmation pass measured again later in the run, against the
//! first pass.
//!
//! # Why
//!
//! One run per side, the trials' term of the run-to-run band
//! ([`super::floor`]) sees the noise within each size and the drift from
//! one size to the next, never a shift common to a whole run. Two A/A runs
//! of busy-polling shm on a quiet machine differed by +7.3% in the 64 KiB -
//! 1 MiB band (interval +6.9 .. +7.8%) against a trials' band of +-6.8%.
//! The runs themselves say how far their conditions move: the confirmation
//! pass measures sizes again seconds later, and there run 2 had moved by
//! +6.4% (the median over its 11 re-measured sizes of the band), run 3 by
//! +1.3%.
//!
//! # The rule
//!
//! A run's drift in a band, `d`, is the median over the band's re-measured
//! sizes of ln(fresh median / first median): the median, so a size whose
//! fresh trials met a burst does not set it. `d` is the difference of two
//! moments of one run, so a moment's shift has a standard deviation of
//! about `|d| / sqrt(2)`, and the difference of two independent runs
//! `sqrt(d_a^2 / 2 + d_b^2 / 2)`: the root mean square of the runs'
//! drifts ([`band_drift`], over the runs that re-measured a size of the
//! band; a run without one is taken to drift as the others do).
//!
//! Only the band's own sizes count: a lab link's small messages drift by
//! 0.22 - 0.81 in log terms between passes while its large ones, which
//! the halved link doubles, move by 1% or less; a whole-run drift made
//! every lab band inconclusive. A band no run re-measured has no drift
//! term (its verdict rests on the trials' term, as before).

use crate::result::SweepResult;

/// The drift of `r` in sizes `lo ..= hi` (see the module notes), or none
/// when its confirmation pass measured no size there again.
pub fn run_drift(r: &SweepResult, lo: u64, hi: u64) -> Option<f64> {
    let c = r.confirmation.as_ref()?;
    let mut logs: Vec<f64> = c
        .points
        .iter()
        .filter(|p| p.bytes >= lo && p.bytes <= hi)
        .filter_map(|p| {
            let first = r.points.iter().find(|q| q.bytes == p.bytes)?.median_ns;
            let ratio = p.median_ns / first;
            (ratio.is_finite() && ratio > 0.0).then(|| ratio.ln())
        })
        .collect();
    if logs.is_empty() {
        return None;
    }
    logs.sort_by(f64::total_cmp);
    Some(crate::stats::quantile_sorted(&logs, 0.5))
}

/// The standard deviation of ln(B/A) of one run against one that the
/// runs' drifts in `lo ..= hi` imply: the root mean square of the drifts
/// of the runs that have one, none when no run has.
pub fn band_drift<'a>(
    runs: impl Iterator<Item = &'a SweepResult>,
    lo: u64,
    hi: u64,
) -> Option<f64> {
    let d: Vec<f64> = runs.filter_map(|r| run_drift(r, lo, hi)).collect();
    (!d.is_empty()).then(|| (d.iter().map(|x| x * x).sum::<f64>() / d.len() as f64).sqrt())
}

#[cfg(test)]
#[path = "drift_tests.rs"]
mod tests;
