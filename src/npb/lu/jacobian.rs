//! The 5x5 blocks of LU's implicit operator at one point, and the solve
//! with the diagonal block.
//!
//! The operator couples a point with its six neighbours. The lower sweep
//! uses the blocks of the three neighbours below (x-1, y-1, z-1), the upper
//! sweep those above; a neighbour's block depends on the neighbour's
//! state, its direction, and on which side it lies only through the sign
//! of the convective (first-derivative) part. NPB spells the twelve
//! neighbour blocks out one by one (`jacld`, `jacu`); here one function
//! builds any of them from the direction, the normal momentum being the
//! direction's component.

// Loops index rows and columns of 5x5 blocks by their variable numbers,
// as the formulas do.
#![allow(clippy::needless_range_loop)]

use super::grid::{Coeffs, C1, C2, C3, C4, C5, NV};

/// A 5x5 block, row-major: `m[row][column]`.
pub type Mat5 = [[f64; NV]; NV];

const R43: f64 = 4.0 / 3.0;
const C34: f64 = C3 * C4;
const C1345: f64 = C1 * C3 * C4 * C5;

/// The weight of the viscous term of momentum `m` in direction `dir`:
/// 4/3 for the normal component, 1 for the tangential ones.
#[inline(always)]
fn normal_weight(dir: usize, m: usize) -> f64 {
    if dir + 1 == m {
        R43
    } else {
        1.0
    }
}

/// The block of the neighbour in direction `dir` (0 = x, 1 = y, 2 = z)
/// whose state is `u` and `1 / rho` is `tmp1`: `side` is -1 for the
/// neighbour below (lower sweep), +1 for the one above (upper sweep).
#[inline(always)]
pub fn neighbour<const DIR: usize>(u: &[f64; NV], tmp1: f64, side: f64, c: &Coeffs) -> Mat5 {
    // A constant direction lets the compiler keep the block in registers.
    let dir = DIR;
    let n = dir + 1;
    let tmp2 = tmp1 * tmp1;
    let tmp3 = tmp1 * tmp2;
    let conv = side * c.dt * c.t2[dir];
    let visc = c.dt * c.t1[dir];
    let dd = c.dd[dir];
    let sq = u[1] * u[1] + u[2] * u[2] + u[3] * u[3];
    let un = u[n] * tmp1;
    let mut a = [[0.0; NV]; NV];

    a[0][0] = -visc * dd;
    a[0][n] = conv;

    for t in (1..4).filter(|&t| t != n) {
        a[t][0] = conv * (-(u[t] * u[n]) * tmp2) - visc * (-C34 * tmp2 * u[t]);
        a[t][t] = conv * un - visc * C34 * tmp1 - visc * dd;
        a[t][n] = conv * (u[t] * tmp1);
        a[n][t] = conv * (-C2 * (u[t] * tmp1));
        a[4][t] = conv * (-C2 * (u[t] * u[n]) * tmp2) - visc * (C34 - C1345) * tmp2 * u[t];
    }

    a[n][0] = conv * (-(un * un) + 0.5 * C2 * (sq * tmp2)) - visc * (-R43 * C34 * tmp2 * u[n]);
    a[n][n] = conv * ((2.0 - C2) * un) - visc * (R43 * C34 * tmp1) - visc * dd;
    a[n][4] = conv * C2;

    let mut energy_rho = 0.0;
    let mut heavy = 0.0;
    for m in 1..4 {
        let w = normal_weight(dir, m);
        energy_rho -= (w * C34 - C1345) * tmp3 * (u[m] * u[m]);
        heavy += if m == n { 3.0 } else { 1.0 } * u[m] * u[m];
    }
    energy_rho -= C1345 * tmp2 * u[4];
    a[4][0] = conv * ((C2 * sq * tmp2 - C1 * (u[4] * tmp1)) * un) - visc * energy_rho;
    a[4][n] = conv * (C1 * (u[4] * tmp1) - 0.5 * C2 * (heavy * tmp2))
        - visc * (R43 * C34 - C1345) * tmp2 * u[n];
    a[4][4] = conv * (C1 * un) - visc * C1345 * tmp1 - visc * dd;
    a
}

