//! The grid hierarchy of one rank and the V-cycle over it (spec: "The
//! iteration"; NPB's `mg3P`).
//!
//! Level k (1..=lt) has 2^k points a side. Levels from the lowest
//! distributed one, `kd`, up to the finest are split among the ranks as
//! in [`Decomposition`]; each rank holds its block with one ghost layer.
//! Levels below `kd` are replicated: every rank holds the whole level and
//! computes it redundantly, with identical arithmetic, so no messages are
//! needed there. The two meet through a *bridge* block (this rank's share
//! of level kd-1, ghosts included):
//!
//! * down: restrict level kd into the bridge (each rank owns at least one
//!   coarse point per axis, because kd splits into blocks of two or more),
//!   then allgather the bridges into the replicated level kd-1;
//! * up: cut this rank's bridge, ghosts included, out of the replicated
//!   level kd-1 and prolongate it into level kd as usual.
//!
//! A serial run has kd = 1 and no bridge.
//!
//! Every array is allocated here, once; the V-cycle itself allocates
//! nothing (the default collectives of a backend may, a few values).

use super::decomp::Decomposition;
use super::halo::{exchange, gather_replicated, scatter_replicated, GatherBuffers, HaloBuffers};
use super::kernels::{interp_resid, norm_parts, psinv, resid, rprj3, Lines, Shape};
use super::params::MgParams;
use super::rhs::build_rhs;
use crate::comm::Communicator;
use anyhow::Result;

/// One level of this rank: its block shape and the correction u and
/// residual r on it.
#[derive(Debug)]
struct Level {
    shape: Shape,
    /// False for a replicated level (the whole grid on every rank).
    distributed: bool,
    u: Vec<f64>,
    r: Vec<f64>,
}

impl Level {
    fn new(shape: Shape, distributed: bool) -> Self {
        Level {
            shape,
            distributed,
            u: vec![0.0; shape.len()],
            r: vec![0.0; shape.len()],
        }
    }
}

/// The coarse and fine levels k-1 and k, borrowed together.
fn pair(levels: &mut [Level], k: usize) -> (&mut Level, &mut Level) {
    let (below, above) = levels.split_at_mut(k);
    (&mut below[k - 1], &mut above[0])
}

/// Refreshes the ghosts of one level's array.
fn refresh(
    comm: &dyn Communicator,
    decomp: &Decomposition,
    distributed: bool,
    shape: Shape,
    data: &mut [f64],
    halo: &mut HaloBuffers,
) -> Result<()> {
    exchange(comm, distributed.then_some(decomp), shape, data, halo)
}

/// One rank's MG state: every level, the right-hand side, and scratch.
pub struct Solver<'c> {
    comm: &'c dyn Communicator,
    decomp: Decomposition,
    params: MgParams,
    /// Lowest distributed level (1 when nothing is replicated).
    lowest_distributed: usize,
    /// `levels[k]` is level k; `levels[0]` is an empty placeholder so that
    /// indices read as in the spec.
    levels: Vec<Level>,
    /// The right-hand side on the finest level.
    v: Vec<f64>,
    /// This rank's block of level kd-1, ghosts included (empty if kd = 1).
    bridge: Vec<f64>,
    bridge_shape: Shape,
    gather: GatherBuffers,
    halo: HaloBuffers,
    lines: Lines,
}

impl<'c> Solver<'c> {
    /// Allocates every level for this rank of `comm`.
    pub fn new(comm: &'c dyn Communicator, params: MgParams) -> Result<Self> {
        let decomp = Decomposition::new(comm.size(), comm.rank())?;
        let lt = params.levels;
        let kd = decomp.lowest_distributed_level(lt)?;
        let block_shape = |k: usize| Shape::with_interior(decomp.block(1 << k).map(|(_, len)| len));
        let mut levels = vec![Level::new(Shape { n: [0; 3] }, false)];
        for k in 1..=lt {
            let level = if k >= kd {
                Level::new(block_shape(k), true)
            } else {
                Level::new(Shape::with_interior([1 << k; 3]), false)
            };
            levels.push(level);
        }
        let (bridge_shape, bridge_points) = if kd > 1 {
            let s = block_shape(kd - 1);
            (s, (s.n[0] - 2) * (s.n[1] - 2) * (s.n[2] - 2))
        } else {
            (Shape { n: [0; 3] }, 0)
        };
        let finest = levels[lt].shape;
        let widest = levels.iter().map(|l| l.shape.n[0]).max().unwrap_or(0);
        Ok(Solver {
            comm,
            decomp,
            params,
            lowest_distributed: kd,
            v: vec![0.0; finest.len()],
            bridge: vec![0.0; bridge_shape.len()],
            bridge_shape,
            gather: GatherBuffers::new(comm.size(), bridge_points),
            halo: HaloBuffers::new(finest),
            lines: Lines::new(widest),
            levels,
        })
    }

    /// The decomposition this rank works in.
    pub fn decomposition(&self) -> &Decomposition {
        &self.decomp
    }

