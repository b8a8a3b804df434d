//! `wulf collective` with the real binary: every operation over wulf's own
//! process group (shm) and over each MPI on 2 processes, results read with
//! the typed schema, bad options refused with exit 2, the schema strict
//! (unknown fields and other versions rejected), the report drawing the
//! result, and a rank killed mid-run saved as an incomplete result.
//!
//! An MPI that is not installed skips its test with a message, unless
//! WULF_REQUIRE_MPI=1 (CI), where it fails. No test asserts a speed: the
//! machine has two shared vCPUs. Budgets are a few hundred milliseconds.

use crate::common;
use common::*;

use std::process::Stdio;
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use wulf::result::collective::{read_collective_result, CollectiveResult};

// Ranks spin or busy-poll: two runs at once on two CPUs would starve
// each other, so the tests of this file run one at a time.
use common::serial;

/// Every operation and the sizes the tests measure (barrier: none).
const OPERATIONS: [(&str, &[u64]); 4] = [
    ("allreduce", &[8, 4096]),
    ("alltoall", &[1, 4096]),
    ("bcast", &[3, 65536]),
    ("barrier", &[0]),
];

/// `wulf collective OP` with quick options and `extra`; the typed result.
fn collective(op: &str, sizes: &[u64], extra: &[&str]) -> CollectiveResult {
    let dir = tempdir();
    let out = file(&dir, "r.json");
    let list = sizes
        .iter()
        .map(u64::to_string)
        .collect::<Vec<_>>()
        .join(",");
    let mut args = vec![
        "collective",
        op,
        "--np",
        "2",
        "--budget",
        "300ms",
        "--timeout",
        "10s",
        "--json",
        out.to_str().unwrap(),
    ];
    if op != "barrier" {
        args.extend(["--sizes", &list]);
    }
    args.extend_from_slice(extra);
    let o = run(&args);
    assert!(o.status.success(), "wulf {args:?} failed: {}", stderr(&o));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("time per operation"), "{text}");
    read_collective_result(&out).unwrap_or_else(|e| panic!("{op}: {e:#}"))
}

/// The common shape of a successful run of `op` over `via`.
fn check_run(r: &CollectiveResult, op: &str, via: &str, sizes: &[u64]) {
    assert!(r.complete, "{op} over {via}: {:?}", r.incomplete_reason);
    assert_eq!((r.collective.as_str(), r.nprocs), (op, 2));
    assert_eq!(r.runs.len(), 1);
    let run = &r.runs[0];
    assert_eq!(run.via, via);
    assert!(run.error.is_none(), "{op} over {via}: {:?}", run.error);
    let got: Vec<u64> = run.points.iter().map(|p| p.bytes).collect();
    assert_eq!(got, sizes, "{op} over {via}");
    for p in &run.points {
        assert!(
            p.trials_ns.len() >= 6,
            "{op} {via}: {} trials",
            p.trials_ns.len()
        );
        assert!(p.repeats >= 1 && p.median_ns > 0.0);
        assert!(p.ci_low_ns <= p.median_ns && p.median_ns <= p.ci_high_ns);
        // The slowest rank's time is at least the ranks' average, which is
        // at least the fastest rank's (medians of trials: allow rounding).
        assert!(p.ranks_min_median_ns <= p.ranks_avg_median_ns * 1.000_001);
        assert!(p.ranks_avg_median_ns <= p.median_ns * 1.000_001);
    }
}

#[test]
fn every_operation_over_wulfs_own_group() {
    let _s = serial();
    for (op, sizes) in OPERATIONS {
        // Blocking waits: spinning ranks on a loaded 2-CPU machine take
        // scheduler ticks per message, and this test is about shape.
        let r = collective(op, sizes, &["--via", "shm", "--wait", "block"]);
        check_run(&r, op, "shm", sizes);
        let run = &r.runs[0];
        assert!(run.algorithm.starts_with("plain"), "{}", run.algorithm);
        assert!(run.mpi.is_none());
        assert_eq!(run.wait, Some(wulf::transport::WaitMode::Block));
    }
}

