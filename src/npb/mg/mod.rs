//! NAS MG: a multigrid V-cycle solving a periodic 3-D Poisson problem,
//! serial or on a power-of-two number of ranks of any [`Communicator`].
//!
//! Layout of the module:
//!
//! * [`params`]: the class table (grid, iterations, weights, reference norm);
//! * [`decomp`]: NPB's split of the grid among ranks;
//! * `kernels`: the four operators (A, S, P, Q) and the norm on one block
//!   (tests of them against the spec's definitions in `kernels_tests.rs`);
//! * `halo`: ghost exchange axis by axis, and replicated coarse levels;
//! * `rhs`: the right-hand side from the random stream;
//! * `solver`: the level hierarchy and the V-cycle.
//!
//! [`run_mg`] runs the benchmark as NPB does: untimed setup and one
//! untimed warm-up iteration, then the timed section (first residual and
//! norm, `nit` times V-cycle plus residual, final norm), verified against
//! NPB's reference norm. Every rank calls it with its own communicator;
//! every rank gets the same outcome. An unverified run is an error
//! ([`VerificationFailed`]), never a speed.

pub mod decomp;
mod halo;
mod kernels;
pub mod params;
mod rhs;
mod solver;

use crate::comm::Communicator;
use crate::npb::outcome::{NpbOutcome, Timer};
use crate::npb::Class;
use anyhow::Result;

pub use decomp::Decomposition;
pub use params::{MgParams, VERIFY_TOLERANCE};

/// An MG run whose final norm missed NPB's reference.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error(
    "NPB MG class {class} failed verification: norm {norm:.13e}, reference {reference:.13e}, \
     relative error {relative_error:.3e} > {VERIFY_TOLERANCE:e}"
)]
pub struct VerificationFailed {
    /// The problem class.
    pub class: Class,
    /// The norm the run produced.
    pub norm: f64,
    /// NPB's reference norm.
    pub reference: f64,
    /// Relative error (NaN if the norm was NaN).
    pub relative_error: f64,
}

/// Runs NPB MG of `class` on this rank of `comm` (every rank must call it)
/// and verifies the result.
///
/// Fails on a process count MG cannot use (not a power of two, or too many
/// for the grid), on a communication error, and with
/// [`VerificationFailed`] when the final norm misses the reference.
pub fn run_mg(class: Class, comm: &dyn Communicator) -> Result<NpbOutcome> {
    let params = MgParams::of(class);
    let mut solver = solver::Solver::new(comm, params)?;

    // Untimed setup and warm-up: one full iteration touches every page and
    // warms the caches, as NPB's "one iteration for startup" does.
    solver.build_rhs()?;
    solver.residual()?;
    solver.vcycle()?;
    solver.residual()?;
    // NPB rebuilds v here too; the iteration never writes v, so it is
    // already exactly what a rebuild would give.
    solver.reset_solution();

    let timer = Timer::start(comm)?;
    solver.residual()?;
    solver.norms()?;
    for _ in 0..params.iterations {
        solver.vcycle()?;
        solver.residual()?;
    }
    let (norm, max_abs_residual) = solver.norms()?;
    let elapsed = timer.stop(comm)?;
    let (time_s, cpu_time_s) = (elapsed.wall_s, elapsed.cpu_s);

    let relative_error = params.relative_error(norm);
    if !params.verifies(norm) {
        return Err(VerificationFailed {
            class,
            norm,
            reference: params.reference_norm,
            relative_error,
        }
        .into());
    }
    let nprocs = comm.size();
    let mop_s = params.operation_count() / time_s * 1e-6;
    Ok(NpbOutcome {
        class,
        nprocs,
        proc_grid: solver.decomposition().procs,
        backend: comm.backend_name().to_string(),
        grid_points: Some(params.n_points),
        iterations: params.iterations,
        time_s,
        cpu_time_s,
        mop_s,
        mop_s_per_process: mop_s / nprocs as f64,
        norm: Some(norm),
        reference_norm: Some(params.reference_norm),
        relative_error,
        max_abs_residual: Some(max_abs_residual),
        checks: Vec::new(),
        annulus_counts: Vec::new(),
        sent_bytes: elapsed.sent.map(|s| s.bytes),
        sent_messages: elapsed.sent.map(|s| s.messages),
        verified: true,
    })
}
