//! Exporters and `wulf report` on the fixed results in tests/fixtures,
//! snapshot-style: each output is compared with a file committed under
//! tests/snapshots/. After an intended change, regenerate them with
//! `WULF_UPDATE_SNAPSHOTS=1 cargo test --test fast report_exports::` and review
//! the diff.

use crate::common;
use common::*;

use std::path::{Path, PathBuf};

use wulf::report;
use wulf::result::{read_npb_result, read_result, NpbResult, SweepResult};

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

fn npb_fixture() -> NpbResult {
    read_npb_result(&fixture_path("npb-mg-S.json")).unwrap()
}

/// Compare `actual` with the committed snapshot `name`, or rewrite it when
/// WULF_UPDATE_SNAPSHOTS is set. On a mismatch the new output is saved
/// beside the build (target/test-artifacts/snapshots/) for a diff.
pub(crate) fn snapshot(name: &str, actual: &str) {
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
    let bytes = report::format::csv::to_csv(&fixtures()).unwrap();
    snapshot("fixtures.csv", &String::from_utf8(bytes).unwrap());
}

#[test]
fn gnuplot_dat_snapshot() {
    let dat = report::format::dat::to_dat(&fixtures());
    assert!(dat.starts_with("# 1:bytes 2:median_us"));
    // One block per result, separated by two blank lines for `index N`.
    assert_eq!(dat.matches("\n\n\n# index 1:").count(), 1);
    snapshot("fixtures.dat", &dat);
}

#[test]
fn netpipe_npout_snapshot() {
    let r = &fixtures()[0];
    let out = report::format::npout::to_npout(r);
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
    let md = report::format::markdown::to_markdown(&fixtures());
    assert!(md.starts_with("| configuration | latency (µs) | peak (Mbit/s) |"));
    snapshot("fixtures.md", &md);
}

/// A report refers to nothing outside itself.
fn assert_self_contained(html: &str) {
    assert!(html.starts_with("<!DOCTYPE html>"));
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
}

/// The HTML with each chart's SVG body replaced by `<svg>(chart)</svg>`,
/// and the SVG bodies themselves.
fn strip_charts(html: &str) -> (String, Vec<&str>) {
    let mut stripped = String::new();
    let mut svgs = Vec::new();
    let mut rest = html;
    while let Some(start) = rest.find("<svg") {
        let end = rest[start..].find("</svg>").expect("closed svg") + start + "</svg>".len();
        svgs.push(&rest[start..end]);
        stripped.push_str(&rest[..start]);
        stripped.push_str("<svg>(chart)</svg>");
        rest = &rest[end..];
    }
    stripped.push_str(rest);
    (stripped, svgs)
}

/// The two charts of an NPB result, in this order, with their axes.
fn assert_npb_charts(svgs: &[&str]) {
    assert_eq!(svgs.len(), 2, "Mop/s and speedup");
    for svg in svgs {
        assert!(svg.contains("processes [log2 scale]"), "x axis label");
        // One line per transport, in the legend.
        assert!(
            svg.contains("\nshm\n</text>") && svg.contains("\ntcp\n</text>"),
            "legend"
        );
    }
    assert!(svgs[0].contains("total rate [Mop/s, log2 scale]"));
    assert!(svgs[1].contains("speedup [× one process, log2 scale]"));
    assert!(svgs[1].contains("ideal (speedup = processes)"));
}

/// The HTML with each chart's SVG body left out: the tables, lists and
/// machine descriptions are snapshot-tested, the charts checked for
/// structure (their pixels are the browser test's job).
#[test]
fn html_snapshot_and_structure() {
    let html = report::html::to_html(&report::ReportInput::of_sweeps(&fixtures())).unwrap();
    assert_self_contained(&html);
    let (stripped, svgs) = strip_charts(&html);
    for svg in &svgs {
        assert!(
            svg.contains("message size") || svg.contains("one-way time"),
            "axis label missing"
        );
    }
    assert_eq!(
        svgs.len(),
        7,
        "throughput (linear and log), signature, saturation, latency, CPU, throughput per CPU"
    );
    assert!(
        html.contains("<figure id=cpu-throughput"),
        "no throughput per CPU chart"
    );
    for id in ["summary", "charts", "anomalies", "machines"] {
        assert!(html.contains(&format!("<section id={id}>")), "{id}");
    }
    snapshot("fixtures.report.html", &stripped);
}

