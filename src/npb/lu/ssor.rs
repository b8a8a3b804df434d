//! LU's solver state and its SSOR iteration: per step, the residual
//! scaled by the time step, a lower and an upper triangular sweep with
//! the operator's 5x5 blocks (a wavefront over the ranks, plane by plane),
//! then the update of the solution and a new residual (NPB's `ssor`).

use anyhow::Result;

use super::exchange::{self, Buffers, Sweep};
use super::grid::{exact, initial_field, Block, Coeffs, ProcGrid, NV};
use super::jacobian::{diagonal, neighbour, solve, sub_product};
use super::params::{LuParams, OMEGA};
use super::rhs::{add_operator, inverse_density, line_scratch, LineScratch};
use crate::comm::Communicator;

/// One rank's part of an LU run.
pub struct Solver<'a> {
    comm: &'a dyn Communicator,
    /// The rank's block.
    pub block: Block,
    /// The process grid.
    pub grid: ProcGrid,
    /// The discretisation's constants.
    pub coeffs: Coeffs,
    /// The solution (NPB's `u`).
    pub u: Vec<f64>,
    /// The residual, then the correction the sweeps make of it (`rsd`).
    pub rsd: Vec<f64>,
    /// The forcing term that makes the exact solution steady (`frct`).
    frct: Vec<f64>,
    /// `1 / rho` at every point of `u` (of the exact solution while the
    /// forcing term is computed).
    inv_rho: Vec<f64>,
    flux: LineScratch,
    bufs: Buffers,
}

/// Load a point's five values.
#[inline(always)]
fn at5(v: &[f64], p: usize) -> [f64; NV] {
    let mut x = [0.0; NV];
    x.copy_from_slice(&v[p..p + NV]);
    x
}

impl<'a> Solver<'a> {
    /// This rank's block of a run of `params`, the forcing term computed
    /// and the solution at its initial value.
    pub fn new(comm: &'a dyn Communicator, params: &LuParams) -> Result<Self> {
        let grid = ProcGrid::of(comm.size());
        let block = Block::new(params.n_points, grid, comm.rank())?;
        let len = block.field_len();
        let mut s = Solver {
            comm,
            coeffs: Coeffs::new(params.n_points, params.dt),
            u: vec![0.0; len],
            rsd: vec![0.0; len],
            frct: vec![0.0; len],
            inv_rho: vec![0.0; len / NV],
            flux: line_scratch(&block),
            bufs: Buffers::new(&block),
            grid,
            block,
        };
        s.forcing();
        s.reset();
        Ok(s)
    }

    /// The forcing term: the operator applied to the exact solution (NPB's
    /// `erhs`). The exact solution is known at every global point, ghosts
    /// included, so this needs no message.
    fn forcing(&mut self) {
        let b = &self.block;
        let n = b.n as isize;
        for k in 0..b.nz {
            for j in 0..b.nj {
                for i in 0..b.ni {
                    let (gi, gj) = (b.global_i(i), b.global_j(j));
                    if (0..n).contains(&gi) && (0..n).contains(&gj) {
                        let p = b.at(i, j, k);
                        self.rsd[p..p + NV].copy_from_slice(&exact(b.n, gi, gj, k as isize));
                    }
                }
            }
        }
        self.frct.fill(0.0);
        inverse_density(&self.rsd, &mut self.inv_rho);
        let state = (&self.rsd[..], &self.inv_rho[..]);
        add_operator(b, &self.coeffs, state, &mut self.frct, &mut self.flux);
    }

