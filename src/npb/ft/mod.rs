//! NAS FT: a 3-D partial differential equation solved by fast Fourier
//! transforms, written for wulf from NPB 3.4's description, not ported
//! from its code.
//!
//! The initial condition is NPB's random stream; it is transformed once
//! (forward 3-D FFT), and each time step multiplies the spectrum by
//! `exp(-4 alpha pi^2 |k|^2)`, transforms it back and takes NPB's
//! checksum of 1024 chosen points, verified against NPB's reference
//! checksums within its epsilon, 1e-12.
//!
//! Over several ranks the grid is split in slabs and each 3-D transform
//! carries one all-to-all transpose of the whole grid, which makes FT the
//! bandwidth-bound kernel of the suite (see `solver` for the layouts and
//! [`Slabs::transpose_bytes`] for the bytes).
//!
//! * `params`: the class table, NPB's reference checksums, the operation
//!   count;
//! * `fft`: our radix-2 Stockham FFT;
//! * `solver`: the layouts, the transposes and the steps.

mod fft;
pub mod params;
mod solver;

use anyhow::Result;

use super::outcome::{CheckedValue, NpbOutcome, RunShape, Timer};
use super::Class;
use crate::comm::Communicator;
use crate::error::usage;
pub use params::{FtParams, VERIFY_TOLERANCE};
pub use solver::Slabs;

/// Fails with a usage error when FT of `class` cannot run on `np` ranks
/// (the count must divide the grid's y rows and z planes).
pub fn check_process_count(class: Class, np: usize) -> Result<()> {
    Slabs::new(FtParams::of(class).dims, np)
        .map(|_| ())
        .map_err(|e| usage(format!("NPB FT class {class}: {e:#}")))
}

/// The checks of a run: each checksum's real and imaginary part against
/// NPB's. Both parts within `epsilon` imply NPB's own test (the modulus of
/// the complex difference over the reference's, within `epsilon`).
fn checks(sums: &[[f64; 2]], p: &FtParams) -> Vec<CheckedValue> {
    let mut checks = Vec::with_capacity(2 * sums.len());
    for (t, (sum, reference)) in sums.iter().zip(p.reference).enumerate() {
        checks.push(CheckedValue::new(
            &format!("sum({}).re", t + 1),
            sum[0],
            reference[0],
        ));
        checks.push(CheckedValue::new(
            &format!("sum({}).im", t + 1),
            sum[1],
            reference[1],
        ));
    }
    checks
}

/// Runs NPB FT of `class` on this rank of `comm` (every rank must call
/// it) and verifies it; an unverified run is an error.
pub fn run_ft(class: Class, comm: &dyn Communicator) -> Result<NpbOutcome> {
    let params = FtParams::of(class);
    check_process_count(class, comm.size())?;
    let mut sums = vec![[0.0; 2]; params.iterations];
    let mut s = solver::Solver::new(comm, &params)?;
    // The whole setup once, untimed, touches every page as NPB's does;
    // then the timed section starts again from the beginning.
    s.compute_twiddle();
    s.forward()?;

    let timer = Timer::start(comm)?;
    s.compute_twiddle();
    s.forward()?;
    for sum in sums.iter_mut() {
        s.step()?;
        *sum = s.checksum()?;
    }
    let elapsed = timer.stop(comm)?;

    let shape = RunShape {
        proc_grid: [1, 1, comm.size()],
        iterations: params.iterations,
        elapsed,
        operations: params.operation_count(),
    };
    NpbOutcome::checked(
        "FT",
        class,
        comm,
        checks(&sums, &params),
        VERIFY_TOLERANCE,
        shape,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::comm::{SerialComm, ThreadComm};

    #[test]
    fn class_s_verifies_serially() {
        let out = run_ft(Class::S, &SerialComm::new()).unwrap();
        assert!(out.verified);
        assert_eq!(out.checks.len(), 12);
        assert!(out.relative_error <= VERIFY_TOLERANCE, "{out:?}");
    }

    #[test]
    fn class_s_verifies_on_threads_and_sends_the_transposes() {
        for np in [2, 4] {
            let outs = ThreadComm::run(np, |c| {
                let counted = crate::comm::Counted::new(c);
                run_ft(Class::S, &counted)
            })
            .unwrap();
            let slabs = Slabs::new([64, 64, 64], np).unwrap();
            // Seven transposes (the forward one and one per step), and six
            // checksum reductions of 16 bytes from every rank.
            let want = 7 * slabs.transpose_bytes() + 6 * np as u64 * 16;
            for out in outs {
                assert!(out.verified);
                assert_eq!(out.sent_bytes, Some(want), "np {np}");
            }
        }
    }

    #[test]
    fn a_count_that_does_not_divide_the_grid_is_a_usage_error() {
        let e = check_process_count(Class::S, 3).unwrap_err();
        assert_eq!(crate::error::exit_code_of(&e), 2, "{e:#}");
        assert!(format!("{e:#}").contains("must divide"), "{e:#}");
        check_process_count(Class::W, 32).unwrap();
        assert!(check_process_count(Class::W, 64).is_err());
    }
}
