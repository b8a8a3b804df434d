//! The HTML report opened in a real headless browser (Debian's chromium,
//! installed by scripts/install-test-deps): it loads with no script or
//! console errors, every chart (the sweeps' and an NPB result's) is present
//! as SVG with labelled axes (the machine's limits among them: memcpy's
//! memory hierarchy, the transports against memcpy and the cache-line
//! floor), and screenshots are saved as test artifacts at a laptop width
//! and a narrow one (target/test-artifacts/report-1300.png and
//! report-800.png, and report-npb.png for the NPB part).
//!
//! Without chromium the test is skipped, unless WULF_REQUIRE_BROWSER=1 (as
//! scripts/test sets it), which turns a missing browser into a failure.

use crate::common;
use common::*;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use wulf::result::{read_result, write_result, Limits, LinkEfficiency};
use wulf::sys::{tcp_goodput_limit, Framing, IpVersion};

/// The browser's binary, if one is installed.
fn chromium() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    ["chromium", "chromium-browser"].iter().find_map(|name| {
        std::env::split_paths(&path)
            .map(|d| d.join(name))
            .find(|p| p.is_file())
    })
}

/// The browser, or None after saying the test is skipped; a missing
/// browser fails instead when WULF_REQUIRE_BROWSER=1 (scripts/test).
pub(crate) fn chromium_or_skip() -> Option<PathBuf> {
    let found = chromium();
    if found.is_none() {
        if std::env::var("WULF_REQUIRE_BROWSER").is_ok_and(|v| v == "1") {
            panic!(
                "chromium is not installed (WULF_REQUIRE_BROWSER=1): run scripts/install-test-deps"
            );
        }
        eprintln!(
            "skipped: chromium is not installed (set WULF_REQUIRE_BROWSER=1 to fail instead)"
        );
    }
    found
}

/// Where test artifacts go: target/test-artifacts (beside the build).
pub(crate) fn artifacts_dir() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target"));
    let dir = target.join("test-artifacts");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Run chromium headless on `url` with `extra` flags; returns (stdout,
/// stderr). Bounded: killed after two minutes.
pub(crate) fn headless(
    browser: &Path,
    profile: &Path,
    url: &str,
    extra: &[&str],
) -> (String, String) {
    let dir = profile.join(format!("run-{}", extra.len()));
    let mut cmd = Command::new(browser);
    cmd.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--enable-logging=stderr",
        "--v=0",
    ])
    .arg(format!("--user-data-dir={}", dir.display()))
    .args(extra)
    .arg(url)
    .stdin(Stdio::null())
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("start chromium");
    let drain = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut s = String::new();
            let _ = r.read_to_string(&mut s);
            s
        })
    };
    let out = drain(Box::new(child.stdout.take().unwrap()));
    let err = drain(Box::new(child.stderr.take().unwrap()));
    let deadline = Instant::now() + Duration::from_secs(120);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium did not finish within two minutes");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    (out.join().unwrap(), err.join().unwrap())
}

/// Lines of the browser log that report a script or console error.
pub(crate) fn console_errors(log: &str) -> Vec<&str> {
    log.lines()
        .filter(|l| {
            l.contains("Uncaught")
                || l.contains("ERROR:CONSOLE")
                || (l.contains(":CONSOLE(") && l.to_ascii_lowercase().contains("error"))
        })
        .collect()
}

