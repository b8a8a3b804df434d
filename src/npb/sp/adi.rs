//! SP's implicit step: along each axis in turn, one scalar pentadiagonal
//! system per grid line for each of three characteristic groups (NPB's
//! `lhs` for variables 1-3, `lhsp` for 4 and `lhsm` for 5), solved by
//! Gaussian elimination without pivoting (NPB's `x_solve`, `y_solve`,
//! `z_solve`).
//!
//! A line crosses `p` cells held by `p` ranks. The elimination of a
//! cell's part of a line needs only the last two normalised rows of the
//! part before it ([`FORWARD_CARRY`] values), and the back substitution
//! only the first two solved rows of the part after it ([`BACKWARD_CARRY`]
//! values): these are the messages of the multi-partition pipeline. The
//! arithmetic is that of one serial elimination along the whole line.

use super::cells::{Cell, NV};
use super::rhs::{dissipation_weights, Consts};

/// Values handed from one part of a line to the next in the forward
/// elimination: for each of the last two rows, `(d, e)` and the right-hand
/// sides of the three systems (5 + 3 + 3), NPB's 22 per line.
pub const FORWARD_CARRY: usize = 22;

/// Values handed back in the back substitution: the first two solved rows
/// of the five variables, NPB's 10 per line.
pub const BACKWARD_CARRY: usize = 10;

/// The three systems: their offset in a row of 15 coefficients and the
/// variables they solve for.
const SYSTEMS: [(usize, std::ops::Range<usize>); 3] = [(0, 0..3), (5, 3..4), (10, 4..5)];

/// Offset of system `q`'s values in one row of a forward carry.
const CARRY_AT: [usize; 3] = [0, 5, 8];

/// Scratch rows of one line part: 15 coefficients per point.
pub type Rows = Vec<[f64; 15]>;

/// The two axes across axis `d`.
pub fn across(d: usize) -> (usize, usize) {
    match d {
        0 => (1, 2),
        1 => (0, 2),
        _ => (0, 1),
    }
}

/// How many lines of `cell` run along axis `d` (one per interior point
/// of the face across it).
pub fn line_count(cell: &Cell, d: usize) -> usize {
    let (a, b) = across(d);
    cell.interior(a).len() * cell.interior(b).len()
}

/// The lines of `cell` along axis `d`, into `starts`: the point index of
/// the first owned point of each, in the order every rank uses for
/// messages.
pub fn line_starts(cell: &Cell, d: usize, starts: &mut Vec<usize>) {
    let (a, b) = across(d);
    starts.clear();
    for y in cell.interior(b) {
        for x in cell.interior(a) {
            let mut at = [0; 3];
            at[a] = x;
            at[b] = y;
            at[d] = cell.owned(d).start;
            starts.push(cell.point(at[0], at[1], at[2]));
        }
    }
}

/// Builds the three systems' rows of the line part starting at point
/// `first` (NPB's `lhsx`/`lhsy`/`lhsz`): identity rows on the grid's
/// faces, inside the implicit viscous and convective operator with the
/// fourth-difference dissipation, `lhsp`/`lhsm` adding the speed of sound.
fn build_rows(k: &Consts, cell: &Cell, d: usize, first: usize, rows: &mut Rows) {
    let s = cell.stride(d);
    let last = cell.n as isize - 1;
    let (dtt1, dtt2) = (k.dtt1[d], k.dtt2[d]);
    for (r, row) in rows.iter_mut().enumerate() {
        let pt = first + r * s;
        let g = cell.global(d, cell.owned(d).start + r);
        if g == 0 || g == last {
            *row = [0.0; 15];
            row[2] = 1.0;
            row[7] = 1.0;
            row[12] = 1.0;
            continue;
        }
        let (am, a0, ap) = (&cell.aux[pt - s], &cell.aux[pt], &cell.aux[pt + s]);
        let mut base = [
            0.0,
            -dtt2 * am.vel[d] - dtt1 * k.rho_max(d, am.rho_i),
            1.0 + 2.0 * dtt1 * k.rho_max(d, a0.rho_i),
            dtt2 * ap.vel[d] - dtt1 * k.rho_max(d, ap.rho_i),
            0.0,
        ];
        let w = dissipation_weights(g, cell.n);
        for (b, wo) in base.iter_mut().zip(w) {
            *b += wo * k.dtdssp;
        }
        row[..5].copy_from_slice(&base);
        row[5..10].copy_from_slice(&base);
        row[10..].copy_from_slice(&base);
        row[6] -= dtt2 * am.speed;
        row[8] += dtt2 * ap.speed;
        row[11] += dtt2 * am.speed;
        row[13] -= dtt2 * ap.speed;
    }
}

