//! NAS SP: time steps of the 3-D compressible Navier-Stokes equations by
//! the Beam-Warming approximate factorisation, each step three sweeps of
//! scalar pentadiagonal solves (ADI) after a diagonalisation of the
//! implicit operator; written from NPB 3.4's description, not ported from
//! its code.
//!
//! Over several ranks SP uses NPB's multi-partition: `p * p` ranks, each
//! holding `p` cells on a diagonal of the `p^3` cells, so that a sweep
//! along any axis keeps every rank busy; each stage hands the two
//! boundary rows of every line of a cell to the next rank.
//!
//! * `params`: the class table, NPB's reference values and operation count;
//! * `cells`: the multi-partition, the cells and their fields;
//! * `rhs`: the spatial operator, the forcing term, the changes of variables;
//! * `adi`: the pentadiagonal systems of a line and their solve;
//! * `exchange`: the face exchange and the sweep pipeline;
//! * `verify`: the residual and error norms.
//!
//! [`run_sp`] runs the benchmark as NPB does: setup, one untimed step,
//! the solution reset, then `niter` timed steps, verified by five
//! residual norms and five error norms.

// The grid, the right-hand side, the face exchange and the norms serve
// BT as well (the same equations and partition; only the solves differ).
pub(crate) mod adi;
pub(crate) mod cells;
mod exchange;
mod lanes;
pub mod params;
pub(crate) mod pipeline;
pub(crate) mod rhs;
mod verify;

use anyhow::Result;

use super::outcome::{CheckedValue, NpbOutcome, RunShape, Timer};
use super::Class;
use crate::comm::Communicator;
use cells::{Cell, Layout};
use exchange::Buffers;
pub use params::{SpParams, VERIFY_TOLERANCE};
use rhs::Consts;

/// Fails with a usage error when SP of `class` cannot run on `np` ranks
/// (a square count whose cells keep 3 points a side).
pub fn check_process_count(class: Class, np: usize) -> Result<()> {
    cells::check_process_count("SP", SpParams::of(class).n_points, np).map(|_| ())
}

/// One rank's part of an SP or BT run: its cells and what a step needs
/// besides the implicit solves.
pub(crate) struct Solver<'c> {
    /// The ranks of the run.
    pub comm: &'c dyn Communicator,
    /// The discretisation's constants.
    pub consts: Consts,
    /// This rank's place in the multi-partition.
    pub layout: Layout,
    /// This rank's cells.
    pub cells: Vec<Cell>,
    /// The face exchange's buffers (and SP's sweeps').
    pub bufs: Buffers,
}

impl<'c> Solver<'c> {
    /// Sets up the cells of this rank, the forcing term and the initial
    /// field.
    fn new(name: &str, comm: &'c dyn Communicator, params: &SpParams) -> Result<Self> {
        let n = params.n_points;
        let p = cells::check_process_count(name, n, comm.size())?;
        let consts = Consts::new(n, params.dt);
        let (layout, mut cells) = Layout::new(n, p, comm.rank());
        for cell in &mut cells {
            rhs::set_forcing(&consts, cell);
            cell.initialise();
        }
        Ok(Solver {
            comm,
            consts,
            layout,
            cells,
            bufs: Buffers::default(),
        })
    }

    /// The faces, then the right-hand side of every cell.
    pub fn right_hand_side(&mut self) -> Result<()> {
        exchange::copy_faces(self.comm, &self.layout, &mut self.cells, &mut self.bufs)?;
        for cell in &mut self.cells {
            rhs::compute_rhs(&self.consts, cell);
        }
        Ok(())
    }

    /// One time step (NPB's `adi`).
    fn step(&mut self) -> Result<()> {
        self.right_hand_side()?;
        self.cells.iter_mut().for_each(rhs::txinvr);
        let after: [fn(&mut Cell); 3] = [rhs::ninvr, rhs::pinvr, rhs::tzetar];
        for (d, change) in after.into_iter().enumerate() {
            let (k, layout) = (&self.consts, &self.layout);
            exchange::sweep(self.comm, k, layout, &mut self.cells, d, &mut self.bufs)?;
            self.cells.iter_mut().for_each(change);
        }
        self.cells.iter_mut().for_each(rhs::add);
        Ok(())
    }

    /// The solution back to the initial field.
    fn reset(&mut self) {
        self.cells.iter_mut().for_each(Cell::initialise);
    }
}

/// What a run of SP or BT computed, before verification.
#[derive(Debug, Clone, Copy)]
pub struct SpFigures {
    /// RMS norms of the final right-hand side over `dt` (NPB's `xcr`).
    pub residual_norms: [f64; 5],
    /// RMS norms of the solution's error (NPB's `xce`).
    pub error_norms: [f64; 5],
}

