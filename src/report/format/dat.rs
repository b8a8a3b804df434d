//! gnuplot-ready data: whitespace-separated columns with `#` comment lines
//! naming them, one block per result separated by two blank lines so that
//! gnuplot's `index N` selects a result:
//!
//! ```text
//! plot 'r.dat' index 0 using 1:5 with linespoints title 'tcp pingpong'
//! ```

use std::fmt::Write;

use crate::report::export::{admit_sweeps_only, sweeps_only, Exporter, GivenFile};
use crate::report::input::ReportInput;
use crate::report::summary::labels;
use crate::result::SweepResult;

/// The column names, in order, as the header line states them.
pub const COLUMNS: [&str; 10] = [
    "bytes",
    "median_us",
    "ci_low_us",
    "ci_high_us",
    "mbit_per_s",
    "min_us",
    "p99_us",
    "cpu_a_ns_per_byte",
    "cpu_b_ns_per_byte",
    "noisy",
];

/// The points of `results` as gnuplot data.
pub fn to_dat(results: &[SweepResult]) -> String {
    let names = labels(results);
    let mut s = String::new();
    let header: Vec<String> = COLUMNS
        .iter()
        .enumerate()
        .map(|(i, c)| format!("{}:{c}", i + 1))
        .collect();
    let _ = writeln!(s, "# {}", header.join(" "));
    let _ = writeln!(
        s,
        "# wulf {}: times are medians of the kept trials (one-way; exchange in bidir), \
         mbit_per_s in SI units (10^6 bit/s; both directions in bidir), noisy 1 = interval wider than the precision target",
        env!("CARGO_PKG_VERSION")
    );
    for (i, (r, name)) in results.iter().zip(&names).enumerate() {
        if i > 0 {
            s.push_str("\n\n");
        }
        let _ = writeln!(
            s,
            "# index {i}: {name} (host {}, started {}{})",
            r.host.hostname,
            r.started_at,
            if r.complete { "" } else { ", INCOMPLETE" }
        );
        for p in &r.points {
            let _ = writeln!(
                s,
                "{} {:.4} {:.4} {:.4} {:.4} {:.4} {:.4} {:.6} {:.6} {}",
                p.bytes,
                p.median_ns / 1e3,
                p.ci_low_ns / 1e3,
                p.ci_high_ns / 1e3,
                p.bits_per_s / 1e6,
                p.min_ns / 1e3,
                p.p99_ns / 1e3,
                p.cpu_client.ns_per_byte,
                p.cpu_server.ns_per_byte,
                u8::from(p.noisy)
            );
        }
    }
    s
}

/// `--format dat`: [`to_dat`] of the sweeps.
pub struct Dat;

impl Exporter for Dat {
    fn name(&self) -> &'static str {
        "dat"
    }

    fn admit(&self, files: &[GivenFile<'_>]) -> anyhow::Result<()> {
        admit_sweeps_only(self.name(), files)
    }

    fn export(&self, input: &ReportInput<'_>) -> anyhow::Result<Vec<u8>> {
        sweeps_only(self.name(), input)?;
        Ok(to_dat(input.sweeps).into_bytes())
    }
}
