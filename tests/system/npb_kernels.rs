//! `wulf npb ep|is|cg` end to end: the real binary starting real rank
//! processes over shm and tcp (and each installed MPI), every run verified
//! against NPB's references; process counts a kernel cannot use refused
//! with exit 2 before anything starts; a corrupted IS exchange reported as
//! a failure, never as a speed.
//!
//! No test asserts a speed. MPI libraries that are not installed are
//! skipped, unless WULF_REQUIRE_MPI=1 (CI), where that fails.

use crate::common;
use common::*;

use wulf::result::{read_npb_result, NpbResult};

// Ranks spin while each has a CPU: two runs at once on a 2-CPU machine
// would starve each other, so the runs of this file take turns.
use common::serial;

/// `wulf npb KERNEL --class CLASS --np NPS --via VIAS`, which must succeed;
/// its result file.
pub(crate) fn npb(kernel: &str, class: &str, nps: &str, vias: &str) -> NpbResult {
    let dir = tempdir();
    let out = file(&dir, "r.json");
    let args = [
        "npb",
        kernel,
        "--class",
        class,
        "--np",
        nps,
        "--via",
        vias,
        "--repetitions",
        "1",
        "--json",
        out.to_str().unwrap(),
    ];
    let o = run(&args);
    assert!(o.status.success(), "wulf {args:?} failed: {}", stderr(&o));
    let text = String::from_utf8_lossy(&o.stdout);
    let heading = format!("NAS {} class {class}", kernel.to_uppercase());
    for needle in [heading.as_str(), "total Mop/s", "speedup", "verified"] {
        assert!(text.contains(needle), "no {needle:?} in:\n{text}");
    }
    read_npb_result(&out).unwrap()
}

/// Every transport and process count of `r` ran and verified.
fn check_verified(r: &NpbResult, kernel: &str, runs: usize) {
    assert_eq!(r.kernel, kernel);
    assert!(r.complete);
    assert_eq!(r.runs.len(), runs);
    for run in &r.runs {
        let label = format!("{kernel} {} np={}", run.via, run.nprocs);
        assert!(run.error.is_none(), "{label}: {:?}", run.error);
        let o = &run.outcomes[0];
        assert!(o.verified, "{label}");
        // MG keeps its norm fields; the others list their checks.
        assert_eq!(o.checks.is_empty(), kernel == "mg", "{label}");
        assert_eq!(o.nprocs, run.nprocs, "{label}");
        assert_eq!(o.proc_grid.iter().product::<usize>(), run.nprocs);
        assert!(o.mop_s > 0.0, "{label}");
        // Speedups need a one-process run to compare with.
        let serial = r.runs.iter().any(|x| x.nprocs == 1);
        assert_eq!(run.speedup.is_some(), serial, "{label}");
        eprintln!("{label}: {:.1} Mop/s", o.mop_s);
    }
}

#[test]
fn ep_class_s_and_w_verify_on_1_2_3_4_processes_over_shm_and_tcp() {
    let _s = serial();
    // EP takes any count: 3 as well as the powers of two.
    let r = npb("ep", "S", "1,2,3,4", "shm,tcp");
    check_verified(&r, "ep", 8);
    let r = npb("ep", "W", "1,2,4", "shm,tcp");
    check_verified(&r, "ep", 6);
}

#[test]
// About 6 s in all on the project's 2-vCPU machine: EP 4.3 s, IS 0.7 s,
// CG 1.2 s, each with process start-up.
fn class_a_verifies_in_one_process_for_each_kernel() {
    let _s = serial();
    for kernel in ["ep", "is", "cg"] {
        let r = npb(kernel, "A", "1", "shm");
        check_verified(&r, kernel, 1);
    }
}

