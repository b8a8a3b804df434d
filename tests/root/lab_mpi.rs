//! MPI, NAS MG, `wulf tune` and `wulf run` between the nodes of a real
//! temporary lab (`--lab`): network namespaces, shaped veth links, the MPI
//! libraries' own launchers reaching node2 through `wulf lab rsh`.
//!
//! Needs root (namespaces) and iproute2 and ethtool: without them every
//! test here skips with a message. A missing MPI skips its part, unless
//! WULF_REQUIRE_MPI=1, where it fails. Speeds are never asserted; the one
//! bound checked is a correctness bound: a 64 KiB message cannot cross a
//! 100 Mbit/s link faster than 100 Mbit/s, which shared memory between the
//! namespaces would. After each command the test checks that its lab
//! (`t<pid>` of the wulf it ran) left no namespace and no state behind.

use crate::common;
use common::{have, libraries, wulf};

use std::path::Path;
use std::process::{Child, Output, Stdio};

use serde_json::Value;

// Labs and spinning MPI ranks on two CPUs: one test at a time.
use common::serial;

/// A wulf command whose temporary lab is `t<pid>`: removed by the guard
/// if the command left it (so a failing test never leaves one), checked
/// by [`LabRun::finish`].
struct LabRun {
    child: Option<Child>,
    lab: String,
}

impl LabRun {
    fn start(args: &[&str]) -> LabRun {
        eprintln!("wulf {}", args.join(" "));
        let child = wulf(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start wulf");
        let lab = format!("t{}", child.id());
        LabRun {
            child: Some(child),
            lab,
        }
    }

    /// Wait for the command, require success, check the lab is gone.
    fn finish(mut self) -> (Output, String) {
        let out = self.child.take().unwrap().wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        eprint!("{err}");
        assert!(out.status.success(), "wulf failed ({}):\n{err}", out.status);
        let left = leftovers(&self.lab);
        assert!(left.is_empty(), "lab {} left behind: {left:?}", self.lab);
        (out, self.lab.clone())
    }
}

impl Drop for LabRun {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
        if !leftovers(&self.lab).is_empty() {
            let _ = wulf(&["lab", "down", "--name", &self.lab]).output();
        }
    }
}

/// Namespaces and state of lab `name` that still exist.
fn leftovers(name: &str) -> Vec<String> {
    let list = std::process::Command::new("ip")
        .args(["netns", "list"])
        .output()
        .expect("ip netns list");
    let prefix = format!("wlab-{name}-");
    let mut left: Vec<String> = String::from_utf8_lossy(&list.stdout)
        .lines()
        .filter(|l| l.starts_with(&prefix))
        .map(str::to_string)
        .collect();
    let dir = Path::new("/run/wulf/lab").join(name);
    if dir.exists() {
        left.push(dir.display().to_string());
    }
    left
}

fn json_of(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}): {}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}

/// The placement of a sweep result in lab `lab`, node1 measuring against
/// node2, both on links of `rate` bit/s.
fn check_placement(r: &Value, lab: &str, rate: u64) {
    let p = &r["placement"];
    assert_eq!(p["client_host"], "node1", "{p}");
    assert_eq!(p["server_host"], "node2", "{p}");
    assert_eq!(p["lab"]["name"], lab, "{p}");
    assert_eq!(p["lab"]["client_node"], "node1", "{p}");
    assert_eq!(p["lab"]["server_node"], "node2", "{p}");
    let links = p["lab"]["links"].as_array().expect("links");
    assert_eq!(links.len(), 2, "{p}");
    assert!(links.iter().all(|l| l["rate_bits_per_s"] == rate), "{p}");
}

/// The 64 KiB point crossed a 100 Mbit/s link: below its rate.
fn check_below_fe(r: &Value) {
    let p = r["points"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["bytes"] == 65536)
        .expect("a 64 KiB point");
    let bits = p["bits_per_s"].as_f64().unwrap();
    assert!(
        bits < 100e6,
        "64 KiB at {bits} bit/s: faster than the fe link, so not over it"
    );
}

#[test]
fn mpi_sweeps_cross_the_lab_link() {
    let _s = serial();
    if !common::labs_possible() {
        return;
    }
    for lib in libraries() {
        let transport = format!("mpi:{lib}(tcp)");
        let args = [
            "sweep",
            &transport,
            "--lab",
            "fe",
            "--sizes",
            "1,64Ki",
            "--budget",
            "1s",
            "--integrity",
            "--json",
            "-",
        ];
        let (r, lab) = common::with_room(&args, |args| {
            let (out, lab) = LabRun::start(args).finish();
            let r = json_of(&out);
            let short = common::left_sizes_out(&r);
            ((r, lab), short)
        });
        assert_eq!(r["transport"], transport.as_str());
        assert_eq!(r["complete"], true);
        check_placement(&r, &lab, 100_000_000);
        check_below_fe(&r);
        assert_eq!(
            r["mpi"]["processors"],
            serde_json::json!(["node1", "node2"])
        );
        let cmd = r["mpi"]["launcher_command"].to_string();
        assert!(cmd.contains("node1,node2"), "{cmd}");
    }
}

