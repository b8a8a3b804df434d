//! What SP verifies: the RMS norms of the final right-hand side (NPB's
//! `rhs_norm`, divided by `dt`) and of the error against the exact
//! solution (`error_norm`), each summed over all cells of all ranks.

use anyhow::Result;

use super::cells::{Cell, NV};
use super::rhs::Consts;
use crate::comm::Communicator;
use crate::npb::lu::exact;

/// Sums over ranks, then takes NPB's RMS: divided by `(n - 2)^3`, the
/// square root.
fn finish_rms(comm: &dyn Communicator, n: usize, mut sum: [f64; NV]) -> Result<[f64; NV]> {
    comm.allreduce_sum_f64(&mut sum)?;
    let inner = (n - 2) as f64;
    Ok(sum.map(|s| (s / inner / inner / inner).sqrt()))
}

/// RMS norms, per variable, of the solution's error at every owned point
/// (faces included, as NPB's `error_norm`).
pub fn error_norms(comm: &dyn Communicator, cells: &[Cell]) -> Result<[f64; NV]> {
    let mut sum = [0.0; NV];
    for cell in cells {
        for l in cell.owned(2) {
            for j in cell.owned(1) {
                for i in cell.owned(0) {
                    let g = [cell.global(0, i), cell.global(1, j), cell.global(2, l)];
                    let e = exact(cell.n, g[0], g[1], g[2]);
                    let at = NV * cell.point(i, j, l);
                    for m in 0..NV {
                        let add = cell.u[at + m] - e[m];
                        sum[m] += add * add;
                    }
                }
            }
        }
    }
    finish_rms(comm, cells[0].n, sum)
}

/// RMS norms of the right-hand side at the interior points, divided by
/// `dt` (the caller has just computed it).
pub fn residual_norms(comm: &dyn Communicator, k: &Consts, cells: &[Cell]) -> Result<[f64; NV]> {
    let mut sum = [0.0; NV];
    for cell in cells {
        for (pt, _) in cell.interior_points() {
            for (m, s) in sum.iter_mut().enumerate() {
                let add = cell.rhs[NV * pt + m];
                *s += add * add;
            }
        }
    }
    Ok(finish_rms(comm, k.n, sum)?.map(|v| v / k.dt))
}
