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
//!   the sanity phase (a stand-in wulf leaves such files);
//! * so do a sweep with too many noisy points (with the count and the
//!   threshold as the reason; a higher `max_noisy_fraction` passes it) and
//!   one carrying a slow-mode warning;
//! * the site configuration draws no warning, the JSON result is kept in
//!   the output directory, and the perflog has each variable's reference,
//!   thresholds, the result and the node list;
//! * the NAS check's defaults are class W, best of 3.
//!
//! The interconnect check across two lab nodes is in
//! tests/root/reframe_lab.rs (a lab needs root).
//!
//! Skipped without the venv unless WULF_REQUIRE_PYTHON=1 (scripts/test).

use crate::common;
use common::*;

use crate::python;

use std::path::{Path, PathBuf};
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
    let prefix = tempdir();
    let (out, cases) = reframe_in(&prefix, venv, wulf, filter, references, &[]);
    (out, cases)
}

/// [`reframe`] under `prefix`, with `extra` options last. This shared,
/// busy test machine gives noisy points and slow modes that a site's
/// quiet nodes would not: unless `extra` sets them, noise and warnings do
/// not fail sanity here (the tests of those checks set them).
fn reframe_in(
    prefix: &tempfile::TempDir,
    venv: &Path,
    wulf: &str,
    filter: &str,
    references: Option<&Path>,
    extra: &[&str],
) -> (Output, Vec<Value>) {
    let contrib = concat!(env!("CARGO_MANIFEST_DIR"), "/contrib/reframe");
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
        // Class S once: W best of 3 is the site default, too long here.
        .args(["-S", "wulf_npb_check.npb_class=S"])
        .args(["-S", "wulf_npb_check.repetitions=1"]);
    let sets = |name: &str| extra.iter().any(|a| a.contains(name));
    if !sets("max_noisy_fraction") {
        cmd.args(["-S", "max_noisy_fraction=1.0"]);
    }
    if !sets("fail_on_warnings") {
        cmd.args(["-S", "fail_on_warnings=false"]);
    }
    cmd.args(extra)
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
    let prefix = tempdir();
    // The interconnect check needs two machines: tests/root/reframe_lab.rs.
    let (out, cases) = reframe_in(
        &prefix,
        &venv,
        wulf_bin(),
        "(wulf_sweep|wulf_npb|wulf_matrix)",
        None,
        &[],
    );
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
    assert!(log.contains("P: noisy_fraction:"), "{log}");
    // The shipped configuration draws no warning (it once redefined
    // ReFrame's own `builtin` environment).
    assert!(!log.contains("WARNING"), "{log}");
    // wulf's JSON outlives the stage directory.
    let kept = prefix.path().join("output/local/default/builtin");
    let sweeps: Vec<_> = std::fs::read_dir(&kept)
        .unwrap()
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with("wulf_sweep_check")
        })
        .collect();
    assert_eq!(sweeps.len(), 3, "{sweeps:?}");
    for d in sweeps {
        let r = json(&d.path().join("result.json"));
        assert_eq!(r["complete"], true);
    }
    // What a dashboard reads: per variable its reference and thresholds,
    // and the run's result and nodes.
    let perflog = std::fs::read_to_string(
        prefix
            .path()
            .join("perflogs/local/default/wulf_sweep_check.log"),
    )
    .unwrap();
    let line = perflog
        .lines()
        .find(|l| l.contains("%transport=tcp"))
        .unwrap_or_else(|| panic!("{perflog}"));
    for field in [
        "|local:default|",
        "|nodes=",
        "|result=pass|",
        "latency=",
        " us ref=10000.0 lower=None upper=0.0|",
    ] {
        assert!(line.contains(field), "no {field} in {line}");
    }
}

