//! Ghost layers: the periodic halo exchange of one block, and the moves
//! between distributed and replicated levels.
//!
//! The exchange goes one axis at a time, x, then y, then z, as NPB's
//! `comm3` does. The x planes cover the interior of y and z; the y planes
//! all of x (ghosts included, just filled) and the interior of z; the z
//! planes all of x and y. So edges and corners arrive with the faces, in
//! three pairs of messages instead of 26.
//!
//! Along an axis that is not split the neighbour is oneself, and the
//! exchange is a local periodic copy with no message (this is the whole
//! exchange of a serial run and of replicated levels).

use super::decomp::{Decomposition, AXES};
use super::kernels::Shape;
use crate::comm::Communicator;
use anyhow::Result;

/// Message buffers for halo exchanges, sized once for the largest plane.
#[derive(Debug)]
pub struct HaloBuffers {
    send_low: Vec<f64>,
    send_high: Vec<f64>,
    recv_low: Vec<f64>,
    recv_high: Vec<f64>,
}

impl HaloBuffers {
    /// Buffers for planes of blocks up to `largest` (ghosts included).
    pub fn new(largest: Shape) -> Self {
        let [n1, n2, n3] = largest.n;
        let plane = (n1 * n2).max(n1 * n3).max(n2 * n3);
        HaloBuffers {
            send_low: vec![0.0; plane],
            send_high: vec![0.0; plane],
            recv_low: vec![0.0; plane],
            recv_high: vec![0.0; plane],
        }
    }
}

/// Number of values in the plane sent along `axis` (see the module doc).
fn plane_len(s: Shape, axis: usize) -> usize {
    let [n1, n2, n3] = s.n;
    match axis {
        0 => (n2 - 2) * (n3 - 2),
        1 => n1 * (n3 - 2),
        _ => n1 * n2,
    }
}

/// Copies the plane at index `at` along `axis` into `buf`.
fn pack(s: Shape, data: &[f64], axis: usize, at: usize, buf: &mut [f64]) {
    let [n1, n2, n3] = s.n;
    match axis {
        0 => {
            let rows = (1..n3 - 1).flat_map(|z| (1..n2 - 1).map(move |y| (y, z)));
            for (slot, (y, z)) in buf.iter_mut().zip(rows) {
                *slot = data[s.at(at, y, z)];
            }
        }
        1 => {
            for (chunk, z) in buf.chunks_exact_mut(n1).zip(1..n3 - 1) {
                let from = s.row(at, z);
                chunk.copy_from_slice(&data[from..from + n1]);
            }
        }
        _ => {
            let from = s.row(0, at);
            buf.copy_from_slice(&data[from..from + n1 * n2]);
        }
    }
}

/// Copies `buf` into the plane at index `at` along `axis`.
fn unpack(s: Shape, data: &mut [f64], axis: usize, at: usize, buf: &[f64]) {
    let [n1, n2, n3] = s.n;
    match axis {
        0 => {
            let rows = (1..n3 - 1).flat_map(|z| (1..n2 - 1).map(move |y| (y, z)));
            for (value, (y, z)) in buf.iter().zip(rows) {
                data[s.at(at, y, z)] = *value;
            }
        }
        1 => {
            for (chunk, z) in buf.chunks_exact(n1).zip(1..n3 - 1) {
                let to = s.row(at, z);
                data[to..to + n1].copy_from_slice(chunk);
            }
        }
        _ => {
            let to = s.row(0, at);
            data[to..to + n1 * n2].copy_from_slice(buf);
        }
    }
}

/// Periodic copy along `axis` within the block: each ghost plane takes the
/// interior plane at the far side.
fn wrap_locally(s: Shape, data: &mut [f64], axis: usize) {
    let [n1, n2, n3] = s.n;
    match axis {
        0 => {
            for z in 1..n3 - 1 {
                for y in 1..n2 - 1 {
                    let at = s.row(y, z);
                    let row = &mut data[at..at + n1];
                    row[0] = row[n1 - 2];
                    row[n1 - 1] = row[1];
                }
            }
        }
        1 => {
            for z in 1..n3 - 1 {
                data.copy_within(s.row(n2 - 2, z)..s.row(n2 - 2, z) + n1, s.row(0, z));
                data.copy_within(s.row(1, z)..s.row(1, z) + n1, s.row(n2 - 1, z));
            }
        }
        _ => {
            let plane = n1 * n2;
            data.copy_within(s.row(0, n3 - 2)..s.row(0, n3 - 2) + plane, 0);
            data.copy_within(s.row(0, 1)..s.row(0, 1) + plane, s.row(0, n3 - 1));
        }
    }
}

