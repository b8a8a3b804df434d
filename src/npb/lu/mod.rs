//! NAS LU: a pseudo-time iteration to the steady state of the 3-D
//! compressible Navier-Stokes equations, each step one symmetric
//! successive over-relaxation (SSOR) of the implicit operator, split into
//! a lower and an upper block-triangular solve; written from NPB 3.4's
//! description, not ported from its code.
//!
//! Over several ranks the grid is split in x and y and each sweep runs as
//! a wavefront: a rank solves a z plane once the ranks upstream have sent
//! it their rows of that plane, then passes its own rows on. These many
//! small messages (one per plane and neighbour, 5 values per edge point)
//! make LU the latency-bound kernel of the suite.
//!
//! * `params`: the class table, NPB's reference values and operation count;
//! * `grid`: the process grid, the blocks, the exact and initial fields;
//! * `rhs`: the spatial operator (residual and forcing term);
//! * `jacobian`: the 5x5 blocks of the implicit operator and their solve;
//! * `exchange`: the ghost planes and the wavefront rows;
//! * `ssor`: the solver state and the iteration;
//! * `verify`: the error norms and the surface integral.
//!
//! [`run_lu`] runs the benchmark as NPB does: setup, one untimed warm-up
//! step, the solution reset, then `itmax` timed steps, verified by the
//! five residual norms, the five error norms and the surface integral.

mod exchange;
mod grid;
mod jacobian;
pub mod params;
mod rhs;
mod rows;
mod ssor;
mod verify;

use anyhow::Result;

use super::outcome::{CheckedValue, NpbOutcome, RunShape, Timer};
use super::Class;
use crate::comm::Communicator;
pub use grid::ProcGrid;
// SP solves the same equations with the same exact solution.
pub(crate) use grid::{exact, interpolated, split};
pub use params::{LuParams, VERIFY_TOLERANCE};

/// Fails with a usage error when LU of `class` cannot run on `np` ranks
/// (a block needs 3 points along x and y).
pub fn check_process_count(class: Class, np: usize) -> Result<()> {
    ProcGrid::of(np).check(LuParams::of(class).n_points, np)
}

/// What a run of LU computed, before verification.
#[derive(Debug, Clone, Copy)]
pub struct LuFigures {
    /// RMS norms of the final residual (NPB's `xcr`).
    pub residual_norms: [f64; 5],
    /// RMS norms of the solution's error (NPB's `xce`).
    pub error_norms: [f64; 5],
    /// The surface integral (NPB's `xci`).
    pub surface_integral: f64,
}

impl LuFigures {
    /// The eleven values NPB verifies, with its references.
    pub fn checks(&self, p: &LuParams) -> Vec<CheckedValue> {
        let mut checks = Vec::with_capacity(11);
        for (m, (v, r)) in self.residual_norms.iter().zip(p.residual_norms).enumerate() {
            checks.push(CheckedValue::new(&format!("xcr({})", m + 1), *v, r));
        }
        for (m, (v, r)) in self.error_norms.iter().zip(p.error_norms).enumerate() {
            checks.push(CheckedValue::new(&format!("xce({})", m + 1), *v, r));
        }
        checks.push(CheckedValue::new(
            "xci",
            self.surface_integral,
            p.surface_integral,
        ));
        checks
    }
}

/// Runs NPB LU of `class` on this rank of `comm` (every rank must call
/// it) and verifies it; an unverified run is an error.
pub fn run_lu(class: Class, comm: &dyn Communicator) -> Result<NpbOutcome> {
    let params = LuParams::of(class);
    check_process_count(class, comm.size())?;
    let (figures, elapsed, grid) = {
        let mut s = ssor::Solver::new(comm, &params)?;
        // One untimed step touches every page and warms the caches, as
        // NPB's `ssor(1)` does; then the solution starts again.
        s.residual()?;
        s.rms(&s.rsd.clone())?;
        s.iterate(1)?;
        s.reset();
        s.residual()?;
        s.rms(&s.rsd.clone())?;

        let timer = Timer::start(comm)?;
        let residual_norms = s.iterate(params.iterations)?;
        let elapsed = timer.stop(comm)?;

        let figures = LuFigures {
            residual_norms,
            error_norms: verify::error_norms(&s)?,
            surface_integral: verify::surface_integral(&s)?,
        };
        (figures, elapsed, s.grid)
    };
    let shape = RunShape {
        proc_grid: [grid.xdim, grid.ydim, 1],
        iterations: params.iterations,
        elapsed,
        operations: params.operation_count(),
    };
    let checks = figures.checks(&params);
    NpbOutcome::checked("LU", class, comm, checks, VERIFY_TOLERANCE, shape)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::comm::SerialComm;

    #[test]
    fn class_s_verifies_serially() {
        let out = run_lu(Class::S, &SerialComm::new()).unwrap();
        assert!(out.verified);
        assert_eq!(out.checks.len(), 11);
        assert!(out.relative_error <= VERIFY_TOLERANCE, "{out:?}");
    }

    #[test]
    fn class_s_verifies_on_threads_with_the_serial_figures() {
        crate::npb::test_support::ranks_agree_with_serial(run_lu, Class::S, &[2, 4]);
    }
}
