//! `wulf study` end to end in real labs (quick form), and the study
//! summary as a public interface: versioned, unknown fields rejected, drawn
//! by `wulf report`. The lab runs need root (CI runs as root; they skip
//! with a message otherwise, unless WULF_REQUIRE_LAB=1).

use crate::common;

use std::path::{Path, PathBuf};

use common::{only_dir as study_dir, run};
use wulf::result::{read_study_result, StudyResult};

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/study-mtu-buffers/study.json")
}

fn no_labs_left() {
    let out = std::process::Command::new("ip")
        .args(["netns", "list"])
        .output()
        .unwrap();
    let left: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.starts_with("wlab-t"))
        .map(str::to_string)
        .collect();
    // Other tests' temporary labs may exist at the same time, but none of
    // ours: each case's lab is named after its own (finished) process.
    for l in &left {
        let pid: u32 = l[6..].split('-').next().unwrap().parse().unwrap_or(0);
        assert!(
            std::path::Path::new(&format!("/proc/{pid}")).exists(),
            "lab {l} outlived its command"
        );
    }
}

/// The noise of its points and the load at both ends (issue 35 item 7):
/// a noisy point is counted in the warnings, a peak above its link's
/// limit is named there, and the load at the end is recorded as such.
fn study_tells_its_noise_and_load(s: &StudyResult) {
    assert!(s.host.load_after.is_some(), "the load at the end");
    let over: Vec<&str> = s
        .cases
        .iter()
        .filter(|c| c.peak_fraction.is_some_and(|f| f > 1.02))
        .map(|c| c.label.as_str())
        .collect();
    for label in &over {
        assert!(
            s.warnings
                .iter()
                .any(|w| w.starts_with(&format!("{label}: peak"))),
            "{label} above its link, not said: {:?}",
            s.warnings
        );
    }
}

