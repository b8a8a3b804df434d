//! `wulf npb ft` end to end: real rank processes over shm and tcp (and
//! each installed MPI), every run verified against NPB 3.4's reference
//! checksums (six complex sums for class S, each part within 1e-12); the
//! bytes and messages of the timed section equal the transposes' formula;
//! counts that do not divide the grid refused with exit 2; a corrupted
//! transpose fails verification with exit 1.
//!
//! No test asserts a speed. MPI libraries that are not installed are
//! skipped, unless WULF_REQUIRE_MPI=1 (CI), where that fails.

use crate::common;
use common::*;

use wulf::result::{read_npb_result, NpbResult};

/// `wulf npb ft --class S --np NPS --via VIAS`, with its exit status.
fn ft(nps: &str, vias: &str) -> (std::process::Output, Option<NpbResult>) {
    let dir = tempdir();
    let out = file(&dir, "r.json");
    let args = [
        "npb",
        "ft",
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
    let r = read_npb_result(&out).ok();
    (o, r)
}

/// What FT class S (64^3 points, 6 steps) sends in its timed section on
/// `np` ranks: 7 transposes (the forward transform, then one per step), in
/// each of which every rank sends every other rank `N / np^2` values of 16
/// bytes, one message each; and 6 checksums, an all-reduce of one complex
/// value (16 bytes, one message) from every rank.
fn ft_traffic(np: u64) -> (u64, u64) {
    if np == 1 {
        return (0, 0);
    }
    let (n, steps) = (64u64 * 64 * 64, 6u64);
    let transposes = steps + 1;
    let bytes = transposes * np * (np - 1) * (n / (np * np)) * 16 + steps * np * 16;
    let messages = transposes * np * (np - 1) + steps * np;
    (bytes, messages)
}

#[test]
fn ft_class_s_verifies_on_1_and_2_processes_and_sends_the_transposes() {
    let _s = serial();
    let (o, r) = ft("1,2", "shm,tcp");
    assert!(o.status.success(), "wulf npb ft failed: {}", stderr(&o));
    let text = String::from_utf8_lossy(&o.stdout);
    for needle in ["NAS FT class S", "total Mop/s", "verified"] {
        assert!(text.contains(needle), "no {needle:?} in:\n{text}");
    }
    let r = r.unwrap();
    assert_eq!(r.kernel, "ft");
    assert!(r.complete);
    assert_eq!(r.runs.len(), 4);
    for run in &r.runs {
        let label = format!("ft {} np={}", run.via, run.nprocs);
        assert!(run.error.is_none(), "{label}: {:?}", run.error);
        let o = &run.outcomes[0];
        assert!(o.verified, "{label}");
        assert_eq!(o.checks.len(), 12, "{label}");
        assert!(o.relative_error <= 1e-12, "{label}: {}", o.relative_error);
        assert_eq!(o.proc_grid, [1, 1, run.nprocs], "{label}");
        let (bytes, messages) = ft_traffic(run.nprocs as u64);
        assert_eq!(o.sent_bytes, Some(bytes), "{label}");
        assert_eq!(o.sent_messages, Some(messages), "{label}");
        assert!(o.mop_s > 0.0, "{label}");
    }
}

#[test]
fn ft_verifies_on_2_processes_of_each_mpi() {
    let _s = serial();
    std::env::set_var(wulf::transport::mpi::EXE_VAR, env!("CARGO_BIN_EXE_wulf"));
    for lib in libraries() {
        let (o, r) = ft("2", &format!("mpi:{lib}"));
        assert!(o.status.success(), "{lib}: {}", stderr(&o));
        let r = r.unwrap();
        let run = &r.runs[0];
        assert!(run.error.is_none(), "{lib}: {:?}", run.error);
        assert!(run.outcomes[0].verified, "{lib}");
        assert_eq!(run.outcomes[0].checks.len(), 12);
    }
}

#[test]
fn counts_that_do_not_divide_the_grid_are_refused_before_anything_starts() {
    for (np, class) in [("3", "S"), ("0", "S"), ("64", "W")] {
        let o = run(&["npb", "ft", "--class", class, "--np", np, "--via", "tcp"]);
        assert_eq!(o.status.code(), Some(2), "np {np}: {}", stderr(&o));
        assert!(!stderr(&o).contains("panicked"), "{}", stderr(&o));
    }
    let o = run(&["npb", "ft", "--np", "3", "--via", "tcp"]);
    assert!(stderr(&o).contains("must divide"), "{}", stderr(&o));
}

#[test]
fn a_corrupted_transpose_fails_verification_with_exit_1() {
    let _s = serial();
    let dir = tempdir();
    let out = file(&dir, "r.json");
    let o = wulf(&[
        "npb",
        "ft",
        "--class",
        "S",
        "--np",
        "2",
        "--via",
        "shm",
        "--repetitions",
        "1",
        "--json",
        out.to_str().unwrap(),
    ])
    .env(wulf::npb::fault::FAULT_VAR, "ft-value")
    .output()
    .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("failed verification"), "{}", stderr(&o));
    let r = read_npb_result(&out).unwrap();
    assert!(r.runs[0].error.is_some());
}