    /// The communicator the solver runs over.
    pub fn comm(&self) -> &'a dyn Communicator {
        self.comm
    }

    /// Puts the solution back to its initial value (NPB's `setbv` and
    /// `setiv`).
    pub fn reset(&mut self) {
        initial_field(&self.block, &mut self.u);
    }

    /// The steady-state residual of the current solution (NPB's `rhs`).
    pub fn residual(&mut self) -> Result<()> {
        let b = &self.block;
        for k in 0..b.nz {
            for j in b.owned_j() {
                let row = b.at(b.owned_i().start, j, k)..b.at(b.owned_i().end, j, k);
                for (r, f) in self.rsd[row.clone()].iter_mut().zip(&self.frct[row]) {
                    *r = -f;
                }
            }
        }
        exchange::ghosts(self.comm, b, &mut self.u, &mut self.bufs)?;
        inverse_density(&self.u, &mut self.inv_rho);
        let state = (&self.u[..], &self.inv_rho[..]);
        add_operator(b, &self.coeffs, state, &mut self.rsd, &mut self.flux);
        Ok(())
    }

    /// RMS norms, per variable over the whole interior, of `field` (a
    /// sum over ranks; every rank gets it).
    pub fn rms(&self, field: &[f64]) -> Result<[f64; NV]> {
        let b = &self.block;
        let mut sum = [0.0; NV];
        for k in 1..b.nz - 1 {
            for j in b.jst..=b.jend {
                for i in b.ist..=b.iend {
                    let p = b.at(i, j, k);
                    for m in 0..NV {
                        sum[m] += field[p + m] * field[p + m];
                    }
                }
            }
        }
        self.finish_rms(sum)
    }

    /// Sums per-rank sums of squares over ranks and turns them into RMS
    /// norms over the `(n - 2)^3` interior points.
    pub fn finish_rms(&self, mut sum: [f64; NV]) -> Result<[f64; NV]> {
        self.comm.allreduce_sum_f64(&mut sum)?;
        let inner = (self.block.n - 2) as f64;
        Ok(sum.map(|s| (s / (inner * inner * inner)).sqrt()))
    }

    /// Runs `steps` SSOR iterations from the residual already computed;
    /// returns the RMS norms of the final residual (NPB's `rsdnm`), taken
    /// after the last step only, as NPB does (its early stop compares a
    /// norm it refreshes only then, so no class stops early). The last
    /// step also takes the norms of its correction (NPB's `delunm`, which
    /// NPB computes every `inorm` steps, `inorm` being the step count in
    /// every class): nothing reads them, but NPB's timed section holds
    /// that all-reduce, so wulf's does too (two reductions, as NPB-MPI's).
    pub fn iterate(&mut self, steps: usize) -> Result<[f64; NV]> {
        let relax = 1.0 / (OMEGA * (2.0 - OMEGA));
        for step in 0..steps {
            self.scale_residual();
            self.sweep(Sweep::Lower)?;
            self.sweep(Sweep::Upper)?;
            let b = &self.block;
            for k in 1..b.nz - 1 {
                for j in b.jst..=b.jend {
                    let row = b.at(b.ist, j, k)..b.at(b.iend + 1, j, k);
                    for (u, r) in self.u[row.clone()].iter_mut().zip(&self.rsd[row]) {
                        *u += relax * r;
                    }
                }
            }
            if step + 1 == steps {
                self.rms(&self.rsd)?;
            }
            self.residual()?;
        }
        self.rms(&self.rsd)
    }

    /// Multiplies the interior residual by the time step.
    fn scale_residual(&mut self) {
        let b = &self.block;
        let dt = self.coeffs.dt;
        for k in 1..b.nz - 1 {
            for j in b.jst..=b.jend {
                let row = b.at(b.ist, j, k)..b.at(b.iend + 1, j, k);
                self.rsd[row].iter_mut().for_each(|r| *r *= dt);
            }
        }
    }

    /// One triangular sweep over the interior, plane by plane, each plane
    /// started once the upstream ranks' rows of it have arrived.
    fn sweep(&mut self, sweep: Sweep) -> Result<()> {
        let nz = self.block.nz;
        let planes: Box<dyn Iterator<Item = usize>> = match sweep {
            Sweep::Lower => Box::new(1..nz - 1),
            Sweep::Upper => Box::new((1..nz - 1).rev()),
        };
        for k in planes {
            exchange::receive_upstream(
                self.comm,
                &self.block,
                &mut self.rsd,
                k,
                sweep,
                &mut self.bufs,
            )?;
            match sweep {
                Sweep::Lower => self.lower_plane(k),
                Sweep::Upper => self.upper_plane(k),
            }
            exchange::send_downstream(self.comm, &self.block, &self.rsd, k, sweep, &mut self.bufs)?;
        }
        Ok(())
    }

    /// Forward substitution on plane `k` (NPB's `jacld` and `blts`).
    fn lower_plane(&mut self, k: usize) {
        let b = &self.block;
        let c = &self.coeffs;
        let [sx, sy, sz] = b.strides();
        let (u, v, inv) = (&self.u, &mut self.rsd, &self.inv_rho);
        for j in b.jst..=b.jend {
            for i in b.ist..=b.iend {
                let p = b.at(i, j, k);
                let q = p / NV;
                let az = neighbour::<2>(&at5(u, p - sz), inv[q - sz / NV], -1.0, c);
                let by = neighbour::<1>(&at5(u, p - sy), inv[q - sy / NV], -1.0, c);
                let cx = neighbour::<0>(&at5(u, p - sx), inv[q - 1], -1.0, c);
                let mut x = at5(v, p);
                sub_product(&mut x, OMEGA, &az, &v[p - sz..p - sz + NV]);
                let (vy, vx) = (at5(v, p - sy), at5(v, p - sx));
                for m in 0..NV {
                    let mut s = 0.0;
                    for l in 0..NV {
                        s += by[m][l] * vy[l] + cx[m][l] * vx[l];
                    }
                    x[m] -= OMEGA * s;
                }
                solve(&diagonal(&at5(u, p), inv[q], c), &mut x);
                v[p..p + NV].copy_from_slice(&x);
            }
        }
    }

    /// Backward substitution on plane `k` (NPB's `jacu` and `buts`).
    fn upper_plane(&mut self, k: usize) {
        let b = &self.block;
        let c = &self.coeffs;
        let [sx, sy, sz] = b.strides();
        let (u, v, inv) = (&self.u, &mut self.rsd, &self.inv_rho);
        for j in (b.jst..=b.jend).rev() {
            for i in (b.ist..=b.iend).rev() {
                let p = b.at(i, j, k);
                let q = p / NV;
                let cz = neighbour::<2>(&at5(u, p + sz), inv[q + sz / NV], 1.0, c);
                let by = neighbour::<1>(&at5(u, p + sy), inv[q + sy / NV], 1.0, c);
                let ax = neighbour::<0>(&at5(u, p + sx), inv[q + 1], 1.0, c);
                let mut t = [0.0; NV];
                sub_product(&mut t, -OMEGA, &cz, &v[p + sz..p + sz + NV]);
                let (vy, vx) = (at5(v, p + sy), at5(v, p + sx));
                for m in 0..NV {
                    let mut s = 0.0;
                    for l in 0..NV {
                        s += by[m][l] * vy[l] + ax[m][l] * vx[l];
                    }
                    t[m] += OMEGA * s;
                }
                solve(&diagonal(&at5(u, p), inv[q], c), &mut t);
                for m in 0..NV {
                    v[p + m] -= t[m];
                }
            }
        }
    }
}
