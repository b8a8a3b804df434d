//! CSV export: one row per point, with units in the column names.

use crate::result::SweepResult;

/// Column names of the CSV export.
pub const COLUMNS: [&str; 20] = [
    "transport",
    "mode",
    "bytes",
    "median_ns",
    "min_ns",
    "mean_ns",
    "stddev_ns",
    "p90_ns",
    "p99_ns",
    "ci_low_ns",
    "ci_high_ns",
    "bits_per_s",
    "trials",
    "repeats",
    "noisy",
    "cpu_client_ns_per_byte",
    "cpu_server_ns_per_byte",
    "tails_p99_ns",
    "memcpy_bits_per_s",
    "floor_ns",
];

/// An optional number as a CSV field (empty when absent).
fn opt(v: Option<f64>) -> String {
    v.map(|x| x.to_string()).unwrap_or_default()
}

/// The points of `results` as CSV bytes (header line first).
pub fn to_csv(results: &[SweepResult]) -> anyhow::Result<Vec<u8>> {
    let mut w = ::csv::Writer::from_writer(Vec::new());
    w.write_record(COLUMNS)?;
    for r in results {
        for p in &r.points {
            w.write_record([
                r.transport.clone(),
                r.mode.to_string(),
                p.bytes.to_string(),
                p.median_ns.to_string(),
                p.min_ns.to_string(),
                p.mean_ns.to_string(),
                p.stddev_ns.to_string(),
                p.p90_ns.to_string(),
                p.p99_ns.to_string(),
                p.ci_low_ns.to_string(),
                p.ci_high_ns.to_string(),
                p.bits_per_s.to_string(),
                p.trials.to_string(),
                p.repeats.to_string(),
                p.noisy.to_string(),
                p.cpu_client.ns_per_byte.to_string(),
                p.cpu_server.ns_per_byte.to_string(),
                p.tails
                    .as_ref()
                    .map(|t| t.p99_ns.to_string())
                    .unwrap_or_default(),
                opt(p.limits.and_then(|l| l.memcpy_bits_per_s)),
                opt(p.limits.and_then(|l| l.floor_ns)),
            ])?;
        }
    }
    w.into_inner().map_err(|e| anyhow::anyhow!("{e}"))
}
