//! NetPIPE `np.out` compatible output, for scripts written for NetPIPE 3.x.
//!
//! NetPIPE 3.7 writes one line per size as `"%8d %lf %12.8lf"`: bytes,
//! throughput in "Mbps" and time in seconds. Its Mbps are 2^20 bit/s
//! (bits / (t * 1024 * 1024)), not the SI 10^6 wulf uses everywhere else;
//! this file follows NetPIPE so that existing scripts keep their scale.
//! The time is the one-way time (half a round trip in ping-pong). In the
//! bidirectional mode NetPIPE counts both directions, in the bytes column
//! as well; so does this file. Differences: wulf's time is the median of
//! the kept trials where NetPIPE 3.7 keeps the minimum of 3, and sizes are
//! whatever the sweep measured.

use std::fmt::Write;

use crate::report::export::{admit_sweeps_only, sweeps_only, Exporter, GivenFile};
use crate::report::input::ReportInput;
use crate::result::SweepResult;

/// NetPIPE 3.7's "Mbps": 2^20 bit/s.
pub const NETPIPE_MBIT_BITS: f64 = 1_048_576.0;

/// One result as NetPIPE 3.7 `np.out` lines.
pub fn to_npout(r: &SweepResult) -> String {
    let mut s = String::new();
    for p in &r.points {
        let bytes = r.mode.bytes_per_op(p.bytes);
        let t_s = p.median_ns / 1e9;
        let mbps = bytes as f64 * 8.0 / (t_s * NETPIPE_MBIT_BITS);
        let _ = writeln!(s, "{bytes:8} {mbps:.6} {t_s:12.8}");
    }
    s
}

/// `--format npout`: [`to_npout`] of the one sweep np.out can hold.
pub struct Npout;

impl Exporter for Npout {
    fn name(&self) -> &'static str {
        "npout"
    }

    /// Sweeps only, and one file: more than one run has no place in np.out's
    /// columns, and saying so before reading beats reading them all.
    fn admit(&self, files: &[GivenFile<'_>]) -> anyhow::Result<()> {
        admit_sweeps_only(self.name(), files)?;
        if files.len() != 1 {
            return Err(crate::error::usage(format!(
                "--format npout: np.out holds one run; give one result file (got {})",
                files.len()
            )));
        }
        Ok(())
    }

    fn export(&self, input: &ReportInput<'_>) -> anyhow::Result<Vec<u8>> {
        sweeps_only(self.name(), input)?;
        match input.sweeps {
            [one] => Ok(to_npout(one).into_bytes()),
            more => Err(crate::error::usage(format!(
                "np.out holds one run; give one result file (got {})",
                more.len()
            ))),
        }
    }
}