impl SpFigures {
    /// The ten values NPB verifies, with its references.
    pub fn checks(&self, p: &SpParams) -> Vec<CheckedValue> {
        let named = |prefix: &str, values: [f64; 5], refs: [f64; 5]| {
            (0..5)
                .map(|m| CheckedValue::new(&format!("{prefix}({})", m + 1), values[m], refs[m]))
                .collect::<Vec<_>>()
        };
        let mut checks = named("xcr", self.residual_norms, p.residual_norms);
        checks.extend(named("xce", self.error_norms, p.error_norms));
        checks
    }
}

/// Runs the time steps of `params` on this rank, each by `step`, and
/// returns what it computed, the timed section and the slabs per axis.
fn simulate(
    name: &str,
    params: &SpParams,
    comm: &dyn Communicator,
    mut step: impl FnMut(&mut Solver) -> Result<()>,
) -> Result<(SpFigures, super::outcome::Elapsed, usize)> {
    let mut s = Solver::new(name, comm, params)?;
    // One untimed step touches every page and warms the caches, as NPB's
    // first `adi` does; then the solution starts again.
    step(&mut s)?;
    s.reset();
    let timer = Timer::start(comm)?;
    for _ in 0..params.iterations {
        step(&mut s)?;
    }
    let elapsed = timer.stop(comm)?;
    let error_norms = verify::error_norms(comm, &s.cells)?;
    s.right_hand_side()?;
    let residual_norms = verify::residual_norms(comm, &s.consts, &s.cells)?;
    let figures = SpFigures {
        residual_norms,
        error_norms,
    };
    Ok((figures, elapsed, s.layout.p))
}

/// Runs the ADI benchmark `name` ("SP", "BT") of `params` on this rank
/// of `comm`, each time step by `step`, and verifies it against NPB's
/// ten values; an unverified run is an error.
pub(crate) fn run_adi(
    name: &'static str,
    params: &SpParams,
    comm: &dyn Communicator,
    step: impl FnMut(&mut Solver) -> Result<()>,
) -> Result<NpbOutcome> {
    cells::check_process_count(name, params.n_points, comm.size())?;
    let (figures, elapsed, p) = simulate(name, params, comm, step)?;
    let shape = RunShape {
        proc_grid: [p, p, 1],
        iterations: params.iterations,
        elapsed,
        operations: params.operation_count(),
    };
    let checks = figures.checks(params);
    NpbOutcome::checked(name, params.class, comm, checks, VERIFY_TOLERANCE, shape)
}

/// Runs NPB SP of `class` on this rank of `comm` (every rank must call
/// it) and verifies it; an unverified run is an error.
pub fn run_sp(class: Class, comm: &dyn Communicator) -> Result<NpbOutcome> {
    run_adi("SP", &SpParams::of(class), comm, |s| s.step())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::comm::SerialComm;

    #[test]
    fn class_s_verifies_serially() {
        let out = run_sp(Class::S, &SerialComm::new()).unwrap();
        assert!(out.verified);
        assert_eq!(out.checks.len(), 10);
        assert!(out.relative_error <= VERIFY_TOLERANCE, "{out:?}");
    }

    #[test]
    fn class_s_verifies_on_threads_with_the_serial_figures() {
        crate::npb::test_support::ranks_agree_with_serial(run_sp, Class::S, &[4, 9]);
    }
}

#[cfg(test)]
mod traffic_tests {
    use super::*;
    use crate::comm::ThreadComm;
    use crate::npb::Kernel;

    /// NPB SP's messages per timed run on `p * p` ranks of a grid of `n`
    /// points: per step the faces (two layers of 5 values across each of
    /// the `p - 1` slab interfaces, both ways, 3 axes; 6 messages a rank)
    /// and the sweeps (`p - 1` stages forward of 22 values per interior
    /// line, `(n - 2)^2` lines a slab, and back of 10; a message per rank
    /// and stage, 3 axes).
    fn npb_traffic(n: u64, steps: u64, p: u64) -> (u64, u64) {
        if p == 1 {
            return (0, 0);
        }
        let bytes = (p - 1) * (3 * 2 * 2 * 5 * n * n + 3 * 32 * (n - 2) * (n - 2)) * 8;
        (steps * bytes, steps * 6 * p * p * p)
    }

    #[test]
    fn ranks_send_what_npbs_multi_partition_sends() {
        for (np, p) in [(4, 2), (9, 3)] {
            let outs = ThreadComm::run(np, |c| Kernel::Sp.run(Class::S, c)).unwrap();
            let (bytes, messages) = npb_traffic(12, 100, p);
            for out in outs {
                assert_eq!(out.proc_grid, [p as usize, p as usize, 1]);
                assert_eq!(out.sent_bytes, Some(bytes), "np {np}");
                assert_eq!(out.sent_messages, Some(messages), "np {np}");
            }
        }
        // Class S on 4 ranks by hand: 14,592,000 B in 4,800 messages.
        assert_eq!(npb_traffic(12, 100, 2), (14_592_000, 4_800));
    }
}