    /// Builds the right-hand side v (untimed setup) and its ghosts.
    pub fn build_rhs(&mut self) -> Result<()> {
        let s = self.levels[self.params.levels].shape;
        build_rhs(
            self.comm,
            &self.decomp,
            self.params.n_points,
            s,
            &mut self.v,
        )?;
        refresh(
            self.comm,
            &self.decomp,
            true,
            s,
            &mut self.v,
            &mut self.halo,
        )
    }

    /// Sets the finest-level u back to zero.
    pub fn reset_solution(&mut self) {
        self.levels[self.params.levels].u.fill(0.0);
    }

    /// `r = v - A u` on the finest level, ghosts refreshed.
    pub fn residual(&mut self) -> Result<()> {
        let top = &mut self.levels[self.params.levels];
        resid(
            top.shape,
            &top.u,
            Some(&self.v),
            &mut top.r,
            &self.params.a,
            &mut self.lines,
        );
        refresh(
            self.comm,
            &self.decomp,
            true,
            top.shape,
            &mut top.r,
            &mut self.halo,
        )
    }

    /// The L2 norm `sqrt(sum r^2 / n^3)` and the largest |r| of the
    /// finest-level residual over all ranks.
    pub fn norms(&self) -> Result<(f64, f64)> {
        let top = &self.levels[self.params.levels];
        let (sum_sq, max_abs) = norm_parts(top.shape, &top.r);
        let mut sum = [sum_sq];
        let mut max = [max_abs];
        self.comm.allreduce_sum_f64(&mut sum)?;
        self.comm.allreduce_max_f64(&mut max)?;
        Ok(((sum[0] / self.params.total_points() as f64).sqrt(), max[0]))
    }

    /// One V-cycle: computes a correction from r and adds it to u, leaving
    /// the smoothed u on the finest level (its residual is not refreshed).
    pub fn vcycle(&mut self) -> Result<()> {
        let lt = self.params.levels;
        let kd = self.lowest_distributed;
        let (a, c) = (&self.params.a, &self.params.c);
        let comm = self.comm;
        let decomp = &self.decomp;

        // Down: restrict the residual level by level.
        for k in (2..=lt).rev() {
            let (coarse, fine) = pair(&mut self.levels, k);
            if k == kd {
                // Level k-1 is replicated: restrict into this rank's share,
                // then assemble the whole level everywhere.
                rprj3(
                    fine.shape,
                    &fine.r,
                    self.bridge_shape,
                    &mut self.bridge,
                    &mut self.lines,
                );
                gather_replicated(
                    comm,
                    decomp,
                    self.bridge_shape,
                    &self.bridge,
                    coarse.shape,
                    &mut coarse.r,
                    &mut self.gather,
                )?;
            } else {
                rprj3(
                    fine.shape,
                    &fine.r,
                    coarse.shape,
                    &mut coarse.r,
                    &mut self.lines,
                );
                refresh(
                    comm,
                    decomp,
                    coarse.distributed,
                    coarse.shape,
                    &mut coarse.r,
                    &mut self.halo,
                )?;
            }
        }

        // Coarsest level: one smoothing step from u = 0.
        let bottom = &mut self.levels[1];
        bottom.u.fill(0.0);
        psinv(bottom.shape, &bottom.r, &mut bottom.u, c, &mut self.lines);
        refresh(
            comm,
            decomp,
            bottom.distributed,
            bottom.shape,
            &mut bottom.u,
            &mut self.halo,
        )?;

        // Up: prolongate, correct the residual, smooth.
        for k in 2..=lt {
            let (coarse, fine) = pair(&mut self.levels, k);
            let finest = k == lt;
            if !finest {
                // Intermediate levels start from zero; the finest level
                // keeps u and adds the correction to it.
                fine.u.fill(0.0);
            }
            // The coarse correction: this rank's cut of a replicated level,
            // or the coarse level itself.
            let (src_shape, src) = if k == kd {
                scatter_replicated(
                    decomp,
                    coarse.shape,
                    &coarse.u,
                    self.bridge_shape,
                    &mut self.bridge,
                );
                (self.bridge_shape, &self.bridge[..])
            } else {
                (coarse.shape, &coarse.u[..])
            };
            // u += Q u_coarse, then r = v - A u on the finest level and
            // r = r - A u below it.
            let v = finest.then_some(&self.v[..]);
            interp_resid(
                src_shape,
                src,
                fine.shape,
                &mut fine.u,
                v,
                &mut fine.r,
                a,
                &mut self.lines,
            );
            refresh(
                comm,
                decomp,
                fine.distributed,
                fine.shape,
                &mut fine.r,
                &mut self.halo,
            )?;
            psinv(fine.shape, &fine.r, &mut fine.u, c, &mut self.lines);
            refresh(
                comm,
                decomp,
                fine.distributed,
                fine.shape,
                &mut fine.u,
                &mut self.halo,
            )?;
        }
        Ok(())
    }
}
