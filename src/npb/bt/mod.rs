//! NAS BT: time steps of the 3-D compressible Navier-Stokes equations by
//! the Beam-Warming approximate factorisation, each step three sweeps of
//! block-tridiagonal solves (5x5 blocks, one system per grid line);
//! written from NPB 3.4's description, not ported from its code.
//!
//! BT shares with SP (`crate::npb::sp`) everything but the solves: the
//! exact solution and initial field, the right-hand side and forcing
//! term, NPB's multi-partition on square process counts with its face
//! exchange, and the verification norms.
//!
//! * `params`: the class table, NPB's reference values and operation count;
//! * `block`: the 5x5 block inverse and products;
//! * `solve`: the Jacobians, a line's blocks and its elimination;
//! * `sweep`: the pipeline of a sweep over the multi-partition.
//!
//! [`run_bt`] runs the benchmark as NPB does: setup, one untimed step,
//! the solution reset, then `niter` timed steps, verified by five
//! residual norms and five error norms.

mod block;
pub mod params;
mod solve;
mod sweep;

use anyhow::Result;

use super::outcome::{Elapsed, NpbOutcome, RunShape, Timer};
use super::sp::cells::{self, Cell, Layout};
use super::sp::{exchange, rhs, verify, SpFigures};
use super::Class;
use crate::comm::Communicator;
use block::Block;
pub use params::{BtParams, VERIFY_TOLERANCE};
use rhs::Consts;

/// Fails with a usage error when BT of `class` cannot run on `np` ranks
/// (a square count whose cells keep 3 points a side).
pub fn check_process_count(class: Class, np: usize) -> Result<()> {
    cells::check_process_count(BtParams::of(class).n_points, np)
        .map(|_| ())
        .map_err(|e| crate::error::usage(format!("{e:#}").replace("NPB SP", "NPB BT")))
}

/// One rank's part of a BT run: its cells and what a step needs.
struct Solver<'c> {
    comm: &'c dyn Communicator,
    consts: Consts,
    layout: Layout,
    cells: Vec<Cell>,
    /// The normalised upper blocks `C'` of the last sweep, per cell and
    /// padded point.
    cfac: Vec<Vec<Block>>,
    faces: exchange::Buffers,
    lines: sweep::Buffers,
}

impl<'c> Solver<'c> {
    /// Sets up the cells of this rank, the forcing term and the initial
    /// field.
    fn new(comm: &'c dyn Communicator, params: &BtParams) -> Result<Self> {
        let n = params.n_points;
        let p = cells::check_process_count(n, comm.size())?;
        let consts = Consts::new(n, params.dt);
        let (layout, mut cells) = Layout::new(n, p, comm.rank());
        for cell in &mut cells {
            rhs::set_forcing(&consts, cell);
            cell.initialise();
        }
        let cfac = cells
            .iter()
            .map(|c| vec![[[0.0; 5]; 5]; c.aux.len()])
            .collect();
        Ok(Solver {
            comm,
            consts,
            layout,
            cells,
            cfac,
            faces: exchange::Buffers::default(),
            lines: sweep::Buffers::default(),
        })
    }

    /// The faces, then the right-hand side of every cell.
    fn right_hand_side(&mut self) -> Result<()> {
        exchange::copy_faces(self.comm, &self.layout, &mut self.cells, &mut self.faces)?;
        for cell in &mut self.cells {
            rhs::compute_rhs(&self.consts, cell);
        }
        Ok(())
    }

    /// One time step (NPB's `adi`): the right-hand side, the three
    /// sweeps, the update added.
    fn step(&mut self) -> Result<()> {
        self.right_hand_side()?;
        for d in 0..3 {
            let (k, layout) = (&self.consts, &self.layout);
            let (cells, cfac) = (&mut self.cells, &mut self.cfac);
            sweep::sweep(self.comm, k, layout, cells, cfac, d, &mut self.lines)?;
        }
        self.cells.iter_mut().for_each(rhs::add);
        Ok(())
    }
}

