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
    across, backward, forward, forward_built, line_starts, prepare, Scratch, BACKWARD_CARRY,
    FORWARD_CARRY,
};
use super::cells::{Cell, Layout, GHOST, NV};
use super::lanes::{solve_cell, LaneScratch};
use super::pipeline::{self, Carries, Pipe};
use super::rhs::Consts;
use crate::comm::Communicator;

/// Message buffers, grown once to the largest message.
#[derive(Debug, Default)]
pub struct Buffers {
    send: Vec<f64>,
    recv: Vec<f64>,
    scratch: Scratch,
    lanes: LaneScratch,
    pipe: Pipe,
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

/// Solves the systems of every line along axis `d` through the shared
/// stage pipeline ([`super::pipeline`]): 22 values a line forward (two
/// eliminated rows of the three systems' coefficients and right-hand
/// sides), 10 back (two solved rows of five unknowns).
pub fn sweep(
    comm: &dyn Communicator,
    k: &Consts,
    layout: &Layout,
    cells: &mut [Cell],
    d: usize,
    bufs: &mut Buffers,
) -> Result<()> {
    if layout.p == 1 {
        // One rank: no stage hands anything on, so lines go in pairs.
        for cell in cells.iter_mut() {
            solve_cell(k, cell, d, &mut bufs.scratch, &mut bufs.lanes);
        }
        return Ok(());
    }
    let carries = Carries {
        forward: FORWARD_CARRY,
        backward: BACKWARD_CARRY,
    };
    pipeline::run(
        comm,
        layout,
        cells,
        d,
        &mut bufs.pipe,
        carries,
        &mut bufs.scratch,
        line_starts,
        Some(
            &|cells: &[Cell], scratch: &mut Scratch, line: pipeline::Line<()>, l| {
                prepare(k, &cells[line.cell], d, line.first, l, scratch)
            },
        ),
        |cells, scratch, line, carry_in, out| {
            let cell = &mut cells[line.cell];
            match line.built {
                Some(l) => forward_built(cell, d, line.first, l, scratch, carry_in, out),
                None => forward(k, cell, d, line.first, scratch, carry_in, out),
            }
        },
        |cells, scratch, line, carry_in, out| {
            backward(&mut cells[line.cell], d, line.first, scratch, carry_in, out)
        },
    )
}
