//! `wulf npb bt` end to end: real rank processes over shm and tcp (and
//! each installed MPI), every run verified against NPB 3.4's ten
//! reference values (five residual norms, five error norms); the bytes
//! and messages of the timed section equal the multi-partition's
//! formula; counts that are not squares refused with exit 2.
//!
//! No test asserts a speed. MPI libraries that are not installed are
//! skipped, unless WULF_REQUIRE_MPI=1 (CI), where that fails.

use crate::common;
use common::*;

use crate::npb_adi::{adi_traffic, check_class_s_on_1_and_4};
use crate::npb_kernels::npb;
use wulf::result::NpbResult;

/// `wulf npb bt --class S --np NPS --via VIAS`, which must succeed.
fn bt(nps: &str, vias: &str) -> NpbResult {
    npb("bt", "S", nps, vias)
}

/// What BT sends in class S (12 points a side, 60 steps) on `p * p`
/// ranks: SP's faces, and per pipeline stage 30 values a line forward
/// (the last row's 5x5 block `C'` and its 5 right-hand sides) and 5 back
/// (the first solved row). (NPB's own MPI BT sends fixed buffers sized
/// for its largest cell, faces included, so more bytes in as many
/// messages.)
fn bt_traffic(p: u64) -> (u64, u64) {
    adi_traffic(12, 60, p, [30, 5])
}

#[test]
fn bt_class_s_verifies_on_1_and_4_processes_and_sends_the_formulas_bytes() {
    let _s = serial();
    check_class_s_on_1_and_4("bt", bt_traffic);
    // Class S on 4 processes by hand: 9,187,200 B in 2,880 messages.
    assert_eq!(bt_traffic(2), (9_187_200, 2_880));
}

#[test]
fn counts_bt_cannot_split_are_refused_before_anything_starts() {
    // Not squares; and 25 ranks would leave class S cells of 2 points.
    for np in ["2", "3", "0", "25"] {
        let o = run(&["npb", "bt", "--class", "S", "--np", np, "--via", "tcp"]);
        assert_eq!(o.status.code(), Some(2), "np {np}: {}", stderr(&o));
        assert!(!stderr(&o).contains("panicked"), "{}", stderr(&o));
    }
    let o = run(&["npb", "bt", "--np", "2", "--via", "tcp"]);
    assert!(
        stderr(&o).contains("NPB BT runs on a square number"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn bt_verifies_on_1_and_4_processes_of_each_mpi() {
    let _s = serial();
    std::env::set_var(wulf::transport::mpi::EXE_VAR, env!("CARGO_BIN_EXE_wulf"));
    for lib in libraries() {
        let r = bt("1,4", &format!("mpi:{lib}"));
        for run in &r.runs {
            assert!(run.error.is_none(), "{lib}: {:?}", run.error);
            assert!(run.outcomes[0].verified, "{lib}");
            assert_eq!(run.outcomes[0].checks.len(), 10);
        }
    }
}
