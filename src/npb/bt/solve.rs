//! BT's implicit step: along each axis in turn, one block-tridiagonal
//! system per grid line, 5x5 blocks from the flux Jacobian `F` and the
//! viscous Jacobian `N` of the three neighbouring points (NPB's
//! `x_solve`, `y_solve`, `z_solve`), with `t1 = dt/h^2`, `t2 = dt/2h`:
//!
//! `A = -t2 F(i-1) - t1 (N(i-1) + d I)`,
//! `B = I + 2 t1 (N(i) + d I)`,
//! `C = t2 F(i+1) - t1 (N(i+1) + d I)`,
//!
//! solved by block elimination without pivoting.
//!
//! Only the interior rows of a line are solved: on the grid's faces the
//! update is zero (NPB's rows there are the identity with a zero
//! right-hand side, so they change nothing in their neighbours).
//!
//! A line crosses `p` cells held by `p` ranks. The elimination of a
//! cell's part needs only the last normalised row of the part before it
//! (`C'` and `r'`, [`FORWARD_CARRY`] values), and the back substitution
//! only the first solved row of the part after it ([`BACKWARD_CARRY`]):
//! these are the messages of the multi-partition pipeline.

use super::block::{binvcrhs, matmul_sub, matvec_sub, Block, B};
use crate::npb::sp::cells::{Aux, Cell, NV};
use crate::npb::sp::rhs::{aux_of, Consts};

/// Values handed on in the forward elimination, per line: the last row's
/// `C'` block and `r'` (NPB's 30).
pub const FORWARD_CARRY: usize = B * B + B;

/// Values handed back in the back substitution, per line: the first
/// solved row (NPB's 5).
pub const BACKWARD_CARRY: usize = B;

/// Gas constants (NPB's `c1`, `c2`, `c3 c4`, `c1 c3 c4 c5`, `4/3`).
const C1: f64 = 1.4;
const C2: f64 = 0.4;
const C3C4: f64 = 0.1;
const C1345: f64 = 1.4 * 1.4 * 0.1;
const CON43: f64 = 4.0 / 3.0;

/// The flux Jacobian `F` and viscous Jacobian `N` along axis `d` of the
/// state `u` with its derived quantities `a`, into `f` and `n` (written
/// in place: blocks returned by value cost a copy each in this loop).
#[inline(always)]
fn jacobians(u: &[f64], a: &Aux, d: usize, f: &mut Block, n: &mut Block) {
    let (t1, qs) = (a.rho_i, a.qs);
    let (t2, v) = (t1 * t1, 1 + d);
    let t3 = t1 * t2;
    *f = [[0.0; B]; B];
    *n = [[0.0; B]; B];
    f[0][v] = 1.0;
    let mut n40 = -C1345 * t2 * u[4];
    for m in 1..4 {
        if m == v {
            f[m][0] = -(u[v] * t2 * u[v]) + C2 * qs;
            for o in 1..4 {
                f[m][o] = -C2 * (u[o] * t1);
            }
            f[m][m] = (2.0 - C2) * (u[v] * t1);
            f[m][4] = C2;
        } else {
            f[m][0] = -(u[v] * u[m]) * t2;
            f[m][v] = u[m] * t1;
            f[m][m] = u[v] * t1;
        }
        f[4][m] = -C2 * (u[m] * u[v]) * t2;
        let coef = if m == v { CON43 * C3C4 } else { C3C4 };
        n[m][0] = -coef * t2 * u[m];
        n[m][m] = coef * t1;
        n40 -= (coef - C1345) * t3 * (u[m] * u[m]);
        n[4][m] = (coef - C1345) * t2 * u[m];
    }
    f[4][0] = (C2 * 2.0 * qs - C1 * (u[4] * t1)) * (u[v] * t1);
    f[4][v] = C1 * u[4] * t1 - C2 * (u[v] * u[v] * t2 + qs);
    f[4][4] = C1 * (u[v] * t1);
    n[4][0] = n40;
    n[4][4] = C1345 * t1;
}

