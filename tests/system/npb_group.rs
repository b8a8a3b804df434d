//! `wulf npb mg` end to end: real rank processes linked by real transports
//! (shm and tcp, and every other transport that links processes), verified
//! against NPB's reference norms; the tables and the NPB result file; and
//! the faults: a rank killed mid-run, Ctrl-C, bad options.
//!
//! No test asserts a speed.

use crate::common;
use common::*;

use std::time::{Duration, Instant};

use wulf::result::{read_npb_result, NpbResult};

fn npb(dir: &tempfile::TempDir, name: &str, args: &[&str]) -> (std::process::Output, NpbResult) {
    let out = file(dir, name);
    let mut all = vec!["npb", "mg"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--json", out.to_str().unwrap()]);
    let o = run(&all);
    assert!(o.status.success(), "wulf {all:?} failed: {}", stderr(&o));
    (o, read_npb_result(&out).unwrap())
}

fn check_verified(r: &NpbResult, vias: &[&str], nps: &[usize], reps: usize) {
    assert!(r.complete);
    assert_eq!(r.runs.len(), vias.len() * nps.len());
    for via in vias {
        for &np in nps {
            let run = r
                .runs
                .iter()
                .find(|x| x.via == *via && x.nprocs == np)
                .unwrap_or_else(|| panic!("no run {via} np={np}"));
            assert!(run.error.is_none(), "{via} np={np}: {:?}", run.error);
            assert_eq!(run.outcomes.len(), reps);
            for o in &run.outcomes {
                assert!(o.verified);
                assert!(
                    o.relative_error <= 1e-8,
                    "{via} np={np}: {}",
                    o.relative_error
                );
                assert_eq!(o.nprocs, np);
                assert_eq!(o.backend, *via);
                assert_eq!(o.proc_grid.iter().product::<usize>(), np);
            }
            let best = run.best_mop_s.unwrap();
            assert!(run.outcomes.iter().all(|o| o.mop_s <= best));
            assert!(run.median_mop_s.unwrap() <= best);
            let speedup = run.speedup.unwrap();
            assert!(speedup > 0.0);
            if np == 1 {
                assert!((speedup - 1.0).abs() < 1e-12);
            }
        }
    }
}

#[test]
fn class_s_verified_on_1_2_4_processes_over_shm_and_tcp() {
    let dir = tempdir();
    let (o, r) = npb(
        &dir,
        "s.json",
        &[
            "--class",
            "S",
            "--np",
            "1,2,4",
            "--via",
            "shm,tcp",
            "--repetitions",
            "2",
        ],
    );
    check_verified(&r, &["shm", "tcp"], &[1, 2, 4], 2);
    assert_eq!(r.kernel, "mg");
    assert_eq!(r.class.to_string(), "S");
    // Ranks spin (and poll their sockets) while each has a CPU, else block.
    let cpus = wulf::sys::cpu_count();
    for run in &r.runs {
        let expected = if run.nprocs <= cpus {
            wulf::transport::WaitMode::Spin
        } else {
            wulf::transport::WaitMode::Block
        };
        assert_eq!(run.wait, Some(expected), "{} np={}", run.via, run.nprocs);
    }
    // 4 ranks on a 2-CPU machine: the result says the CPUs were shared.
    if wulf::sys::cpu_count() < 4 {
        assert!(
            r.warnings.iter().any(|w| w.contains("share CPUs")),
            "{:?}",
            r.warnings
        );
    }
    let text = String::from_utf8_lossy(&o.stdout);
    for needle in [
        "NAS MG class S",
        "total Mop/s",
        "Mop/s per process",
        "speedup",
        "np=4",
        "verified",
    ] {
        assert!(text.contains(needle), "no {needle:?} in:\n{text}");
    }
}

#[test]
fn class_s_over_every_other_transport_that_links_processes() {
    let dir = tempdir();
    let vias: Vec<String> = wulf::plan::npb::available_transports(&Default::default())
        .into_iter()
        .filter(|v| !v.starts_with("mpi:") && v != "shm" && v != "tcp")
        .collect();
    assert!(vias.iter().any(|v| v == "unix"), "{vias:?}");
    let list = vias.join(",");
    let (_, r) = npb(
        &dir,
        "o.json",
        &[
            "--class",
            "S",
            "--np",
            "1,2",
            "--via",
            &list,
            "--repetitions",
            "1",
        ],
    );
    let names: Vec<&str> = vias.iter().map(String::as_str).collect();
    check_verified(&r, &names, &[1, 2], 1);
}

#[test]
fn class_w_verified_on_1_and_2_processes() {
    let dir = tempdir();
    let (_, r) = npb(
        &dir,
        "w.json",
        &[
            "--class",
            "W",
            "--np",
            "1,2",
            "--via",
            "shm,tcp",
            "--repetitions",
            "1",
        ],
    );
    check_verified(&r, &["shm", "tcp"], &[1, 2], 1);
}

#[test]
fn the_result_file_rejects_unknown_fields_and_other_kinds() {
    let dir = tempdir();
    let (_, _) = npb(
        &dir,
        "r.json",
        &["--np", "1", "--via", "unix", "--repetitions", "1"],
    );
    let path = file(&dir, "r.json");
    let mut v = json(&path);
    v["runs"][0]["surprise"] = serde_json::json!(1);
    let bad = file(&dir, "bad.json");
    std::fs::write(&bad, serde_json::to_string(&v).unwrap()).unwrap();
    let e = format!("{:#}", read_npb_result(&bad).unwrap_err());
    assert!(e.contains("surprise"), "{e}");
    // A sweep result is not an NPB result, and says so.
    let sweep =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tcp-pingpong.json");
    let e = format!("{:#}", read_npb_result(&sweep).unwrap_err());
    assert!(e.contains("not a wulf NPB result"), "{e}");
}

#[test]
fn bad_options_are_usage_errors() {
    for (args, needle) in [
        (vec!["--np", "3"], "power-of-two"),
        (vec!["--class", "Q"], "unknown NPB class"),
        (vec!["--via", "nosuch"], "unknown transport"),
        (vec!["--via", "memcpy"], "baseline"),
        (vec!["--repetitions", "0"], "0"),
    ] {
        let mut all = vec!["npb", "mg"];
        all.extend_from_slice(&args);
        let o = run(&all);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(needle), "{args:?}: {}", stderr(&o));
    }
}