/// An NPB result alone: its section (charts, tables, runs), its machine and
/// command line, and none of the sweep sections.
#[test]
fn npb_html_snapshot_and_structure() {
    let html = report::html::to_html(&report::ReportInput {
        npb: &[npb_fixture()],
        ..Default::default()
    })
    .unwrap();
    assert_self_contained(&html);
    let (stripped, svgs) = strip_charts(&html);
    assert_npb_charts(&svgs);
    for id in ["npb1", "machines"] {
        assert!(html.contains(&format!("<section id={id}")), "{id}");
    }
    for id in ["summary", "charts", "anomalies"] {
        assert!(!html.contains(&format!("<section id={id}>")), "{id}");
    }
    assert!(html.contains("<title>wulf report: NAS MG class S</title>"));
    assert!(html.contains("1 NPB result measured on vm"));
    for table in [
        "total Mop/s",
        "Mop/s per process",
        "speedup",
        "parallel efficiency",
    ] {
        assert!(html.contains(&format!(">{table}</th>")), "{table}");
    }
    // The fixture's shm 2-process rate, as the tables print it.
    assert!(html.contains("<td class=num>13942.9</td>"));
    assert!(html.contains("--class S --np 1,2,4 --via shm,tcp"));
    snapshot("npb-mg-S.report.html", &stripped);
}

/// Sweeps and an NPB result together: the sweep sections as before, then
/// the NPB section, then the machines of all of them.
#[test]
fn mixed_html_snapshot_and_structure() {
    let html = report::html::to_html(&report::ReportInput {
        sweeps: &fixtures(),
        npb: &[npb_fixture()],
        ..Default::default()
    })
    .unwrap();
    assert_self_contained(&html);
    let (stripped, svgs) = strip_charts(&html);
    assert_eq!(
        svgs.len(),
        9,
        "seven sweep charts (throughput twice) and two NPB charts"
    );
    assert_npb_charts(&svgs[7..]);
    let at = |id: &str| {
        html.find(&format!("<section id={id}"))
            .unwrap_or_else(|| panic!("no section {id}"))
    };
    assert!(at("summary") < at("charts") && at("anomalies") < at("npb1"));
    assert!(at("npb1") < at("machines"));
    assert!(html.contains("2 sweep results and 1 NPB result measured on vm"));
    // Each machine once, whichever kind of result ran on it: the first
    // open, the results' details folded, the NPB result among its users.
    assert_eq!(html.matches("<details open><summary>").count(), 1);
    assert_eq!(html.matches("<pre class=machine>").count(), 1);
    assert!(html.contains("NAS run: NAS MG class S"));
    snapshot("fixtures-npb.report.html", &stripped);
}

/// Throughput per CPU time (seed 001, Fig. 2): getrusage's measure for
/// every result, the whole machine's for results measured with
/// `--cost whole`, and no chart when no result has a CPU figure.
#[test]
fn throughput_per_cpu_chart_draws_both_measures() {
    // The chart's SVG in the report, if there is one.
    fn chart(results: &[SweepResult]) -> Option<String> {
        let html = report::html::to_html(&report::ReportInput::of_sweeps(results)).unwrap();
        let at = html.find("<figure id=cpu-throughput")?;
        let end = html[at..].find("</svg>").unwrap() + at;
        Some(html[at..end].to_string())
    }
    let mut results = fixtures();
    for p in &mut results[0].points {
        let getrusage = p.cpu_client.ns_per_byte + p.cpu_server.ns_per_byte;
        let mut w = wulf::load::whole::WholeCpu::from_lost(Default::default(), 2);
        w.ns_per_byte = Some(3.0 * getrusage);
        p.cpu_whole = Some(w);
    }
    let svg = chart(&results).expect("a throughput per CPU chart");
    assert!(svg.contains("Gbit per CPU-second"), "y axis");
    assert_eq!(svg.matches(": getrusage").count(), 2, "both results");
    assert_eq!(svg.matches(": whole machine").count(), 1, "only the first");
    // Without any CPU figure there is nothing to draw.
    for r in &mut results {
        for p in &mut r.points {
            p.cpu_client.ns_per_byte = 0.0;
            p.cpu_server.ns_per_byte = 0.0;
            p.cpu_whole = None;
        }
    }
    assert!(chart(&results).is_none());
}

