//! `wulf study lean-stacks` end to end in a real lab (quick form, one
//! link and MTU): a row per stack with figures where the stack runs here
//! and the reason where it cannot (tipc on a kernel without TIPC; xdp
//! where it is not built or unavailable), CPU per byte of both ends, the
//! study summary at its current version, and the report's section with
//! the tables and the throughput and CPU charts. Needs root for the lab
//! (skips with a message otherwise, unless WULF_REQUIRE_LAB=1).

use crate::common;

use std::path::Path;
use std::process::Output;

use common::{only_dir as study_dir, run, wulf_bin};
use wulf::result::{read_study_result, STUDY_SCHEMA_VERSION};

#[test]
fn lean_stacks_quick_has_a_row_per_stack_and_a_report_section() {
    if !common::labs_possible() {
        return;
    }
    let out = tempfile::tempdir().unwrap();
    let o = run(&[
        "study",
        "lean-stacks",
        "--quick",
        "--link",
        "10ge",
        "--mtu",
        "9000",
        "--only",
        "tcp,raw,xdp,tipc",
        "--out",
        out.path().to_str().unwrap(),
    ]);
    let stdout = succeeded(&o);
    assert!(
        stdout.contains("Lean stacks over 10ge, MTU 9000") && stdout.contains("CPU server, ns/B"),
        "{stdout}"
    );
    let dir = study_dir(out.path());
    let s = read_study_result(&dir.join("study.json")).unwrap();
    assert_eq!(s.study, "lean-stacks");
    assert_eq!(s.schema_version, STUDY_SCHEMA_VERSION);
    assert!(s.complete);
    assert_eq!(s.cases.len(), 4 * 3);
    // The lean table and the NAS table (seed 001 Table 2).
    assert_eq!(s.tables.len(), 2);
    let t = &s.tables[0];
    assert_eq!(
        t.columns,
        [
            "latency best, us",
            "latency median, us",
            "latency spread, %",
            "peak, Mbit/s",
            "n_1/2, B",
            "CPU client, ns/B",
            "CPU server, ns/B",
            "latency / tcp"
        ]
    );
    assert_eq!(t.rows.len(), 4);
    // tcp and raw run across the lab's link in every round: every figure
    // present (the spread at least zero, the rest positive), the best at
    // most the median, the CPU figures taken at 64 KiB, inside the lab.
    for (row, name) in t.rows.iter().zip(["tcp", "raw"]) {
        assert_eq!(row.label, name);
        assert!(row.cells.iter().all(Option::is_some), "{row:?}");
        assert!(
            row.cells[0] <= row.cells[1] && row.cells[2] >= Some(0.0),
            "{row:?}"
        );
        assert!(
            row.cells.iter().all(|c| c.is_some_and(|v| v >= 0.0)),
            "{row:?}"
        );
    }
    assert!(t.title.contains("over 3 interleaved rounds"), "{}", t.title);
    // Interleaved: every stack once in each round, rounds in order.
    let order: Vec<(String, Option<u32>)> = s
        .cases
        .iter()
        .map(|c| (c.transport.clone(), c.round))
        .collect();
    for (i, (t, r)) in order.iter().enumerate() {
        assert_eq!(t, ["tcp", "raw", "xdp", "tipc"][i % 4], "{order:?}");
        assert_eq!(*r, Some(i as u32 / 4 + 1), "{order:?}");
    }
    // A stack whose latency moved beyond the spread bar is named.
    for row in &t.rows {
        if row.cells[2].is_some_and(|s| s > 100.0 * wulf::study::lean::SPREAD_WARN) {
            let named = format!("lean-stacks: {} over 10ge", row.label);
            assert!(
                s.warnings.iter().any(|w| w.starts_with(&named)),
                "{:?}",
                s.warnings
            );
        }
    }
    for c in &s.cases[..2] {
        assert_eq!(c.cpu_bytes, Some(65536), "{}", c.label);
        let r = wulf::result::read_result(&dir.join(c.file.as_ref().unwrap())).unwrap();
        assert_eq!(r.host.hostname, "node1");
        assert_eq!(r.transport, c.transport);
    }
    // tipc has no kernel support here; xdp may be missing from this
    // build or unavailable: a row that says why, with no figures, or
    // (where the kernel and build have it) figures like the others.
    for (row, case) in t.rows[2..].iter().zip(&s.cases[2..]) {
        match &case.error {
            Some(e) => {
                assert!(e.starts_with("unavailable: "), "{e}");
                assert!(row.label.contains("unavailable"), "{row:?}");
                assert!(row.cells.iter().all(Option::is_none), "{row:?}");
                assert!(case.file.is_none());
            }
            None => assert!(row.cells.iter().all(Option::is_some), "{row:?}"),
        }
    }
    // NAS rows: CG over every stack that runs here, in 3 rounds, one
    // process per lab node; tcp and raw carry the group.
    assert_eq!(s.nas.len(), 3);
    for (i, n) in s.nas.iter().enumerate() {
        assert_eq!(
            (n.kernel.as_str(), n.round, n.loaded),
            ("cg", i as u32 + 1, false)
        );
        assert!(n.error.is_none() && n.file.is_some(), "{n:?}");
        let vias: Vec<&str> = n.stacks.iter().map(|x| x.via.as_str()).collect();
        assert_eq!(vias[..2], ["tcp", "raw"], "{n:?}");
        assert!(!vias.contains(&"tipc") || tipc_available(&s), "{n:?}");
    }
    let nas = &s.tables[1];
    assert!(
        nas.title.starts_with("NAS kernels over 10ge, MTU 9000"),
        "{}",
        nas.title
    );
    assert_eq!(nas.columns[..2], ["tcp, Mop/s", "raw, Mop/s"]);
    assert_eq!(nas.columns.last().unwrap(), "spread, % (widest stack)");
    assert_eq!(nas.rows.len(), 1);
    assert_eq!(nas.rows[0].label, "cg");
    assert!(
        nas.rows[0].cells[..2]
            .iter()
            .all(|c| c.is_some_and(|v| v > 0.0)),
        "{nas:?}"
    );
    let tipc_kernel =
        Path::new("/proc/net/tipc").exists() || Path::new("/sys/module/tipc").exists();
    if !tipc_kernel {
        assert!(t.rows[3].label.starts_with("tipc (unavailable"), "{t:?}");
    }
    // The report: the table and, per link and MTU, the throughput and CPU
    // charts with a line per stack that ran.
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert!(html.contains("Study: lean-stacks"));
    assert_eq!(html.matches("<table class=study-table>").count(), 2);
    assert!(html.contains("<h3>10ge, MTU 9000</h3>"));
    for chart in [
        "Throughput vs message size",
        "CPU per byte",
        "Throughput per CPU-second",
    ] {
        assert!(
            html.contains(&format!("<figure class=study-chart><h3>{chart}</h3>")),
            "{chart}"
        );
    }
    // `wulf report` draws the summary it reads back as well.
    let o = run(&[
        "report",
        dir.join("study.json").to_str().unwrap(),
        "--format",
        "markdown",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let md = String::from_utf8_lossy(&o.stdout);
    assert!(md.contains("| transport | latency best, us |"), "{md}");
}

/// Between "real machines": a `wulf serve` on one lab node, the study
/// run on the other with `--peer`, as on two hosts of a cluster. The rows
/// are the stacks named, the path's rate comes from the sweeps (no lab
/// link is set), and an unavailable stack still says why.
#[test]
fn lean_stacks_against_a_real_peer_reads_the_path() {
    if !common::labs_possible() {
        return;
    }
    let lab = format!("sp{}", std::process::id());
    let _g = common::lab_up(&lab, 2);
    let (mut server, port) = common::lean::serve_in(&lab, "node2");
    let peer = format!("node2:{port}");
    let out = tempfile::tempdir().unwrap();
    let o = run(&[
        "lab",
        "exec",
        "--name",
        &lab,
        "node1",
        "--",
        wulf_bin(),
        "study",
        "lean-stacks",
        "--peer",
        &peer,
        "--quick",
        "--only",
        "tcp,raw,tipc",
        "--out",
        out.path().to_str().unwrap(),
    ]);
    let _ = server.kill();
    let stdout = succeeded(&o);
    assert!(
        stdout.contains(&format!("Lean stacks over peer {peer}, the path's own MTU")),
        "{stdout}"
    );
    let s = read_study_result(&study_dir(out.path()).join("study.json")).unwrap();
    assert!(s.complete);
    let labels: Vec<&str> = s.cases.iter().map(|c| c.label.as_str()).collect();
    assert_eq!(labels.len(), 3 * 3);
    assert_eq!(
        labels[..4],
        ["tcp-peer-r1", "raw-peer-r1", "tipc-peer-r1", "tcp-peer-r2"]
    );
    for c in &s.cases[..2] {
        assert!(c.error.is_none(), "{c:?}");
        assert!(c.latency_ns.is_some_and(|n| n > 0.0), "{c:?}");
        // The lab's ge link as the sweep found it, not a rate set here.
        assert!(c.goodput_bits_per_s > 0.0, "{c:?}");
        assert!(c.peak_fraction.is_some(), "{c:?}");
    }
    assert!(
        s.cases[2]
            .error
            .as_deref()
            .is_some_and(|e| e.starts_with("unavailable: ")),
        "{:?}",
        s.cases[2]
    );
    // The lab's own studies need its links: --peer is lean-stacks' alone.
    let o = run(&["study", "fe-vs-ge", "--peer", &peer]);
    assert_eq!(o.status.code(), Some(2));
}

/// Whether the study's tipc cases ran (a kernel with TIPC).
fn tipc_available(s: &wulf::result::StudyResult) -> bool {
    s.cases
        .iter()
        .any(|c| c.transport == "tipc" && c.error.is_none())
}

/// Standard output of a command that must have succeeded.
fn succeeded(o: &Output) -> String {
    let stdout = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        o.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    stdout
}

#[test]
fn lean_stacks_bad_input_is_exit_2() {
    for args in [
        vec!["study", "lean-stacks", "--mtu", "100000"],
        vec!["study", "lean-stacks", "--load", "bogus:9"],
        vec!["study", "lean-stacks", "--link", "slow"],
        vec!["study", "lean-stacks", "--peer", "h", "--link", "ge"],
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