/// The diagonal block at a point of state `u`, `1 / rho` being `tmp1`
/// (the same in both sweeps). Each entry sums the three directions'
/// viscous terms; the sums of their constants are taken first (the
/// compiler hoists them out of the sweeps' loops), so a point costs one
/// product chain per entry, as in NPB's `jacld`, not one per direction.
#[inline(always)]
pub fn diagonal(u: &[f64; NV], tmp1: f64, c: &Coeffs) -> Mat5 {
    let tmp2 = tmp1 * tmp1;
    let tmp3 = tmp1 * tmp2;
    let k = c.dt * 2.0;
    let damping = c.t1[0] * c.dd[0] + c.t1[1] * c.dd[1] + c.t1[2] * c.dd[2];
    let t1_sum = c.t1[0] + c.t1[1] + c.t1[2];
    let mut d = [[0.0; NV]; NV];
    d[0][0] = 1.0 + k * damping;
    let mut energy_rho = -(t1_sum * C1345) * tmp2 * u[4];
    for m in 1..4 {
        // The viscous and the heat coefficient of momentum m summed over
        // the directions (4/3 where m is the direction's normal one).
        let (mut visc, mut heat) = (0.0, 0.0);
        for dir in 0..3 {
            visc += c.t1[dir] * normal_weight(dir, m) * C34;
            heat += c.t1[dir] * (normal_weight(dir, m) * C34 - C1345);
        }
        d[m][0] = -(k * visc) * tmp2 * u[m];
        d[m][m] = 1.0 + (k * visc) * tmp1 + k * damping;
        d[4][m] = (k * heat) * tmp2 * u[m];
        energy_rho -= heat * tmp3 * (u[m] * u[m]);
    }
    d[4][0] = k * energy_rho;
    d[4][4] = 1.0 + (k * t1_sum * C1345) * tmp1 + k * damping;
    d
}

/// Solves `d x = v` in place for a diagonal block `d` of [`diagonal`]:
/// Gaussian elimination without pivoting, as NPB's `blts` and `buts` do,
/// less its products with the block's structural zeros. Only the density
/// row and column 4 couple the variables (row 0 and rows 1-3 hold their
/// diagonal and, for rows 1-3, column 0; rows 1-3 never meet each other):
/// a product with a zero subtracts an exact zero, so the result is that of
/// the full elimination bit for bit, in about a quarter of its operations
/// and with rows 1-3 off the chain of the sweep's recurrence.
#[inline(always)]
pub fn solve(d: &Mat5, v: &mut [f64; NV]) {
    let inv = 1.0 / d[0][0];
    for row in 1..NV {
        let f = inv * d[row][0];
        v[row] -= v[0] * f;
    }
    for col in 1..4 {
        let f = (1.0 / d[col][col]) * d[4][col];
        v[4] -= v[col] * f;
    }
    v[4] /= d[4][4];
    for row in (0..4).rev() {
        v[row] /= d[row][row];
    }
}

/// The full elimination [`solve`] stands for, kept to check it.
#[cfg(test)]
fn solve_dense(mut d: Mat5, v: &mut [f64; NV]) {
    for col in 0..NV - 1 {
        let inv = 1.0 / d[col][col];
        for row in col + 1..NV {
            let f = inv * d[row][col];
            for c in col + 1..NV {
                d[row][c] -= f * d[col][c];
            }
            v[row] -= v[col] * f;
        }
    }
    for row in (0..NV).rev() {
        for c in row + 1..NV {
            v[row] -= d[row][c] * v[c];
        }
        v[row] /= d[row][row];
    }
}