/// Scratch of one line part, reused from line to line: the Jacobians
/// from one point before the part to one after, and the part's `C'` and
/// `r'` while it is eliminated.
#[derive(Debug, Default)]
pub struct Scratch {
    f: Vec<Block>,
    n: Vec<Block>,
    c: Vec<Block>,
    x: Vec<[f64; B]>,
}

/// Where a line part lies: the point index of its first interior row,
/// the distance between rows, and how many there are.
#[derive(Debug, Clone, Copy)]
pub struct Part {
    /// Point index of the first row.
    pub first: usize,
    /// Points between rows.
    pub stride: usize,
    /// Rows (interior points along the line in this cell).
    pub rows: usize,
}

impl Part {
    fn at(&self, r: usize) -> usize {
        self.first + r * self.stride
    }
}

/// The three blocks of row `r` of a part whose Jacobians (from row -1)
/// are `f` and `n`, into `a`, `b`, `c`.
#[inline(always)]
fn row_blocks(
    k: &Consts,
    d: usize,
    (f, n): (&[Block], &[Block]),
    r: usize,
    [a, b, c]: [&mut Block; 3],
) {
    let (dt1, dt2, dd) = (k.dtt1[d], k.dtt2[d], k.dd[d]);
    let (fm, nm, n0, fp, np) = (&f[r], &n[r], &n[r + 1], &f[r + 2], &n[r + 2]);
    for i in 0..B {
        for j in 0..B {
            a[i][j] = -dt2 * fm[i][j] - dt1 * nm[i][j];
            b[i][j] = dt1 * 2.0 * n0[i][j];
            c[i][j] = dt2 * fp[i][j] - dt1 * np[i][j];
        }
        a[i][i] -= dt1 * dd;
        b[i][i] += 1.0 + dt1 * 2.0 * dd;
        c[i][i] -= dt1 * dd;
    }
}

/// The right-hand side of point `pt`.
fn load(cell: &Cell, pt: usize) -> [f64; NV] {
    cell.rhs[NV * pt..NV * pt + NV].try_into().unwrap()
}

/// The Jacobians of a part's rows along axis `D`, from one row before
/// the part to one after, into the scratch. The axis is a constant here
/// so that [`jacobians`] folds its choice of velocity component and its
/// structural zeros into straight-line code, as NPB's three copies of it
/// (one per axis) are.
///
/// `1/rho` and `qs` are derived again from the point's state, by the
/// right-hand side's own formula (the same values bit for bit: the state
/// does not change between the right-hand side and the sweeps), rather
/// than read from `cell.aux`: a division and a few products cost less than
/// the 72-byte record per point that a line across the planes otherwise
/// pulls from memory for 16 bytes of it.
fn line_jacobians<const D: usize>(cell: &Cell, part: Part, sc: &mut Scratch) {
    let rows = sc.f.iter_mut().zip(sc.n.iter_mut()).take(part.rows + 2);
    for (r, (f, n)) in rows.enumerate() {
        let pt = part.first + r * part.stride - part.stride;
        let u = &cell.u[NV * pt..NV * pt + NV];
        jacobians(u, &aux_of(u), D, f, n);
    }
}

