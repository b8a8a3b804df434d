//! OpenMetrics output (`wulf report --format openmetrics`, `--openmetrics
//! FILE` on `wulf sweep`) read back by the Prometheus project's own
//! parsers (prometheus-client, Python, in the venv of scripts/test-venv):
//! the strict OpenMetrics one and the text-format one node_exporter's
//! textfile collector uses. Skipped without the venv unless
//! WULF_REQUIRE_PYTHON=1 (scripts/test).

use crate::common;
use common::*;

use crate::python;

use std::path::Path;
use std::process::Command;

use serde_json::Value;

fn fixture(name: &str) -> String {
    format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"))
}

/// The families of the OpenMetrics file at `path`, as the parsers read it;
/// fails when either parser refuses it.
fn parse(venv: &Path, path: &Path) -> Value {
    let script = format!(
        "{}/tests/support/openmetrics_to_json.py",
        env!("CARGO_MANIFEST_DIR")
    );
    let out = Command::new(venv.join("bin/python"))
        .arg(script)
        .arg(path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "the parser refused {}: {}\n{}",
        path.display(),
        stderr(&out),
        std::fs::read_to_string(path).unwrap_or_default()
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The samples of family `name`.
fn samples<'a>(parsed: &'a Value, name: &str) -> &'a Vec<Value> {
    parsed["families"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == name)
        .unwrap_or_else(|| panic!("no family {name} in {parsed}"))["samples"]
        .as_array()
        .unwrap()
}