/// `wulf npb mg ARGS` in the background, its stderr kept for the checks.
fn spawn_npb_mg(args: &[&str]) -> std::process::Child {
    let mut all = vec!["npb", "mg"];
    all.extend_from_slice(args);
    wulf(&all)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap()
}

#[test]
fn a_rank_killed_mid_run_is_an_error_naming_it_and_no_rank_survives() {
    let dir = tempdir();
    let out = file(&dir, "k.json");
    let child = spawn_npb_mg(&[
        "--class",
        "W",
        "--np",
        "2",
        "--via",
        "tcp",
        "--repetitions",
        "100",
        "--timeout",
        "10s",
        "--json",
        out.to_str().unwrap(),
    ]);
    let ranks = wait_for_ranks(&child, 2);
    std::thread::sleep(Duration::from_millis(300));
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(ranks[1]),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    let started = Instant::now();
    let o = child.wait_with_output().unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "took {:?}",
        started.elapsed()
    );
    assert!(!o.status.success());
    let err = stderr(&o);
    assert!(err.contains("rank"), "{err}");
    // The failed run is recorded with its error.
    let r = read_npb_result(&out).unwrap();
    assert!(r.runs[0].error.is_some());
    for pid in ranks {
        assert!(gone(pid), "rank process {pid} survived");
    }
}

#[test]
fn ctrl_c_saves_the_runs_done_marked_incomplete() {
    let dir = tempdir();
    let out = file(&dir, "i.json");
    let child = spawn_npb_mg(&[
        "--class",
        "S",
        "--np",
        "1,2",
        "--via",
        "unix,tcp",
        "--repetitions",
        "100",
        "--json",
        out.to_str().unwrap(),
    ]);
    // Wait until the first combination is done and a later one runs.
    wait_for_ranks(&child, 2);
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(130), "{}", stderr(&o));
    let r = read_npb_result(&out).unwrap();
    assert!(!r.complete);
    assert!(r.incomplete_reason.is_some());
    assert!(
        !r.runs.is_empty(),
        "the finished one-process run was not saved"
    );
    assert!(r.runs.iter().all(|x| x.error.is_none()));
}

#[test]
fn wulf_run_includes_every_nas_kernel_class_s_unless_told_not_to() {
    let dir = tempdir();
    let out = dir.path().to_str().unwrap();
    let quick = ["--budget", "300ms", "--sizes", "1:4Ki", "--quiet"];
    let mut args = vec!["run", "--only", "unix,shm", "--out", out];
    args.extend_from_slice(&quick);
    let o = run(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("NAS MG class S"));
    let results: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(results.len(), 1);
    let r = read_npb_result(&results[0].join("npb-mg-S.json")).unwrap();
    check_verified(&r, &["unix", "shm"], &[1, 2], 3);
    // The other kernels follow MG, with fewer repetitions to keep the run
    // short.
    for (kernel, reps) in [("cg", 2), ("ep", 1), ("is", 2)] {
        let r = read_npb_result(&results[0].join(format!("npb-{kernel}-S.json"))).unwrap();
        assert_eq!(r.kernel, kernel);
        check_verified(&r, &["unix", "shm"], &[1, 2], reps);
    }

    let dir = tempdir();
    let out = dir.path().to_str().unwrap();
    let mut args = vec!["run", "--only", "unix", "--no-npb", "--out", out];
    args.extend_from_slice(&quick);
    let o = run(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    let results: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert!(!results[0].join("npb-mg-S.json").exists());
    assert!(!results[0].join("npb-cg-S.json").exists());
}
