//! `wulf study layers` on this machine (issue 47, item 4), with a short
//! budget: tcp, UCX over it and Open MPI over UCX on the loopback, every
//! row once per round, each with its overhead over the row beneath it, then
//! NAS CG over the same rows.
//! Figures are checked for presence and consistency, never for speed.

use crate::common;
use common::libraries::have_ucx;
use common::*;

// Sweeps and MPI jobs that time things: one test at a time.
use common::serial;

#[test]
fn layers_on_the_loopback_with_each_overhead_over_the_row_beneath() {
    let _s = serial();
    if !have("openmpi") || !have_ucx() {
        return;
    }
    let dir = tempdir();
    let o = run(&[
        "study",
        "layers",
        "--quick",
        "--only",
        "tcp,ucx(tcp),mpi:openmpi(ucx-tcp)",
        "--json",
        "--out",
        dir.path().to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let s: serde_json::Value = serde_json::from_slice(&o.stdout).expect("study.json on stdout");
    assert_eq!(s["study"], "layers");
    let cases = s["cases"].as_array().unwrap();
    // Three rows, three rounds, on the loopback alone (none is on shm).
    assert_eq!(cases.len(), 9, "{cases:?}");
    let over = |t: &str| -> Vec<String> {
        cases
            .iter()
            .filter(|c| c["transport"] == t)
            .map(|c| c["over"].as_str().unwrap_or("-").to_string())
            .collect()
    };
    assert_eq!(over("tcp"), ["-", "-", "-"]);
    assert_eq!(over("ucx(tcp)"), ["tcp", "tcp", "tcp"]);
    assert_eq!(over("mpi:openmpi(ucx-tcp)"), ["ucx(tcp)"; 3]);
    // Rounds interleaved: every row once per round, the bottom first.
    let order: Vec<&str> = cases[..3]
        .iter()
        .map(|c| c["transport"].as_str().unwrap())
        .collect();
    assert_eq!(order, ["tcp", "ucx(tcp)", "mpi:openmpi(ucx-tcp)"]);
    assert!(cases.iter().all(|c| c["link"] == "loopback"));
    for c in cases {
        assert!(c["error"].is_null(), "{c}");
        assert!(c["latency_ns"].as_f64().unwrap() > 0.0, "{c}");
    }
    let table = &s["tables"][0];
    let labels: Vec<&str> = table["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["label"].as_str().unwrap())
        .collect();
    assert_eq!(
        labels,
        [
            "tcp",
            "ucx(tcp) over tcp",
            "mpi:openmpi(ucx-tcp) over ucx(tcp)"
        ]
    );
    // The overhead of each layer over the one beneath, latency and peak,
    // taken in each of the three rounds.
    let ratios = s["ratios"].as_array().unwrap();
    for (num, den) in [("ucx(tcp)", "tcp"), ("mpi:openmpi(ucx-tcp)", "ucx(tcp)")] {
        for figure in ["latency", "peak"] {
            let r = ratios
                .iter()
                .find(|r| r["numerator"] == num && r["denominator"] == den && r["figure"] == figure)
                .unwrap_or_else(|| panic!("no {num} / {den} {figure} in {ratios:?}"));
            assert_eq!(r["per_round"].as_array().unwrap().len(), 3, "{r}");
            assert!(r["low"].as_f64() <= r["median"].as_f64(), "{r}");
            assert!(r["median"].as_f64() <= r["high"].as_f64(), "{r}");
        }
    }
    let text = stderr(&o);
    assert!(text.contains("Layers over loopback"), "{text}");
    // NAS CG over every row of the path, once per round, side by side.
    let nas = s["nas"].as_array().unwrap();
    let labels: Vec<&str> = nas.iter().map(|c| c["label"].as_str().unwrap()).collect();
    assert_eq!(
        labels,
        [
            "nas-cg-loopback-r1",
            "nas-cg-loopback-r2",
            "nas-cg-loopback-r3"
        ]
    );
    for c in nas {
        assert!(c["error"].is_null(), "{c}");
        let vias: Vec<&str> = c["stacks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x["via"].as_str().unwrap())
            .collect();
        assert_eq!(vias, ["tcp", "ucx(tcp)", "mpi:openmpi(ucx-tcp)"], "{c}");
        for x in c["stacks"].as_array().unwrap() {
            assert!(x["mop_s"].as_f64().unwrap() > 0.0, "{c}");
        }
    }
    let table = s["tables"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| {
            t["title"]
                .as_str()
                .unwrap()
                .starts_with("NAS kernels on loopback")
        })
        .unwrap_or_else(|| panic!("no NAS table in {}", s["tables"]));
    assert_eq!(table["rows"][0]["label"], "cg");
    assert_eq!(table["columns"].as_array().unwrap().len(), 4, "{table}");
}
