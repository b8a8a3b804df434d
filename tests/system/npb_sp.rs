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

use crate::npb_adi::{adi_traffic, check_class_s_on_1_and_4};
use crate::npb_kernels::npb;
use wulf::result::NpbResult;

/// `wulf npb sp --class S --np NPS --via VIAS`, which must succeed.
fn sp(nps: &str, vias: &str) -> NpbResult {
    npb("sp", "S", nps, vias)
}

/// What NPB SP sends in class S (12 points a side, 100 steps) on `p * p`
/// ranks: the faces, and per pipeline stage 22 values a line forward and
/// 10 back, as NPB's multi-partition.
fn npb_traffic(p: u64) -> (u64, u64) {
    adi_traffic(12, 100, p, [22, 10])
}

#[test]
fn sp_class_s_verifies_on_1_and_4_processes_and_sends_what_npb_sends() {
    let _s = serial();
    check_class_s_on_1_and_4("sp", npb_traffic);
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
