//! `wulf npb sp` end to end: real rank processes over shm and tcp (and
//! each installed MPI), every run verified against NPB 3.4's ten
//! reference values (five residual norms, five error norms); the bytes
//! and messages of the timed section equal what NPB's multi-partition
//! sends; counts that are not squares refused with exit 2.
//!
//! No test asserts a speed. MPI libraries that are not installed are
//! skipped, unless WULF_REQUIRE_MPI=1 (CI), where that fails.

use crate::common;
use common::*;

use crate::npb_kernels::npb;
use wulf::result::NpbResult;

/// `wulf npb sp --class S --np NPS --via VIAS`, which must succeed.
fn sp(nps: &str, vias: &str) -> NpbResult {
    npb("sp", "S", nps, vias)
}

/// What NPB SP sends in its timed section on `p * p` ranks for class S
/// (12 points a side, 100 steps). Per step: the faces (NPB's
/// `copy_faces`), two layers of 5 values across each of the `p - 1`
/// interfaces between slabs, both ways, along 3 axes, one message per
/// rank, axis and direction; and the three sweeps, each `p - 1` stages
/// forward carrying 22 values per interior line (`(n - 2)^2` lines per
/// slab) and `p - 1` back carrying 10, one message per rank and stage.
/// One rank holds the whole grid and sends nothing.
fn npb_traffic(p: u64) -> (u64, u64) {
    if p == 1 {
        return (0, 0);
    }
    let (n, steps) = (12u64, 100u64);
    let faces = 3 * 2 * (p - 1) * 2 * 5 * n * n * 8;
    let sweeps = 3 * (p - 1) * (22 + 10) * (n - 2) * (n - 2) * 8;
    let messages = 6 * p * p + 3 * 2 * (p - 1) * p * p;
    (steps * (faces + sweeps), steps * messages)
}

#[test]
fn sp_class_s_verifies_on_1_and_4_processes_and_sends_what_npb_sends() {
    let _s = serial();
    let r = sp("1,4", "shm,tcp");
    assert_eq!(r.kernel, "sp");
    assert!(r.complete);
    assert_eq!(r.runs.len(), 4);
    for run in &r.runs {
        let label = format!("sp {} np={}", run.via, run.nprocs);
        assert!(run.error.is_none(), "{label}: {:?}", run.error);
        let o = &run.outcomes[0];
        assert!(o.verified, "{label}");
        assert_eq!(o.checks.len(), 10, "{label}");
        assert!(o.relative_error <= 1e-8, "{label}: {}", o.relative_error);
        let p = if run.nprocs == 1 { 1 } else { 2 };
        assert_eq!(o.proc_grid, [p, p, 1], "{label}");
        let (bytes, messages) = npb_traffic(p as u64);
        assert_eq!(o.sent_bytes, Some(bytes), "{label}");
        assert_eq!(o.sent_messages, Some(messages), "{label}");
        assert!(o.mop_s > 0.0, "{label}");
    }
}

#[test]
fn counts_sp_cannot_split_are_refused_before_anything_starts() {
    // Not squares; and 25 ranks would leave class S cells of 2 points.
    for np in ["2", "3", "0", "25"] {
        let o = run(&["npb", "sp", "--class", "S", "--np", np, "--via", "tcp"]);
        assert_eq!(o.status.code(), Some(2), "np {np}: {}", stderr(&o));
        assert!(!stderr(&o).contains("panicked"), "{}", stderr(&o));
    }
    let o = run(&["npb", "sp", "--np", "2", "--via", "tcp"]);
    assert!(stderr(&o).contains("square number"), "{}", stderr(&o));
}

#[test]
fn sp_verifies_on_1_and_4_processes_of_each_mpi() {
    let _s = serial();
    std::env::set_var(wulf::transport::mpi::EXE_VAR, env!("CARGO_BIN_EXE_wulf"));
    for lib in libraries() {
        let r = sp("1,4", &format!("mpi:{lib}"));
        for run in &r.runs {
            assert!(run.error.is_none(), "{lib}: {:?}", run.error);
            assert!(run.outcomes[0].verified, "{lib}");
            assert_eq!(run.outcomes[0].checks.len(), 10);
        }
    }
}
