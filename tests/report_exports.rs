//! Exporters and `wulf report` on the fixed results in tests/fixtures,
//! snapshot-style: each output is compared with a file committed under
//! tests/snapshots/. After an intended change, regenerate them with
//! `WULF_UPDATE_SNAPSHOTS=1 cargo test --test report_exports` and review
//! the diff.

mod common;
use common::*;

use std::path::{Path, PathBuf};

use wulf::report;
use wulf::result::{read_result, SweepResult};

fn fixture_path(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn fixtures() -> Vec<SweepResult> {
    ["tcp-pingpong.json", "unix-pingpong.json"]
        .iter()
        .map(|n| read_result(&fixture_path(n)).unwrap())
        .collect()
}

/// Compare `actual` with the committed snapshot `name`, or rewrite it when
/// WULF_UPDATE_SNAPSHOTS is set. On a mismatch the new output is saved
/// beside the build (target/test-artifacts/snapshots/) for a diff.
fn snapshot(name: &str, actual: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/snapshots")
        .join(name);
    if std::env::var_os("WULF_UPDATE_SNAPSHOTS").is_some_and(|v| v != "0") {
        std::fs::write(&path, actual).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_else(|_| {
        panic!(
            "no snapshot {}: run with WULF_UPDATE_SNAPSHOTS=1 to create it",
            path.display()
        )
    });
    if expected != actual {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/test-artifacts/snapshots");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(name), actual).unwrap();
        let line = expected
            .lines()
            .zip(actual.lines())
            .position(|(e, a)| e != a)
            .map(|i| i + 1)
            .unwrap_or_else(|| expected.lines().count().min(actual.lines().count()) + 1);
        panic!(
            "{name} differs from its snapshot from line {line}; new output in {}; \
             if the change is intended, rerun with WULF_UPDATE_SNAPSHOTS=1",
            dir.join(name).display()
        );
    }
}

#[test]
fn csv_snapshot() {
    let bytes = report::csv::to_csv(&fixtures()).unwrap();
    snapshot("fixtures.csv", &String::from_utf8(bytes).unwrap());
}

#[test]
fn gnuplot_dat_snapshot() {
    let dat = report::dat::to_dat(&fixtures());
    assert!(dat.starts_with("# 1:bytes 2:median_us"));
    // One block per result, separated by two blank lines for `index N`.
    assert_eq!(dat.matches("\n\n\n# index 1:").count(), 1);
    snapshot("fixtures.dat", &dat);
}

#[test]
fn netpipe_npout_snapshot() {
    let r = &fixtures()[0];
    let out = report::npout::to_npout(r);
    // NetPIPE 3.7 columns: bytes, Mbps of 2^20 bit/s, seconds.
    let first: Vec<&str> = out.lines().next().unwrap().split_whitespace().collect();
    let p = &r.points[0];
    assert_eq!(first[0], p.bytes.to_string());
    let mbps: f64 = first[1].parse().unwrap();
    let expected = p.bytes as f64 * 8.0 / (p.median_ns / 1e9) / 1_048_576.0;
    assert!((mbps - expected).abs() < 1e-6, "{mbps} vs {expected}");
    let secs: f64 = first[2].parse().unwrap();
    assert!((secs - p.median_ns / 1e9).abs() < 1e-8);
    snapshot("tcp-pingpong.np.out", &out);
}

#[test]
fn markdown_snapshot() {
    let md = report::markdown::to_markdown(&fixtures());
    assert!(md.starts_with("| configuration | latency (µs) | peak (Mbit/s) |"));
    snapshot("fixtures.md", &md);
}

/// The HTML with each chart's SVG body left out: the tables, lists and
/// machine descriptions are snapshot-tested, the charts checked for
/// structure (their pixels are the browser test's job).
#[test]
fn html_snapshot_and_structure() {
    let html = report::html::to_html(&fixtures()).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>"));
    // Self-contained: nothing is fetched.
    for needle in [
        "src=\"http",
        "href=\"http",
        "src='http",
        "@import",
        "<link",
        "url(",
    ] {
        assert!(
            !html.contains(needle),
            "report refers to an outside resource: {needle}"
        );
    }
    let mut stripped = String::new();
    let mut rest = html.as_str();
    let mut charts = 0;
    while let Some(start) = rest.find("<svg") {
        let end = rest[start..].find("</svg>").expect("closed svg") + start + "</svg>".len();
        let svg = &rest[start..end];
        assert!(
            svg.contains("message size") || svg.contains("one-way time"),
            "axis label missing"
        );
        stripped.push_str(&rest[..start]);
        stripped.push_str("<svg>(chart)</svg>");
        rest = &rest[end..];
        charts += 1;
    }
    stripped.push_str(rest);
    assert_eq!(charts, 5, "throughput, signature, saturation, latency, CPU");
    for id in ["summary", "charts", "anomalies", "machines"] {
        assert!(html.contains(&format!("<section id={id}>")), "{id}");
    }
    snapshot("fixtures.report.html", &stripped);
}

#[test]
fn report_command_writes_every_format() {
    let dir = tempdir();
    let (a, b) = (
        fixture_path("tcp-pingpong.json"),
        fixture_path("unix-pingpong.json"),
    );
    let (a, b) = (a.to_str().unwrap(), b.to_str().unwrap());
    for (name, marker) in [
        ("r.html", "<!DOCTYPE html>"),
        ("r.csv", "transport,mode,bytes"),
        ("r.dat", "# 1:bytes"),
        ("r.md", "| configuration |"),
    ] {
        let out = file(&dir, name);
        let o = run(&["report", a, b, "-o", out.to_str().unwrap()]);
        assert!(o.status.success(), "{name}: {}", stderr(&o));
        assert!(String::from_utf8_lossy(&o.stdout).contains(out.to_str().unwrap()));
        let text = std::fs::read_to_string(&out).unwrap();
        assert!(
            text.starts_with(marker),
            "{name}: {}",
            &text[..80.min(text.len())]
        );
    }
    // Other formats go to standard output without -o.
    let o = run(&["report", a, "--format", "npout"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        String::from_utf8(o.stdout).unwrap(),
        std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/snapshots/tcp-pingpong.np.out")
        )
        .unwrap()
    );
    // np.out holds one run.
    let o = run(&["report", a, b, "--format", "npout"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("one result"));
}

#[test]
fn unreadable_or_foreign_files_are_errors_naming_the_file() {
    let dir = tempdir();
    let missing = file(&dir, "missing.json");
    let garbage = file(&dir, "garbage.json");
    std::fs::write(&garbage, "not json").unwrap();
    let future = file(&dir, "future.json");
    std::fs::write(&future, r#"{"schema_version": 99}"#).unwrap();
    let other = file(&dir, "other.json");
    std::fs::write(&other, r#"{"schema_version": 1, "points": []}"#).unwrap();
    let out = file(&dir, "r.html");
    for bad in [&missing, &garbage, &future, &other] {
        let o = run(&["report", bad.to_str().unwrap(), "-o", out.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
        assert!(stderr(&o).contains(bad.to_str().unwrap()), "{}", stderr(&o));
        assert!(!stderr(&o).contains("panicked"));
        assert!(!out.exists());
    }
}

#[test]
fn run_writes_a_report_beside_its_results() {
    let dir = tempdir();
    let out = dir.path().to_str().unwrap();
    let o = run(&[
        "run", "--only", "unix", "--out", out, "--budget", "300ms", "--sizes", "1:4Ki", "--quiet",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = String::from_utf8_lossy(&o.stdout);
    let line = text
        .lines()
        .find(|l| l.starts_with("report:"))
        .unwrap_or_else(|| panic!("no report line: {text}"));
    let path = Path::new(line.trim_start_matches("report:").trim());
    assert!(path.starts_with(dir.path()) && path.ends_with("report.html"));
    let html = std::fs::read_to_string(path).unwrap();
    assert!(html.contains("unix pingpong") && html.contains("<svg"));
    assert!(path.with_file_name("unix-pingpong.json").exists());
}
