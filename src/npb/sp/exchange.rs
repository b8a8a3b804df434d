//! SP's messages: the two-deep faces of every cell before each
//! right-hand side (NPB's `copy_faces`: one message per rank and
//! direction, six per step, holding the faces of all its cells), and the
//! pipeline of each line sweep, one message per stage carrying the
//! boundary rows of all the lines of a cell (NPB's `x_solve` and its
//! siblings: `p - 1` stages forward, `p - 1` back, per axis).
//!
//! Every exchange is a `sendrecv` with the same partner pattern on every
//! rank (a shift along a ring of ranks), so none can deadlock.

use anyhow::Result;

use super::adi::{
    across, backward, forward, line_count, line_starts, Scratch, BACKWARD_CARRY, FORWARD_CARRY,
};
use super::cells::{Cell, Layout, GHOST, NV};
use super::rhs::Consts;
use crate::comm::Communicator;

/// Message buffers, grown once to the largest message.
#[derive(Debug, Default)]
pub struct Buffers {
    send: Vec<f64>,
    recv: Vec<f64>,
    scratch: Scratch,
    lines: Vec<usize>,
}

/// Copies, or with `into` fills, the layers `layers` along axis `d` of
/// `cell.u` (all owned points across) from or into `buf`; returns how
/// many values it moved.
fn face(cell: &mut Cell, d: usize, layers: [usize; 2], buf: &mut [f64], into: bool) -> usize {
    let mut n = 0;
    let (ranges, mut at) = ([cell.owned(0), cell.owned(1), cell.owned(2)], [0; 3]);
    for layer in layers {
        at[d] = layer;
        let (a, b) = across(d);
        for y in ranges[b].clone() {
            for x in ranges[a].clone() {
                at[a] = x;
                at[b] = y;
                let p = NV * cell.point(at[0], at[1], at[2]);
                if into {
                    cell.u[p..p + NV].copy_from_slice(&buf[n..n + NV]);
                } else {
                    buf[n..n + NV].copy_from_slice(&cell.u[p..p + NV]);
                }
                n += NV;
            }
        }
    }
    n
}

/// Fills the ghost faces of every cell from the cells next to it (NPB's
/// `copy_faces`); nothing moves on one rank, whose single cell is the
/// whole grid.
pub fn copy_faces(
    comm: &dyn Communicator,
    layout: &Layout,
    cells: &mut [Cell],
    bufs: &mut Buffers,
) -> Result<()> {
    let p = layout.p;
    if p == 1 {
        return Ok(());
    }
    let largest: usize = cells
        .iter()
        .map(|c| 2 * NV * c.size.iter().product::<usize>() / c.size.iter().min().unwrap())
        .sum();
    grow(&mut bufs.send, largest);
    grow(&mut bufs.recv, largest);
    for d in 0..3 {
        // Upward: our last two layers are the next cell's low ghosts.
        for upward in [true, false] {
            let (to, from) = if upward {
                (layout.succ[d], layout.pred[d])
            } else {
                (layout.pred[d], layout.succ[d])
            };
            let (mut sent, mut expect) = (0, 0);
            for cell in cells.iter_mut() {
                let top = GHOST + cell.size[d];
                if upward && cell.coord[d] + 1 < p {
                    sent += face(cell, d, [top - 2, top - 1], &mut bufs.send[sent..], false);
                }
                if !upward && cell.coord[d] > 0 {
                    sent += face(cell, d, [GHOST, GHOST + 1], &mut bufs.send[sent..], false);
                }
                let receives = if upward {
                    cell.coord[d] > 0
                } else {
                    cell.coord[d] + 1 < p
                };
                if receives {
                    expect += 2 * NV * cell.size.iter().product::<usize>() / cell.size[d];
                }
            }
            comm.sendrecv(to, &bufs.send[..sent], from, &mut bufs.recv[..expect])?;
            let mut got = 0;
            for cell in cells.iter_mut() {
                let top = GHOST + cell.size[d];
                if upward && cell.coord[d] > 0 {
                    got += face(cell, d, [0, 1], &mut bufs.recv[got..], true);
                }
                if !upward && cell.coord[d] + 1 < p {
                    got += face(cell, d, [top, top + 1], &mut bufs.recv[got..], true);
                }
            }
        }
    }
    Ok(())
}

fn grow(buf: &mut Vec<f64>, len: usize) {
    if buf.len() < len {
        buf.resize(len, 0.0);
    }
}

/// Solves the systems of every line along axis `d`: the forward
/// elimination stage by stage through this rank's cells from the low
/// slab up, each stage's boundary rows sent on to the successor, then the
/// back substitution from the high slab down, each stage's first rows
/// sent back to the predecessor.
pub fn sweep(
    comm: &dyn Communicator,
    k: &Consts,
    layout: &Layout,
    cells: &mut [Cell],
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
        line_starts(&cells[c], d, &mut bufs.lines);
        let lines = &bufs.lines;
        if s > 0 {
            let sent = FORWARD_CARRY * lines_of(cells, s - 1);
            let want = FORWARD_CARRY * lines.len();
            let (to, from) = (layout.succ[d], layout.pred[d]);
            comm.sendrecv(to, &bufs.send[..sent], from, &mut bufs.recv[..want])?;
        }
        let out_len = if s + 1 < p { FORWARD_CARRY } else { 0 };
        for (l, &first) in lines.iter().enumerate() {
            let carry_in = (s > 0).then(|| &bufs.recv[FORWARD_CARRY * l..FORWARD_CARRY * (l + 1)]);
            let out = &mut bufs.send[out_len * l..out_len * (l + 1)];
            forward(k, &mut cells[c], d, first, &mut bufs.scratch, carry_in, out);
        }
    }
    for s in (0..p).rev() {
        let c = layout.slice[d][s];
        line_starts(&cells[c], d, &mut bufs.lines);
        let lines = &bufs.lines;
        if s + 1 < p {
            let sent = BACKWARD_CARRY * lines_of(cells, s + 1);
            let want = BACKWARD_CARRY * lines.len();
            let (to, from) = (layout.pred[d], layout.succ[d]);
            comm.sendrecv(to, &bufs.send[..sent], from, &mut bufs.recv[..want])?;
        }
        let out_len = if s > 0 { BACKWARD_CARRY } else { 0 };
        for (l, &first) in lines.iter().enumerate() {
            let carry_in =
                (s + 1 < p).then(|| &bufs.recv[BACKWARD_CARRY * l..BACKWARD_CARRY * (l + 1)]);
            let out = &mut bufs.send[out_len * l..out_len * (l + 1)];
            backward(&mut cells[c], d, first, &mut bufs.scratch, carry_in, out);
        }
    }
    Ok(())
}
