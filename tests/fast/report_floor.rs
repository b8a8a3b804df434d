//! One cache-line floor per run, the same number wherever it is printed
//! (the answer, the terminal's table, the latency charts), no transport
//! drawn below it, and every figure above a limit labelled with its
//! reason. Issue 49, items 1 and 3: one report said "1.7x its floor of
//! 44 ns" in its answer, drew a 185 ns floor with shm points under it, and
//! divided each table row by its own sweep's floor; the terminal's table
//! printed "of c2c 10.12" with no reason beside it.

use std::path::{Path, PathBuf};

use wulf::report;
use wulf::result::{read_result, Limits, SweepResult};

fn fixture(name: &str) -> SweepResult {
    let path: PathBuf = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name);
    read_result(&path).unwrap()
}

/// `r` with `floor_ns` recorded at every point, as a sweep records the
/// floor it measured.
fn with_floor(mut r: SweepResult, floor_ns: f64) -> SweepResult {
    for p in &mut r.points {
        p.limits = Some(Limits {
            floor_ns: Some(floor_ns),
            ..p.limits.unwrap_or_default()
        });
    }
    r
}

use crate::report_scales::figure;

/// Two sweeps whose own floors differ 25-fold (120 ns and 3 us): every
/// figure is against the run's one floor, the least, 120 ns.
#[test]
fn one_floor_per_run_in_the_table_the_answer_and_the_charts() {
    let unix = with_floor(fixture("unix-pingpong.json"), 120.0);
    let tcp = with_floor(fixture("tcp-pingpong.json"), 3000.0);
    let (lu, lt) = (
        unix.summary.latency_ns.unwrap(),
        tcp.summary.latency_ns.unwrap(),
    );
    let results = [unix.clone(), tcp.clone()];
    let table = report::format::table::comparison_table(&results);
    for (name, l) in [("unix", lu), ("tcp", lt)] {
        let row = table.lines().find(|r| r.starts_with(name)).unwrap();
        let want = format!("{:.2}x", l / 120.0);
        assert!(row.contains(&want), "{name}: want {want}: {table}");
    }
    assert!(
        table.contains("the run's cache-line floor, 120 ns"),
        "{table}"
    );

    let html = report::html::to_html(&report::ReportInput::of_sweeps(&results)).unwrap();
    assert!(
        html.contains("closest to the run's cache-line floor of 120 ns"),
        "{html}"
    );
    assert!(
        figure(&html, "latency").contains("cache-line floor (120 ns)"),
        "{}",
        figure(&html, "latency")
    );
    assert!(figure(&html, "floor-multiple").contains("cache-line floor, 120 ns"));
    // No other floor is printed anywhere.
    assert!(
        !html.contains("3000 ns") && !html.contains("3.00 us"),
        "{html}"
    );
}

/// A latency below every floor the run measured is not given a multiple,
/// and the floor is not drawn under it: both say why.
#[test]
fn no_transport_is_drawn_below_the_floor() {
    let unix = fixture("unix-pingpong.json");
    let floor = 2.0 * unix.summary.latency_ns.unwrap();
    let results = [with_floor(unix, floor)];
    let table = report::format::table::comparison_table(&results);
    let row = table.lines().find(|r| r.starts_with("unix")).unwrap();
    assert!(row.contains("below"), "{table}");
    assert!(table.contains("measured at busier"), "{table}");
    let lines = report::format::table::summary_lines(&results[0]);
    assert!(
        lines.contains("below the run's cache-line floor"),
        "{lines}"
    );
    let html = report::html::to_html(&report::ReportInput::of_sweeps(&results)).unwrap();
    let latency = figure(&html, "latency");
    assert!(
        latency.contains("is not drawn: unix pingpong measured below it"),
        "{latency}"
    );
    assert!(!latency.contains("Grey dashed line"), "{latency}");
    assert!(!html.contains("closest to the run's cache-line floor"));
}

/// A peak above a limit carries its reason in the table's cell and a line
/// under the table, also where the run knows of no warm cache.
#[test]
fn every_figure_above_a_limit_carries_its_reason() {
    let mut warm = fixture("unix-pingpong.json");
    warm.summary.peak_c2c_fraction = Some(5.85);
    warm.summary.peak_memcpy_fraction = Some(0.5);
    let mut unknown = fixture("tcp-pingpong.json");
    unknown.host.llc_bytes = None;
    unknown.summary.peak_c2c_fraction = Some(10.12);
    unknown.summary.peak_memcpy_fraction = Some(1.61);
    let table = report::format::table::comparison_table(&[warm.clone(), unknown.clone()]);
    let row = |name: &str| table.lines().find(|r| r.starts_with(name)).unwrap();
    assert!(
        row("unix").contains("5.85w") && row("unix").contains("0.50 "),
        "{table}"
    );
    assert!(
        row("tcp").contains("10.12?") && row("tcp").contains("1.61?"),
        "{table}"
    );
    assert!(
        table.contains("w: above a limit: a warm-cache figure"),
        "{table}"
    );
    assert!(table.contains("?: above a limit: not explained"), "{table}");
    for r in [&warm, &unknown] {
        let lines = report::format::table::summary_lines(r);
        assert!(lines.contains("above a limit: "), "{lines}");
    }
    // Within the limits, no mark and no note.
    let plain = fixture("unix-pingpong.json");
    let table = report::format::table::comparison_table(&[plain]);
    assert!(!table.contains("above a limit"), "{table}");
}
