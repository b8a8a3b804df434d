//! BT's line-solve pipeline over the multi-partition (NPB's `x_solve`
//! and its siblings): the forward elimination stage by stage through this
//! rank's cells from the low slab up, each stage's last rows (30 values a
//! line) sent on to the successor; then the back substitution from the
//! high slab down, each stage's first solved rows (5 a line) sent back to
//! the predecessor. `p - 1` messages each way per axis and rank.
//!
//! Every exchange is a `sendrecv` with the same partner pattern on every
//! rank (a shift along a ring of ranks), so none can deadlock.

use anyhow::Result;

use super::block::Block;
use super::solve::{backward, forward, Part, Scratch, BACKWARD_CARRY, FORWARD_CARRY};
use crate::comm::Communicator;
use crate::npb::sp::adi::{line_count, line_starts};
use crate::npb::sp::cells::{Cell, Layout};
use crate::npb::sp::rhs::Consts;

/// Message buffers and scratch, grown once to the largest need.
#[derive(Debug, Default)]
pub struct Buffers {
    send: Vec<f64>,
    recv: Vec<f64>,
    scratch: Scratch,
    lines: Vec<usize>,
}

fn grow(buf: &mut Vec<f64>, len: usize) {
    if buf.len() < len {
        buf.resize(len, 0.0);
    }
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

/// Solves the systems of every line along axis `d` over all ranks;
/// `cfac[c]` holds the `C'` blocks of cell `c`.
pub fn sweep(
    comm: &dyn Communicator,
    k: &Consts,
    layout: &Layout,
    cells: &mut [Cell],
    cfac: &mut [Vec<Block>],
    d: usize,
    bufs: &mut Buffers,
) -> Result<()> {
    let p = layout.p;
    let lines_of = |cells: &[Cell], s: usize| line_count(&cells[layout.slice[d][s]], d);
    let most = (0..p).map(|s| lines_of(cells, s)).max().unwrap_or(0);
    grow(&mut bufs.send, FORWARD_CARRY * most);
    grow(&mut bufs.recv, FORWARD_CARRY * most);
    for s in 0..p {
        let c = layout.slice[d][s];
        let (rows, stride) = parts(&cells[c], d, &mut bufs.lines);
        if s > 0 {
            let sent = FORWARD_CARRY * lines_of(cells, s - 1);
            let want = FORWARD_CARRY * bufs.lines.len();
            let (to, from) = (layout.succ[d], layout.pred[d]);
            comm.sendrecv(to, &bufs.send[..sent], from, &mut bufs.recv[..want])?;
        }
        let out_len = if s + 1 < p { FORWARD_CARRY } else { 0 };
        for (l, &first) in bufs.lines.iter().enumerate() {
            let part = Part {
                first,
                stride,
                rows,
            };
            let carry_in = (s > 0).then(|| &bufs.recv[FORWARD_CARRY * l..FORWARD_CARRY * (l + 1)]);
            let out = &mut bufs.send[out_len * l..out_len * (l + 1)];
            let (cell, fac) = (&mut cells[c], &mut cfac[c]);
            forward(k, cell, fac, d, part, &mut bufs.scratch, carry_in, out);
        }
    }
    for s in (0..p).rev() {
        let c = layout.slice[d][s];
        let (rows, stride) = parts(&cells[c], d, &mut bufs.lines);
        if s + 1 < p {
            let sent = BACKWARD_CARRY * lines_of(cells, s + 1);
            let want = BACKWARD_CARRY * bufs.lines.len();
            let (to, from) = (layout.pred[d], layout.succ[d]);
            comm.sendrecv(to, &bufs.send[..sent], from, &mut bufs.recv[..want])?;
        }
        let out_len = if s > 0 { BACKWARD_CARRY } else { 0 };
        for (l, &first) in bufs.lines.iter().enumerate() {
            let part = Part {
                first,
                stride,
                rows,
            };
            let carry_in =
                (s + 1 < p).then(|| &bufs.recv[BACKWARD_CARRY * l..BACKWARD_CARRY * (l + 1)]);
            let out = &mut bufs.send[out_len * l..out_len * (l + 1)];
            backward(&mut cells[c], &cfac[c], part, carry_in, out);
        }
    }
    Ok(())
}