/// Eliminates normalised row `(d, e, s)` of system `q` from the row
/// `gap` (1 or 2) rows below it.
#[inline(always)]
fn eliminate(row: &mut [f64; 15], rhs: &mut [f64], q: usize, gap: usize, de: [f64; 2], s: &[f64]) {
    let (o, ref ms) = SYSTEMS[q];
    let f = row[o + 2 - gap];
    if gap == 1 {
        row[o + 2] -= f * de[0];
        row[o + 3] -= f * de[1];
    } else {
        row[o + 1] -= f * de[0];
        row[o + 2] -= f * de[1];
    }
    for (m, sv) in ms.clone().zip(s) {
        rhs[m] -= f * sv;
    }
}

/// Forward elimination of the part of a line starting at `first`, after
/// the part before it left `carry_in` (`None` at the grid's low face);
/// leaves the normalised `(d, e)` in `cell.fac` and the last two rows in
/// `carry_out`.
pub fn forward(
    k: &Consts,
    cell: &mut Cell,
    d: usize,
    first: usize,
    rows: &mut Rows,
    carry_in: Option<&[f64]>,
    carry_out: &mut [f64],
) {
    let len = cell.size[d];
    rows.resize(len, [0.0; 15]);
    build_rows(k, cell, d, first, rows);
    let s = cell.stride(d);
    let rhs_at = |r: usize| NV * (first + r * s);
    if let Some(c) = carry_in {
        // Rows -2 and -1 act on rows 0 and 1 as inside one elimination.
        for (t, gaps) in [(0usize, &[(0usize, 2usize)][..]), (1, &[(0, 1), (1, 2)][..])] {
            for &(r, gap) in gaps {
                let at = rhs_at(r);
                for q in 0..3 {
                    let o = 11 * t + CARRY_AT[q];
                    let n = SYSTEMS[q].1.len();
                    let (de, sv) = ([c[o], c[o + 1]], &c[o + 2..o + 2 + n]);
                    eliminate(&mut rows[r], &mut cell.rhs[at..at + NV], q, gap, de, sv);
                }
            }
        }
    }
    for r in 0..len {
        let at = rhs_at(r);
        let row = &mut rows[r];
        let mut fac = [0.0; 6];
        for (q, (o, ms)) in SYSTEMS.iter().enumerate() {
            let f = 1.0 / row[o + 2];
            row[o + 3] *= f;
            row[o + 4] *= f;
            for m in ms.clone() {
                cell.rhs[at + m] *= f;
            }
            fac[2 * q] = row[o + 3];
            fac[2 * q + 1] = row[o + 4];
        }
        cell.fac[first + r * s] = fac;
        let src: [f64; NV] = cell.rhs[at..at + NV].try_into().unwrap();
        for gap in [1, 2] {
            if r + gap < len {
                let below = rhs_at(r + gap);
                for (q, (_, ms)) in SYSTEMS.iter().enumerate() {
                    let de = [fac[2 * q], fac[2 * q + 1]];
                    eliminate(
                        &mut rows[r + gap],
                        &mut cell.rhs[below..below + NV],
                        q,
                        gap,
                        de,
                        &src[ms.clone()],
                    );
                }
            }
        }
    }
    if carry_out.is_empty() {
        return;
    }
    for t in 0..2 {
        let r = len - 2 + t;
        let (pt, at) = (first + r * s, rhs_at(r));
        for (q, (_, ms)) in SYSTEMS.iter().enumerate() {
            let o = 11 * t + CARRY_AT[q];
            carry_out[o] = cell.fac[pt][2 * q];
            carry_out[o + 1] = cell.fac[pt][2 * q + 1];
            for (i, m) in ms.clone().enumerate() {
                carry_out[o + 2 + i] = cell.rhs[at + m];
            }
        }
    }
}

