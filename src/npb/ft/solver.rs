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

use super::fft::{Complex, Direction, Fft};
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

    /// NPB's initial condition: the random stream from NPB's seed fills
    /// the grid x fastest, then y, then z, real part then imaginary; each
    /// rank jumps to its first plane.
    pub fn initial_conditions(&mut self) {
        let [nx, ny, _] = self.params.dims;
        let plane = nx * ny;
        let z0 = self.comm.rank() * self.slabs.planes;
        let mut state = jump(SEED, MULTIPLIER, (2 * plane * z0) as u64);
        vranlc(&mut state, MULTIPLIER, cast_slice_mut(&mut self.planes));
    }

    /// The forward 3-D transform of the plane layout into the spectrum
    /// (column layout).
    pub fn forward(&mut self) -> Result<()> {
        self.xy_transforms(Direction::Forward);
        if self.whole() {
            // The transformed planes become the spectrum; the old
            // spectrum's buffer is the next initial condition's.
            std::mem::swap(&mut self.planes, &mut self.spectrum);
        } else {
            self.planes_to_columns()?;
        }
        z_transforms(
            &mut self.fft[2],
            &mut self.spectrum,
            &self.slabs,
            Direction::Forward,
        );
        Ok(())
    }

    /// One time step of NPB's `evolve`: the spectrum times the twiddle,
    /// copied to the work array for the inverse transform.
    pub fn evolve(&mut self) {
        for ((u0, u1), t) in self
            .spectrum
            .iter_mut()
            .zip(&mut self.work)
            .zip(&self.twiddle)
        {
            u0[0] *= t;
            u0[1] *= t;
            *u1 = *u0;
        }
    }

    /// The inverse 3-D transform of the work array into the plane layout.
    pub fn inverse(&mut self) -> Result<()> {
        z_transforms(
            &mut self.fft[2],
            &mut self.work,
            &self.slabs,
            Direction::Inverse,
        );
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
        self.xy_transforms(Direction::Inverse);
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

    /// The x then y transforms (forward) or y then x (inverse is the same
    /// order reversed; the axes commute, so either order is exact).
    fn xy_transforms(&mut self, dir: Direction) {
        let [nx, ny, _] = self.params.dims;
        let planes = self.slabs.planes;
        let [fx, fy, _] = &mut self.fft;
        fx.lines(&mut self.planes, planes * ny, |l| l * nx, 1, dir);
        fy.lines(
            &mut self.planes,
            planes * nx,
            |l| (l / nx) * ny * nx + l % nx,
            nx,
            dir,
        );
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

/// The z transforms of the column layout of `slabs` in `data`: lines of
/// adjacent points on several ranks, or, on one rank (the plane layout),
/// lines across the planes, `nx * ny` points apart, whose neighbours in x
/// lie next to each other (so a block's gather reads runs).
fn z_transforms(fft: &mut Fft, data: &mut [Complex], slabs: &Slabs, dir: Direction) {
    let [nx, ny, nz] = slabs.dims;
    if slabs.np == 1 {
        fft.lines(data, nx * ny, |l| l, nx * ny, dir);
    } else {
        fft.lines(data, slabs.rows * nx, |l| l * nz, 1, dir);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::comm::SerialComm;
    use crate::npb::rng::{randlc, SEED_MG};
    use crate::npb::Class;

    #[test]
    fn the_initial_condition_is_npbs_stream_in_order() {
        let comm = SerialComm::new();
        let params = FtParams::of(Class::S);
        let mut s = Solver::new(&comm, &params).unwrap();
        s.initial_conditions();
        let mut x = SEED_MG;
        let first = [randlc(&mut x, MULTIPLIER), randlc(&mut x, MULTIPLIER)];
        assert_eq!(s.planes[0], first);
        // Point (x 5, y 2, z 3) is values 2 i + 1 and 2 i + 2 of the stream.
        let i = (3 * 64 + 2) * 64 + 5;
        let mut at = jump(SEED_MG, MULTIPLIER, 2 * i as u64);
        let want = [randlc(&mut at, MULTIPLIER), randlc(&mut at, MULTIPLIER)];
        assert_eq!(s.planes[i], want);
    }

    #[test]
    fn frequencies_wrap_to_negative_halves() {
        let got: Vec<i64> = (0..8).map(|i| frequency(i, 8)).collect();
        assert_eq!(got, [0, 1, 2, 3, -4, -3, -2, -1]);
    }

    #[test]
    fn forward_then_inverse_is_n_times_the_initial_condition() {
        let comm = SerialComm::new();
        let params = FtParams::of(Class::S);
        let mut s = Solver::new(&comm, &params).unwrap();
        s.initial_conditions();
        let start = s.planes.clone();
        s.forward().unwrap();
        s.work.copy_from_slice(&s.spectrum);
        s.inverse().unwrap();
        let n = params.total_points() as f64;
        let worst = s
            .planes
            .iter()
            .zip(&start)
            .map(|(a, b)| (a[0] / n - b[0]).abs().max((a[1] / n - b[1]).abs()))
            .fold(0.0, f64::max);
        assert!(worst < 1e-13, "{worst}");
    }

    #[test]
    fn counts_that_do_not_divide_the_grid_are_refused() {
        assert!(Slabs::new([64, 64, 64], 3).is_err());
        assert!(Slabs::new([128, 128, 32], 64).is_err());
        let s = Slabs::new([64, 64, 64], 4).unwrap();
        assert_eq!((s.planes, s.rows, s.local_points()), (16, 16, 65_536));
        assert_eq!(s.transpose_bytes(), 16 * 262_144 * 3 / 4);
        assert_eq!(Slabs::new([64, 64, 64], 1).unwrap().transpose_bytes(), 0);
    }
}
