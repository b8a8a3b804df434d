//! `wulf compare` on the fixed results and copies doctored to be slower
//! (every time multiplied by a factor): identical runs never differ; one
//! run per side needs a change beyond the run-to-run band its trials give;
//! several runs per side are compared at the run level; the regression
//! gate exits with code 4 on a shown slowdown and 5 when too noisy to
//! decide; `wulf run --repeat` records the spread.

use crate::common;
use common::*;

use std::path::{Path, PathBuf};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// `fixture` with every time multiplied by `factor`, written to `out`, as
/// a clean run: no point noisy, a quiet machine (the fixture itself was
/// measured on a busy one: single runs of it are never judged).
fn doctored(fixture: &Path, factor: f64, out: &Path) {
    doctored_by(fixture, &|_| factor, out)
}

/// `doctored` with a factor per size.
fn doctored_by(fixture: &Path, factor_at: &dyn Fn(u64) -> f64, out: &Path) {
    let mut r = wulf::result::read_result(fixture).unwrap();
    r.host.load_before = [0.1; 3];
    r.host.load_after = Some([0.1; 3]);
    for p in &mut r.points {
        let factor = factor_at(p.bytes);
        p.noisy = false;
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

/// `fixture` scaled by each factor, as files in `dir` named after `tag`.
fn runs(dir: &tempfile::TempDir, tag: &str, factors: &[f64]) -> Vec<String> {
    let a = fixture("tcp-pingpong.json");
    factors
        .iter()
        .enumerate()
        .map(|(i, &f)| {
            let p = file(dir, &format!("{tag}{i}.json"));
            doctored(&a, f, &p);
            p.to_str().unwrap().to_string()
        })
        .collect()
}

const SAME: &str = "no change (within the margin)";
const INCONCLUSIVE: &str = "inconclusive: too noisy";

/// The fixture was measured on a busy machine (load 2.7 on 2 CPUs, 62 of
/// 93 sizes noisy): single runs of it are never judged, not even a
/// doubling, and a gate can neither pass nor fail (exit 5). As clean runs
/// against themselves they are never a change, and with a wide margin
/// "no change" is shown.
#[test]
fn unclean_single_runs_are_never_judged_clean_ones_never_differ_from_themselves() {
    let dir = tempdir();
    let a = fixture("tcp-pingpong.json");
    let a = a.to_str().unwrap();
    let o = run(&["compare", a, a, "--fail-if-slower", "0"]);
    assert_eq!(o.status.code(), Some(5), "{}", stderr(&o));
    assert!(stderr(&o).contains("cannot be excluded"), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(text.contains("unknown (unclean runs)"), "{text}");
    // Four bands and the two tested figures.
    assert_eq!(verdicts(&text, INCONCLUSIVE), 6, "{text}");
    let doubled = runs(&dir, "d", &[2.0]);
    // The doubled copy is clean, but A is not: still no verdict.
    let o = run(&["compare", a, &doubled[0]]);
    assert_eq!(verdicts(&stdout(&o), INCONCLUSIVE), 6, "{}", stdout(&o));

    let clean = runs(&dir, "c", &[1.0]);
    let o = run(&["compare", &clean[0], &clean[0]]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(
        text.contains("(trials)") && text.contains("Band \"trials\""),
        "{text}"
    );
    assert_eq!(
        verdicts(&text, "A faster") + verdicts(&text, "B faster"),
        0,
        "{text}"
    );
    // A wide margin shows equivalence where the band is narrow enough.
    let o = run(&["compare", &clean[0], &clean[0], "--margin", "200"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(verdicts(&stdout(&o), SAME), 6, "{}", stdout(&o));
}

/// One run per side: a halved link (every time doubled) is shown in every
/// band and fails a 10% gate with exit code 4; a 20% slowdown is within
/// the band this noisy run's trials give in every size band, and so at
/// the peak, one of their sizes (inconclusive: exit 5); beyond a given
/// band it is "A faster" everywhere.
#[test]
fn single_runs_show_a_halved_link() {
    let dir = tempdir();
    let r = runs(&dir, "b", &[1.0, 1.2, 2.0]);
    let (a, slow, halved) = (r[0].as_str(), r[1].as_str(), r[2].as_str());

    let o = run(&["compare", a, halved, "--fail-if-slower", "10"]);
    assert_eq!(o.status.code(), Some(4), "{}", stdout(&o));
    let text = stdout(&o);
    assert_eq!(
        verdicts(&text, "A faster"),
        5,
        "four bands and the peak: {text}"
    );
    assert!(stderr(&o).contains("slower than the baseline by more than 10%"));

    // The peak's trials are tight, but it is one size of a band that
    // cannot show the change: it shows none either.
    let o = run(&["compare", a, slow, "--fail-if-slower", "10"]);
    assert_eq!(o.status.code(), Some(5), "{}", stderr(&o));
    assert!(stderr(&o).contains("peak: +20.0%"), "{}", stderr(&o));
    assert_eq!(verdicts(&stdout(&o), "A faster"), 0, "{}", stdout(&o));
    assert_eq!(verdicts(&stdout(&o), INCONCLUSIVE), 6, "{}", stdout(&o));
    assert!(stdout(&o).contains("+20.0%") && stdout(&o).contains("-16.7%"));

    let o = run(&["compare", a, slow, "--noise-floor", "10%"]);
    assert!(o.status.success(), "no gate, no failure: {}", stderr(&o));
    let text = stdout(&o);
    // Four bands and the peak; the latency's 19 trials spread too wide.
    assert_eq!(verdicts(&text, "A faster"), 5, "{text}");
    assert!(text.contains("-9.1% .. +10.0% (given)"), "{text}");
    let gate = |pct: &str| {
        run(&[
            "compare",
            a,
            slow,
            "--noise-floor",
            "10",
            "--fail-if-slower",
            pct,
        ])
    };
    let o = gate("10");
    assert_eq!(o.status.code(), Some(4), "{}", stderr(&o));
    assert!(stderr(&o).contains("slower than the baseline by more than 10%"));
    let o = gate("30%");
    assert_ne!(o.status.code(), Some(4), "{}", stderr(&o));
    let o = run(&[
        "compare",
        slow,
        a,
        "--noise-floor",
        "10",
        "--fail-if-slower",
        "0",
    ]);
    assert_ne!(o.status.code(), Some(4), "{}", stderr(&o));
    assert_eq!(verdicts(&stdout(&o), "B faster"), 5);
}

/// Three runs a side, 1% apart within a side and four times as slow
/// between: compared at the run level, every band is "A faster" beyond the
/// band their spread gives, in both spellings; runs 30% apart leave a 15%
/// change inconclusive.
/// The peak row of one figure. An A/A pair: two copies of one clean run,
/// each 15% faster at a different one of its two fastest sizes (as two
/// runs of one configuration differ at a size or two). The peak is read
/// at the same size whichever file comes first (A's own peak picked the
/// size where A happened to be fast: "A faster" there and a failed gate,
/// and the other order another size), no row shows a change the bands do
/// not, and a 10% gate does not fail. A halved link's peak row reads a
/// fall in both its change and its interval (the interval was the time's,
/// a rise, beside the rate's fall).
#[test]
fn the_peak_is_one_figure_whichever_file_comes_first() {
    let dir = tempdir();
    let fx = fixture("tcp-pingpong.json");
    let (a, b) = (file(&dir, "a.json"), file(&dir, "b.json"));
    doctored_by(&fx, &|s| if s == 262141 { 0.85 } else { 1.0 }, &a);
    doctored_by(&fx, &|s| if s == 262144 { 0.85 } else { 1.0 }, &b);
    let (a, b) = (a.to_str().unwrap(), b.to_str().unwrap());
    let peak_line = |text: &str| {
        text.lines()
            .find(|l| l.starts_with("peak "))
            .unwrap_or_else(|| panic!("no peak row: {text}"))
            .to_string()
    };
    let at = |line: &str| line.rsplit_once("(at ").map(|x| x.1.to_string());
    let ab = run(&["compare", a, b, "--fail-if-slower", "10"]);
    let ba = run(&["compare", b, a, "--fail-if-slower", "10"]);
    for o in [&ab, &ba] {
        let text = stdout(o);
        assert_ne!(o.status.code(), Some(4), "{text}{}", stderr(o));
        assert_eq!(
            verdicts(&text, "A faster") + verdicts(&text, "B faster"),
            0,
            "{text}"
        );
    }
    let (p_ab, p_ba) = (peak_line(&stdout(&ab)), peak_line(&stdout(&ba)));
    assert_eq!(at(&p_ab), at(&p_ba), "{p_ab}\n{p_ba}");
    let cols = |line: &str| -> Vec<String> {
        line.split("   ")
            .map(|c| c.trim().to_string())
            .filter(|c| !c.is_empty())
            .collect()
    };
    // Swapping the files swaps A's and B's peak.
    let (c_ab, c_ba) = (cols(&p_ab), cols(&p_ba));
    assert_eq!((&c_ab[1], &c_ab[2]), (&c_ba[2], &c_ba[1]), "{p_ab}\n{p_ba}");

    let halved = runs(&dir, "h", &[2.0]);
    let o = run(&["compare", a, &halved[0]]);
    let line = peak_line(&stdout(&o));
    let c = cols(&line);
    assert!(c[3].starts_with("-4") || c[3].starts_with("-5"), "{line}");
    let (low, high) = c[4].split_once(" .. ").unwrap_or_else(|| panic!("{line}"));
    assert!(low.starts_with('-') && high.starts_with('-'), "{line}");
}

#[test]
fn several_runs_per_side() {
    let dir = tempdir();
    let a = runs(&dir, "a", &[1.0, 1.01, 0.99]);
    let b = runs(&dir, "b", &[4.0, 4.04, 3.96]);
    let mut args: Vec<&str> = vec!["compare"];
    let gate = args.len();
    args.extend(a.iter().map(String::as_str));
    args.push("--");
    args.extend(b.iter().map(String::as_str));
    let o = run(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(text.contains("3 runs of tcp pingpong"), "{text}");
    assert!(text.contains("hierarchical bootstrap over runs"), "{text}");
    assert!(
        text.contains("(runs)") || text.contains("(minimum)"),
        "{text}"
    );
    assert_eq!(verdicts(&text, "A faster"), 6, "{text}");
    // Options go before `--`: everything after it is a file of B.
    args.splice(gate..gate, ["--fail-if-slower", "10"]);
    let o = run(&args);
    assert_eq!(o.status.code(), Some(4), "{}", stderr(&o));

    let mut flags: Vec<&str> = vec!["compare", "--a"];
    flags.extend(a.iter().map(String::as_str));
    flags.push("--b");
    flags.extend(b.iter().map(String::as_str));
    flags.extend(["--fail-if-slower", "350"]);
    let o = run(&flags);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), text);

    let noisy = runs(&dir, "n", &[1.0, 1.3]);
    let one = runs(&dir, "o", &[1.3]);
    let o = run(&[
        "compare",
        "--fail-if-slower",
        "0",
        &noisy[0],
        &noisy[1],
        "--",
        &one[0],
    ]);
    assert_eq!(o.status.code(), Some(5), "{}", stderr(&o));
    assert_eq!(verdicts(&stdout(&o), INCONCLUSIVE), 6, "{}", stdout(&o));
}

#[test]
fn html_output_holds_the_verdicts() {
    let dir = tempdir();
    let a = fixture("tcp-pingpong.json");
    let slow = runs(&dir, "s", &[1.5]);
    let html = file(&dir, "cmp.html");
    let o = run(&[
        "compare",
        a.to_str().unwrap(),
        &slow[0],
        "--noise-floor",
        "10",
        "--html",
        html.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.starts_with("<!DOCTYPE html>"));
    assert_eq!(page.matches("<tr class=\"a-faster\">").count(), 6, "{page}");
    assert!(page.contains("-9.1% .. +10.0% (given)") && page.contains("One run per side"));
}

/// `wulf run --repeat 2` writes each repetition with the spread recorded,
/// and a comparison of two of its single runs uses that spread.
#[test]
fn run_repeat_records_the_spread_compare_uses() {
    let dir = tempdir();
    let out = dir.path().to_str().unwrap();
    let o = run(&[
        "run",
        "--repeat",
        "2",
        "--only",
        "tcp",
        "--budget",
        "1s",
        "--no-npb",
        "--quiet",
        "--timeout",
        "5s",
        "--out",
        out,
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("run-to-run noise floor"),
        "{}",
        stdout(&o)
    );
    let results = std::fs::read_dir(dir.path())
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let r1 = results.join("tcp-pingpong-r1.json");
    let r2 = results.join("tcp-pingpong-r2.json");
    for (k, p) in [(1, &r1), (2, &r2)] {
        let v = json(p);
        let rr = &v["run_to_run"];
        assert_eq!(rr["repetitions"], 2, "{rr}");
        assert_eq!(rr["repetition"], k);
        assert!(!rr["bands"].as_array().unwrap().is_empty(), "{rr}");
        assert_eq!(rr["bands"][0]["df"], 1);
        assert!(rr["bands"][0]["one_run_floor_fraction"].as_f64().unwrap() >= 0.03);
    }
    let o = run(&["compare", r1.to_str().unwrap(), r2.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("recorded in the files") && stdout(&o).contains("(recorded)"),
        "{}",
        stdout(&o)
    );
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
    // The runs of one side are of one transport and mode.
    let unix = fixture("unix-pingpong.json");
    let (a_s, u_s) = (a.to_str().unwrap(), unix.to_str().unwrap());
    let o = run(&["compare", a_s, u_s, "--", a_s]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("same transport and mode"),
        "{}",
        stderr(&o)
    );
    let o = run(&["compare", "--", a_s]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
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

/// `fixture` scaled by `factor`, with every size's trials within +-1% of
/// its median and its interval +-0.5%, and every point marked noisy (so
/// single runs of it have no run-to-run band), written to `out`.
fn tight_noisy(fixture: &Path, factor: f64, out: &Path) {
    doctored(fixture, factor, out);
    let mut r = wulf::result::read_result(out).unwrap();
    for p in &mut r.points {
        let m = p.median_ns;
        for (k, t) in p.trials_ns.iter_mut().enumerate() {
            *t = m * (1.0 + 0.01 * ((k % 3) as f64 - 1.0));
        }
        (p.ci_low_ns, p.ci_high_ns) = (m * 0.995, m * 1.005);
        p.noisy = true;
    }
    wulf::result::write_result(out, &r).unwrap();
}

/// One run per side without a run-to-run band (most points noisy), the
/// two 2x apart at every size with tight intervals: the change is far
/// beyond the points' own noise, so it is shown in every band and a 10%
/// gate fails with exit code 4 (issue 44); the same run against itself
/// claims no change and leaves the gate undecided (exit 5).
#[test]
fn single_runs_far_apart_are_judged_without_a_band() {
    let dir = tempdir();
    let fx = fixture("tcp-pingpong.json");
    let (a, b) = (file(&dir, "a.json"), file(&dir, "b.json"));
    tight_noisy(&fx, 1.0, &a);
    tight_noisy(&fx, 2.0, &b);
    let (a, b) = (a.to_str().unwrap(), b.to_str().unwrap());
    let o = run(&["compare", a, b, "--fail-if-slower", "10"]);
    assert_eq!(o.status.code(), Some(4), "{}", stderr(&o));
    let text = stdout(&o);
    assert_eq!(verdicts(&text, "A faster"), 6, "{text}");
    assert!(text.contains("Band \"far beyond the noise\""), "{text}");
    let o = run(&["compare", a, a, "--fail-if-slower", "10"]);
    assert_eq!(o.status.code(), Some(5), "{}", stderr(&o));
    let text = stdout(&o);
    assert_eq!(verdicts(&text, "A faster") + verdicts(&text, "B faster"), 0);
    assert_eq!(verdicts(&text, SAME), 0, "{text}");
}
