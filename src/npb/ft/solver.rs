//! FT's state on one rank and its steps: the initial condition, the
//! distributed 3-D transform, the evolution and the checksum.
//!
//! The grid is split into slabs. In the *plane* layout a rank holds
//! `nz / np` whole z planes, `a[z][y][x]`; the x and y transforms run
//! there. In the *column* layout it holds `ny / np` y rows with every z,
//! `b[y][x][z]`; the z transform and the evolution run there. An
//! all-to-all carries one layout to the other: a rank sends every other
//! rank the `nz/np * ny/np * nx` points they share, so the ranks together
//! send `16 N (np - 1) / np` bytes per transpose. A time step is one
//! transpose (the inverse transform); the forward transform before the
//! steps is one more. On one rank both layouts are the plane layout: no
//! transpose, and the z transform reads its lines across the planes.

use anyhow::{ensure, Result};
use bytemuck::{cast_slice, cast_slice_mut};

use super::fft::{Complex, Direction, Fft, Lines};
use super::params::{FtParams, ALPHA, CHECKSUM_POINTS, SEED};
use crate::comm::Communicator;
use crate::npb::fault;
use crate::npb::rng::{jump, vranlc, MULTIPLIER};

/// How the grid is split among `np` ranks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slabs {
    /// Grid points along x, y, z.
    pub dims: [usize; 3],
    /// Ranks.
    pub np: usize,
    /// z planes per rank in the plane layout.
    pub planes: usize,
    /// y rows per rank in the column layout.
    pub rows: usize,
}

impl Slabs {
    /// The split of `dims` among `np` ranks; `np` must divide both `ny`
    /// and `nz`.
    pub fn new(dims: [usize; 3], np: usize) -> Result<Self> {
        let [_, ny, nz] = dims;
        ensure!(
            np > 0 && ny.is_multiple_of(np) && nz.is_multiple_of(np),
            "FT splits the {nz} z planes and the {ny} y rows of its grid evenly among the \
             processes: the count must divide both (1, 2, 4, ... up to {}), not {np}",
            ny.min(nz)
        );
        Ok(Slabs {
            dims,
            np,
            planes: nz / np,
            rows: ny / np,
        })
    }

    /// Points each rank holds (in either layout).
    pub fn local_points(&self) -> usize {
        self.dims.iter().product::<usize>() / self.np
    }

    /// Bytes all ranks together send in one transpose: every rank sends
    /// `np - 1` blocks of `N / np^2` complex values of 16 bytes.
    pub fn transpose_bytes(&self) -> u64 {
        let block = self.local_points() / self.np;
        (self.np * (self.np - 1) * block * 16) as u64
    }
}

/// The signed frequency of index `i` of an `n`-point transform: `i` below
/// `n / 2`, else `i - n`.
fn frequency(i: usize, n: usize) -> i64 {
    ((i + n / 2) % n) as i64 - (n / 2) as i64
}

/// One rank's arrays, all allocated once by [`Solver::new`].
pub struct Solver<'c> {
    comm: &'c dyn Communicator,
    params: FtParams,
    /// The split of the grid.
    pub slabs: Slabs,
    fft: [Fft; 3],
    /// The spectrum, evolved in place (column layout; NPB's `u0`).
    spectrum: Vec<Complex>,
    /// This step's spectrum, transformed back (column layout; `u1`).
    work: Vec<Complex>,
    /// The plane layout: the initial condition and each step's solution.
    planes: Vec<Complex>,
    send: Vec<Complex>,
    recv: Vec<Complex>,
    /// `exp(-4 alpha pi^2 |k|^2)` of every point (column layout).
    twiddle: Vec<f64>,
    /// The per-axis factors of the twiddle, x and z (y unused).
    axis_factors: [Vec<f64>; 3],
    corrupt: bool,
}

impl<'c> Solver<'c> {
    /// Allocates the arrays of this rank of `comm`.
    pub fn new(comm: &'c dyn Communicator, params: &FtParams) -> Result<Self> {
        let slabs = Slabs::new(params.dims, comm.size())?;
        let n = slabs.local_points();
        let [nx, ny, nz] = params.dims;
        Ok(Solver {
            comm,
            params: *params,
            slabs,
            fft: [Fft::new(nx)?, Fft::new(ny)?, Fft::new(nz)?],
            spectrum: vec![[0.0; 2]; n],
            work: vec![[0.0; 2]; n],
            planes: vec![[0.0; 2]; n],
            send: vec![[0.0; 2]; n],
            recv: vec![[0.0; 2]; n],
            twiddle: vec![0.0; n],
            axis_factors: [vec![0.0; nx], Vec::new(), vec![0.0; nz]],
            corrupt: fault::injected(comm, "ft-value"),
        })
    }