#[test]
fn mtu_buffers_quick_runs_end_to_end() {
    if !common::labs_possible() {
        return;
    }
    let out = tempfile::tempdir().unwrap();
    let o = run(&[
        "study",
        "mtu-buffers",
        "--quick",
        "--out",
        out.path().to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{}\n{}",
        stdout,
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        stdout.contains("Peak TCP throughput over ge") && stdout.contains("MTU 4500"),
        "{stdout}"
    );
    let dir = study_dir(out.path());
    let s = read_study_result(&dir.join("study.json")).unwrap();
    assert_eq!(s.study, "mtu-buffers");
    assert!(s.complete);
    assert_eq!(s.cases.len(), 28);
    for c in &s.cases {
        assert!(c.error.is_none(), "{}: {:?}", c.label, c.error);
        let file = dir.join(c.file.as_ref().unwrap());
        let r = wulf::result::read_result(&file).unwrap();
        assert_eq!(r.host.hostname, "node1", "measured inside the lab");
        assert_eq!(r.placement.server_host, "node2");
    }
    // Every cell of the seed's grid is filled but a peak above its link's
    // limit, withheld and said; a 1-byte message takes longer than nothing,
    // and no table cell is negative. Every table says its noise.
    let withheld = s.warnings.iter().filter(|w| w.contains("withheld")).count();
    for t in &s.tables {
        assert_eq!(t.rows.len(), 6);
        assert!(t.title.contains("points noisy"), "{}", t.title);
        let empty = t
            .rows
            .iter()
            .flat_map(|r| &r.cells)
            .filter(|c| c.is_none())
            .count();
        assert!(
            empty <= withheld,
            "{}: {empty} empty, {withheld} withheld",
            t.title
        );
        for r in &t.rows {
            assert!(
                r.cells.iter().all(|c| c.is_none_or(|v| v > 0.0)),
                "{}: {:?}",
                t.title,
                r
            );
        }
    }
    study_tells_its_noise_and_load(&s);
    // Larger frames carry more payload per frame: jumbo frames win at the
    // peak (the link's own goodput, not a speed of this machine).
    assert!(s.cases.iter().all(|c| c.goodput_bits_per_s > 0.0));
    assert!(dir.join("report.html").exists());
    no_labs_left();
}

#[test]
fn fe_vs_ge_quick_runs_end_to_end() {
    if !common::labs_possible() {
        return;
    }
    let out = tempfile::tempdir().unwrap();
    let o = run(&[
        "study",
        "fe-vs-ge",
        "--quick",
        "--only",
        "tcp",
        "--out",
        out.path().to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let dir = study_dir(out.path());
    let s = read_study_result(&dir.join("study.json")).unwrap();
    // Both links and tcp over fe through a hub in each of 3 interleaved
    // rounds (issues 44, 49).
    assert_eq!(s.cases.len(), 3 * 3);
    let rounds: Vec<Option<u32>> = s.cases.iter().map(|c| c.round).collect();
    assert_eq!(rounds, [1, 1, 1, 2, 2, 2, 3, 3, 3].map(Some));
    let links: Vec<&str> = s.cases.iter().take(3).map(|c| c.link.as_str()).collect();
    assert_eq!(links, ["fe", "ge", "fe,hub"]);
    assert_eq!(s.schema_version, wulf::result::STUDY_SCHEMA_VERSION);
    // The ratios, GE over FE of tcp's latency and (where the budget
    // reached the peak's sizes) its peak, taken within each round, with
    // their range; a winner only where every round agrees.
    assert!(
        s.ratios.iter().any(|r| r.figure == "latency"),
        "{:?}",
        s.ratios
    );
    for r in &s.ratios {
        assert!(["latency", "peak"].contains(&r.figure.as_str()), "{r:?}");
        assert!(["ge/fe", "hub/switch"].contains(&r.link.as_str()), "{r:?}");
        assert!(r.per_round.len() >= 2, "{r:?}");
        assert!(r.low <= r.median && r.median <= r.high, "{r:?}");
        let spans_one = r.low <= 1.0 && r.high >= 1.0;
        assert_eq!(r.faster.is_none(), spans_one, "{r:?}");
    }
    assert!(s.tables.iter().any(|t| t.row_header == "ratio"));
    // The hub against the switch, beside Nguyen 2001's figures.
    let hub = s
        .tables
        .iter()
        .find(|t| t.row_header == "medium")
        .expect("hub table");
    let labels: Vec<&str> = hub.rows.iter().map(|r| r.label.as_str()).collect();
    assert_eq!(
        labels,
        [
            "switch",
            "hub",
            "hub / switch, here",
            "hub / switch, Nguyen 2001"
        ]
    );
    assert_eq!(hub.rows[3].cells, vec![Some(1.15), Some(0.90)]);
    let t = &s.tables[0];
    assert_eq!(t.rows[0].label, "tcp");
    let cells = &t.rows[0].cells;
    // Peak over fe, from 16 free bursts on, is below fe's 100 Mbit/s plus
    // the at most 1/15 a free burst adds there (a bound, not a speed).
    if let Some(peak) = cells[2] {
        assert!(peak < 100.0 * 16.0 / 15.0, "{cells:?}");
    }
    study_tells_its_noise_and_load(&s);
    // The report draws it.
    let html = out.path().join("r.html");
    let o = run(&[
        "report",
        dir.join("study.json").to_str().unwrap(),
        "-o",
        html.to_str().unwrap(),
    ]);
    assert!(o.status.success());
    let text = std::fs::read_to_string(&html).unwrap();
    assert!(text.contains("Study: fe-vs-ge") && text.contains("tcp over fe"));
    no_labs_left();
}

#[test]
fn bad_study_input_is_exit_2() {
    for args in [
        vec!["study", "nosuch"],
        vec!["study", "mtu-buffers", "--link", "fast"],
        vec!["study", "fe-vs-ge", "--only", "shm"],
        vec!["study", "mtu-buffers", "--quick", "--thorough"],
    ] {
        let o = run(&args);
        assert_eq!(
            o.status.code(),
            Some(2),
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
}

#[test]
fn study_summary_is_strict_and_versioned() {
    let text = std::fs::read_to_string(fixture()).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let s: StudyResult = serde_json::from_value(v.clone()).unwrap();
    assert_eq!(s.kind, "study");
    assert_eq!(s.schema_version, 1);
    for pointer in ["", "/cases/0", "/tables/0", "/tables/0/rows/0"] {
        let mut bad = v.clone();
        bad.pointer_mut(pointer)
            .unwrap()
            .as_object_mut()
            .unwrap()
            .insert("surprise".into(), 1.into());
        assert!(
            serde_json::from_value::<StudyResult>(bad).is_err(),
            "unknown field accepted at {pointer:?}"
        );
    }
    let mut other = v.clone();
    other["schema_version"] = 99.into();
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("s.json");
    std::fs::write(&p, serde_json::to_vec(&other).unwrap()).unwrap();
    let e = read_study_result(&p).unwrap_err();
    assert!(format!("{e:#}").contains("version"), "{e:#}");
    // Markdown export carries the tables; CSV refuses a summary clearly.
    let o = run(&[
        "report",
        fixture().to_str().unwrap(),
        "--format",
        "markdown",
    ]);
    assert!(o.status.success());
    assert!(String::from_utf8_lossy(&o.stdout).contains("| socket buffer | MTU 1500 | MTU 3000 |"));
    let o = run(&["report", fixture().to_str().unwrap(), "--format", "csv"]);
    assert_eq!(o.status.code(), Some(2));
}
