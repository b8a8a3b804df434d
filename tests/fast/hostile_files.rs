//! `wulf report` and `wulf compare` on result files that are damaged,
//! hand-edited, enormous or not wulf's at all: each is a clear error that
//! names the file and the field, never a panic, a hang or an out-of-memory.
//! And text from a result is always escaped in the HTML report.

use crate::common;
#[path = "hostile_files/limits.rs"]
mod limits;
#[path = "hostile_files/outputs.rs"]
mod outputs;

use std::path::{Path, PathBuf};

use common::*;
use serde_json::{json, Value};

pub(crate) fn fixture() -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tcp-pingpong.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

pub(crate) fn write(dir: &tempfile::TempDir, name: &str, text: &str) -> PathBuf {
    let p = file(dir, name);
    std::fs::write(&p, text).unwrap();
    p
}

/// `wulf report` and `wulf compare` on `bad` both fail cleanly, saying
/// each of `expected` (the file, the field, the reason).
pub(crate) fn refused(bad: &Path, expected: &[&str]) {
    let good = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tcp-pingpong.json");
    let dir = tempdir();
    let out = file(&dir, "r.html");
    let runs = [
        run(&["report", bad.to_str().unwrap(), "-o", out.to_str().unwrap()]),
        run(&["compare", good.to_str().unwrap(), bad.to_str().unwrap()]),
        run(&["compare", bad.to_str().unwrap(), good.to_str().unwrap()]),
    ];
    for o in runs {
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{e}");
        assert!(!e.contains("panicked"), "{e}");
        assert!(
            e.contains(bad.file_name().unwrap().to_str().unwrap()),
            "{e}"
        );
        for x in expected {
            assert!(e.contains(x), "expected {x:?} in: {e}");
        }
    }
    assert!(!out.exists(), "a report was written from a bad file");
}

/// A damaged file's name, how it is damaged, and what the error must say.
type Case = (
    &'static str,
    Box<dyn Fn(&mut Value)>,
    &'static [&'static str],
);

#[test]
fn impossible_values_are_refused_with_the_field_named() {
    let dir = tempdir();
    let cases: Vec<Case> = vec![
        (
            "negative.json",
            Box::new(|v| v["points"][3]["median_ns"] = json!(-5.0)),
            &["points[3].median_ns", "negative"],
        ),
        (
            "huge.json",
            Box::new(|v| v["points"][0]["trials_ns"][1] = json!(1e300)),
            &["points[0].trials_ns[1]", "beyond"],
        ),
        (
            "zero.json",
            Box::new(|v| v["points"][2]["bytes"] = json!(0)),
            &["points[2].bytes"],
        ),
        (
            "order.json",
            Box::new(|v| {
                let p = v["points"][1].clone();
                v["points"][2] = p;
            }),
            &["points[2].bytes", "ascend"],
        ),
        (
            "ci.json",
            Box::new(|v| {
                v["points"][4]["ci_low_ns"] = json!(9e9);
            }),
            &["points[4].ci_low_ns"],
        ),
        (
            // A throughput of bytes over 1e-300 ns is infinite.
            "tiny.json",
            Box::new(|v| v["points"][0]["median_ns"] = json!(1e-300)),
            &["points[0].median_ns", "shorter than any measurement"],
        ),
        (
            "cpu.json",
            Box::new(|v| v["points"][1]["cpu_client"]["ns_per_byte"] = json!(1.7e308)),
            &["points[1].cpu_client.ns_per_byte", "beyond"],
        ),
        (
            "limit.json",
            Box::new(|v| v["points"][1]["limits"]["memcpy_bits_per_s"] = json!(1e300)),
            &["points[1].limits.memcpy_bits_per_s", "beyond"],
        ),
        (
            "type.json",
            Box::new(|v| v["points"][1]["repeats"] = json!("many")),
            &["points[1].repeats", "invalid type"],
        ),
        (
            "negint.json",
            Box::new(|v| v["points"][1]["repeats"] = json!(-1)),
            &["points[1].repeats"],
        ),
        (
            "missing.json",
            Box::new(|v| {
                v["points"][0].as_object_mut().unwrap().remove("median_ns");
            }),
            &["points[0]", "missing field `median_ns`"],
        ),
        (
            "unknown.json",
            Box::new(|v| v["options"]["turbo"] = json!(true)),
            &["options", "unknown field `turbo`"],
        ),
        (
            "version.json",
            Box::new(|v| v["schema_version"] = json!(99)),
            &["schema version 99"],
        ),
        // Issue 45, item 10: fields once accepted unchecked.
        (
            "timer.json",
            Box::new(|v| v["timer_overhead_ns"] = json!(-1e308)),
            &["timer_overhead_ns", "negative"],
        ),
        (
            "trials.json",
            Box::new(|v| v["points"][2]["trials"] = json!(1u64 << 40)),
            &["points[2].trials"],
        ),
        (
            "trials-count.json",
            Box::new(|v| v["points"][2]["trials"] = json!(7)),
            &["points[2].trials is 7, but trials_ns holds"],
        ),
        (
            "repeats.json",
            Box::new(|v| v["points"][1]["repeats"] = json!(u64::MAX)),
            &["points[1].repeats", "beyond"],
        ),
        (
            "floor.json",
            Box::new(|v| v["points"][1]["limits"]["floor_ns"] = json!(1e-300)),
            &["points[1].limits.floor_ns", "shorter than any measurement"],
        ),
        (
            "memcpy.json",
            Box::new(|v| v["points"][1]["limits"]["memcpy_bits_per_s"] = json!(0)),
            &["points[1].limits.memcpy_bits_per_s is 0"],
        ),
    ];
    for (name, mutate, expected) in cases {
        let mut v = fixture();
        mutate(&mut v);
        let p = write(&dir, name, &v.to_string());
        refused(&p, expected);
    }
}

