//! Entry points for fuzzing: each takes arbitrary bytes, as they would
//! arrive from the network or a file, and must return without panicking,
//! hanging or allocating out of proportion to the input. The cargo-fuzz
//! targets in `fuzz/` call them with libFuzzer's inputs; the property
//! tests in `tests/fast/fuzz_properties.rs` call them with proptest's within
//! `cargo test`, so the same properties are checked on every run.

use crate::cluster::protocol::{CellReport, Claim, Join, Order};
use crate::peer::protocol::{parse_line, Hello, Reply, Request};

/// The control-message decoders of `wulf serve`, its clients and the
/// cluster's agents and coordinator.
pub fn control_message(data: &[u8]) {
    let Ok(line) = std::str::from_utf8(data) else {
        return;
    };
    let _ = parse_line::<Hello>(line);
    let _ = parse_line::<Request>(line);
    let _ = parse_line::<Reply>(line);
    let _ = parse_line::<Order>(line);
    let _ = parse_line::<Claim>(line);
    let _ = parse_line::<Join>(line);
    let _ = parse_line::<CellReport>(line);
}

/// The result reader behind `wulf report` and `wulf compare`, and when it
/// accepts the input, the analysis and every exporter of it.
pub fn result_file(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(r) = crate::result::parse_result(text, "fuzz input") {
        let results = [r];
        let _ = crate::analysis::Analysis::of(&results[0]);
        let _ = crate::report::html::to_html(&crate::report::ReportInput::of_sweeps(&results));
        let _ = crate::report::format::csv::to_csv(&results);
        let _ = crate::report::format::markdown::to_markdown(&results);
    }
}

/// Only the decoding part of [`result_file`] (the part whose memory must
/// stay proportional to the input), and the reader of every kind behind
/// `wulf report`, which dispatches on the input's `kind`.
pub fn result_decoder(data: &[u8]) {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = crate::result::parse_result(text, "fuzz input");
        let _ = crate::result::parse_any(text, "fuzz input");
    }
}

/// The parsers of sizes, durations, size schedules and host lists.
pub fn units(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let _ = crate::units::parse_bytes(text);
    let _ = crate::units::parse_duration(text);
    let _ = crate::message::schedule::parse_sizes(text, true);
    let _ = crate::cluster::hostlist::expand(text);
    let _ = crate::cluster::hostlist::parse_hostfile(text);
}
