//! BT's line-solve pipeline over the multi-partition (NPB's `x_solve`
//! and its siblings): the forward elimination stage by stage through this
//! rank's cells from the low slab up, each stage's last rows (30 values a
//! line) sent on to the successor; then the back substitution from the
//! high slab down, each stage's first solved rows (5 a line) sent back to
//! the predecessor. `p - 1` messages each way per axis and rank.
//!
//! The stages and their messages are SP's ([`crate::npb::sp::pipeline`]);
//! what BT adds is the carries' width and the block elimination.

use anyhow::Result;

use super::block::Block;
use super::solve::{backward, forward, Part, Scratch, BACKWARD_CARRY, FORWARD_CARRY};
use crate::comm::Communicator;
use crate::npb::sp::adi::line_starts;
use crate::npb::sp::cells::{Cell, Layout};
use crate::npb::sp::pipeline::{self, Carries, Line, Pipe};
use crate::npb::sp::rhs::Consts;

/// The pipeline's buffers and the elimination's scratch.
#[derive(Debug, Default)]
pub struct Buffers {
    pipe: Pipe,
    scratch: Scratch,
}

/// The parts of the lines of `cell` along `d`, as the first interior
/// point of each (in the order every rank uses for messages), into
/// `firsts`; returns the rows and stride the parts share.
fn parts(cell: &Cell, d: usize, firsts: &mut Vec<usize>) -> (usize, usize) {
    line_starts(cell, d, firsts);
    let stride = cell.stride(d);
    let skip = (cell.interior(d).start - cell.owned(d).start) * stride;
    for f in firsts.iter_mut() {
        *f += skip;
    }
    (cell.interior(d).len(), stride)
}

/// Solves the systems of every line along axis `d` over all ranks through
/// SP's stage pipeline; `cfac[c]` holds the `C'` blocks of cell `c`.
pub fn sweep(
    comm: &dyn Communicator,
    k: &Consts,
    layout: &Layout,
    cells: &mut [Cell],
    cfac: &mut [Vec<Block>],
    d: usize,
    bufs: &mut Buffers,
) -> Result<()> {
    let carries = Carries {
        forward: FORWARD_CARRY,
        backward: BACKWARD_CARRY,
    };
    let part = |line: &Line<(usize, usize)>| Part {
        first: line.first,
        rows: line.shape.0,
        stride: line.shape.1,
    };
    pipeline::run(
        comm,
        layout,
        cells,
        d,
        &mut bufs.pipe,
        carries,
        &mut (&mut bufs.scratch, cfac),
        parts,
        None,
        |cells, (scratch, cfac), line, carry_in, out| {
            let (cell, fac) = (&mut cells[line.cell], &mut cfac[line.cell]);
            forward(k, cell, fac, d, part(&line), scratch, carry_in, out)
        },
        |cells, (_, cfac), line, carry_in, out| {
            backward(
                &mut cells[line.cell],
                &cfac[line.cell],
                part(&line),
                carry_in,
                out,
            )
        },
    )
}