/// Runs the time steps of BT `class` on this rank and returns what it
/// computed, the timed section and the slabs per axis.
fn simulate(class: Class, comm: &dyn Communicator) -> Result<(SpFigures, Elapsed, usize)> {
    let params = BtParams::of(class);
    let mut s = Solver::new(comm, &params)?;
    // One untimed step touches every page and warms the caches, as NPB's
    // first `adi` does; then the solution starts again.
    s.step()?;
    s.cells.iter_mut().for_each(Cell::initialise);
    let timer = Timer::start(comm)?;
    for _ in 0..params.iterations {
        s.step()?;
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

/// Runs NPB BT of `class` on this rank of `comm` (every rank must call
/// it) and verifies it; an unverified run is an error.
pub fn run_bt(class: Class, comm: &dyn Communicator) -> Result<NpbOutcome> {
    check_process_count(class, comm.size())?;
    let params = BtParams::of(class);
    let (figures, elapsed, p) = simulate(class, comm)?;
    let shape = RunShape {
        proc_grid: [p, p, 1],
        iterations: params.iterations,
        elapsed,
        operations: params.operation_count(),
    };
    let checks = figures.checks_against(params.residual_norms, params.error_norms);
    NpbOutcome::checked("BT", class, comm, checks, VERIFY_TOLERANCE, shape)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::comm::{SerialComm, ThreadComm};
    use crate::npb::Kernel;

    #[test]
    fn class_s_verifies_serially() {
        let out = run_bt(Class::S, &SerialComm::new()).unwrap();
        assert!(out.verified, "{out:?}");
        assert_eq!(out.checks.len(), 10);
        assert!(out.relative_error <= VERIFY_TOLERANCE, "{out:?}");
    }

    #[test]
    fn class_s_verifies_on_threads_with_the_serial_figures() {
        crate::npb::test_support::ranks_agree_with_serial(run_bt, Class::S, &[4, 9]);
    }

    #[test]
    fn counts_that_are_not_squares_are_refused_naming_bt() {
        for np in [2, 3, 8] {
            let e = check_process_count(Class::S, np).unwrap_err();
            assert_eq!(crate::error::exit_code_of(&e), 2);
            assert!(
                format!("{e:#}").contains("NPB BT runs on a square"),
                "{e:#}"
            );
        }
        check_process_count(Class::S, 9).unwrap();
    }

    /// BT's messages per timed run on `p * p` ranks of a grid of `n`
    /// points: per step the faces (two layers of 5 values across each of
    /// the `p - 1` slab interfaces, both ways, 3 axes; 6 messages a rank)
    /// and the sweeps (`p - 1` stages forward of 30 values per interior
    /// line, `(n - 2)^2` lines a slab, and back of 5; a message per rank
    /// and stage, 3 axes).
    fn bt_traffic(n: u64, steps: u64, p: u64) -> (u64, u64) {
        if p == 1 {
            return (0, 0);
        }
        let bytes = (p - 1) * (3 * 2 * 2 * 5 * n * n + 3 * 35 * (n - 2) * (n - 2)) * 8;
        (steps * bytes, steps * 6 * p * p * p)
    }

    #[test]
    fn ranks_send_the_faces_and_the_pipelines_rows() {
        for (np, p) in [(4, 2), (9, 3)] {
            let outs = ThreadComm::run(np, |c| Kernel::Bt.run(Class::S, c)).unwrap();
            let (bytes, messages) = bt_traffic(12, 60, p);
            for out in outs {
                assert_eq!(out.proc_grid, [p as usize, p as usize, 1]);
                assert_eq!(out.sent_bytes, Some(bytes), "np {np}");
                assert_eq!(out.sent_messages, Some(messages), "np {np}");
            }
        }
        // Class S on 4 ranks by hand: 60 * (69,120 + 84,000) B.
        assert_eq!(bt_traffic(12, 60, 2), (9_187_200, 2_880));
    }
}