    /// NPB's `compute_indexmap`: the evolution factor of every point,
    /// `exp(-4 alpha pi^2 (kx^2 + ky^2 + kz^2))`, as the product of one
    /// factor per axis (three tables of `n` exponentials instead of `N`;
    /// the product differs from the exponential of the sum by a few
    /// units in the last place, far inside NPB's 1e-12).
    pub fn compute_twiddle(&mut self) {
        let [nx, ny, nz] = self.params.dims;
        let ap = -4.0 * ALPHA * std::f64::consts::PI * std::f64::consts::PI;
        let factor = |i: usize, n: usize| {
            let k = frequency(i, n);
            (ap * (k * k) as f64).exp()
        };
        for (x, t) in self.axis_factors[0].iter_mut().enumerate() {
            *t = factor(x, nx);
        }
        for (z, t) in self.axis_factors[2].iter_mut().enumerate() {
            *t = factor(z, nz);
        }
        if self.whole() {
            // The plane layout, x fastest: the spectrum never leaves it.
            let mut at = 0;
            for z in 0..nz {
                let fz = self.axis_factors[2][z];
                for y in 0..ny {
                    let fy = factor(y, ny);
                    for &fx in &self.axis_factors[0] {
                        self.twiddle[at] = fx * fy * fz;
                        at += 1;
                    }
                }
            }
            return;
        }
        let y0 = self.comm.rank() * self.slabs.rows;
        let mut at = 0;
        for yl in 0..self.slabs.rows {
            let fy = factor(y0 + yl, ny);
            for &fx in &self.axis_factors[0] {
                let fxy = fx * fy;
                for &fz in &self.axis_factors[2] {
                    self.twiddle[at] = fxy * fz;
                    at += 1;
                }
            }
        }
    }

    /// NPB's random stream at this rank's first plane: the stream from
    /// NPB's seed fills the grid x fastest, then y, then z, real part
    /// then imaginary.
    fn stream_start(&self) -> u64 {
        let [nx, ny, _] = self.params.dims;
        let z0 = self.comm.rank() * self.slabs.planes;
        jump(SEED, MULTIPLIER, (2 * nx * ny * z0) as u64)
    }

    /// NPB's initial condition alone, as [`Solver::forward`] makes it.
    #[cfg(test)]
    fn initial_conditions(&mut self) {
        let mut state = self.stream_start();
        vranlc(&mut state, MULTIPLIER, cast_slice_mut(&mut self.planes));
    }

    /// NPB's initial condition and its forward 3-D transform into the
    /// spectrum (column layout). Each plane is filled from the stream
    /// just before its x and y transforms, while it is in cache.
    pub fn forward(&mut self) -> Result<()> {
        let mut state = self.stream_start();
        self.xy_transforms(Direction::Forward, Some(&mut state));
        if self.whole() {
            // The transformed planes become the spectrum; the old
            // spectrum's buffer is the next initial condition's.
            std::mem::swap(&mut self.planes, &mut self.spectrum);
        } else {
            self.planes_to_columns()?;
        }
        let at = z_lines(&self.slabs);
        self.fft[2].lines(&mut self.spectrum, at, Direction::Forward);
        Ok(())
    }

    /// One time step: NPB's `evolve` (the spectrum times the twiddle,
    /// in place) fused into the z transforms of the inverse 3-D
    /// transform, which read the evolved spectrum and write the work
    /// array; then the rest of the inverse into the plane layout.
    pub fn step(&mut self) -> Result<()> {
        let at = z_lines(&self.slabs);
        let (src, dst, tw) = (&mut self.spectrum, &mut self.work, &self.twiddle);
        self.fft[2].lines_scaled(src, tw, dst, at, Direction::Inverse);
        if self.whole() {
            // The work array is the solution's planes; the planes' old
            // buffer is the next step's work array.
            std::mem::swap(&mut self.work, &mut self.planes);
            if self.corrupt {
                self.planes[0][0] += 1.0;
            }
        } else {
            self.columns_to_planes()?;
        }
        self.xy_transforms(Direction::Inverse, None);
        Ok(())
    }

    /// NPB's checksum of the plane layout: the sum of the 1024 points
    /// `(j mod nx, 3j mod ny, 5j mod nz)`, j = 1..1024, over the number
    /// of points, summed over ranks.
    pub fn checksum(&self) -> Result<Complex> {
        let [nx, ny, nz] = self.params.dims;
        let z0 = self.comm.rank() * self.slabs.planes;
        let mut sum = [0.0; 2];
        for j in 1..=CHECKSUM_POINTS {
            let (x, y, z) = (j % nx, (3 * j) % ny, (5 * j) % nz);
            if (z0..z0 + self.slabs.planes).contains(&z) {
                let v = self.planes[((z - z0) * ny + y) * nx + x];
                sum[0] += v[0];
                sum[1] += v[1];
            }
        }
        let total = (nx * ny * nz) as f64;
        sum = [sum[0] / total, sum[1] / total];
        self.comm.allreduce_sum_f64(&mut sum)?;
        Ok(sum)
    }