/// The fixtures, plus the TCP one with a 100 Gbit/s link limit attached so
/// that the efficiency chart is drawn too, and the NPB result.
fn results(dir: &Path) -> Vec<String> {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let mut with_link = read_result(&fixtures.join("tcp-pingpong.json")).unwrap();
    let limit = tcp_goodput_limit(100_000.0, 9000, IpVersion::V4, true).unwrap();
    let limit_bits_per_s = limit.goodput_mbit_per_s(Framing::Ethernet) * 1e6;
    with_link.link = Some(LinkEfficiency {
        interface: "eth0".into(),
        framing: Framing::Ethernet,
        limit_bits_per_s,
        peak_fraction: with_link
            .summary
            .peak_bits_per_s
            .map(|p| p / limit_bits_per_s),
        limit,
        end: None,
        shaper: None,
        to_peer_bits_per_s: None,
        from_peer_bits_per_s: None,
    });
    with_link.options.peer.replace("node2".into());
    let linked = dir.join("tcp-eth0.json");
    write_result(&linked, &with_link).unwrap();
    // The unix sweep with the limits an intra-node sweep records: the
    // memcpy fixture's bandwidth at each size and a 120 ns floor.
    let memcpy = read_result(&fixtures.join("memcpy-stream.json")).unwrap();
    let mut unix = read_result(&fixtures.join("unix-pingpong.json")).unwrap();
    for p in &mut unix.points {
        let at = memcpy
            .points
            .iter()
            .min_by_key(|m| m.bytes.abs_diff(p.bytes));
        p.limits = Some(Limits {
            memcpy_bits_per_s: at.map(|m| m.bits_per_s),
            floor_ns: Some(120.0),
            ..Default::default()
        });
    }
    let intranode = dir.join("unix-limits.json");
    write_result(&intranode, &unix).unwrap();
    vec![
        fixtures.join("memcpy-stream.json").display().to_string(),
        fixtures.join("tcp-pingpong.json").display().to_string(),
        intranode.display().to_string(),
        linked.display().to_string(),
        fixtures.join("npb-mg-S.json").display().to_string(),
    ]
}

