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

/// A plane of points: padded index `at` of `axis`, over `others` of the
/// other in-plane axis and planes `ks`.
struct Plane {
    axis: Axis,
    at: usize,
    others: std::ops::Range<usize>,
    ks: std::ops::Range<usize>,
}

impl Plane {
    /// The offsets of the plane's points, in message order.
    fn points<'b>(&'b self, b: &'b Block) -> impl Iterator<Item = usize> + 'b {
        self.ks.clone().flat_map(move |k| {
            self.others.clone().map(move |o| match self.axis {
                Axis::X => b.at(self.at, o, k),
                Axis::Y => b.at(o, self.at, k),
            })
        })
    }

    /// Copies the plane of `field` into `buf`; returns the count.
    fn pack(&self, b: &Block, field: &[f64], buf: &mut [f64]) -> usize {
        let mut n = 0;
        for p in self.points(b) {
            buf[n..n + NV].copy_from_slice(&field[p..p + NV]);
            n += NV;
        }
        n
    }

    /// Copies `buf` into the plane of `field`.
    fn unpack(&self, b: &Block, field: &mut [f64], buf: &[f64]) {
        for (p, v) in self.points(b).zip(buf.chunks_exact(NV)) {
            field[p..p + NV].copy_from_slice(v);
        }
    }
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
pub fn ghosts(
    comm: &dyn Communicator,
    b: &Block,
    field: &mut [f64],
    bufs: &mut Buffers,
) -> Result<()> {
    for (axis, len, lower, upper, others) in [
        (Axis::X, b.nx, b.north, b.south, b.owned_j()),
        (Axis::Y, b.ny, b.west, b.east, b.owned_i()),
    ] {
        if lower.is_none() && upper.is_none() {
            continue;
        }
        let plane = |at: usize| Plane {
            axis,
            at,
            others: others.clone(),
            ks: 0..b.nz,
        };
        let half = NV * others.len() * b.nz;
        let (send, recv) = (&mut bufs.send[..2 * half], &mut bufs.recv[..2 * half]);
        // Our last two owned planes are the upper neighbour's low ghosts.
        if upper.is_some() {
            plane(GHOST + len - 2).pack(b, field, &mut send[..half]);
            plane(GHOST + len - 1).pack(b, field, &mut send[half..]);
        }
        shift(comm, upper, send, lower, recv)?;
        if lower.is_some() {
            plane(0).unpack(b, field, &recv[..half]);
            plane(1).unpack(b, field, &recv[half..]);
            // Our first two owned planes are the lower neighbour's high
            // ghosts.
            plane(GHOST + 1).pack(b, field, &mut send[..half]);
            plane(GHOST).pack(b, field, &mut send[half..]);
        }
        shift(comm, lower, send, upper, recv)?;
        if upper.is_some() {
            plane(GHOST + len + 1).unpack(b, field, &recv[..half]);
            plane(GHOST + len).unpack(b, field, &recv[half..]);
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

/// The rows of plane `k` a sweep exchanges across x and across y: at
/// padded `x_at` over the interior y points, and at `y_at` over the
/// interior x points.
fn rows(b: &Block, k: usize, x_at: usize, y_at: usize) -> [Plane; 2] {
    [
        Plane {
            axis: Axis::X,
            at: x_at,
            others: b.jst..b.jend + 1,
            ks: k..k + 1,
        },
        Plane {
            axis: Axis::Y,
            at: y_at,
            others: b.ist..b.iend + 1,
            ks: k..k + 1,
        },
    ]
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
    let (from, x_at, y_at) = match sweep {
        Sweep::Lower => ([b.north, b.west], GHOST - 1, GHOST - 1),
        Sweep::Upper => ([b.south, b.east], GHOST + b.nx, GHOST + b.ny),
    };
    for (from, row) in from.into_iter().zip(rows(b, k, x_at, y_at)) {
        if let Some(from) = from {
            let len = NV * row.others.len();
            comm.recv(from, &mut bufs.recv[..len])?;
            row.unpack(b, v, &bufs.recv[..len]);
        }
    }
    Ok(())
}

/// Sends, after plane `k` of a sweep, this block's edge rows of the plane
/// to the downstream neighbours.
pub fn send_downstream(
    comm: &dyn Communicator,
    b: &Block,
    v: &[f64],
    k: usize,
    sweep: Sweep,
    bufs: &mut Buffers,
) -> Result<()> {
    let (to, x_at, y_at) = match sweep {
        Sweep::Lower => ([b.south, b.east], GHOST + b.nx - 1, GHOST + b.ny - 1),
        Sweep::Upper => ([b.north, b.west], GHOST, GHOST),
    };
    for (to, row) in to.into_iter().zip(rows(b, k, x_at, y_at)) {
        if let Some(to) = to {
            let len = row.pack(b, v, &mut bufs.send);
            comm.send(to, &bufs.send[..len])?;
        }
    }
    Ok(())
}