/// A failed run is drawn as a cross, and the tables and run list say so.
#[test]
fn failed_npb_runs_show_as_failed() {
    let mut r = npb_fixture();
    let run = r
        .runs
        .iter_mut()
        .find(|x| x.via == "tcp" && x.nprocs == 4)
        .unwrap();
    *run = wulf::result::NpbRun::new("tcp", 4, Err("rank 3 died".into()));
    wulf::result::fill_speedups(&mut r.runs);
    let html = report::html::to_html(&report::ReportInput {
        npb: &[r],
        ..Default::default()
    })
    .unwrap();
    assert!(html.contains("<span class=bad title=\"rank 3 died\">failed</span>"));
    assert!(html.contains("<span class=bad>failed</span>: rank 3 died"));
    assert!(html.contains("1 of 6 runs failed"));
    assert!(html.contains("Crosses on the bottom axis"));
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

/// Without a one-process run there is no speedup: a note replaces the
/// chart, and the Mop/s chart is still drawn.
#[test]
fn npb_without_one_process_runs_has_no_speedup_chart() {
    let mut r = npb_fixture();
    r.runs.retain(|x| x.nprocs > 1);
    wulf::result::fill_speedups(&mut r.runs);
    let html = report::html::to_html(&report::ReportInput {
        npb: &[r],
        ..Default::default()
    })
    .unwrap();
    assert_eq!(html.matches("<svg").count(), 1);
    assert!(html.contains("<figure id=npb1-speedup class=empty>"));
}

#[test]
fn report_command_takes_npb_results() {
    let dir = tempdir();
    let npb = fixture_path("npb-mg-S.json");
    let tcp = fixture_path("tcp-pingpong.json");
    let (npb, tcp) = (npb.to_str().unwrap(), tcp.to_str().unwrap());
    let out = file(&dir, "npb.html");
    let o = run(&["report", npb, "-o", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let html = std::fs::read_to_string(&out).unwrap();
    assert!(html.contains("<section id=npb1") && html.matches("<svg").count() == 2);
    // Mixed with a sweep, in any order.
    let o = run(&["report", npb, tcp, "-o", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let html = std::fs::read_to_string(&out).unwrap();
    assert!(html.contains("<section id=npb1") && html.matches("<svg").count() == 9);
    // Markdown: the sweeps' summary table, then the NPB tables.
    let o = run(&["report", tcp, npb, "--format", "markdown"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let md = String::from_utf8(o.stdout).unwrap();
    assert!(md.starts_with("| configuration |"), "{md}");
    assert!(md.contains("### NAS MG class S") && md.contains("| total Mop/s"));
    // Point exports have nothing to say about an NPB result: a usage error
    // naming the file.
    for format in ["csv", "dat", "npout"] {
        let o = run(&["report", tcp, npb, "--format", format]);
        assert_eq!(o.status.code(), Some(2), "{format}: {}", stderr(&o));
        assert!(stderr(&o).contains(npb) && stderr(&o).contains("NPB result"));
    }
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

/// A report is drawn from its files alone: it never looks for an MPI on
/// the machine (one `wulf report` once made 36 path probes for mpicc and
/// mpirun, so its HTML depended on what was installed where it was
/// drawn). A fake `mpicc` first in PATH records every probe that runs it;
/// a command that does look for MPIs shows the fake works.
#[test]
fn a_report_never_probes_for_an_mpi() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempdir();
    let bin = dir.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    let marker = dir.path().join("probed");
    let fake = bin.join("mpicc");
    std::fs::write(
        &fake,
        format!("#!/bin/sh\necho \"$0 $*\" >> {}\n", marker.display()),
    )
    .unwrap();
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    // Only the fake in PATH: the installed MPIs' suffixed wrappers
    // (mpicc.openmpi) would be found by a mere stat, which runs nothing.
    let path = bin.display().to_string();
    let out = file(&dir, "r.html");
    let o = wulf(&[
        "report",
        fixture_path("tcp-pingpong.json").to_str().unwrap(),
        fixture_path("memcpy-stream.json").to_str().unwrap(),
        fixture_path("npb-mg-S.json").to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ])
    .env("PATH", &path)
    .output()
    .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        !marker.exists(),
        "the report probed: {:?}",
        std::fs::read_to_string(&marker)
    );
    // The control: naming an unknown transport lists every transport,
    // MPIs included, so it runs the fake.
    let o = wulf(&["sweep", "no-such-transport"])
        .env("PATH", &path)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        marker.exists(),
        "the fake mpicc was never run: the test cannot see a probe"
    );
}

/// A baseline's limit role stored in the file (schema version 4) draws
/// the same report as the role an older file's transport name gives.
#[test]
fn a_stored_limit_role_draws_as_the_looked_up_one() {
    let old = read_result(&fixture_path("memcpy-stream.json")).unwrap();
    assert_eq!(old.limit_role, None, "the fixture is an older file");
    let dir = tempdir();
    let v4 = file(&dir, "memcpy-v4.json");
    let mut stored = old.clone();
    stored.limit_role = Some(wulf::result::LimitRole::MemcpyBandwidth);
    wulf::result::write_result(&v4, &stored).unwrap();
    let stored = read_result(&v4).unwrap();
    let tcp = fixtures().remove(0);
    assert_eq!(
        report::html::to_html(&report::ReportInput::of_sweeps(&[tcp.clone(), stored])).unwrap(),
        report::html::to_html(&report::ReportInput::of_sweeps(&[tcp, old])).unwrap()
    );
}

#[test]
fn a_result_of_an_unknown_kind_is_an_error_naming_it() {
    let dir = tempdir();
    let odd = file(&dir, "odd.json");
    let mut v = json(&fixture_path("tcp-pingpong.json"));
    v["kind"] = "telemetry".into();
    std::fs::write(&odd, serde_json::to_vec(&v).unwrap()).unwrap();
    let out = file(&dir, "r.html");
    let o = run(&["report", odd.to_str().unwrap(), "-o", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains(odd.to_str().unwrap()), "{}", stderr(&o));
    assert!(stderr(&o).contains("telemetry"), "{}", stderr(&o));
    assert!(!out.exists());
    let o = run(&["compare", odd.to_str().unwrap(), odd.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("not a sweep result"), "{}", stderr(&o));
}