#[test]
fn tcp_sweep_records_the_lab() {
    let _s = serial();
    if !common::labs_possible() {
        return;
    }
    let (out, lab) = LabRun::start(&[
        "sweep", "tcp", "--lab", "fe", "--sizes", "1,64Ki", "--budget", "1s", "--json", "-",
    ])
    .finish();
    let r = json_of(&out);
    check_placement(&r, &lab, 100_000_000);
    check_below_fe(&r);
}

#[test]
fn npb_mg_runs_one_rank_per_node() {
    let _s = serial();
    if !common::labs_possible() {
        return;
    }
    let mut via = vec!["tcp"];
    if have("openmpi") {
        via.push("mpi:openmpi");
    }
    // shm cannot cross nodes: skipped with a note, not an error.
    let list = format!("{},shm", via.join(","));
    let (out, lab) = LabRun::start(&[
        "npb", "mg", "--lab", "fe", "--np", "2", "--via", &list, "--class", "S", "--json", "-",
    ])
    .finish();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("cannot cross from node to node): shm"),
        "{err}"
    );
    let r = json_of(&out);
    let runs = r["runs"].as_array().unwrap();
    assert_eq!(runs.len(), via.len(), "{runs:?}");
    for (run, name) in runs.iter().zip(&via) {
        assert_eq!(run["via"], *name);
        assert!(run["error"].is_null(), "{run}");
        let outcomes = run["outcomes"].as_array().unwrap();
        assert!(!outcomes.is_empty());
        assert!(outcomes.iter().all(|o| o["verified"] == true), "{run}");
    }
    assert_eq!(r["lab"]["name"], lab.as_str());
    assert_eq!(r["lab"]["links"].as_array().unwrap().len(), 2);
}

#[test]
fn tune_tcp_between_lab_nodes() {
    let _s = serial();
    if !common::labs_possible() {
        return;
    }
    let dir = common::tempdir();
    let out_dir = dir.path().to_str().unwrap();
    let (out, lab) = LabRun::start(&[
        "tune", "tcp", "--lab", "ge", "--budget", "4s", "--sizes", "1,64Ki", "--quiet", "--json",
        "--out", out_dir,
    ])
    .finish();
    let summary = json_of(&out);
    assert!(
        !summary["configurations"].as_array().unwrap().is_empty(),
        "{summary}"
    );
    // Each configuration is an ordinary result, placed in the lab.
    let session = std::fs::read_dir(dir.path())
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let mut results = 0;
    for e in std::fs::read_dir(&session).unwrap() {
        let path = e.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if name.starts_with("tcp-pingpong-") && name.ends_with(".json") {
            check_placement(&common::json(&path), &lab, 1_000_000_000);
            results += 1;
        }
    }
    assert!(results > 0, "no result files in {}", session.display());
}

#[test]
fn run_measures_what_crosses_the_lab() {
    let _s = serial();
    if !common::labs_possible() || !have("openmpi") {
        return;
    }
    let args = [
        "run",
        "--lab",
        "fe",
        "--only",
        "tcp,mpi:openmpi,mpi:openmpi(tcp),shm",
        "--sizes",
        "1,64Ki",
        "--budget",
        "2s",
        "--quiet",
        "--out",
    ];
    let (out, lab, dir) = common::with_room(&args, |args| {
        let dir = common::tempdir();
        let mut args = args.to_vec();
        args.push(dir.path().to_str().unwrap());
        let (out, lab) = LabRun::start(&args).finish();
        let short = std::fs::read_dir(dir.path())
            .unwrap()
            .flatten()
            .flat_map(|run| std::fs::read_dir(run.path()).unwrap().flatten())
            .filter(|f| f.file_name().to_string_lossy().ends_with("pingpong.json"))
            .any(|f| common::left_sizes_out(&common::json(&f.path())));
        ((out, lab, dir), short)
    });
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("cannot cross from node to node): shm"),
        "{err}"
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("tcp pingpong"), "{text}");
    let results = std::fs::read_dir(dir.path())
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let mut files: Vec<String> = std::fs::read_dir(&results)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    files.sort();
    // mpi:openmpi repeats mpi:openmpi(tcp) between nodes: measured once.
    assert_eq!(
        files,
        [
            "mpi:openmpi(tcp)-pingpong.json",
            "npb-cg-S.json",
            "npb-ep-S.json",
            "npb-is-S.json",
            "npb-mg-S.json",
            "points.csv",
            "report.html",
            "tcp-pingpong.json"
        ],
        "{text}"
    );
    for f in ["tcp-pingpong.json", "mpi:openmpi(tcp)-pingpong.json"] {
        let r = common::json(&results.join(f));
        check_placement(&r, &lab, 100_000_000);
        check_below_fe(&r);
    }
    let npb = common::json(&results.join("npb-mg-S.json"));
    assert_eq!(npb["lab"]["name"], lab.as_str());
    assert!(
        npb["runs"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["error"].is_null()),
        "{npb}"
    );
}
