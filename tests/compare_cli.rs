//! `wulf compare` on the fixed results: identical runs differ nowhere; a
//! copy of a fixture doctored to be 20% slower (every time multiplied by
//! 1.2) is found slower, and fails a 10% regression gate with exit code 4.

mod common;
use common::*;

use std::path::{Path, PathBuf};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// `fixture` with every time multiplied by `factor`, written to `out`.
fn doctored(fixture: &Path, factor: f64, out: &Path) {
    let mut r = wulf::result::read_result(fixture).unwrap();
    for p in &mut r.points {
        p.trials_ns.iter_mut().for_each(|t| *t *= factor);
        for v in [
            &mut p.min_ns,
            &mut p.median_ns,
            &mut p.mean_ns,
            &mut p.stddev_ns,
            &mut p.p90_ns,
            &mut p.p99_ns,
            &mut p.ci_low_ns,
            &mut p.ci_high_ns,
        ] {
            *v *= factor;
        }
        p.bits_per_s /= factor;
    }
    r.summary = wulf::result::Summary::from_points(&r.points);
    wulf::result::write_result(out, &r).unwrap();
}

fn stdout(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// How often `verdict` is given, not counting the band table's column
/// headers "B slower" and "B faster".
fn verdicts(text: &str, verdict: &str) -> usize {
    text.lines()
        .filter(|l| !l.starts_with("size band"))
        .map(|l| l.matches(verdict).count())
        .sum()
}

#[test]
fn identical_runs_show_nothing_significant() {
    let a = fixture("tcp-pingpong.json");
    let a = a.to_str().unwrap();
    let o = run(&["compare", a, a, "--fail-if-slower", "0"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(
        text.contains("Mann-Whitney") && text.contains("Holm"),
        "{text}"
    );
    assert!(text.contains("within noise"));
    assert_eq!(
        verdicts(&text, "B slower") + verdicts(&text, "B faster"),
        0,
        "{text}"
    );
}

#[test]
fn a_slower_copy_is_significant_and_fails_the_gate() {
    let dir = tempdir();
    let a = fixture("tcp-pingpong.json");
    let slow = file(&dir, "slow.json");
    doctored(&a, 1.2, &slow);
    let (a, slow) = (a.to_str().unwrap(), slow.to_str().unwrap());

    let o = run(&["compare", a, slow]);
    assert!(o.status.success(), "no gate, no failure: {}", stderr(&o));
    let text = stdout(&o);
    // Every band and both tested figures.
    assert_eq!(verdicts(&text, "B slower"), 6, "{text}");
    assert!(text.contains("+20.0%"), "{text}");

    let o = run(&["compare", a, slow, "--fail-if-slower", "10"]);
    assert_eq!(o.status.code(), Some(4), "{}", stderr(&o));
    assert!(stderr(&o).contains("slower than the baseline by more than 10%"));
    // A 20% slowdown passes a 30% gate, and a faster B passes any gate.
    let o = run(&["compare", a, slow, "--fail-if-slower", "30%"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = run(&["compare", slow, a, "--fail-if-slower", "0"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(verdicts(&stdout(&o), "B faster"), 6);
}

#[test]
fn markdown_and_several_candidates() {
    let a = fixture("tcp-pingpong.json");
    let b = fixture("unix-pingpong.json");
    let (a, b) = (a.to_str().unwrap(), b.to_str().unwrap());
    let o = run(&["compare", a, a, b, "--markdown"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    assert_eq!(text.matches("| size band |").count(), 2, "{text}");
    assert_eq!(text.matches("|---|--:|").count(), 4, "{text}");
    assert!(text.contains("unix pingpong"));
}

#[test]
fn report_and_compare_have_help() {
    for cmd in ["report", "compare"] {
        let o = run(&[cmd, "--help"]);
        assert!(o.status.success(), "{cmd}");
        assert!(stdout(&o).contains("Usage"));
    }
}

#[test]
fn bad_inputs_are_clear_errors() {
    let dir = tempdir();
    let a = fixture("tcp-pingpong.json");
    let missing = file(&dir, "nope.json");
    let o = run(&["compare", a.to_str().unwrap(), missing.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("nope.json"), "{}", stderr(&o));
    let o = run(&["compare", a.to_str().unwrap()]);
    assert_eq!(
        o.status.code(),
        Some(2),
        "a baseline alone is a usage error"
    );
    let o = run(&[
        "compare",
        a.to_str().unwrap(),
        a.to_str().unwrap(),
        "--fail-if-slower",
        "x",
    ]);
    assert_eq!(o.status.code(), Some(2));
    // An NPB result is not a sweep: compare says so, naming the file.
    let npb = fixture("npb-mg-S.json");
    let o = run(&["compare", a.to_str().unwrap(), npb.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("npb-mg-S.json is an NPB result"),
        "{}",
        stderr(&o)
    );
}
