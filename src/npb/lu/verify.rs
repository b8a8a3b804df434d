//! What LU verifies besides the residual: the RMS error of the solution
//! against the exact one (NPB's `error`) and a surface integral of the
//! pressure (NPB's `pintgr`).

use anyhow::Result;

use super::grid::{exact, C2, NV};
use super::ssor::Solver;

/// RMS norms, per variable, of the difference between the solution and
/// the exact solution over the interior.
pub fn error_norms(s: &Solver) -> Result<[f64; NV]> {
    let b = &s.block;
    let mut sum = [0.0; NV];
    for k in 1..b.nz - 1 {
        for j in b.jst..=b.jend {
            for i in b.ist..=b.iend {
                let e = exact(b.n, b.global_i(i), b.global_j(j), k as isize);
                let p = b.at(i, j, k);
                for m in 0..NV {
                    let d = e[m] - s.u[p + m];
                    sum[m] += d * d;
                }
            }
        }
    }
    s.finish_rms(sum)
}

/// The pressure `c2 (e - |m|^2 / 2 rho)` of a point's state.
fn pressure(u: &[f64]) -> f64 {
    C2 * (u[4] - 0.5 * (u[1] * u[1] + u[2] * u[2] + u[3] * u[3]) / u[0])
}

/// How many cells of the closed index range `[lo, hi]` touch point `g`
/// along one axis (cell `c` spans points `c` and `c + 1`): 0 outside the
/// range, 1 at its ends, 2 inside.
fn cells_touching(g: isize, lo: isize, hi: isize) -> f64 {
    if g < lo || g > hi {
        0.0
    } else {
        (g > lo) as u8 as f64 + (g < hi) as u8 as f64
    }
}

/// NPB's surface integral: the trapezoidal sum of the pressure over six
/// faces of a box inside the grid, x from 1 to n-2, y from 1 to n-3 and z
/// from 2 to n-2 (0-based; NPB's `ii1..ii2`, `ji1..ji2`, `ki1..ki2`), each
/// pair of opposite faces scaled by its cell area, the total by 1/4.
///
/// NPB sums the four corners of every cell, exchanging the rows a cell
/// shares with the next rank; weighting each point by the cells that touch
/// it gives the same sum from owned points alone, with no message but the
/// final reduction.
pub fn surface_integral(s: &Solver) -> Result<f64> {
    let b = &s.block;
    let n = b.n as isize;
    let (i1, i2, j1, j2, k1, k2) = (1, n - 2, 1, n - 3, 2, n - 2);
    let mut sums = [0.0; 3];
    for k in 0..b.nz {
        let gk = k as isize;
        for j in b.owned_j() {
            let gj = b.global_j(j);
            for i in b.owned_i() {
                let gi = b.global_i(i);
                let (wi, wj, wk) = (
                    cells_touching(gi, i1, i2),
                    cells_touching(gj, j1, j2),
                    cells_touching(gk, k1, k2),
                );
                let on_k = gk == k1 || gk == k2;
                let on_j = gj == j1 || gj == j2;
                let on_i = gi == i1 || gi == i2;
                if !(on_k || on_j || on_i) {
                    continue;
                }
                let p = pressure(&s.u[b.at(i, j, k)..]);
                if on_k {
                    sums[0] += wi * wj * p;
                }
                if on_j {
                    sums[1] += wi * wk * p;
                }
                if on_i {
                    sums[2] += wj * wk * p;
                }
            }
        }
    }
    let h = s.coeffs.h;
    s.comm().allreduce_sum_f64(&mut sums)?;
    Ok(0.25 * (h[0] * h[1] * sums[0] + h[0] * h[2] * sums[1] + h[1] * h[2] * sums[2]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_are_counted_as_the_trapezoid_rule_weights_points() {
        assert_eq!(cells_touching(0, 1, 10), 0.0);
        assert_eq!(cells_touching(1, 1, 10), 1.0);
        assert_eq!(cells_touching(5, 1, 10), 2.0);
        assert_eq!(cells_touching(10, 1, 10), 1.0);
        assert_eq!(cells_touching(11, 1, 10), 0.0);
    }
}