/// Back substitution of the part of a line starting at `first`, given
/// the first two solved rows of the part after it (`None` at the grid's
/// high face); leaves this part's first two solved rows in `carry_out`.
pub fn backward(cell: &mut Cell, d: usize, first: usize, carry_in: Option<&[f64]>, carry_out: &mut [f64]) {
    let len = cell.size[d];
    let s = cell.stride(d);
    for r in (0..len).rev() {
        let pt = first + r * s;
        let fac = cell.fac[pt];
        for (q, (_, ms)) in SYSTEMS.iter().enumerate() {
            for m in ms.clone() {
                // The solved values one and two rows further on.
                let next = |gap: usize| -> Option<f64> {
                    if r + gap < len {
                        Some(cell.rhs[NV * (pt + gap * s) + m])
                    } else {
                        carry_in.map(|c| c[2 * m + r + gap - len])
                    }
                };
                let (x1, x2) = (next(1), next(2));
                let mut v = cell.rhs[NV * pt + m];
                if let Some(x1) = x1 {
                    v -= fac[2 * q] * x1;
                }
                if let Some(x2) = x2 {
                    v -= fac[2 * q + 1] * x2;
                }
                cell.rhs[NV * pt + m] = v;
            }
        }
    }
    if !carry_out.is_empty() {
        for m in 0..NV {
            carry_out[2 * m] = cell.rhs[NV * first + m];
            carry_out[2 * m + 1] = cell.rhs[NV * (first + s) + m];
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::npb::sp::cells::Layout;
    use crate::npb::sp::rhs::{compute_rhs, set_forcing};

    /// A serial cell of 12 points with its derived quantities set.
    fn cell() -> (Consts, Cell) {
        let k = Consts::new(12, 0.015);
        let (_, mut cells) = Layout::new(12, 1, 0);
        let mut c = cells.remove(0);
        set_forcing(&k, &mut c);
        c.initialise();
        compute_rhs(&k, &mut c);
        (k, c)
    }

    #[test]
    fn a_line_solve_satisfies_each_pentadiagonal_system() {
        let (k, mut c) = cell();
        for d in 0..3 {
            let mut starts = Vec::new();
            line_starts(&c, d, &mut starts);
            assert_eq!(starts.len(), 10 * 10);
            let first = starts[37];
            let s = c.stride(d);
            // Any right-hand side will do: a smooth made-up one.
            for r in 0..12 {
                for m in 0..NV {
                    c.rhs[NV * (first + r * s) + m] = ((r * 7 + m * 3) % 11) as f64 - 5.0;
                }
            }
            let b = c.rhs.clone();
            let mut rows = Rows::new();
            forward(&k, &mut c, d, first, &mut rows, None, &mut []);
            backward(&mut c, d, first, None, &mut []);
            let mut a = vec![[0.0; 15]; 12];
            build_rows(&k, &c, d, first, &mut a);
            for (q, (o, ms)) in SYSTEMS.iter().enumerate() {
                for m in ms.clone() {
                    for r in 0..12isize {
                        let x = |rr: isize| {
                            if (0..12).contains(&rr) {
                                c.rhs[NV * (first + rr as usize * s) + m]
                            } else {
                                0.0
                            }
                        };
                        let ax: f64 = (0..5).map(|t| a[r as usize][o + t] * x(r + t as isize - 2)).sum();
                        let want = b[NV * (first + r as usize * s) + m];
                        assert!((ax - want).abs() < 1e-10, "d {d} q {q} m {m} row {r}: {ax} vs {want}");
                    }
                }
            }
        }
    }
}