/// Refreshes every ghost of a block from its periodic neighbours.
///
/// `decomp` is `None` for a replicated level (or a serial run), where all
/// neighbours are the block itself.
pub fn exchange(
    comm: &dyn Communicator,
    decomp: Option<&Decomposition>,
    s: Shape,
    data: &mut [f64],
    bufs: &mut HaloBuffers,
) -> Result<()> {
    for axis in AXES {
        let split = decomp.filter(|d| d.procs[axis] > 1);
        let Some(d) = split else {
            wrap_locally(s, data, axis);
            continue;
        };
        let (lower, upper) = d.neighbours(axis);
        let len = plane_len(s, axis);
        let last = s.n[axis] - 2;
        let (send_low, send_high) = (&mut bufs.send_low[..len], &mut bufs.send_high[..len]);
        let (recv_low, recv_high) = (&mut bufs.recv_low[..len], &mut bufs.recv_high[..len]);
        pack(s, data, axis, last, send_high);
        pack(s, data, axis, 1, send_low);
        // Our last interior plane is the upper neighbour's low ghost, and the
        // lower neighbour's last plane is ours. When both neighbours are one
        // rank (two ranks on the axis), per-pair ordering keeps the two
        // messages apart: each side sends its high plane first.
        comm.sendrecv(upper, send_high, lower, recv_low)?;
        comm.sendrecv(lower, send_low, upper, recv_high)?;
        unpack(s, data, axis, 0, recv_low);
        unpack(s, data, axis, last + 1, recv_high);
    }
    Ok(())
}

/// Scratch for assembling a replicated level from the ranks' blocks.
#[derive(Debug)]
pub struct GatherBuffers {
    mine: Vec<f64>,
    all: Vec<f64>,
}

impl GatherBuffers {
    /// Scratch for `nprocs` blocks of `block_points` interior values each.
    pub fn new(nprocs: usize, block_points: usize) -> Self {
        GatherBuffers {
            mine: vec![0.0; block_points],
            all: vec![0.0; nprocs * block_points],
        }
    }
}

/// Assembles the whole level on every rank: each rank's block interior
/// (`local`, shape `ls`) goes into its place in `full` (shape `fs`, the
/// whole grid plus ghosts), whose ghosts are then wrapped periodically.
pub fn gather_replicated(
    comm: &dyn Communicator,
    decomp: &Decomposition,
    ls: Shape,
    local: &[f64],
    fs: Shape,
    full: &mut [f64],
    bufs: &mut GatherBuffers,
) -> Result<()> {
    let inner = ls.n.map(|n| n - 2);
    let block = inner[0] * inner[1] * inner[2];
    // Interior rows (y, z) of a block, in the order they are packed.
    let interior_rows = (1..=inner[2]).flat_map(|z| (1..=inner[1]).map(move |y| (y, z)));
    for (chunk, (y, z)) in bufs.mine[..block]
        .chunks_exact_mut(inner[0])
        .zip(interior_rows.clone())
    {
        let from = ls.at(1, y, z);
        chunk.copy_from_slice(&local[from..from + inner[0]]);
    }
    comm.allgather_f64(&bufs.mine[..block], &mut bufs.all[..block * decomp.size()])?;
    let n_points = fs.n[0] - 2;
    for (rank, values) in bufs.all.chunks_exact(block).enumerate() {
        let coords = Decomposition::coords_of(decomp.procs, rank);
        let [(x0, _), (y0, _), (z0, _)] = Decomposition::block_of(decomp.procs, coords, n_points);
        for (chunk, (y, z)) in values.chunks_exact(inner[0]).zip(interior_rows.clone()) {
            let to = fs.at(x0 + 1, y0 + y, z0 + z);
            full[to..to + inner[0]].copy_from_slice(chunk);
        }
    }
    for axis in AXES {
        wrap_locally(fs, full, axis);
    }
    Ok(())
}

