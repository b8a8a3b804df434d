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
//! The run itself (setup, warm-up step, timed steps, norms) is SP's
//! `run_adi`, given BT's step.
//!
//! [`run_bt`] runs the benchmark as NPB does: setup, one untimed step,
//! the solution reset, then `niter` timed steps, verified by five
//! residual norms and five error norms.

mod block;
pub mod params;
mod solve;
mod sweep;

use anyhow::Result;

use super::outcome::NpbOutcome;
use super::sp::{cells, rhs, run_adi, Solver};
use super::Class;
use crate::comm::Communicator;
use block::Block;
pub use params::{BtParams, VERIFY_TOLERANCE};

/// Fails with a usage error when BT of `class` cannot run on `np` ranks
/// (a square count whose cells keep 3 points a side).
pub fn check_process_count(class: Class, np: usize) -> Result<()> {
    cells::check_process_count("BT", params::of(class).n_points, np).map(|_| ())
}

/// What BT adds to SP's state: the sweeps' `C'` blocks and buffers.
#[derive(Default)]
struct Implicit {
    /// The normalised upper blocks `C'` of the current sweep, per cell
    /// and padded point (allocated at the first step, untimed).
    cfac: Vec<Vec<Block>>,
    lines: sweep::Buffers,
}

impl Implicit {
    /// One time step (NPB's `adi`): the right-hand side, the three
    /// sweeps, the update added.
    fn step(&mut self, s: &mut Solver) -> Result<()> {
        if self.cfac.is_empty() {
            let blocks = |c: &cells::Cell| vec![[[0.0; 5]; 5]; c.aux.len()];
            self.cfac = s.cells.iter().map(blocks).collect();
        }
        s.right_hand_side()?;
        for d in 0..3 {
            let (k, layout, cells) = (&s.consts, &s.layout, &mut s.cells);
            sweep::sweep(s.comm, k, layout, cells, &mut self.cfac, d, &mut self.lines)?;
        }
        s.cells.iter_mut().for_each(rhs::add);
        Ok(())
    }
}

/// Runs NPB BT of `class` on this rank of `comm` (every rank must call
/// it) and verifies it; an unverified run is an error.
pub fn run_bt(class: Class, comm: &dyn Communicator) -> Result<NpbOutcome> {
    let mut implicit = Implicit::default();
    run_adi("BT", &params::of(class), comm, |s| implicit.step(s))
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
