//! Both matrices as CSV: one row per directed cell, with the medians, the
//! confidence intervals and the trial counts, ready for a spreadsheet or
//! pandas pivot. A pure function from the result and its cells' figures
//! to bytes.

use crate::result::matrix::{CellFigures, MatrixResult};

/// The cells of `r` as CSV, from their figures `cells`
/// ([`crate::result::matrix::figures_of`] of `r.cells` for a result read
/// from a file).
pub fn to_csv(r: &MatrixResult, cells: &[CellFigures]) -> anyhow::Result<Vec<u8>> {
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record([
        "from",
        "to",
        "round",
        "latency_bytes",
        "latency_ns",
        "latency_ci_low_ns",
        "latency_ci_high_ns",
        "latency_trials",
        "bandwidth_bytes",
        "bits_per_s",
        "bandwidth_ci_low_ns",
        "bandwidth_ci_high_ns",
        "bandwidth_trials",
        "rate_messages_per_s",
        "rate_bits_per_s",
        "alone_bits_per_s",
        "error",
    ])?;
    let opt = |v: Option<f64>| v.map(|x| x.to_string()).unwrap_or_default();
    for c in cells {
        let (l, b) = (c.latency.as_ref(), c.bandwidth.as_ref());
        w.write_record([
            r.nodes[c.from].name.clone(),
            r.nodes[c.to].name.clone(),
            c.round.to_string(),
            r.latency_bytes.to_string(),
            opt(l.map(|p| p.median_ns)),
            opt(l.map(|p| p.ci_low_ns)),
            opt(l.map(|p| p.ci_high_ns)),
            l.map(|p| p.trials.to_string()).unwrap_or_default(),
            r.bandwidth_bytes.to_string(),
            opt(b.map(|p| p.bits_per_s)),
            opt(b.map(|p| p.ci_low_ns)),
            opt(b.map(|p| p.ci_high_ns)),
            b.map(|p| p.trials.to_string()).unwrap_or_default(),
            opt(c.load().rate_messages_per_s),
            opt(c.load().rate_bits_per_s),
            opt(c.load().alone_bits_per_s),
            c.error.as_deref().unwrap_or_default().to_string(),
        ])?;
    }
    Ok(w.into_inner()?)
}
