//! contrib/reframe's checks run for real by ReFrame (reframe-hpc from
//! PyPI, in the venv of scripts/test-venv) on this machine, with the
//! minimal site configuration shipped beside them:
//!
//! * with the shipped references every check passes: the sweeps (tcp,
//!   unix, shm), NAS MG class S over shm, and the worst cell of a matrix of
//!   three simulated nodes (`--launch local`);
//! * an impossible reference (a 1 ns latency) fails the sweep check in
//!   ReFrame's performance phase;
//! * a result marked incomplete, and an NPB run that did not verify, fail
//!   the sanity phase (a stand-in wulf leaves such files).
//!
//! Skipped without the venv unless WULF_REQUIRE_PYTHON=1 (scripts/test).

use crate::common;
use common::*;

use crate::python;

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

/// One ReFrame run of the checks whose names match `filter`, with `wulf`
/// as the binary and the references file `references` (the shipped one
/// when None). Returns the run and its report (`name` -> test case).
fn reframe(
    venv: &Path,
    wulf: &str,
    filter: &str,
    references: Option<&Path>,
) -> (Output, Vec<Value>) {
    let contrib = concat!(env!("CARGO_MANIFEST_DIR"), "/contrib/reframe");
    let prefix = tempdir();
    let report = prefix.path().join("report.json");
    let mut cmd = Command::new(venv.join("bin/reframe"));
    cmd.args(["-C", &format!("{contrib}/settings.py")])
        .args(["-c", &format!("{contrib}/wulf_checks.py")])
        .args(["-n", filter, "-r", "--nocolor"])
        .arg("-S")
        .arg(format!("wulf={wulf}"))
        // Short enough for a test, long enough for a figure.
        .args(["-S", "wulf_sweep_check.budget=1s"])
        .args(["-S", "wulf_sweep_check.sizes=1:64Ki"])
        .args(["-S", "wulf_matrix_check.budget=2s"])
        .arg("--prefix")
        .arg(prefix.path())
        .arg("--report-file")
        .arg(&report)
        .current_dir(prefix.path());
    match references {
        Some(r) => cmd.env("WULF_REFRAME_REFERENCES", r),
        None => cmd.env_remove("WULF_REFRAME_REFERENCES"),
    };
    let out = cmd.output().unwrap();
    let cases = std::fs::read(&report)
        .ok()
        .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
        .and_then(|r| r["runs"][0]["testcases"].as_array().cloned())
        .unwrap_or_else(|| panic!("no ReFrame report: {}{}", text(&out.stdout), stderr(&out)));
    (out, cases)
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The case of `cases` whose name starts with `name`.
fn case<'a>(cases: &'a [Value], name: &str) -> &'a Value {
    cases
        .iter()
        .find(|c| c["name"].as_str().is_some_and(|n| n.starts_with(name)))
        .unwrap_or_else(|| panic!("no test case {name} in {cases:?}"))
}

#[test]
fn checks_pass_against_this_machine() {
    let Some(venv) = python::venv() else { return };
    let (out, cases) = reframe(&venv, wulf_bin(), "wulf_", None);
    let log = format!("{}{}", text(&out.stdout), stderr(&out));
    assert!(out.status.success(), "{log}");
    for name in [
        "wulf_sweep_check %transport=tcp",
        "wulf_sweep_check %transport=unix",
        "wulf_sweep_check %transport=shm",
        "wulf_npb_check %kernel=mg",
        "wulf_matrix_check",
    ] {
        let c = case(&cases, name);
        assert_eq!(c["result"], "pass", "{name}: {}\n{log}", c["fail_reason"]);
    }
    // The figures come with their units, read from the JSON results.
    assert!(log.contains("P: latency:") && log.contains(" us "), "{log}");
    assert!(
        log.contains("P: mops_np2:") && log.contains("Mop/s"),
        "{log}"
    );
    assert!(
        log.contains("P: worst_bandwidth:") && log.contains("Gbit/s"),
        "{log}"
    );
}

#[test]
fn an_impossible_reference_fails_the_performance_check() {
    let Some(venv) = python::venv() else { return };
    let dir = tempdir();
    let refs = file(&dir, "references.json");
    std::fs::write(
        &refs,
        r#"{"*": {"sweep:unix": {"latency": [0.001, null, 0.0, "us"]}}}"#,
    )
    .unwrap();
    let (out, cases) = reframe(&venv, wulf_bin(), "wulf_sweep_check.*unix", Some(&refs));
    assert!(!out.status.success(), "{}", text(&out.stdout));
    let c = case(&cases, "wulf_sweep_check %transport=unix");
    assert_eq!(c["result"], "fail");
    assert_eq!(c["fail_phase"], "performance", "{}", c["fail_reason"]);
}

#[test]
fn incomplete_and_unverified_results_fail_sanity() {
    let Some(venv) = python::venv() else { return };
    let dir = tempdir();
    let fixtures = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures");
    let mut sweep = json(Path::new(&format!("{fixtures}/unix-pingpong.json")));
    sweep["complete"] = false.into();
    sweep["incomplete_reason"] = "interrupted".into();
    let mut npb = json(Path::new(&format!("{fixtures}/npb-mg-S.json")));
    npb["runs"][0]["outcomes"][0]["verified"] = false.into();
    for (name, doc) in [("sweep.json", &sweep), ("npb.json", &npb)] {
        std::fs::write(file(&dir, name), serde_json::to_vec(doc).unwrap()).unwrap();
    }
    // A stand-in wulf: leaves the doctored result where the check looks
    // (ReFrame runs it in the stage directory), by the subcommand.
    let fake = file(&dir, "wulf");
    let d = dir.path().display();
    std::fs::write(
        &fake,
        format!(
            "#!/bin/sh\ncase \"$1\" in sweep) cp {d}/sweep.json result.json;; \
             npb) cp {d}/npb.json result.json;; esac\n"
        ),
    )
    .unwrap();
    std::fs::set_permissions(&fake, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let (out, cases) = reframe(
        &venv,
        fake.to_str().unwrap(),
        "(wulf_sweep_check.*unix|wulf_npb_check)",
        None,
    );
    assert!(!out.status.success());
    for (name, why) in [
        (
            "wulf_sweep_check %transport=unix",
            "incomplete: interrupted",
        ),
        ("wulf_npb_check", "did not verify"),
    ] {
        let c = case(&cases, name);
        assert_eq!(c["fail_phase"], "sanity", "{name}: {}", c["fail_reason"]);
        let reason = c["fail_reason"].as_str().unwrap_or("");
        assert!(reason.contains(why), "{name}: {reason}");
    }
}
