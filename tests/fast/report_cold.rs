//! Warm and cold side by side (issue 29): a report holding one transport
//! both warm and `--nocache` draws each against its own core-to-core limit
//! (the cold one from `c2c --nocache`), labelled apart, and says which
//! models an application.

use std::path::Path;

use wulf::report;
use wulf::result::{read_result, Limits, SweepResult};

/// The unix fixture with a core-to-core limit of `c2c_bits_per_s` at every
/// size, warm or cold.
fn unix(nocache: bool, c2c_bits_per_s: f64) -> SweepResult {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/unix-pingpong.json");
    let mut r = read_result(&path).unwrap();
    r.options.nocache = nocache;
    for p in &mut r.points {
        p.limits = Some(Limits {
            c2c_bits_per_s: Some(c2c_bits_per_s),
            ..Limits::default()
        });
    }
    r
}

#[test]
fn warm_and_cold_are_drawn_side_by_side_against_their_own_limits() {
    let warm = unix(false, 4e11);
    let cold = unix(true, 5e10);
    let html = report::html::to_html(&report::ReportInput::of_sweeps(&[warm, cold])).unwrap();
    let start = html
        .find("<figure id=c2c-fraction")
        .expect("c2c efficiency chart");
    let fig = &html[start..];
    let fig = &fig[..fig.find("</figure>").unwrap()];
    assert!(fig.contains("nocache=false"), "{fig}");
    assert!(fig.contains("nocache=true"), "{fig}");
    assert!(fig.contains("cold limit (c2c --nocache"), "{fig}");
    assert!(fig.contains("fresh data"), "{fig}");
}