#[test]
fn report_renders_in_a_real_browser() {
    let Some(browser) = chromium_or_skip() else {
        return;
    };
    let dir = tempdir();
    let report = file(&dir, "report.html");
    let mut args = vec!["report".to_string()];
    args.extend(results(dir.path()));
    args.extend(["-o".to_string(), report.display().to_string()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let o = run(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    let url = format!("file://{}", report.display());

    let (dom, log) = headless(&browser, dir.path(), &url, &["--dump-dom"]);
    assert!(
        dom.contains("data-ready=\"yes\""),
        "the page's script did not run to the end; log:\n{log}"
    );
    assert!(
        dom.contains("<pre id=\"js-errors\" hidden=\"\"></pre>"),
        "script errors on the page: {}",
        dom.split("js-errors")
            .nth(1)
            .unwrap_or("")
            .chars()
            .take(500)
            .collect::<String>()
    );
    let errors = console_errors(&log);
    assert!(errors.is_empty(), "console errors:\n{}", errors.join("\n"));

    // Every chart is an inline SVG with its axis descriptions.
    let charts = [
        (
            "throughput",
            ["message size [bytes, log scale]", "throughput [Gbit/s]"],
        ),
        (
            "signature",
            ["one-way time [µs, log scale]", "throughput [Gbit/s]"],
        ),
        (
            "saturation",
            [
                "one-way time [µs, log scale]",
                "message size [bytes, log scale]",
            ],
        ),
        (
            "latency",
            ["message size [bytes, log scale]", "one-way time [µs]"],
        ),
        (
            "cpu",
            [
                "message size [bytes, log scale]",
                "CPU time per byte [ns/B, log scale]",
            ],
        ),
        (
            "cpu-throughput",
            [
                "message size [bytes, log scale]",
                "throughput per CPU time [Gbit per CPU-second, log scale]",
            ],
        ),
        (
            "efficiency",
            [
                "message size [bytes, log scale]",
                "throughput / physical limit [%]",
            ],
        ),
        (
            "memory",
            [
                "message size [bytes, log scale]",
                "memcpy bandwidth [Gbit/s]",
            ],
        ),
        (
            "memcpy-fraction",
            [
                "message size [bytes, log scale]",
                "throughput / memcpy at that size [%, log scale]",
            ],
        ),
        (
            "floor-multiple",
            [
                "message size [bytes, log scale]",
                "one-way time / cache-line floor [×, log scale]",
            ],
        ),
        (
            "npb1-mops",
            ["processes [log2 scale]", "total rate [Mop/s, log2 scale]"],
        ),
        (
            "npb1-speedup",
            [
                "processes [log2 scale]",
                "speedup [× one process, log2 scale]",
            ],
        ),
    ];
    for (id, labels) in charts {
        let start = dom
            .find(&format!("<figure id=\"{id}\""))
            .unwrap_or_else(|| panic!("no figure {id}"));
        let end = dom[start..].find("</figure>").unwrap() + start;
        let fig = &dom[start..end];
        assert!(fig.contains("<svg"), "{id}: no svg");
        for l in labels {
            assert!(fig.contains(l), "{id}: axis label {l:?} missing");
        }
    }
    // The summary table has a row per result, the anomalies their list.
    assert!(dom.matches("<span class=\"swatch\"").count() >= 3);
    assert!(dom.contains("Switch-overs and drop-outs"));
    // The NPB section with its tables, after the sweeps.
    assert!(dom.contains("NAS MG class S"));
    assert!(dom.contains(">parallel efficiency</th>"));

    // A laptop's width (two charts side by side) and a narrow window (one
    // chart per row): the page must read at both.
    for (width, height) in [(1300, 4200), (800, 7000)] {
        let shot = artifacts_dir().join(format!("report-{width}.png"));
        let _ = std::fs::remove_file(&shot);
        let arg = format!("--screenshot={}", shot.display());
        let size = format!("--window-size={width},{height}");
        let (_, log) = headless(&browser, dir.path(), &url, &[&arg, &size]);
        let errors = console_errors(&log);
        assert!(errors.is_empty(), "console errors:\n{}", errors.join("\n"));
        let png =
            std::fs::read(&shot).unwrap_or_else(|e| panic!("no screenshot ({e}); log:\n{log}"));
        assert!(png.starts_with(b"\x89PNG"), "not a PNG");
        // The PNG header's width is the window's: the page did not force
        // a wider canvas.
        let png_width = u32::from_be_bytes(png[16..20].try_into().unwrap());
        assert_eq!(png_width, width);
        assert!(
            png.len() > 50_000,
            "screenshot suspiciously small: {} bytes",
            png.len()
        );
        eprintln!("screenshot: {}", shot.display());
    }

    // The NPB section sits below the first screenful, and headless
    // chromium paints a blank screenshot when opened at an anchor: the
    // second screenshot is of a report of the NPB result alone, which also
    // checks that such a report loads cleanly.
    let npb_report = file(&dir, "report-npb.html");
    let npb_fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/npb-mg-S.json");
    let o = run(&[
        "report",
        npb_fixture.to_str().unwrap(),
        "-o",
        npb_report.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let shot = artifacts_dir().join("report-npb.png");
    let _ = std::fs::remove_file(&shot);
    let arg = format!("--screenshot={}", shot.display());
    let (_, log) = headless(
        &browser,
        dir.path(),
        &format!("file://{}", npb_report.display()),
        &[&arg, "--window-size=1280,1800"],
    );
    let errors = console_errors(&log);
    assert!(errors.is_empty(), "console errors:\n{}", errors.join("\n"));
    let png = std::fs::read(&shot).unwrap_or_else(|e| panic!("no screenshot ({e}); log:\n{log}"));
    assert!(png.starts_with(b"\x89PNG"), "not a PNG");
    eprintln!("screenshot: {}", shot.display());
}

/// `wulf report FIXTURE` (a file under tests/fixtures) opened in the
/// browser: the page's script ran and the console is clean. Returns the
/// directory (kept alive by the caller), the page's URL and its DOM.
fn fixture_report_in_browser(browser: &Path, fixture: &str) -> (tempfile::TempDir, String, String) {
    let dir = tempdir();
    let report = file(&dir, "report.html");
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(fixture);
    let o = run(&[
        "report",
        fixture.to_str().unwrap(),
        "-o",
        report.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let url = format!("file://{}", report.display());
    let (dom, log) = headless(browser, dir.path(), &url, &["--dump-dom"]);
    assert!(
        dom.contains("data-ready=\"yes\""),
        "the page's script did not run; log:\n{log}"
    );
    let errors = console_errors(&log);
    assert!(errors.is_empty(), "console errors:\n{}", errors.join("\n"));
    (dir, url, dom)
}

/// A screenshot of `url` saved as the artifact `name`, checked to be a
/// PNG of at least `min_bytes`.
fn screenshot(browser: &Path, dir: &Path, url: &str, name: &str, height: u32, min_bytes: usize) {
    let shot = artifacts_dir().join(name);
    let arg = format!("--screenshot={}", shot.display());
    let size = format!("--window-size=1280,{height}");
    let _ = headless(browser, dir, url, &[&arg, &size]);
    let png = std::fs::read(&shot).expect("screenshot");
    assert!(png.starts_with(b"\x89PNG") && png.len() > min_bytes);
}

/// A study's report (`wulf study`, here the quick mtu-buffers fixture: its
/// summary and its four per-MTU sweeps): loads without errors, shows the
/// study's three tables and its three chart families with labelled axes.
#[test]
fn study_report_renders_in_a_real_browser() {
    let Some(browser) = chromium_or_skip() else {
        return;
    };
    let (dir, url, dom) = fixture_report_in_browser(&browser, "study-mtu-buffers/study.json");
    assert!(dom.contains("Study: mtu-buffers"));
    assert_eq!(
        dom.matches("<table class=\"study-table\"").count(),
        3,
        "peak, fraction and latency tables"
    );
    assert!(dom.contains(">MTU 9000</th>") && dom.contains(">64KiB</td>"));
    let figures: Vec<&str> = dom.split("<figure class=\"study-chart\"").skip(1).collect();
    assert_eq!(figures.len(), 3);
    for (fig, axis) in figures.iter().zip([
        "message size [bytes, log scale]",
        "one-way time [µs, log scale]",
        "message size [bytes, log scale]",
    ]) {
        let fig = &fig[..fig.find("</figure>").unwrap()];
        assert!(fig.contains("<svg"), "no svg");
        assert!(fig.contains(axis), "axis label {axis:?} missing");
        // One legend entry per MTU's sweep.
        for m in ["MTU 1500", "MTU 9000"] {
            assert!(fig.contains(m), "{m} missing from a chart");
        }
    }
    screenshot(&browser, dir.path(), &url, "report-study.png", 2400, 50_000);
}

/// A link matrix's report (the fixture: a 4-node ge lab with node3 on fe):
/// loads without errors, names the slow node and the fingerprint field,
/// and draws both heatmaps (one square per directed cell, node3's row and
/// column red in the bandwidth map) with their colour scales, and both
/// distributions with their axes.
#[test]
fn matrix_report_renders_in_a_real_browser() {
    let Some(browser) = chromium_or_skip() else {
        return;
    };
    let (dir, url, dom) = fixture_report_in_browser(&browser, "matrix/lab-fe-node3.json");
    assert!(dom.contains("Link matrix: 4 nodes over tcp"));
    assert!(
        dom.contains("<b>Slow node node3</b>"),
        "slow node not named"
    );
    assert!(dom.contains("interfaces[0].shaped_rate_bits_per_s"));
    // The four lab nodes share one kernel: one machine block, which names
    // them, and the matrix's own entry (issue 49: the section was empty).
    let machines = &dom[dom.find("<section id=\"machines\"").expect("machines")..];
    assert_eq!(machines.matches("<b>Machine M").count(), 1, "one machine");
    assert!(machines.contains("nodes of link matrix 1: node1, node2, node3, node4"));
    assert!(machines.contains("<b>Link matrix 1</b>"));
    let maps: Vec<&str> = dom.split("<figure class=\"heatmap\"").skip(1).collect();
    assert_eq!(maps.len(), 2, "latency and bandwidth heatmaps");
    for m in &maps {
        let m = &m[..m.find("</figure>").unwrap()];
        assert_eq!(
            m.matches("<rect").count(),
            12,
            "one square per directed cell"
        );
    }
    // node3 (index 2) sends slowly: its squares in the bandwidth map are red.
    let bw = &maps[1][..maps[1].find("</figure>").unwrap()];
    let red = bw
        .split("<rect")
        .filter(|r| r.contains("<title>node3 →") && r.contains("fill=\"#ff3737\""))
        .count();
    assert_eq!(red, 3, "node3's row");
    // Each map has its colour scale, with the median and both ends.
    for m in &maps {
        let m = &m[..m.find("</figure>").unwrap()];
        assert!(m.contains("class=\"colour-scale\""), "no colour scale");
        assert!(m.contains("<span>median "), "the scale names the median");
        assert!(m.contains("(2× worse or more)"), "the scale's red end");
    }
    assert_eq!(dom.matches("<figure class=\"histogram\"").count(), 2);
    // Each histogram has its axes: a description in the metric and the
    // count of cells.
    for f in dom.split("<figure class=\"histogram\"").skip(1) {
        let f = &f[..f.find("</figure>").unwrap()];
        assert!(f.contains(">cells</text>"), "no count axis");
        assert!(f.contains(" per cell</text>"), "no value axis");
    }
    screenshot(
        &browser,
        dir.path(),
        &url,
        "report-matrix.png",
        1800,
        20_000,
    );
}