#[test]
fn every_operation_over_each_mpi() {
    let _s = serial();
    for lib in libraries() {
        let via = format!("mpi:{lib}");
        for (op, sizes) in OPERATIONS {
            let r = collective(op, sizes, &["--via", &via]);
            check_run(&r, op, &via, sizes);
            let run = &r.runs[0];
            assert!(run.algorithm.starts_with("MPI_"), "{}", run.algorithm);
            let mpi = run.mpi.as_ref().expect("the library is recorded");
            assert_eq!(mpi.implementation, lib);
            assert!(mpi.launcher_command.iter().any(|a| a == "2"), "{mpi:?}");
        }
    }
}

#[test]
fn bad_options_exit_2_before_anything_runs() {
    let cases: [&[&str]; 7] = [
        &["collective", "allreduce", "--np", "1"],
        &["collective", "allreduce", "--sizes", "12", "--via", "shm"],
        &["collective", "barrier", "--sizes", "8", "--via", "shm"],
        &["collective", "bcast", "--sizes", "64:8", "--via", "shm"],
        &["collective", "bcast", "--via", "nosuch"],
        &["collective", "bcast", "--via", "memcpy"],
        &["collective", "gather"],
    ];
    for args in cases {
        let started = Instant::now();
        let o = run(args);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        assert!(started.elapsed() < Duration::from_secs(10), "{args:?}");
    }
    let o = run(&["collective", "allreduce", "--sizes", "12", "--via", "shm"]);
    assert!(stderr(&o).contains("multiple of 8"), "{}", stderr(&o));
}

/// A run's file, then the same file with a field added at `pointer` or
/// its version changed: every one is refused, naming the problem.
#[test]
fn the_schema_rejects_unknown_fields_and_other_versions() {
    let _s = serial();
    let r = collective("allreduce", &[8], &["--via", "shm", "--wait", "block"]);
    let dir = tempdir();
    let path = file(&dir, "r.json");
    let value = serde_json::to_value(&r).unwrap();
    std::fs::write(&path, serde_json::to_vec(&value).unwrap()).unwrap();
    let back = read_collective_result(&path).expect("round trip");
    assert_eq!(back, r);
    for pointer in ["", "/runs/0", "/runs/0/points/0"] {
        let mut v = value.clone();
        v.pointer_mut(pointer)
            .unwrap()
            .as_object_mut()
            .unwrap()
            .insert("surprise".into(), 1.into());
        std::fs::write(&path, serde_json::to_vec(&v).unwrap()).unwrap();
        let e = format!("{:#}", read_collective_result(&path).unwrap_err());
        assert!(e.contains("surprise"), "{pointer:?}: {e}");
    }
    // Version 1 files (before `nodes` and `placement`) still read.
    let mut v = value.clone();
    v["schema_version"] = 1.into();
    std::fs::write(&path, serde_json::to_vec(&v).unwrap()).unwrap();
    assert_eq!(read_collective_result(&path).unwrap().schema_version, 1);
    let mut v = value.clone();
    v["schema_version"] = 99.into();
    std::fs::write(&path, serde_json::to_vec(&v).unwrap()).unwrap();
    let e = format!("{:#}", read_collective_result(&path).unwrap_err());
    assert!(e.contains("version"), "{e}");
    let mut v = value;
    v["runs"][0]["points"][0]["median_ns"] = (-1.0).into();
    std::fs::write(&path, serde_json::to_vec(&v).unwrap()).unwrap();
    assert!(read_collective_result(&path).is_err());
}

