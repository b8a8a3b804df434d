//! CSV export: one row per point, with units in the column names.

use crate::report::export::{admit_sweeps_only, sweeps_only, Exporter, GivenFile};
use crate::report::input::ReportInput;
use crate::result::SweepResult;

/// Column names of the CSV export.
pub const COLUMNS: [&str; 22] = [
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
    "c2c_bits_per_s",
    "c2c_two_copy_bits_per_s",
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
                opt(p.limits.and_then(|l| l.c2c_bits_per_s)),
                opt(p.limits.and_then(|l| l.c2c_two_copy_bits_per_s)),
            ])?;
        }
    }
    w.into_inner().map_err(|e| anyhow::anyhow!("{e}"))
}

/// `--format csv`: [`to_csv`] of the sweeps.
pub struct Csv;

impl Exporter for Csv {
    fn name(&self) -> &'static str {
        "csv"
    }

    fn admit(&self, files: &[GivenFile<'_>]) -> anyhow::Result<()> {
        admit_sweeps_only(self.name(), files)
    }

    fn export(&self, input: &ReportInput<'_>) -> anyhow::Result<Vec<u8>> {
        sweeps_only(self.name(), input)?;
        to_csv(input.sweeps)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::Limits;

    #[test]
    fn limits_have_columns_of_their_own() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/tcp-pingpong.json");
        let mut r = crate::result::read_result(&path).unwrap();
        r.points[0].limits = Some(Limits {
            memcpy_bits_per_s: Some(4e11),
            floor_ns: Some(50.0),
            c2c_bits_per_s: Some(1.5e11),
            c2c_two_copy_bits_per_s: Some(7e10),
        });
        r.points[1].limits = None;
        let text = String::from_utf8(to_csv(&[r]).unwrap()).unwrap();
        let mut rows = ::csv::Reader::from_reader(text.as_bytes());
        let header: Vec<String> = rows.headers().unwrap().iter().map(String::from).collect();
        assert_eq!(header, COLUMNS);
        let col = |name: &str| COLUMNS.iter().position(|c| *c == name).unwrap();
        let recs: Vec<::csv::StringRecord> = rows.records().map(Result::unwrap).collect();
        assert_eq!(&recs[0][col("c2c_bits_per_s")], "150000000000");
        assert_eq!(&recs[0][col("c2c_two_copy_bits_per_s")], "70000000000");
        assert_eq!(&recs[0][col("floor_ns")], "50");
        assert_eq!(&recs[1][col("c2c_bits_per_s")], "", "absent: empty");
    }
}