/// Forward elimination of a line part, after the part before it left
/// `carry_in` (`None` at the grid's low face).
///
/// A part that hands nothing on (`carry_out` empty: the last part of the
/// line, at the grid's high face) is solved here to the end: its back
/// substitution needs nothing from another part and its `C'` and `r'`
/// are still in the scratch, so they never go to memory and the line is
/// read and written once. [`backward`] then only hands the first solved
/// row back. Any other part leaves each row's `C'` in `cfac`, its `r'`
/// in `cell.rhs` and the last row's in `carry_out`.
#[allow(clippy::too_many_arguments)]
pub fn forward(
    k: &Consts,
    cell: &mut Cell,
    cfac: &mut [Block],
    d: usize,
    part: Part,
    sc: &mut Scratch,
    carry_in: Option<&[f64]>,
    carry_out: &mut [f64],
) {
    let len = part.rows;
    if len == 0 {
        return;
    }
    sc.f.resize(len + 2, [[0.0; B]; B]);
    sc.n.resize(len + 2, [[0.0; B]; B]);
    sc.c.resize(len, [[0.0; B]; B]);
    sc.x.resize(len, [0.0; B]);
    match d {
        0 => line_jacobians::<0>(cell, part, sc),
        1 => line_jacobians::<1>(cell, part, sc),
        _ => line_jacobians::<2>(cell, part, sc),
    }
    // The row before the first: the part before's last, or none.
    let mut before = [[0.0; B]; B];
    let mut before_rhs = [0.0; B];
    if let Some(c) = carry_in {
        for (i, row) in before.iter_mut().enumerate() {
            row.copy_from_slice(&c[B * i..B * i + B]);
        }
        before_rhs.copy_from_slice(&c[B * B..FORWARD_CARRY]);
    }
    let (jac, cs, xs) = ((&sc.f[..], &sc.n[..]), &mut sc.c[..len], &mut sc.x[..len]);
    let (mut a, mut b) = ([[0.0; B]; B], [[0.0; B]; B]);
    for r in 0..len {
        let (done, rest) = cs.split_at_mut(r);
        let c = &mut rest[0];
        row_blocks(k, d, jac, r, [&mut a, &mut b, c]);
        let mut rhs = load(cell, part.at(r));
        if r > 0 {
            matvec_sub(&a, &xs[r - 1], &mut rhs);
            matmul_sub(&a, &done[r - 1], &mut b);
        } else if carry_in.is_some() {
            matvec_sub(&a, &before_rhs, &mut rhs);
            matmul_sub(&a, &before, &mut b);
        }
        binvcrhs(&mut b, c, &mut rhs);
        xs[r] = rhs;
    }
    if carry_out.is_empty() {
        // The last row's solution is its `r'` (zero beyond the face).
        for r in (0..len - 1).rev() {
            let next = xs[r + 1];
            matvec_sub(&cs[r], &next, &mut xs[r]);
        }
        for (r, x) in xs.iter().enumerate() {
            let pt = part.at(r);
            cell.rhs[NV * pt..NV * pt + NV].copy_from_slice(x);
        }
        return;
    }
    for (r, (c, x)) in cs.iter().zip(xs.iter()).enumerate() {
        let pt = part.at(r);
        cfac[pt] = *c;
        cell.rhs[NV * pt..NV * pt + NV].copy_from_slice(x);
    }
    for (i, row) in cs[len - 1].iter().enumerate() {
        carry_out[B * i..B * i + B].copy_from_slice(row);
    }
    carry_out[B * B..].copy_from_slice(&xs[len - 1]);
}