/// `acc[m] -= w * sum_l a[m][l] * v[l]`.
#[inline(always)]
pub fn sub_product(acc: &mut [f64; NV], w: f64, a: &Mat5, v: &[f64]) {
    for m in 0..NV {
        let s = a[m][0] * v[0] + a[m][1] * v[1] + a[m][2] * v[2] + a[m][3] * v[3] + a[m][4] * v[4];
        acc[m] -= w * s;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn coeffs() -> Coeffs {
        Coeffs::new(12, 0.5)
    }

    const U: [f64; NV] = [1.3, 0.2, -0.4, 0.7, 3.1];

    fn neighbour_dyn(u: &[f64; NV], dir: usize, side: f64, c: &Coeffs) -> Mat5 {
        match dir {
            0 => neighbour::<0>(u, 1.0 / u[0], side, c),
            1 => neighbour::<1>(u, 1.0 / u[0], side, c),
            _ => neighbour::<2>(u, 1.0 / u[0], side, c),
        }
    }

    #[test]
    fn the_sides_differ_only_in_the_convective_part() {
        let c = coeffs();
        for dir in 0..3 {
            let lower = neighbour_dyn(&U, dir, -1.0, &c);
            let upper = neighbour_dyn(&U, dir, 1.0, &c);
            // lower + upper is twice the viscous part; at zero velocity and
            // energy the convective part of row 1 is +-dt*t2 at the normal
            // momentum.
            assert_eq!(lower[0][dir + 1], -c.dt * c.t2[dir]);
            assert_eq!(upper[0][dir + 1], c.dt * c.t2[dir]);
            let visc = c.dt * c.t1[dir];
            assert!(((lower[0][0] + upper[0][0]) - (-2.0 * visc * c.dd[dir])).abs() < 1e-12);
        }
    }

    #[test]
    fn blocks_match_npbs_entries_spelled_out() {
        // Three entries of NPB's jacld for z (k-1) and jacu for x (i+1),
        // transcribed from the specification's formulas.
        let c = coeffs();
        let (t1, t2) = (c.t1[2], c.t2[2]);
        let (tmp1, dt) = (1.0 / U[0], c.dt);
        let tmp2 = tmp1 * tmp1;
        let a = neighbour::<2>(&U, 1.0 / U[0], -1.0, &c);
        let want = -dt * t2 * (-(U[1] * U[3]) * tmp2) - dt * t1 * (-C34 * tmp2 * U[1]);
        assert!((a[1][0] - want).abs() < 1e-12 * want.abs().max(1.0));
        let want = -dt * t2 * (U[3] * tmp1) - dt * t1 * C34 * tmp1 - dt * t1 * 1.0;
        assert!((a[1][1] - want).abs() < 1e-12 * want.abs());
        let x = neighbour::<0>(&U, 1.0 / U[0], 1.0, &c);
        let want = dt * c.t2[0] * ((2.0 - C2) * (U[1] * tmp1))
            - dt * c.t1[0] * (R43 * C34 * tmp1)
            - dt * c.t1[0] * 0.75;
        assert!((x[1][1] - want).abs() < 1e-12 * want.abs());
        let d = diagonal(&U, 1.0 / U[0], &c);
        let want = 1.0 + dt * 2.0 * (c.t1[0] * 0.75 + c.t1[1] * 0.75 + c.t1[2] * 1.0);
        assert!((d[0][0] - want).abs() < 1e-12 * want);
        assert_eq!(d[0][1], 0.0);
    }

    #[test]
    fn solve_inverts_the_diagonal_block() {
        let d = diagonal(&U, 1.0 / U[0], &coeffs());
        let x = [1.0, -2.0, 0.5, 3.0, -1.5];
        let mut v = [0.0; NV];
        for m in 0..NV {
            v[m] = (0..NV).map(|l| d[m][l] * x[l]).sum();
        }
        let mut dense = v;
        solve(&d, &mut v);
        for m in 0..NV {
            assert!((v[m] - x[m]).abs() < 1e-12, "{m}: {} vs {}", v[m], x[m]);
        }
        // Skipping the structural zeros changes no bit.
        solve_dense(d, &mut dense);
        assert_eq!(v, dense);
        for (r, row) in d.iter().enumerate() {
            for (c, e) in row.iter().enumerate() {
                let coupled = r == c || c == 0 || r == 4;
                assert!(coupled || *e == 0.0, "d[{r}][{c}] = {e}");
            }
        }
    }
}
