//! LU's messages: the two-deep ghost planes of the solution before each
//! residual (NPB's `exchange_3`), and the wavefront of the SSOR sweeps,
//! one row of the current z plane to each downstream neighbour (NPB's
//! `exchange_1`): the small messages, 5 values per point of a block's
//! edge, that make LU sensitive to latency.
//!
//! Sends go downstream only, so the pipeline has no cycle: a send that
//! blocks until its receiver is ready cannot deadlock. The ghost exchange
//! shifts along a chain of ranks, middle ranks using `sendrecv`.

use anyhow::Result;

use super::grid::{Block, GHOST, NV};
use crate::comm::Communicator;

/// Message buffers, sized once for the largest message.
#[derive(Debug)]
pub struct Buffers {
    send: Vec<f64>,
    recv: Vec<f64>,
}

impl Buffers {
    /// Buffers for the messages of block `b`.
    pub fn new(b: &Block) -> Self {
        let largest = 2 * NV * b.nx.max(b.ny) * b.nz;
        Buffers {
            send: vec![0.0; largest],
            recv: vec![0.0; largest],
        }
    }
}

/// Which axis a plane or row runs across: x planes hold fixed `i`.
#[derive(Clone, Copy)]
enum Axis {
    X,
    Y,
}

/// Copies (or, with `store`, writes back) the values at padded index
/// `at` of `axis`, over `others` of the other in-plane axis and planes
/// `ks`, into `buf` in order; returns the count.
fn copy_plane(
    b: &Block,
    field: &mut [f64],
    axis: Axis,
    at: usize,
    others: std::ops::Range<usize>,
    ks: std::ops::Range<usize>,
    buf: &mut [f64],
    store: bool,
) -> usize {
    let mut n = 0;
    for k in ks {
        for o in others.clone() {
            let p = match axis {
                Axis::X => b.at(at, o, k),
                Axis::Y => b.at(o, at, k),
            };
            if store {
                field[p..p + NV].copy_from_slice(&buf[n..n + NV]);
            } else {
                buf[n..n + NV].copy_from_slice(&field[p..p + NV]);
            }
            n += NV;
        }
    }
    n
}

/// Sends `send` to `to` and receives `recv` from `from`, either of which
/// may be absent (the ends of a chain).
fn shift(
    comm: &dyn Communicator,
    to: Option<usize>,
    send: &[f64],
    from: Option<usize>,
    recv: &mut [f64],
) -> Result<()> {
    match (to, from) {
        (Some(t), Some(f)) => comm.sendrecv(t, send, f, recv),
        (Some(t), None) => comm.send(t, send),
        (None, Some(f)) => comm.recv(f, recv),
        (None, None) => Ok(()),
    }
}

/// Fills the two ghost layers of `field` in x and y from the neighbours'
/// owned points, over all planes.
pub fn ghosts(comm: &dyn Communicator, b: &Block, field: &mut [f64], bufs: &mut Buffers) -> Result<()> {
    let all_k = 0..b.nz;
    for (axis, len, lower, upper, others) in [
        (Axis::X, b.nx, b.north, b.south, b.owned_j()),
        (Axis::Y, b.ny, b.west, b.east, b.owned_i()),
    ] {
        if lower.is_none() && upper.is_none() {
            continue;
        }
        // Our last two owned planes are the upper neighbour's low ghosts.
        let count = 2 * NV * others.len() * b.nz;
        let (send, recv) = (&mut bufs.send[..count], &mut bufs.recv[..count]);
        let half = count / 2;
        if upper.is_some() {
            for (d, plane) in [GHOST + len - 2, GHOST + len - 1].into_iter().enumerate() {
                let part = &mut send[d * half..(d + 1) * half];
                copy_plane(b, field, axis, plane, others.clone(), all_k.clone(), part, false);
            }
        }
        shift(comm, upper, send, lower, recv)?;
        if lower.is_some() {
            for (d, plane) in [0, 1].into_iter().enumerate() {
                let part = &mut recv[d * half..(d + 1) * half];
                copy_plane(b, field, axis, plane, others.clone(), all_k.clone(), part, true);
            }
        }
        // Our first two owned planes are the lower neighbour's high ghosts.
        if lower.is_some() {
            for (d, plane) in [GHOST + 1, GHOST].into_iter().enumerate() {
                let part = &mut send[d * half..(d + 1) * half];
                copy_plane(b, field, axis, plane, others.clone(), all_k.clone(), part, false);
            }
        }
        shift(comm, lower, send, upper, recv)?;
        if upper.is_some() {
            let planes = [GHOST + len + 1, GHOST + len];
            for (d, plane) in planes.into_iter().enumerate() {
                let part = &mut recv[d * half..(d + 1) * half];
                copy_plane(b, field, axis, plane, others.clone(), all_k.clone(), part, true);
            }
        }
    }
    Ok(())
}

/// The direction a sweep runs: the lower sweep takes its upstream rows
/// from the ranks below in x and y, the upper sweep from those above.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Sweep {
    /// Increasing x, y, z (NPB's `blts`).
    Lower,
    /// Decreasing x, y, z (NPB's `buts`).
    Upper,
}

/// Receives, before plane `k` of a sweep, the rows of the upstream
/// neighbours' plane `k` into the ghost row next to this block.
pub fn receive_upstream(
    comm: &dyn Communicator,
    b: &Block,
    v: &mut [f64],
    k: usize,
    sweep: Sweep,
    bufs: &mut Buffers,
) -> Result<()> {
    let (from_x, ghost_x, from_y, ghost_y) = match sweep {
        Sweep::Lower => (b.north, GHOST - 1, b.west, GHOST - 1),
        Sweep::Upper => (b.south, GHOST + b.nx, b.east, GHOST + b.ny),
    };
    if let Some(from) = from_x {
        let len = NV * (b.jend + 1 - b.jst);
        comm.recv(from, &mut bufs.recv[..len])?;
        copy_plane(b, v, Axis::X, ghost_x, b.jst..b.jend + 1, k..k + 1, &mut bufs.recv, true);
    }
    if let Some(from) = from_y {
        let len = NV * (b.iend + 1 - b.ist);
        comm.recv(from, &mut bufs.recv[..len])?;
        copy_plane(b, v, Axis::Y, ghost_y, b.ist..b.iend + 1, k..k + 1, &mut bufs.recv, true);
    }
    Ok(())
}

/// Sends, after plane `k` of a sweep, this block's edge rows of the plane
/// to the downstream neighbours.
pub fn send_downstream(
    comm: &dyn Communicator,
    b: &Block,
    v: &mut [f64],
    k: usize,
    sweep: Sweep,
    bufs: &mut Buffers,
) -> Result<()> {
    let (to_x, edge_x, to_y, edge_y) = match sweep {
        Sweep::Lower => (b.south, GHOST + b.nx - 1, b.east, GHOST + b.ny - 1),
        Sweep::Upper => (b.north, GHOST, b.west, GHOST),
    };
    if let Some(to) = to_x {
        let ks = k..k + 1;
        let len = copy_plane(b, v, Axis::X, edge_x, b.jst..b.jend + 1, ks, &mut bufs.send, false);
        comm.send(to, &bufs.send[..len])?;
    }
    if let Some(to) = to_y {
        let ks = k..k + 1;
        let len = copy_plane(b, v, Axis::Y, edge_y, b.ist..b.iend + 1, ks, &mut bufs.send, false);
        comm.send(to, &bufs.send[..len])?;
    }
    Ok(())
}