#[test]
fn the_nas_check_defaults_to_class_w_best_of_3() {
    let Some(venv) = python::venv() else { return };
    let contrib = concat!(env!("CARGO_MANIFEST_DIR"), "/contrib/reframe");
    let out = Command::new(venv.join("bin/reframe"))
        .args(["-C", &format!("{contrib}/settings.py")])
        .args(["-c", &format!("{contrib}/wulf_checks.py")])
        .args(["-n", "wulf_npb_check", "--describe", "--nocolor"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let described: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", text(&out.stdout)));
    let check = &described[0];
    assert_eq!(check["npb_class"], "W", "{check}");
    assert_eq!(check["repetitions"], "3", "{check}");
    assert_eq!(check["keep_files"], serde_json::json!(["result.json"]));
}

/// A stand-in wulf in `dir` that leaves `doc` as the result of any
/// subcommand (ReFrame runs it in the stage directory).
fn stand_in(dir: &tempfile::TempDir, doc: &Value) -> PathBuf {
    std::fs::write(file(dir, "canned.json"), serde_json::to_vec(doc).unwrap()).unwrap();
    let fake = file(dir, "wulf");
    let canned = file(dir, "canned.json");
    std::fs::write(
        &fake,
        format!("#!/bin/sh\ncp {} result.json\n", canned.display()),
    )
    .unwrap();
    std::fs::set_permissions(&fake, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    fake
}

#[test]
fn a_noisy_or_untrusted_sweep_fails_sanity_with_the_reason() {
    let Some(venv) = python::venv() else { return };
    let fixtures = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures");
    // 62 of 93 points noisy, complete: it used to pass sanity, and its
    // figures then failed the performance phase like a regression.
    let noisy = json(Path::new(&format!("{fixtures}/unix-pingpong.json")));
    let points = noisy["points"].as_array().unwrap().len();
    let marked = noisy["summary"]["noisy_points"].as_u64().unwrap();
    assert!(marked as f64 / points as f64 > 0.25, "{marked} of {points}");
    let dir = tempdir();
    let fake = stand_in(&dir, &noisy);
    let filter = "wulf_sweep_check.*unix";
    let prefix = tempdir();
    let fake = fake.to_str().unwrap();
    let strict = |fraction: &'static str| ["-S", "fail_on_warnings=true", "-S", fraction];
    let defaults = strict("max_noisy_fraction=0.25");
    let (out, cases) = reframe_in(&prefix, &venv, fake, filter, None, &defaults);
    assert!(!out.status.success());
    let reason = sanity_failure(&cases);
    let count = format!("{marked} of {points} points are noisy");
    assert!(
        reason.contains(&count) && reason.contains("max_noisy_fraction=0.25"),
        "{reason}"
    );

    // A site that accepts that much noise says so, and it passes.
    let prefix = tempdir();
    let lenient = strict("max_noisy_fraction=0.9");
    let (out, cases) = reframe_in(&prefix, &venv, fake, filter, None, &lenient);
    let c = case(&cases, "wulf_sweep_check %transport=unix");
    assert_eq!(
        c["result"],
        "pass",
        "{}\n{}",
        c["fail_reason"],
        text(&out.stdout)
    );

    // Quiet, but in a slow mode: not a figure to hold to a reference.
    let mut slow = noisy.clone();
    slow["summary"]["noisy_points"] = 0.into();
    for p in slow["points"].as_array_mut().unwrap() {
        p["noisy"] = false.into();
    }
    slow["warnings"] = serde_json::json!([
        "slow mode: 3 of 9 sizes from 1 MiB on took more than 4x the serial time"
    ]);
    let dir = tempdir();
    let fake = stand_in(&dir, &slow);
    let prefix = tempdir();
    let (_, cases) = reframe_in(
        &prefix,
        &venv,
        fake.to_str().unwrap(),
        filter,
        None,
        &defaults,
    );
    let reason = sanity_failure(&cases);
    assert!(reason.contains("not trustworthy: slow mode"), "{reason}");

    // A site that turns the warnings off is heard: `-S
    // fail_on_warnings=false` once read as True (bool('false')), and CI
    // failed a slow-mode sweep the test had meant to let through.
    let prefix = tempdir();
    let off = [
        "-S",
        "fail_on_warnings=false",
        "-S",
        "max_noisy_fraction=0.25",
    ];
    let (out, cases) = reframe_in(&prefix, &venv, fake.to_str().unwrap(), filter, None, &off);
    let c = case(&cases, "wulf_sweep_check %transport=unix");
    assert_eq!(
        c["result"],
        "pass",
        "{}\n{}",
        c["fail_reason"],
        text(&out.stdout)
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

/// The reason the unix sweep check failed sanity; fails the test when it
/// did not fail there.
fn sanity_failure(cases: &[Value]) -> String {
    let c = case(cases, "wulf_sweep_check %transport=unix");
    assert_eq!(c["fail_phase"], "sanity", "{}", c["fail_reason"]);
    c["fail_reason"].as_str().unwrap_or("").to_string()
}