/// An NPB result with an impossible rate is refused with the field named
/// (the rates are drawn on the report's charts).
#[test]
fn impossible_npb_rates_are_refused() {
    let dir = tempdir();
    let good = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/npb-mg-S.json");
    let mut v: Value = serde_json::from_str(&std::fs::read_to_string(good).unwrap()).unwrap();
    v["runs"][0]["best_mop_s"] = json!(1.7e308);
    let bad = write(&dir, "npb-huge.json", &v.to_string());
    let out = file(&dir, "r.html");
    let o = run(&["report", bad.to_str().unwrap(), "-o", out.to_str().unwrap()]);
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{e}");
    assert!(
        e.contains("runs[0].best_mop_s") && e.contains("beyond"),
        "{e}"
    );
    assert!(!out.exists());
}

#[test]
fn malformed_foreign_and_enormous_files_are_refused() {
    let dir = tempdir();
    let text = fixture().to_string();
    // NaN is not JSON.
    let nan = text.replacen("\"median_ns\":", "\"median_ns\":NaN,\"x\":", 1);
    refused(&write(&dir, "nan.json", &nan), &["line 1"]);
    // A duplicated field (an untyped JSON reader would keep the last one).
    let dup = text.replacen("\"median_ns\":", "\"median_ns\":1.0,\"median_ns\":", 1);
    refused(
        &write(&dir, "dup.json", &dup),
        &["duplicate field `median_ns`"],
    );
    // Deep nesting.
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    refused(&write(&dir, "deep.json", &deep), &["recursion limit"]);
    let deep_inside = text.replacen(
        "\"transport\":{",
        &format!(
            "\"transport\":{{\"x\":{}1{},",
            "[".repeat(5000),
            "]".repeat(5000)
        ),
        1,
    );
    refused(
        &write(&dir, "deepin.json", &deep_inside),
        &["recursion limit"],
    );
    // Another tool's JSON, and not JSON at all.
    refused(
        &write(
            &dir,
            "iperf.json",
            r#"{"start":{"version":"iperf 3.16"},"intervals":[]}"#,
        ),
        &["not a wulf result"],
    );
    refused(&write(&dir, "binary.json", "\u{0}\u{1}garbage"), &["JSON"]);
    refused(
        &write(&dir, "trailing.json", &format!("{text} {text}")),
        &["trailing characters"],
    );
    // 1 GiB (sparse: no disk used): refused before it is read.
    let big = file(&dir, "big.json");
    let f = std::fs::File::create(&big).unwrap();
    f.set_len(1 << 30).unwrap();
    refused(&big, &["larger than any wulf result"]);
}

#[test]
fn text_from_results_is_escaped_in_the_html_report() {
    let dir = tempdir();
    let mut v = fixture();
    let evil = "<script>alert('x')</script><img src=x onerror=alert(1)>";
    v["host"]["hostname"] = json!(evil);
    v["warnings"] = json!([format!("warning {evil}")]);
    v["command_line"] = json!(["wulf", evil]);
    let p = write(&dir, "evil.json", &v.to_string());
    let out = file(&dir, "r.html");
    let o = run(&["report", p.to_str().unwrap(), "-o", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let html = std::fs::read_to_string(&out).unwrap();
    assert!(
        !html.contains("<script>alert"),
        "unescaped markup in the report"
    );
    assert!(
        !html.contains("<img src=x"),
        "unescaped markup in the report"
    );
    assert!(
        html.contains("&lt;script&gt;alert") || html.contains("\\u003cscript"),
        "the hostname is missing"
    );
}