#[test]
fn all_runs_every_kernel_and_prints_the_kernel_table() {
    let _s = serial();
    let dir = tempdir();
    let out = file(&dir, "r.json");
    let args = [
        "npb",
        "all",
        "--np",
        "1,2,3",
        "--via",
        "shm",
        "--repetitions",
        "1",
        "--json",
        out.to_str().unwrap(),
    ];
    let o = run(&args);
    assert!(o.status.success(), "wulf {args:?} failed: {}", stderr(&o));
    // 3 processes suit EP only: the others skip it, saying so.
    assert!(stderr(&o).contains("skipping np=3"), "{}", stderr(&o));
    for kernel in ["bt", "cg", "ep", "ft", "is", "lu", "mg", "sp"] {
        let r = read_npb_result(&file(&dir, &format!("r-{kernel}.json"))).unwrap();
        // EP and LU run on 3 processes too, SP and BT on squares only.
        let runs = match kernel {
            "ep" | "lu" => 3,
            "sp" | "bt" => 1,
            _ => 2,
        };
        check_verified(&r, kernel, runs);
    }
    let text = String::from_utf8_lossy(&o.stdout);
    let table = text
        .split("total Mop/s by kernel")
        .nth(1)
        .unwrap_or_else(|| panic!("no kernel table in:\n{text}"));
    // The largest count at least half the kernels ran: SP and BT
    // (squares only) did not run at 2, and the table says so instead of falling
    // back to np=1, where nothing is communicated.
    assert!(table.contains("class S, np=2"), "{table}");
    for row in ["CG", "EP", "FT", "IS", "LU", "MG"] {
        assert!(table.lines().any(|l| l.starts_with(row)), "{table}");
    }
    for row in ["BT", "SP"] {
        assert!(
            table
                .lines()
                .any(|l| l.starts_with(row) && l.contains("n/a")),
            "{table}"
        );
    }
    assert!(table.contains("n/a: BT, SP did not run at np=2"), "{table}");
    let o = run(&["npb", "all", "--json", "-"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
}

/// `wulf npb all --np 2`: SP and BT (square counts only) run at no count,
/// and still have their row in the final table, "n/a", with a line saying
/// why (issue 49 item 13: they were left out of the table).
#[test]
fn all_at_a_count_sp_and_bt_cannot_use_keeps_their_rows_saying_why() {
    let _s = serial();
    let args: Vec<&str> = "npb all --class S --np 2 --via shm --repetitions 1"
        .split(' ')
        .collect();
    let o = run(&args);
    assert!(o.status.success(), "wulf {args:?} failed: {}", stderr(&o));
    let text = String::from_utf8_lossy(&o.stdout);
    let table = text
        .split("total Mop/s by kernel")
        .nth(1)
        .unwrap_or_else(|| panic!("no kernel table in:\n{text}"));
    for row in ["BT", "SP"] {
        assert!(
            table
                .lines()
                .any(|l| l.starts_with(row) && l.contains("n/a")),
            "{row} has no n/a row:\n{table}"
        );
        assert!(
            table
                .lines()
                .any(|l| l.starts_with(&format!("n/a: {row} ran at none")) && l.contains("square")),
            "no line says why {row} did not run:\n{table}"
        );
    }
    for row in ["CG", "EP", "FT", "IS", "LU", "MG"] {
        assert!(
            table
                .lines()
                .any(|l| l.starts_with(row) && !l.contains("n/a")),
            "{table}"
        );
    }
}

#[test]
fn is_class_s_and_w_verify_on_1_2_4_processes_over_shm_and_tcp() {
    let _s = serial();
    let r = npb("is", "S", "1,2,4", "shm,tcp");
    check_verified(&r, "is", 6);
    let r = npb("is", "W", "1,2,4", "shm,tcp");
    check_verified(&r, "is", 6);
}

#[test]
fn cg_class_s_and_w_verify_on_1_2_4_processes_over_shm_and_tcp() {
    let _s = serial();
    let r = npb("cg", "S", "1,2,4", "shm,tcp");
    check_verified(&r, "cg", 6);
    let grids: Vec<[usize; 3]> = r.runs.iter().map(|x| x.outcomes[0].proc_grid).collect();
    // NPB's grids: 2 processes are 2 columns of 1 row, 4 are 2 x 2.
    assert!(
        grids.contains(&[2, 1, 1]) && grids.contains(&[2, 2, 1]),
        "{grids:?}"
    );
    let r = npb("cg", "W", "1,2,4", "shm,tcp");
    check_verified(&r, "cg", 6);
}

#[test]
fn each_kernel_verifies_on_2_processes_of_each_mpi() {
    let _s = serial();
    std::env::set_var(wulf::transport::mpi::EXE_VAR, env!("CARGO_BIN_EXE_wulf"));
    for lib in libraries() {
        let via = format!("mpi:{lib}");
        for kernel in ["ep", "is", "cg"] {
            let r = npb(kernel, "S", "2", &via);
            check_verified(&r, kernel, 1);
            // The library block, as sweep results carry it.
            let mpi = r.runs[0]
                .mpi
                .as_ref()
                .expect("an MPI run records its library");
            assert_eq!(mpi.implementation, lib);
            assert!(!mpi.launcher_command.is_empty());
        }
    }
}

#[test]
fn counts_a_kernel_cannot_use_are_refused_before_anything_starts() {
    for (kernel, np, needle) in [
        ("is", "3", "power-of-two"),
        ("cg", "6", "power-of-two"),
        ("mg", "3", "1, 2, 4, 8"),
        ("ep", "0", "process count from 1"),
        ("cg", "3", "power-of-two"),
    ] {
        let o = run(&["npb", kernel, "--np", np, "--via", "tcp"]);
        assert_eq!(o.status.code(), Some(2), "{kernel} {np}: {}", stderr(&o));
        assert!(stderr(&o).contains(needle), "{kernel} {np}: {}", stderr(&o));
        assert!(!stderr(&o).contains("panicked"), "{}", stderr(&o));
    }
    let o = run(&["npb", "cg", "--class", "Q"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
}

#[test]
fn a_corrupted_exchange_fails_verification_and_shows_no_speed() {
    let _s = serial();
    for (kernel, fault) in [("is", "is-key"), ("cg", "cg-value")] {
        let dir = tempdir();
        let out = file(&dir, "r.json");
        let o = wulf(&[
            "npb",
            kernel,
            "--np",
            "2",
            "--via",
            "tcp",
            "--repetitions",
            "1",
            "--json",
            out.to_str().unwrap(),
        ])
        .env(wulf::npb::fault::FAULT_VAR, fault)
        .output()
        .unwrap();
        assert!(!o.status.success(), "{kernel}");
        assert!(
            stderr(&o).contains("failed verification"),
            "{kernel}: {}",
            stderr(&o)
        );
        let r = read_npb_result(&out).unwrap();
        assert!(r.runs[0].error.is_some(), "{kernel}");
        assert!(r.runs[0].best_mop_s.is_none() && r.runs[0].outcomes.is_empty());
        let text = String::from_utf8_lossy(&o.stdout);
        assert!(text.contains("failed"), "{kernel}: {text}");
    }
}