#[test]
fn the_report_draws_a_chart_per_collective_and_escapes_text() {
    let _s = serial();
    let mut r = collective(
        "bcast",
        &[1, 1024, 65536],
        &["--via", "shm,tcp", "--wait", "block"],
    );
    assert_eq!(r.runs.len(), 2);
    r.warnings.push("<script>alert(1)</script>".into());
    let dir = tempdir();
    let path = file(&dir, "coll.json");
    std::fs::write(&path, serde_json::to_vec(&r).unwrap()).unwrap();
    let html = file(&dir, "r.html");
    let o = run(&[
        "report",
        path.to_str().unwrap(),
        "-o",
        html.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("Collective: bcast on 2 processes"));
    assert!(page.contains("<svg"), "a chart");
    assert!(
        page.contains(">shm<") && page.contains(">tcp<"),
        "both series"
    );
    assert!(!page.contains("<script>alert"), "unescaped text");
    assert!(page.contains("&lt;script&gt;alert"));
    let o = run(&["report", path.to_str().unwrap(), "--format", "markdown"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("bcast time per operation"));
    let o = run(&["report", path.to_str().unwrap(), "--format", "csv"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
}

/// Rank 1 of the first backend killed mid-run: that backend is recorded
/// with an error naming the rank, the next backend still runs, the file is
/// saved marked incomplete, wulf exits 3, and no rank survives.
#[test]
fn a_rank_killed_mid_run_is_named_and_the_rest_is_saved() {
    let _s = serial();
    let dir = tempdir();
    let out = file(&dir, "r.json");
    let child = wulf(&[
        "collective",
        "allreduce",
        "--via",
        "shm,tcp",
        "--sizes",
        "8,64",
        "--budget",
        "2s",
        "--timeout",
        "3s",
        "--wait",
        "block",
        "--json",
        out.to_str().unwrap(),
    ])
    .stdout(Stdio::null())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    // A rank that ended before the kill (its backend finished) is passed
    // over and the ranks looked for again.
    let started = std::time::Instant::now();
    let ranks = loop {
        let ranks = wait_for_ranks(&child, 2);
        std::thread::sleep(Duration::from_millis(300));
        match kill(Pid::from_raw(ranks[1]), Signal::SIGKILL) {
            Ok(()) => break ranks,
            Err(nix::errno::Errno::ESRCH) if started.elapsed() < Duration::from_secs(20) => {}
            Err(e) => panic!("killing rank {}: {e}", ranks[1]),
        }
    };
    let o = child.wait_with_output().unwrap();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(3), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    let r = read_collective_result(&out).unwrap();
    assert!(!r.complete);
    assert!(r.incomplete_reason.is_some());
    // The rank killed is the shm backend's, or on a busy machine where
    // shm ended first (its ranks then gone: ESRCH above) the tcp one's:
    // exactly one backend names the dead rank, the other keeps its points.
    let (killed, kept): (Vec<_>, Vec<_>) = r.runs.iter().partition(|run| run.error.is_some());
    assert_eq!(killed.len(), 1, "one backend lost a rank: {:?}", r.runs);
    let why = killed[0].error.as_deref().unwrap();
    assert!(why.contains("rank"), "{why}");
    assert_eq!(kept.len(), 1);
    assert_eq!(kept[0].points.len(), 2);
    for pid in ranks {
        assert!(gone(pid), "rank process {pid} survived");
    }
}

/// `wulf collective --launch ssh --hosts node1,node2` run in node1 of a
/// 2-node lab with an sshd in each node: wulf's own ranks started by ssh,
/// each MPI's by its launcher through the same ssh, every rank on its
/// node (the host name it saw is the node's), the placement recorded.
#[test]
fn ranks_cross_lab_nodes_started_by_ssh() {
    let _s = serial();
    let Some(lab) = common::ssh::SshLab::up("k", 2) else {
        return;
    };
    let nodes = ["node1", "node2"];
    let via = common::ssh::tcp_and_every_mpi();
    let dir = tempdir();
    let out = file(&dir, "c.json");
    let o = lab
        .wulf_in_node1(&["collective", "allreduce"], "node1,node2")
        .args(["--np", "2", "--via", &via.join(","), "--sizes", "8,65536"])
        .args(["--budget", "500ms", "--timeout", "20s", "--json"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let r = read_collective_result(&out).unwrap();
    assert!(r.complete, "{:?}", r.incomplete_reason);
    let n = r.nodes.as_ref().expect("the node list is recorded");
    assert_eq!(n.launch, "ssh");
    let names: Vec<&str> = n.hosts.iter().map(|h| h.name.as_str()).collect();
    assert_eq!(names, nodes);
    assert_eq!(r.runs.len(), via.len());
    for (run, name) in r.runs.iter().zip(&via) {
        check_run(
            &CollectiveResult {
                runs: vec![run.clone()],
                ..r.clone()
            },
            "allreduce",
            name,
            &[8, 65536],
        );
        let p = run.placement.as_ref().expect("placement recorded");
        let placed: Vec<(&str, &str)> = p
            .iter()
            .map(|x| (x.node.as_str(), x.hostname.as_str()))
            .collect();
        assert_eq!(placed, [("node1", "node1"), ("node2", "node2")], "{name}");
    }
}
