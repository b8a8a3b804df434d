//! `wulf npb lu` end to end: real rank processes over shm and tcp (and
//! each installed MPI), every run verified against NPB 3.4's eleven
//! reference values (five residual norms, five error norms, the surface
//! integral); the bytes and messages of the timed section equal what
//! NPB's own exchanges send; counts LU cannot split refused with exit 2.
//!
//! No test asserts a speed. MPI libraries that are not installed are
//! skipped, unless WULF_REQUIRE_MPI=1 (CI), where that fails.

use crate::common;
use common::*;

use wulf::result::{read_npb_result, NpbResult};

/// `wulf npb lu --class S --np NPS --via VIAS`, which must succeed.
fn lu(nps: &str, vias: &str) -> NpbResult {
    let dir = tempdir();
    let out = file(&dir, "r.json");
    let args = [
        "npb",
        "lu",
        "--class",
        "S",
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
    for needle in ["NAS LU class S", "total Mop/s", "verified"] {
        assert!(text.contains(needle), "no {needle:?} in:\n{text}");
    }
    read_npb_result(&out).unwrap()
}

/// What NPB LU sends in its timed section on an `xdim` x `ydim` grid of
/// class S (12 points a side, 50 steps): per step one two-plane ghost
/// exchange each way across every interface (10 ny nz values, NPB's
/// `exchange_3`), and in each of the two sweeps one row of 5 values per
/// interior edge point per inner plane (`exchange_1`); then the last
/// step's correction norm and the final residual norm, two all-reduces of
/// 5 values (one message per rank each; NPB's `l2norm` of `delunm` and of
/// `rsdnm`).
fn npb_traffic(xdim: u64, ydim: u64) -> (u64, u64) {
    let (n, steps, np) = (12u64, 50u64, xdim * ydim);
    let interfaces = (xdim - 1) + (ydim - 1);
    let bytes_per_step = interfaces * (2 * 10 * n * n * 8 + 2 * (n - 2) * 5 * (n - 2) * 8);
    let links = (xdim - 1) * ydim + (ydim - 1) * xdim;
    let messages_per_step = links * (2 + 2 * (n - 2));
    (
        steps * bytes_per_step + 2 * np * 5 * 8,
        steps * messages_per_step + 2 * np,
    )
}

#[test]
fn lu_class_s_verifies_on_1_2_4_processes_and_sends_what_npb_sends() {
    let _s = serial();
    let r = lu("1,2,4", "shm,tcp");
    assert_eq!(r.kernel, "lu");
    assert!(r.complete);
    assert_eq!(r.runs.len(), 6);
    for run in &r.runs {
        let label = format!("lu {} np={}", run.via, run.nprocs);
        assert!(run.error.is_none(), "{label}: {:?}", run.error);
        let o = &run.outcomes[0];
        assert!(o.verified, "{label}");
        assert_eq!(o.checks.len(), 11, "{label}");
        assert!(o.relative_error <= 1e-8, "{label}: {}", o.relative_error);
        let want_grid = match run.nprocs {
            1 => [1, 1, 1],
            2 => [2, 1, 1],
            _ => [2, 2, 1],
        };
        assert_eq!(o.proc_grid, want_grid, "{label}");
        let (bytes, messages) = if run.nprocs == 1 {
            (0, 0)
        } else {
            npb_traffic(want_grid[0] as u64, want_grid[1] as u64)
        };
        assert_eq!(o.sent_bytes, Some(bytes), "{label}");
        assert_eq!(o.sent_messages, Some(messages), "{label}");
        assert!(o.mop_s > 0.0, "{label}");
    }
}

#[test]
fn lu_verifies_on_2_processes_of_each_mpi() {
    let _s = serial();
    std::env::set_var(wulf::transport::mpi::EXE_VAR, env!("CARGO_BIN_EXE_wulf"));
    for lib in libraries() {
        let r = lu("2", &format!("mpi:{lib}"));
        let run = &r.runs[0];
        assert!(run.error.is_none(), "{lib}: {:?}", run.error);
        assert!(run.outcomes[0].verified, "{lib}");
        assert_eq!(run.outcomes[0].checks.len(), 11);
    }
}

#[test]
fn counts_lu_cannot_split_are_refused_before_anything_starts() {
    // Class S has 12 points a side: 5 processes (5 x 1) leave 2 per block.
    for (np, class) in [("5", "S"), ("0", "S")] {
        let o = run(&["npb", "lu", "--class", class, "--np", np, "--via", "tcp"]);
        assert_eq!(o.status.code(), Some(2), "np {np}: {}", stderr(&o));
        assert!(!stderr(&o).contains("panicked"), "{}", stderr(&o));
    }
    let o = run(&["npb", "lu", "--np", "5", "--via", "tcp"]);
    assert!(stderr(&o).contains("at least 3 points"), "{}", stderr(&o));
}

#[test]
fn npb_all_runs_lu_beside_the_other_kernels() {
    let _s = serial();
    let dir = tempdir();
    let out = file(&dir, "r.json");
    let args = [
        "npb",
        "all",
        "--np",
        "2",
        "--via",
        "shm",
        "--repetitions",
        "1",
        "--json",
        out.to_str().unwrap(),
    ];
    let o = run(&args);
    assert!(o.status.success(), "wulf {args:?} failed: {}", stderr(&o));
    let r = read_npb_result(&file(&dir, "r-lu.json")).unwrap();
    assert_eq!(r.kernel, "lu");
    assert!(r.runs[0].outcomes[0].verified);
    let text = String::from_utf8_lossy(&o.stdout);
    let table = text
        .split("total Mop/s by kernel")
        .nth(1)
        .unwrap_or_else(|| panic!("no kernel table in:\n{text}"));
    assert!(table.lines().any(|l| l.starts_with("LU")), "{table}");
}
