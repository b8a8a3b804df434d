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
