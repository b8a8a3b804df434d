//! contrib/reframe's interconnect check run by ReFrame across two nodes
//! of a lab (two network namespaces with their own host names and a
//! Gigabit link), as a site runs it across two cluster nodes, with a site
//! references file keyed by the configuration's `system:partition`: it
//! passes, its kept result names both lab nodes, and the perflog has the
//! site's reference. The same check on one machine (`--launch local`, two
//! simulated nodes) fails sanity: that is not an interconnect.
//!
//! Needs root (the lab) and the Python venv; skipped otherwise (failing
//! where WULF_REQUIRE_LAB or WULF_REQUIRE_PYTHON ask).

use crate::common;
use common::*;

use crate::python;

use std::process::Output;

use serde_json::Value;

/// ReFrame on the interconnect check under `prefix`, with `settings`
/// (`-S` values) and the site references in `refs`; the run and the
/// check's case in its report.
fn interconnect(
    prefix: &tempfile::TempDir,
    refs: &std::path::Path,
    settings: &[&str],
) -> (Output, Value) {
    let venv = python::venv().expect("checked by the caller");
    let contrib = concat!(env!("CARGO_MANIFEST_DIR"), "/contrib/reframe");
    let report = prefix.path().join("report.json");
    let mut cmd = std::process::Command::new(venv.join("bin/reframe"));
    cmd.args(["-C", &format!("{contrib}/settings.py")])
        .args(["-c", &format!("{contrib}/wulf_checks.py")])
        .args(["-n", "wulf_interconnect_check", "-r", "--nocolor"])
        .args(["-S", &format!("wulf={}", wulf_bin())])
        .args(["-S", "wulf_interconnect_check.budget=2s"])
        // A busy shared test machine: noise is not what this test checks
        // (tests/system/reframe.rs does).
        .args([
            "-S",
            "max_noisy_fraction=1.0",
            "-S",
            "fail_on_warnings=false",
        ]);
    for s in settings {
        cmd.args(["-S", s]);
    }
    let out = cmd
        .arg("--prefix")
        .arg(prefix.path())
        .arg("--report-file")
        .arg(&report)
        .env("WULF_REFRAME_REFERENCES", refs)
        .current_dir(prefix.path())
        .output()
        .unwrap();
    let case = std::fs::read(&report)
        .ok()
        .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
        .map(|r| r["runs"][0]["testcases"][0].clone())
        .unwrap_or_else(|| {
            panic!(
                "no ReFrame report: {}{}",
                String::from_utf8_lossy(&out.stdout),
                stderr(&out)
            )
        });
    (out, case)
}

#[test]
fn the_interconnect_check_runs_across_two_lab_nodes() {
    if !labs_possible() || python::venv().is_none() {
        return;
    }
    let lab = format!("rf{}", std::process::id() % 100_000);
    let _guard = common::lab_up(&lab, 2);
    // A site's references: its system:partition, its values, tolerances.
    let dir = tempdir();
    let refs = file(&dir, "site.json");
    std::fs::write(
        &refs,
        r#"{"local:default": {"interconnect:tcp": {
            "latency": [5000.0, null, 1.0, "us"],
            "bandwidth": [0.01, -0.5, null, "Gbit/s"]}}}"#,
    )
    .unwrap();
    let prefix = tempdir();
    let launch = format!("wulf_interconnect_check.launch=lab:{lab}");
    let (out, case) = interconnect(
        &prefix,
        &refs,
        &[&launch, "wulf_interconnect_check.hosts=node1,node2"],
    );
    let log = format!("{}{}", String::from_utf8_lossy(&out.stdout), stderr(&out));
    assert_eq!(case["result"], "pass", "{}\n{log}", case["fail_reason"]);
    assert!(
        log.contains("P: latency:") && log.contains("(r:5000.0, l:None, u:1.0)"),
        "{log}"
    );

    // The kept result: both lab nodes, each on its own host name.
    let kept = prefix.path().join("output/local/default/builtin");
    let dir = std::fs::read_dir(&kept)
        .unwrap()
        .flatten()
        .next()
        .expect("an output directory");
    let r = json(&dir.path().join("result.json"));
    let names: Vec<&str> = r["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["host"]["hostname"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(names, ["node1", "node2"]);
    let rounds = r["cells"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["remeasure"] != true);
    assert_eq!(rounds.count(), 2);
    let perflog = std::fs::read_to_string(
        prefix
            .path()
            .join("perflogs/local/default/wulf_interconnect_check.log"),
    )
    .unwrap();
    assert!(
        perflog.contains("result=pass") && perflog.contains("ref=5000.0"),
        "{perflog}"
    );

    // Two simulated nodes on one machine are not an interconnect.
    let prefix = tempdir();
    let (_, case) = interconnect(
        &prefix,
        &refs,
        &[
            "wulf_interconnect_check.launch=local",
            "wulf_interconnect_check.hosts=n1,n2",
        ],
    );
    assert_eq!(case["fail_phase"], "sanity", "{}", case["fail_reason"]);
    let reason = case["fail_reason"].as_str().unwrap_or("");
    assert!(reason.contains("both ends ran on one machine"), "{reason}");
}