/// Back substitution of a line part, given the first solved row of the
/// part after it; leaves this part's first solved row in `carry_out`
/// unless it is empty. With no part after it (`None`: the grid's high
/// face) [`forward`] has solved the part already, and only the first row
/// goes back.
pub fn backward(
    cell: &mut Cell,
    cfac: &[Block],
    part: Part,
    carry_in: Option<&[f64]>,
    carry_out: &mut [f64],
) {
    if part.rows == 0 {
        return;
    }
    let Some(c) = carry_in else {
        if !carry_out.is_empty() {
            carry_out.copy_from_slice(&load(cell, part.first));
        }
        return;
    };
    let mut next: [f64; B] = c.try_into().unwrap();
    for r in (0..part.rows).rev() {
        let pt = part.at(r);
        let mut x = load(cell, pt);
        matvec_sub(&cfac[pt], &next, &mut x);
        cell.rhs[NV * pt..NV * pt + NV].copy_from_slice(&x);
        next = x;
    }
    if !carry_out.is_empty() {
        carry_out.copy_from_slice(&next);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::npb::sp::adi::line_starts;
    use crate::npb::sp::cells::Layout;
    use crate::npb::sp::rhs::{compute_rhs, set_forcing};

    #[test]
    fn a_line_solve_satisfies_each_block_tridiagonal_system() {
        let k = Consts::new(12, 0.010);
        let (_, mut cells) = Layout::new(12, 1, 0);
        let mut c = cells.remove(0);
        set_forcing(&k, &mut c);
        c.initialise();
        compute_rhs(&k, &mut c);
        let mut cfac = vec![[[0.0; B]; B]; c.aux.len()];
        for d in 0..3 {
            let mut starts = Vec::new();
            line_starts(&c, d, &mut starts);
            let s = c.stride(d);
            // The first interior row is one past the face.
            let part = Part {
                first: starts[37] + s,
                stride: s,
                rows: 10,
            };
            for r in 0..10 {
                for m in 0..NV {
                    c.rhs[NV * part.at(r) + m] = ((r * 7 + m * 3) % 11) as f64 - 5.0;
                }
            }
            let want = c.rhs.clone();
            let mut sc = Scratch::default();
            forward(&k, &mut c, &mut cfac, d, part, &mut sc, None, &mut []);
            backward(&mut c, &cfac, part, None, &mut []);
            // A x(r-1) + B x(r) + C x(r+1) = rhs(r), x zero on the faces.
            let x = |r: isize| -> [f64; NV] {
                if (0..10).contains(&r) {
                    load(&c, part.at(r as usize))
                } else {
                    [0.0; NV]
                }
            };
            for r in 0..10isize {
                let (mut a, mut b, mut cc) = ([[0.0; B]; B], [[0.0; B]; B], [[0.0; B]; B]);
                row_blocks(&k, d, (&sc.f, &sc.n), r as usize, [&mut a, &mut b, &mut cc]);
                let mut res = [0.0; NV];
                matvec_sub(&a, &x(r - 1), &mut res);
                matvec_sub(&b, &x(r), &mut res);
                matvec_sub(&cc, &x(r + 1), &mut res);
                for m in 0..NV {
                    let got = -res[m];
                    let w = want[NV * part.at(r as usize) + m];
                    assert!((got - w).abs() < 1e-10, "d {d} row {r} m {m}: {got} vs {w}");
                }
            }
        }
    }

    #[test]
    fn jacobians_follow_the_axis() {
        // A state moving along z: the x and z Jacobians are each other's
        // with x and z swapped.
        let u = [1.2, 0.3, -0.1, 0.5, 2.5];
        let uz = [1.2, 0.5, -0.1, 0.3, 2.5];
        let aux = |u: &[f64; 5]| {
            let rho_i = 1.0 / u[0];
            let square = 0.5 * (u[1] * u[1] + u[2] * u[2] + u[3] * u[3]) * rho_i;
            Aux {
                rho_i,
                square,
                qs: square * rho_i,
                ..Aux::default()
            }
        };
        let (mut fx, mut nx, mut fz, mut nz) = Default::default();
        jacobians(&u, &aux(&u), 0, &mut fx, &mut nx);
        jacobians(&uz, &aux(&uz), 2, &mut fz, &mut nz);
        let swap = |i: usize| [0, 3, 2, 1, 4][i];
        for i in 0..B {
            for j in 0..B {
                assert!(
                    (fx[i][j] - fz[swap(i)][swap(j)]).abs() < 1e-15,
                    "F ({i},{j})"
                );
                assert!(
                    (nx[i][j] - nz[swap(i)][swap(j)]).abs() < 1e-15,
                    "N ({i},{j})"
                );
            }
        }
        // Mass flux: d(rho u)/d(rho u) along x.
        assert_eq!(fx[0], [0.0, 1.0, 0.0, 0.0, 0.0]);
    }
}