/// Cuts this rank's block, ghosts included, out of a replicated level:
/// `full` (shape `fs`, whole grid plus ghosts) into `local` (shape `ls`).
/// No wrap-around arithmetic is needed: the full grid's own ghosts are the
/// periodic images the block's outer ghosts need.
pub fn scatter_replicated(
    decomp: &Decomposition,
    fs: Shape,
    full: &[f64],
    ls: Shape,
    local: &mut [f64],
) {
    let n_points = fs.n[0] - 2;
    let [(x0, _), (y0, _), (z0, _)] = decomp.block(n_points);
    let n1 = ls.n[0];
    for z in 0..ls.n[2] {
        for y in 0..ls.n[1] {
            // Block index (0, y, z) is global (x0 - 1, y0 + y - 1, z0 + z - 1),
            // which is full-grid index (x0, y0 + y, z0 + z).
            let from = fs.at(x0, y0 + y, z0 + z);
            let to = ls.row(y, z);
            local[to..to + n1].copy_from_slice(&full[from..from + n1]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::comm::{SerialComm, ThreadComm};

    /// A value that identifies global point (x, y, z) of an n^3 grid.
    fn tag(n: usize, x: usize, y: usize, z: usize) -> f64 {
        (x % n + 100 * (y % n) + 10_000 * (z % n)) as f64
    }

    /// Fills a rank's block interior with tags, exchanges, and checks every
    /// value, ghosts included, against the periodic tag.
    fn check_exchange(comm: &dyn Communicator, n: usize) -> Result<()> {
        let d = Decomposition::new(comm.size(), comm.rank())?;
        let block = d.block(n);
        let s = Shape::with_interior(block.map(|(_, len)| len));
        let mut data = vec![-1.0; s.len()];
        let [(x0, _), (y0, _), (z0, _)] = block;
        let global = |i: usize, origin: usize| (origin + n + i - 1) % n;
        for z in 1..s.n[2] - 1 {
            for y in 1..s.n[1] - 1 {
                for x in 1..s.n[0] - 1 {
                    data[s.at(x, y, z)] = tag(n, x0 + x - 1, y0 + y - 1, z0 + z - 1);
                }
            }
        }
        let mut bufs = HaloBuffers::new(s);
        exchange(comm, Some(&d), s, &mut data, &mut bufs)?;
        for z in 0..s.n[2] {
            for y in 0..s.n[1] {
                for x in 0..s.n[0] {
                    let want = tag(n, global(x, x0), global(y, y0), global(z, z0));
                    anyhow::ensure!(data[s.at(x, y, z)] == want, "({x},{y},{z})");
                }
            }
        }
        Ok(())
    }

    #[test]
    fn exchange_fills_faces_edges_and_corners() {
        check_exchange(&SerialComm::new(), 4).unwrap();
        for nprocs in [2, 4, 8] {
            ThreadComm::run(nprocs, |comm| check_exchange(comm, 8)).unwrap();
        }
    }

    #[test]
    fn gather_then_scatter_gives_back_the_block_with_ghosts() {
        ThreadComm::run(4, |comm| {
            let n = 8;
            let d = Decomposition::new(comm.size(), comm.rank())?;
            let s = Shape::with_interior(d.block(n).map(|(_, len)| len));
            let mut local = vec![0.0; s.len()];
            let [(x0, _), (y0, _), (z0, _)] = d.block(n);
            for z in 1..s.n[2] - 1 {
                for y in 1..s.n[1] - 1 {
                    for x in 1..s.n[0] - 1 {
                        local[s.at(x, y, z)] = tag(n, x0 + x - 1, y0 + y - 1, z0 + z - 1);
                    }
                }
            }
            let fs = Shape::with_interior([n; 3]);
            let mut full = vec![0.0; fs.len()];
            let block_points = (s.n[0] - 2) * (s.n[1] - 2) * (s.n[2] - 2);
            let mut g = GatherBuffers::new(comm.size(), block_points);
            gather_replicated(comm, &d, s, &local, fs, &mut full, &mut g)?;
            let mut back = vec![0.0; s.len()];
            scatter_replicated(&d, fs, &full, s, &mut back);
            let mut bufs = HaloBuffers::new(s);
            exchange(comm, Some(&d), s, &mut local, &mut bufs)?;
            anyhow::ensure!(back == local, "rank {}", comm.rank());
            Ok(())
        })
        .unwrap();
    }
}
