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

use crate::npb::comm::Communicator;
use crate::npb::Class;
use anyhow::Result;
use serde::{Deserialize, Serialize};
use std::time::Instant;

pub use decomp::Decomposition;
pub use params::{MgParams, VERIFY_TOLERANCE};

/// A verified MG run, as seen by every rank.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MgOutcome {
    /// The problem class.
    pub class: Class,
    /// Number of ranks.
    pub nprocs: usize,
    /// Ranks along x, y and z.
    pub proc_grid: [usize; 3],
    /// The communicator backend's name.
    pub backend: String,
    /// Grid points per side of the finest grid.
    pub grid_points: usize,
    /// V-cycle iterations timed.
    pub iterations: usize,
    /// Wall time of the timed section, the maximum over ranks.
    pub time_s: f64,
    /// CPU time a rank's thread spent in the timed section, the maximum over
    /// ranks. Well below `time_s` means ranks waited: for messages, or for a
    /// CPU on a loaded machine (then `time_s` says more about the load than
    /// about the code). NaN where the platform has no thread CPU clock.
    pub cpu_time_s: f64,
    /// NPB's rate: `58 * nit * n^3 / time_s / 1e6` (millions of operations per second).
    pub mop_s: f64,
    /// `mop_s` divided by the number of ranks.
    pub mop_s_per_process: f64,
    /// L2 norm of the final residual.
    pub norm: f64,
    /// NPB's reference value for `norm`.
    pub reference_norm: f64,
    /// `|norm - reference_norm| / reference_norm`.
    pub relative_error: f64,
    /// Largest |r| of the final residual (NPB's uniform norm, reported only).
    pub max_abs_residual: f64,
    /// Whether the run verified: always true in an outcome (an unverified
    /// run is an error), kept so that saved results say so.
    pub verified: bool,
}

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
pub fn run_mg(class: Class, comm: &dyn Communicator) -> Result<MgOutcome> {
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

    comm.barrier()?;
    let start = Instant::now();
    let cpu_start = thread_cpu_time_s();
    solver.residual()?;
    solver.norms()?;
    for _ in 0..params.iterations {
        solver.vcycle()?;
        solver.residual()?;
    }
    let (norm, max_abs_residual) = solver.norms()?;
    let mut times_s = [
        start.elapsed().as_secs_f64(),
        thread_cpu_time_s() - cpu_start,
    ];
    comm.allreduce_max_f64(&mut times_s)?;
    let [time_s, cpu_time_s] = times_s;

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
    Ok(MgOutcome {
        class,
        nprocs,
        proc_grid: solver.decomposition().procs,
        backend: comm.backend_name().to_string(),
        grid_points: params.n_points,
        iterations: params.iterations,
        time_s,
        cpu_time_s,
        mop_s,
        mop_s_per_process: mop_s / nprocs as f64,
        norm,
        reference_norm: params.reference_norm,
        relative_error,
        max_abs_residual,
        verified: true,
    })
}

/// CPU time consumed so far by the calling thread, in seconds (NaN if the
/// clock is unavailable).
fn thread_cpu_time_s() -> f64 {
    use nix::time::{clock_gettime, ClockId};
    clock_gettime(ClockId::CLOCK_THREAD_CPUTIME_ID)
        .map(|t| t.tv_sec() as f64 + t.tv_nsec() as f64 * 1e-9)
        .unwrap_or(f64::NAN)
}
