//! `wulf hpl` results in the report: the real runs of a `wulf study
//! linpack --quick` (tests/fixtures/hpl/, 9 runs over fe, ge and 10ge at
//! 1, 2 and 4 lab nodes) read by the reader of every kind, drawn as the
//! Linpack section of the HTML report (snapshot
//! tests/snapshots/linpack.report.html; `WULF_UPDATE_SNAPSHOTS=1 cargo
//! test --test fast hpl_report::` rewrites it) and the markdown grid; the
//! sweep-only formats refuse them by name; a file whose grid is not its
//! process count is refused naming the file.

use std::path::{Path, PathBuf};

use crate::common;
use wulf::result::{read_any, AnyResult};

fn fixture_files() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/hpl");
    let mut v: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    v.sort();
    v
}

fn fixtures() -> Vec<wulf::result::hpl::HplResult> {
    fixture_files()
        .iter()
        .map(|p| match read_any(p).unwrap() {
            AnyResult::Hpl(r) => *r,
            other => panic!("{} read as {}", p.display(), other.kind()),
        })
        .collect()
}

#[test]
fn the_linpack_section_draws_every_link_against_nodes() {
    let rs = fixtures();
    assert_eq!(rs.len(), 9);
    let html = wulf::report::html::to_html(&wulf::report::ReportInput {
        hpl: &rs,
        ..Default::default()
    })
    .unwrap();
    assert!(html.contains("<section id=linpack"), "no Linpack section");
    assert!(html.contains("HPL Gflop/s vs nodes") && html.contains("<svg"));
    for link in ["fe", "ge", "10ge"] {
        assert!(html.contains(&format!("<tr><td>{link}</td>")), "{link}");
    }
    assert!(html.contains("9 Linpack runs"));
    crate::report_exports::snapshot("linpack.report.html", &html);
    let md = wulf::report::hpl::markdown(&rs);
    assert!(md.contains("| link | 1 node | 2 nodes | 4 nodes |"), "{md}");
}

#[test]
fn wulf_report_reads_hpl_files_and_the_sweep_formats_refuse_them() {
    let files = fixture_files();
    let dir = common::tempdir();
    let out = common::file(&dir, "r.html");
    let mut args = vec!["report", "-o", out.to_str().unwrap()];
    args.extend(files.iter().map(|p| p.to_str().unwrap()));
    let o = common::run(&args);
    assert!(o.status.success(), "{}", common::stderr(&o));
    assert!(std::fs::read_to_string(&out)
        .unwrap()
        .contains("id=linpack"));
    let csv = common::file(&dir, "r.csv");
    let mut args = vec!["report", "-o", csv.to_str().unwrap()];
    args.push(files[0].to_str().unwrap());
    let o = common::run(&args);
    assert_eq!(o.status.code(), Some(2), "{}", common::stderr(&o));
    assert!(
        common::stderr(&o).contains("HPL result"),
        "{}",
        common::stderr(&o)
    );
}

#[test]
fn an_hpl_file_whose_grid_is_not_its_process_count_is_refused() {
    let dir = common::tempdir();
    let p = common::file(&dir, "bad.json");
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&fixture_files()[0]).unwrap()).unwrap();
    v["q"] = 7.into();
    std::fs::write(&p, serde_json::to_vec(&v).unwrap()).unwrap();
    let e = format!("{:#}", read_any(&p).unwrap_err());
    assert!(e.contains("bad.json") && e.contains("P x Q"), "{e}");
    v["q"] = serde_json::json!(-1.5);
    std::fs::write(&p, serde_json::to_vec(&v).unwrap()).unwrap();
    assert!(read_any(&p).is_err());
}
