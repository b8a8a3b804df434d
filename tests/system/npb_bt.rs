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

use crate::npb_kernels::npb;
use wulf::result::NpbResult;

/// `wulf npb bt --class S --np NPS --via VIAS`, which must succeed.
fn bt(nps: &str, vias: &str) -> NpbResult {
    npb("bt", "S", nps, vias)
}

/// What BT sends in its timed section on `p * p` ranks for class S (12
/// points a side, 60 steps), summed over the ranks. Per step: the faces
/// (as SP: two layers of 5 values across each of the `p - 1` interfaces
/// between slabs, both ways, along 3 axes, one message per rank, axis and
/// direction); and the three sweeps, each `p - 1` stages forward carrying
/// 30 values per interior line (the last row's 5x5 block `C'` and its 5
/// right-hand sides; `(n - 2)^2` lines per slab) and `p - 1` back
/// carrying 5, one message per rank and stage. One rank holds the whole
/// grid and sends nothing. (NPB's own MPI BT sends fixed buffers sized
/// for its largest cell, faces included, so more bytes in as many
/// messages.)
fn bt_traffic(p: u64) -> (u64, u64) {
    if p == 1 {
        return (0, 0);
    }
    let (n, steps) = (12u64, 60u64);
    let faces = 3 * 2 * (p - 1) * 2 * 5 * n * n * 8;
    let sweeps = 3 * (p - 1) * (30 + 5) * (n - 2) * (n - 2) * 8;
    let messages = 6 * p * p + 3 * 2 * (p - 1) * p * p;
    (steps * (faces + sweeps), steps * messages)
}

#[test]
fn bt_class_s_verifies_on_1_and_4_processes_and_sends_the_formulas_bytes() {
    let _s = serial();
    let r = bt("1,4", "shm,tcp");
    assert_eq!(r.kernel, "bt");
    assert!(r.complete);
    assert_eq!(r.runs.len(), 4);
    for run in &r.runs {
        let label = format!("bt {} np={}", run.via, run.nprocs);
        assert!(run.error.is_none(), "{label}: {:?}", run.error);
        let o = &run.outcomes[0];
        assert!(o.verified, "{label}");
        assert_eq!(o.checks.len(), 10, "{label}");
        assert!(o.relative_error <= 1e-8, "{label}: {}", o.relative_error);
        let p = if run.nprocs == 1 { 1 } else { 2 };
        assert_eq!(o.proc_grid, [p, p, 1], "{label}");
        let (bytes, messages) = bt_traffic(p as u64);
        assert_eq!(o.sent_bytes, Some(bytes), "{label}");
        assert_eq!(o.sent_messages, Some(messages), "{label}");
        assert!(o.mop_s > 0.0, "{label}");
    }
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
