//! A speed report of wulf's MG, for `bench/npb_mg_vs_fortran.sh` and for
//! people: ignored by default, it asserts nothing about speed (a slow run
//! still passes); it only fails if the run does not verify.
//!
//! ```text
//! NPB_CLASS=W NPB_NP=1 cargo test --release --test fast npb_bench:: -- --ignored --nocapture
//! ```
//!
//! `NPB_CLASS` (S, W, A, B, C; default W) picks the class, `NPB_NP`
//! (default 1) the number of in-process ranks (1 runs over `SerialComm`),
//! `NPB_RUNS` (default 1) how many runs to make in this process.
//! Each run prints one line starting `wulf-mg`, which the script parses:
//! `mop_s` is NPB's figure (wall time); `cpu_mop_s` the same operation
//! count over the CPU time of the timed section, which a loaded machine
//! disturbs less (it still shares caches and memory bandwidth).

use wulf::npb::comm::{Communicator, SerialComm, ThreadComm};
use wulf::npb::mg::run_mg;
use wulf::npb::Class;

#[test]
#[ignore = "a speed report, run on demand with --ignored"]
fn npb_mg_speed_report() {
    let class: Class = std::env::var("NPB_CLASS")
        .unwrap_or_else(|_| "W".into())
        .parse()
        .expect("NPB_CLASS");
    let nprocs: usize = std::env::var("NPB_NP")
        .unwrap_or_else(|_| "1".into())
        .parse()
        .expect("NPB_NP");
    let runs: usize = std::env::var("NPB_RUNS")
        .unwrap_or_else(|_| "1".into())
        .parse()
        .expect("NPB_RUNS");
    for _ in 0..runs {
        report(class, nprocs);
    }
}

/// Runs MG once and prints its `wulf-mg` line.
fn report(class: Class, nprocs: usize) {
    let outcome = if nprocs == 1 {
        run_mg(class, &SerialComm::new()).expect("MG run")
    } else {
        ThreadComm::run(nprocs, |comm: &dyn Communicator| run_mg(class, comm))
            .expect("MG run")
            .swap_remove(0)
    };
    println!(
        "wulf-mg class={} np={} backend={} time_s={:.6} mop_s={:.2} cpu_time_s={:.6} cpu_mop_s={:.2} norm={:.13e} verified={}",
        outcome.class,
        outcome.nprocs,
        outcome.backend,
        outcome.time_s,
        outcome.mop_s,
        outcome.cpu_time_s,
        outcome.mop_s * outcome.time_s / outcome.cpu_time_s,
        outcome.norm.unwrap_or(f64::NAN),
        outcome.verified
    );
}
