//! Tests of the solver's layouts and steps.

use super::*;
use crate::comm::SerialComm;
use crate::npb::rng::{randlc, SEED_MG};
use crate::npb::Class;

#[test]
fn the_initial_condition_is_npbs_stream_in_order() {
    let comm = SerialComm::new();
    let params = FtParams::of(Class::S);
    let mut s = Solver::new(&comm, &params).unwrap();
    s.initial_conditions();
    let mut x = SEED_MG;
    let first = [randlc(&mut x, MULTIPLIER), randlc(&mut x, MULTIPLIER)];
    assert_eq!(s.planes[0], first);
    // Point (x 5, y 2, z 3) is values 2 i + 1 and 2 i + 2 of the stream.
    let i = (3 * 64 + 2) * 64 + 5;
    let mut at = jump(SEED_MG, MULTIPLIER, 2 * i as u64);
    let want = [randlc(&mut at, MULTIPLIER), randlc(&mut at, MULTIPLIER)];
    assert_eq!(s.planes[i], want);
}

#[test]
fn frequencies_wrap_to_negative_halves() {
    let got: Vec<i64> = (0..8).map(|i| frequency(i, 8)).collect();
    assert_eq!(got, [0, 1, 2, 3, -4, -3, -2, -1]);
}

#[test]
fn forward_then_inverse_is_n_times_the_initial_condition() {
    let comm = SerialComm::new();
    let params = FtParams::of(Class::S);
    let mut s = Solver::new(&comm, &params).unwrap();
    s.initial_conditions();
    let start = s.planes.clone();
    s.forward().unwrap();
    // A twiddle of ones: the step is the inverse transform alone.
    s.twiddle.fill(1.0);
    s.step().unwrap();
    let n = params.total_points() as f64;
    let worst = s
        .planes
        .iter()
        .zip(&start)
        .map(|(a, b)| (a[0] / n - b[0]).abs().max((a[1] / n - b[1]).abs()))
        .fold(0.0, f64::max);
    assert!(worst < 1e-13, "{worst}");
}

#[test]
fn counts_that_do_not_divide_the_grid_are_refused() {
    assert!(Slabs::new([64, 64, 64], 3).is_err());
    assert!(Slabs::new([128, 128, 32], 64).is_err());
    let s = Slabs::new([64, 64, 64], 4).unwrap();
    assert_eq!((s.planes, s.rows, s.local_points()), (16, 16, 65_536));
    assert_eq!(s.transpose_bytes(), 16 * 262_144 * 3 / 4);
    assert_eq!(Slabs::new([64, 64, 64], 1).unwrap().transpose_bytes(), 0);
}