#[test]
fn report_of_sweeps_and_a_matrix_parses() {
    let Some(venv) = python::venv() else { return };
    let dir = tempdir();
    let out = file(&dir, "wulf.prom");
    let r = run(&[
        "report",
        &fixture("tcp-pingpong.json"),
        &fixture("unix-pingpong.json"),
        &fixture("matrix/lab-fe-node3.json"),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(r.status.success(), "{}", stderr(&r));
    // Written atomically: the file and nothing else (no temporary left).
    let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert_eq!(names.len(), 1, "{names:?}");

    let parsed = parse(&venv, &out);
    // OpenMetrics names a family without its unit suffix's sample name.
    let latency = samples(&parsed, "wulf_latency_seconds");
    assert_eq!(latency.len(), 2, "{latency:?}");
    let tcp = json(Path::new(&fixture("tcp-pingpong.json")));
    let expected = tcp["summary"]["latency_ns"].as_f64().unwrap() / 1e9;
    let sample = latency
        .iter()
        .find(|s| s["labels"]["transport"] == "tcp")
        .unwrap();
    assert!((sample["value"].as_f64().unwrap() - expected).abs() < 1e-15);
    for label in ["host", "peer", "transport", "mode"] {
        assert!(sample["labels"][label].is_string(), "{label}: {sample}");
    }
    assert_eq!(sample["labels"]["mode"], "pingpong");
    for family in [
        "wulf_peak_throughput_bytes_per_second",
        "wulf_peak_message_bytes",
        "wulf_n_half_bytes",
        "wulf_noisy_points",
        "wulf_cpu_per_byte_seconds",
        "wulf_cpu_per_message_seconds",
    ] {
        assert_eq!(samples(&parsed, family).len(), 2, "{family}");
    }
    let matrix = json(Path::new(&fixture("matrix/lab-fe-node3.json")));
    // The matrix too is complete or not, and has a start time: the
    // staleness alert covers it.
    for family in ["wulf_complete", "wulf_measurement_start_seconds"] {
        let all = samples(&parsed, family);
        assert_eq!(all.len(), 3, "{family}: {all:?}");
        let m = all
            .iter()
            .find(|s| s["labels"]["mode"] == "matrix")
            .unwrap();
        assert_eq!(m["labels"]["transport"], matrix["via"]);
    }
    let m = samples(&parsed, "wulf_complete")
        .iter()
        .find(|s| s["labels"]["mode"] == "matrix")
        .unwrap()
        .clone();
    let want = if matrix["complete"] == true { 1.0 } else { 0.0 };
    assert_eq!(m["value"], want);
    let info = samples(&parsed, "wulf_build_info");
    assert_eq!(info.len(), 1);
    assert_eq!(info[0]["labels"]["version"], env!("CARGO_PKG_VERSION"));
    assert!(info[0]["labels"]["schema"]
        .as_str()
        .is_some_and(|s| s.parse::<u32>().is_ok()));
    let cells = matrix["cells"].as_array().unwrap().len();
    assert_eq!(samples(&parsed, "wulf_link_latency_seconds").len(), cells);
    assert_eq!(
        samples(&parsed, "wulf_link_throughput_bytes_per_second").len(),
        cells
    );
    assert!(parsed["prometheus_samples"].as_u64().unwrap() > 2 * cells as u64);
}

#[test]
fn sweep_writes_openmetrics_that_parse() {
    let Some(venv) = python::venv() else { return };
    let dir = tempdir();
    let out = file(&dir, "sweep.prom");
    let mut args = vec!["sweep", "unix", "--sizes", "1,4Ki", "--no-perturb"];
    // Both sizes are counted: room for them (the budget is a deadline).
    args.extend_from_slice(EVERY_SIZE);
    args.extend(["--openmetrics", out.to_str().unwrap()]);
    let r = run(&args);
    assert!(r.status.success(), "{}", stderr(&r));
    let parsed = parse(&venv, &out);
    let latency = samples(&parsed, "wulf_latency_seconds");
    assert_eq!(latency.len(), 1);
    assert_eq!(latency[0]["labels"]["transport"], "unix");
    assert!(latency[0]["value"].as_f64().unwrap() > 0.0);
    assert_eq!(samples(&parsed, "wulf_points")[0]["value"], 2.0);
    assert_eq!(samples(&parsed, "wulf_complete")[0]["value"], 1.0);
}

#[test]
fn run_and_matrix_write_openmetrics_that_parse() {
    let Some(venv) = python::venv() else { return };
    let dir = tempdir();
    let (run_prom, matrix_prom) = (file(&dir, "run.prom"), file(&dir, "matrix.prom"));
    let mut args = vec!["run", "--only", "unix", "--no-npb", "--sizes", "1,4Ki"];
    args.extend(["--budget", "300ms", "--quiet", "--no-perturb"]);
    args.extend(["--out", dir.path().to_str().unwrap()]);
    args.extend(["--openmetrics", run_prom.to_str().unwrap()]);
    let r = run(&args);
    assert!(r.status.success(), "{}", stderr(&r));
    let parsed = parse(&venv, &run_prom);
    assert_eq!(samples(&parsed, "wulf_latency_seconds").len(), 1);

    let json_out = file(&dir, "matrix.json");
    let r = run(&[
        "matrix",
        "--launch",
        "local",
        "--hosts",
        "n[1-2]",
        "--budget",
        "1s",
        "--quiet",
        "--json",
        json_out.to_str().unwrap(),
        "--openmetrics",
        matrix_prom.to_str().unwrap(),
    ]);
    assert!(r.status.success(), "{}", stderr(&r));
    let parsed = parse(&venv, &matrix_prom);
    let cells = samples(&parsed, "wulf_link_latency_seconds");
    assert_eq!(cells.len(), 2, "{cells:?}");
    assert!(cells
        .iter()
        .any(|c| c["labels"]["host"] == "n1" && c["labels"]["peer"] == "n2"));
    assert!(samples(&parsed, "wulf_link_failed")
        .iter()
        .all(|c| c["value"] == 0.0));
    // Written while measuring, it says the matrix is complete, and when.
    let complete = samples(&parsed, "wulf_complete");
    assert_eq!(complete.len(), 1, "{complete:?}");
    assert_eq!(complete[0]["labels"]["mode"], "matrix");
    assert_eq!(complete[0]["value"], 1.0);
    let start = samples(&parsed, "wulf_measurement_start_seconds")[0]["value"]
        .as_f64()
        .unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    assert!(start <= now && start > now - 600.0, "{start} vs {now}");
}

#[test]
fn npb_results_are_refused_by_name() {
    let r = run(&[
        "report",
        "--format",
        "openmetrics",
        &fixture("tcp-pingpong.json"),
        &fixture("npb-mg-S.json"),
    ]);
    assert_eq!(r.status.code(), Some(2), "{}", stderr(&r));
    assert!(stderr(&r).contains("npb-mg-S.json"), "{}", stderr(&r));
}