    /// Whether this rank holds the whole grid: then the column layout
    /// is the plane layout itself and no transpose runs (two whole-grid
    /// copies with a scattered side each step, most of the gap to NPB's
    /// serial build, which transforms z in place too).
    fn whole(&self) -> bool {
        self.slabs.np == 1
    }

    /// The x then y transforms, one plane at a time, after filling the
    /// plane from NPB's random `stream` if given: a plane (1 MiB at
    /// class A) is still in the last-level cache when its y lines are
    /// gathered, where a pass of x over the whole grid then one of y
    /// would read the grid from memory twice. The axes commute, so the
    /// inverse may run them in the same order.
    fn xy_transforms(&mut self, dir: Direction, mut stream: Option<&mut u64>) {
        let [nx, ny, _] = self.params.dims;
        let [fx, fy, _] = &mut self.fft;
        for plane in self.planes.chunks_exact_mut(nx * ny) {
            if let Some(state) = stream.as_deref_mut() {
                vranlc(state, MULTIPLIER, cast_slice_mut(plane));
            }
            let rows = Lines {
                count: ny,
                step: nx,
                stride: 1,
            };
            let columns = Lines {
                count: nx,
                step: 1,
                stride: nx,
            };
            fx.lines(plane, rows, dir);
            fy.lines(plane, columns, dir);
        }
    }

    /// Transpose of the plane layout into the spectrum's column layout.
    fn planes_to_columns(&mut self) -> Result<()> {
        let [nx, ny, nz] = self.params.dims;
        let (p, zs, ys) = (self.slabs.np, self.slabs.planes, self.slabs.rows);
        let block = zs * ys * nx;
        // Block for rank d: its rows, ordered [y][x][z] as it stores them.
        for d in 0..p {
            let out = &mut self.send[d * block..(d + 1) * block];
            for yl in 0..ys {
                for x in 0..nx {
                    for zl in 0..zs {
                        out[(yl * nx + x) * zs + zl] =
                            self.planes[(zl * ny + d * ys + yl) * nx + x];
                    }
                }
            }
        }
        self.comm
            .alltoall_bytes(cast_slice(&self.send), cast_slice_mut(&mut self.recv))?;
        for s in 0..p {
            let from = &self.recv[s * block..(s + 1) * block];
            for col in 0..ys * nx {
                self.spectrum[col * nz + s * zs..col * nz + (s + 1) * zs]
                    .copy_from_slice(&from[col * zs..(col + 1) * zs]);
            }
        }
        Ok(())
    }

    /// Transpose of the work array's column layout into the plane layout.
    fn columns_to_planes(&mut self) -> Result<()> {
        let [nx, ny, nz] = self.params.dims;
        let (p, zs, ys) = (self.slabs.np, self.slabs.planes, self.slabs.rows);
        let block = zs * ys * nx;
        // Block for rank d: its planes, ordered [z][y][x] as it stores them.
        for d in 0..p {
            let out = &mut self.send[d * block..(d + 1) * block];
            for zl in 0..zs {
                for yl in 0..ys {
                    for x in 0..nx {
                        out[(zl * ys + yl) * nx + x] = self.work[(yl * nx + x) * nz + d * zs + zl];
                    }
                }
            }
        }
        self.comm
            .alltoall_bytes(cast_slice(&self.send), cast_slice_mut(&mut self.recv))?;
        if self.corrupt {
            // The fault hook: one received value changed at every step.
            self.recv[0][0] += 1.0;
        }
        for s in 0..p {
            let from = &self.recv[s * block..(s + 1) * block];
            for zl in 0..zs {
                for yl in 0..ys {
                    let row = (zl * ny + s * ys + yl) * nx;
                    self.planes[row..row + nx]
                        .copy_from_slice(&from[(zl * ys + yl) * nx..(zl * ys + yl + 1) * nx]);
                }
            }
        }
        Ok(())
    }
}

/// The z lines of the column layout of `slabs`. On several ranks they
/// are runs of adjacent points; on one rank (the plane layout) they
/// cross the planes, `nx * ny` points apart, and their neighbours in x
/// lie next to each other (so a block's gather reads runs).
fn z_lines(slabs: &Slabs) -> Lines {
    let [nx, ny, nz] = slabs.dims;
    if slabs.np == 1 {
        Lines {
            count: nx * ny,
            step: 1,
            stride: nx * ny,
        }
    } else {
        Lines {
            count: slabs.rows * nx,
            step: nz,
            stride: 1,
        }
    }
}

#[cfg(test)]
#[path = "solver_tests.rs"]
mod tests;
