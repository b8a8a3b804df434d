//! NPB MG end to end: verified runs serially and on in-process ranks.
//!
//! No test here asserts a speed; the figures are printed for the curious
//! (`cargo test --release npb -- --nocapture`).

use wulf::npb::comm::{Communicator, SerialComm, ThreadComm};
use wulf::npb::mg::{run_mg, VerificationFailed};
use wulf::npb::Class;
use wulf::npb::NpbOutcome;

/// Runs `class` on `nprocs` thread ranks and checks every rank agrees.
fn run_on_threads(class: Class, nprocs: usize) -> NpbOutcome {
    let outcomes = ThreadComm::run(nprocs, |comm: &dyn Communicator| run_mg(class, comm))
        .unwrap_or_else(|e| panic!("class {class} on {nprocs} ranks: {e:#}"));
    let first = outcomes[0].clone();
    for o in &outcomes {
        assert_eq!(o, &first, "ranks disagree");
    }
    first
}

fn check(o: &NpbOutcome, class: Class, nprocs: usize) {
    eprintln!(
        "class {class} on {nprocs} ({}): norm {:.13e}, err {:.2e}, {:.3} s, {:.1} Mop/s",
        o.backend,
        o.norm.unwrap(),
        o.relative_error,
        o.time_s,
        o.mop_s
    );
    assert_eq!(o.class, class);
    assert_eq!(o.nprocs, nprocs);
    assert!(o.verified);
    assert!(o.relative_error <= 1e-8);
    assert!(o.time_s > 0.0 && o.mop_s > 0.0);
    assert_eq!(o.proc_grid.iter().product::<usize>(), nprocs);
}

#[test]
fn npb_mg_class_s_serial() {
    let o = run_mg(Class::S, &SerialComm::new()).unwrap();
    check(&o, Class::S, 1);
    assert_eq!(o.backend, "serial");
}

#[test]
fn npb_mg_class_s_on_1_2_4_8_threads() {
    for nprocs in [1, 2, 4, 8] {
        let o = run_on_threads(Class::S, nprocs);
        check(&o, Class::S, nprocs);
    }
}

#[test]
fn npb_mg_class_s_on_16_threads_replicates_two_levels() {
    // 2x2x4 ranks: levels 1 and 2 are replicated, the bridge is level 2.
    let o = run_on_threads(Class::S, 16);
    check(&o, Class::S, 16);
    assert_eq!(o.proc_grid, [2, 2, 4]);
}

#[test]
fn npb_mg_parallel_norm_matches_serial_closely() {
    let serial = run_mg(Class::S, &SerialComm::new()).unwrap();
    let parallel = run_on_threads(Class::S, 4);
    // Only the order of the norm's final sum differs.
    let (s, p) = (serial.norm.unwrap(), parallel.norm.unwrap());
    assert!((s - p).abs() <= 1e-12 * s);
}

#[test]
// Class W takes about 4 s in a debug build and well under 1 s in release.
fn npb_mg_class_w_on_1_and_2_ranks() {
    let o = run_mg(Class::W, &SerialComm::new()).unwrap();
    check(&o, Class::W, 1);
    let o = run_on_threads(Class::W, 2);
    check(&o, Class::W, 2);
}

#[test]
fn npb_mg_rejects_bad_process_counts() {
    let err = ThreadComm::run(3, |comm: &dyn Communicator| run_mg(Class::S, comm)).unwrap_err();
    assert!(format!("{err:#}").contains("power-of-two"), "{err:#}");
}

#[test]
fn npb_mg_verification_error_is_typed() {
    let e: anyhow::Error = VerificationFailed {
        class: Class::S,
        norm: 5.136e-5,
        reference: 0.5307707005734e-04,
        relative_error: 0.03,
    }
    .into();
    assert!(e.downcast_ref::<VerificationFailed>().is_some());
    assert!(e.to_string().contains("failed verification"));
}
