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
use super::rhs::{dissipation_weights, points, points_mut, Consts};

/// Values handed from one part of a line to the next in the forward
/// elimination: for each of the last two rows, `(d, e)` of the three
/// systems and the five right-hand sides, NPB's 22 per line.
pub const FORWARD_CARRY: usize = 22;

/// Values handed back in the back substitution: the first two solved rows
/// of the five variables, NPB's 10 per line.
pub const BACKWARD_CARRY: usize = 10;

/// Which system each variable belongs to: 1-3 to the first, 4 to the
/// second (`lhsp`), 5 to the third (`lhsm`).
pub(super) const SYSTEM_OF: [usize; NV] = [0, 0, 0, 1, 2];

/// Scratch of one line part, reused from line to line: 15 coefficients
/// (three systems of 5 diagonals) and the 5 right-hand sides per row,
/// the convective and viscous terms one point beyond each end, and the
/// normalised upper diagonals `(d, e)` of the three systems per row.
#[derive(Debug, Default)]
pub struct Scratch {
    pub(super) rows: Vec<[f64; 15]>,
    /// The rows of every line of a cell, built ahead ([`prepare`]).
    built: Vec<[f64; 15]>,
    rhs: Vec<[f64; NV]>,
    cv: Vec<f64>,
    rhon: Vec<f64>,
    speed: Vec<f64>,
    de: Vec<[f64; 6]>,
}

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
pub(super) fn build_rows(k: &Consts, cell: &Cell, d: usize, first: usize, sc: &mut Scratch) {
    let len = cell.size[d];
    let s = cell.stride(d) as isize;
    sc.rows.resize(len, [0.0; 15]);
    sc.cv.resize(len + 2, 0.0);
    sc.rhon.resize(len + 2, 0.0);
    sc.speed.resize(len + 2, 0.0);
    // The point terms once each, from one point before the part to one
    // after (NPB's `cv` and `rhon`).
    for r in 0..len + 2 {
        let a = &cell.aux[(first as isize + (r as isize - 1) * s) as usize];
        sc.cv[r] = a.vel[d];
        sc.rhon[r] = k.rho_max(d, a.rho_i);
        sc.speed[r] = a.speed;
    }
    let last = cell.n as isize - 1;
    let (dtt1, dtt2) = (k.dtt1[d], k.dtt2[d]);
    let g0 = cell.global(d, cell.owned(d).start);
    for (r, row) in sc.rows.iter_mut().enumerate() {
        let g = g0 + r as isize;
        if g == 0 || g == last {
            *row = [0.0; 15];
            row[2] = 1.0;
            row[7] = 1.0;
            row[12] = 1.0;
            continue;
        }
        // Point r of the part is entry r + 1 of the point terms.
        let mut base = [
            0.0,
            -dtt2 * sc.cv[r] - dtt1 * sc.rhon[r],
            1.0 + 2.0 * dtt1 * sc.rhon[r + 1],
            dtt2 * sc.cv[r + 2] - dtt1 * sc.rhon[r + 2],
            0.0,
        ];
        let w = dissipation_weights(g, cell.n);
        for (b, wo) in base.iter_mut().zip(w) {
            *b += wo * k.dtdssp;
        }
        row[..5].copy_from_slice(&base);
        row[5..10].copy_from_slice(&base);
        row[10..].copy_from_slice(&base);
        row[6] -= dtt2 * sc.speed[r];
        row[8] += dtt2 * sc.speed[r + 2];
        row[11] += dtt2 * sc.speed[r];
        row[13] -= dtt2 * sc.speed[r + 2];
    }
}

/// Eliminates a normalised row (`de`: `(d, e)` of the three systems,
/// `src`: its right-hand sides) from the row `gap` (1 or 2) rows below.
#[inline(always)]
fn eliminate(row: &mut [f64; 15], rhs: &mut [f64; NV], gap: usize, de: &[f64], src: &[f64]) {
    // The factors first: the updates below never touch them.
    let f = [row[2 - gap], row[7 - gap], row[12 - gap]];
    for q in 0..3 {
        row[5 * q + 3 - gap] -= f[q] * de[2 * q];
        row[5 * q + 4 - gap] -= f[q] * de[2 * q + 1];
    }
    for m in 0..NV {
        rhs[m] -= f[SYSTEM_OF[m]] * src[m];
    }
}

/// Forward elimination of the part of a line starting at `first`, after
/// the part before it left `carry_in` (`None` at the grid's low face).
///
/// A part that hands nothing on (`carry_out` empty: the last part of the
/// line, at the grid's high face) is solved here to the end: its back
/// substitution needs nothing from another part, and its rows are still
/// in the scratch, so the normalised rows never go to memory and the
/// line is read and written once (NPB's serial code does the same work
/// in two passes). [`backward`] then only hands the solved first rows
/// back. Any other part leaves the normalised `(d, e)` in `cell.fac` and
/// its last two rows in `carry_out`.
pub fn forward(
    k: &Consts,
    cell: &mut Cell,
    d: usize,
    first: usize,
    sc: &mut Scratch,
    carry_in: Option<&[f64]>,
    carry_out: &mut [f64],
) {
    build_rows(k, cell, d, first, sc);
    let mut rows = std::mem::take(&mut sc.rows);
    eliminate_part(cell, d, first, &mut rows, sc, carry_in, carry_out);
    sc.rows = rows;
}

/// Builds the rows of line `l` of a cell ahead of its elimination, into
/// `sc.built` (NPB's `lhsx` of a whole cell, computed while the stage's
/// message travels); [`forward_built`] takes them from there.
pub fn prepare(k: &Consts, cell: &Cell, d: usize, first: usize, l: usize, sc: &mut Scratch) {
    let len = cell.size[d];
    build_rows(k, cell, d, first, sc);
    if sc.built.len() < (l + 1) * len {
        sc.built.resize((l + 1) * len, [0.0; 15]);
    }
    sc.built[l * len..(l + 1) * len].copy_from_slice(&sc.rows[..len]);
}

/// [`forward`] of line `l`, whose rows [`prepare`] built.
pub fn forward_built(
    cell: &mut Cell,
    d: usize,
    first: usize,
    l: usize,
    sc: &mut Scratch,
    carry_in: Option<&[f64]>,
    carry_out: &mut [f64],
) {
    let len = cell.size[d];
    let mut built = std::mem::take(&mut sc.built);
    let rows = &mut built[l * len..(l + 1) * len];
    eliminate_part(cell, d, first, rows, sc, carry_in, carry_out);
    sc.built = built;
}

/// The elimination (and, for a last part, the solve) of [`forward`], on
/// rows already built; `sc` lends its right-hand side and `(d, e)` lines.
fn eliminate_part(
    cell: &mut Cell,
    d: usize,
    first: usize,
    rows: &mut [[f64; 15]],
    sc: &mut Scratch,
    carry_in: Option<&[f64]>,
    carry_out: &mut [f64],
) {
    let len = cell.size[d];
    let s = cell.stride(d);
    sc.rhs.resize(len + 2, [0.0; NV]);
    sc.de.resize(len + 2, [0.0; 6]);
    let (rows, rhs, des) = (&mut rows[..len], &mut sc.rhs[..len + 2], &mut sc.de[..len]);
    let line = points(&cell.rhs);
    for (r, v) in rhs[..len].iter_mut().enumerate() {
        *v = line[first + r * s];
    }
    if let Some(c) = carry_in {
        // Rows -2 and -1 act on rows 0 and 1 as inside one elimination.
        let (m2, m1) = (&c[..11], &c[11..22]);
        eliminate(&mut rows[0], &mut rhs[0], 2, &m2[..6], &m2[6..]);
        eliminate(&mut rows[0], &mut rhs[0], 1, &m1[..6], &m1[6..]);
        eliminate(&mut rows[1], &mut rhs[1], 2, &m1[..6], &m1[6..]);
    }
    for r in 0..len {
        let row = &mut rows[r];
        let mut de = [0.0; 6];
        let mut f = [0.0; 3];
        for q in 0..3 {
            f[q] = 1.0 / row[5 * q + 2];
            row[5 * q + 3] *= f[q];
            row[5 * q + 4] *= f[q];
            de[2 * q] = row[5 * q + 3];
            de[2 * q + 1] = row[5 * q + 4];
        }
        for m in 0..NV {
            rhs[r][m] *= f[SYSTEM_OF[m]];
        }
        des[r] = de;
        let src = rhs[r];
        if r + 1 < len {
            eliminate(&mut rows[r + 1], &mut rhs[r + 1], 1, &de, &src);
        }
        if r + 2 < len {
            eliminate(&mut rows[r + 2], &mut rhs[r + 2], 2, &de, &src);
        }
    }
    let line = points_mut(&mut cell.rhs);
    if carry_out.is_empty() {
        // Beyond the high face the solution counts as zero.
        rhs[len] = [0.0; NV];
        rhs[len + 1] = [0.0; NV];
        substitute(rhs, des);
        for (r, v) in rhs[..len].iter().enumerate() {
            line[first + r * s] = *v;
        }
        return;
    }
    for (r, (v, de)) in rhs[..len].iter().zip(des.iter()).enumerate() {
        line[first + r * s] = *v;
        cell.fac[first + r * s] = *de;
    }
    for t in 0..2 {
        let r = len - 2 + t;
        carry_out[11 * t..11 * t + 6].copy_from_slice(&des[r]);
        carry_out[11 * t + 6..11 * t + 11].copy_from_slice(&rhs[r]);
    }
}

/// The back substitution of rows `x[..len]` given the two solved rows
/// after them in `x[len..]`, with the normalised `(d, e)` of each row.
#[inline(always)]
fn substitute(x: &mut [[f64; NV]], des: &[[f64; 6]]) {
    for r in (0..des.len()).rev() {
        let fac = des[r];
        let (next1, next2) = (x[r + 1], x[r + 2]);
        for m in 0..NV {
            let q = SYSTEM_OF[m];
            x[r][m] = x[r][m] - fac[2 * q] * next1[m] - fac[2 * q + 1] * next2[m];
        }
    }
}

/// Back substitution of the part of a line starting at `first`, given
/// the first two solved rows of the part after it; leaves this part's
/// first two solved rows in `carry_out` unless it is empty. With no
/// part after it (`None`: the grid's high face) [`forward`] has solved
/// the part already, and only the first rows go back.
pub fn backward(
    cell: &mut Cell,
    d: usize,
    first: usize,
    sc: &mut Scratch,
    carry_in: Option<&[f64]>,
    carry_out: &mut [f64],
) {
    let len = cell.size[d];
    let s = cell.stride(d);
    sc.rhs.resize(len + 2, [0.0; NV]);
    let x = &mut sc.rhs[..len + 2];
    let line = points_mut(&mut cell.rhs);
    if let Some(c) = carry_in {
        for (r, v) in x[..len].iter_mut().enumerate() {
            *v = line[first + r * s];
        }
        sc.de.resize(len, [0.0; 6]);
        for (r, de) in sc.de[..len].iter_mut().enumerate() {
            *de = cell.fac[first + r * s];
        }
        for m in 0..NV {
            x[len][m] = c[2 * m];
            x[len + 1][m] = c[2 * m + 1];
        }
        substitute(x, &sc.de[..len]);
        for (r, v) in x[..len].iter().enumerate() {
            line[first + r * s] = *v;
        }
    } else {
        x[0] = line[first];
        x[1] = line[first + s];
    }
    if !carry_out.is_empty() {
        for m in 0..NV {
            carry_out[2 * m] = x[0][m];
            carry_out[2 * m + 1] = x[1][m];
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
    fn a_last_part_is_solved_by_forward_and_backward_only_hands_back() {
        let (k, mut c) = cell();
        let (d, s) = (2, c.stride(2));
        let mut starts = Vec::new();
        line_starts(&c, d, &mut starts);
        let first = starts[11];
        let mut sc = Scratch::default();
        // The whole line in two calls: forward hands nothing on, so it
        // solves; the same line through a carry (a part before it of
        // none) gives the same values, and backward leaves them.
        let before = c.rhs.clone();
        forward(&k, &mut c, d, first, &mut sc, None, &mut []);
        let solved = c.rhs.clone();
        assert_ne!(solved, before, "forward left the line unsolved");
        let mut out = [f64::NAN; BACKWARD_CARRY];
        backward(&mut c, d, first, &mut sc, None, &mut out);
        assert_eq!(c.rhs, solved, "backward changed a solved part");
        for m in 0..NV {
            assert_eq!(out[2 * m], solved[NV * first + m]);
            assert_eq!(out[2 * m + 1], solved[NV * (first + s) + m]);
        }
        // A part that hands on keeps its rows for backward instead.
        c.rhs.copy_from_slice(&before);
        let mut carry = [0.0; FORWARD_CARRY];
        forward(&k, &mut c, d, first, &mut sc, None, &mut carry);
        assert_ne!(c.rhs, solved);
        let zeros = [0.0; BACKWARD_CARRY];
        backward(&mut c, d, first, &mut sc, Some(&zeros), &mut []);
        assert_eq!(c.rhs, solved, "the two orders differ");
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
            let mut sc = Scratch::default();
            forward(&k, &mut c, d, first, &mut sc, None, &mut []);
            backward(&mut c, d, first, &mut sc, None, &mut []);
            build_rows(&k, &c, d, first, &mut sc);
            let a = &sc.rows;
            for (m, &q) in SYSTEM_OF.iter().enumerate() {
                let o = 5 * q;
                {
                    for r in 0..12isize {
                        let x = |rr: isize| {
                            if (0..12).contains(&rr) {
                                c.rhs[NV * (first + rr as usize * s) + m]
                            } else {
                                0.0
                            }
                        };
                        let ax: f64 = (0..5)
                            .map(|t| a[r as usize][o + t] * x(r + t as isize - 2))
                            .sum();
                        let want = b[NV * (first + r as usize * s) + m];
                        assert!(
                            (ax - want).abs() < 1e-10,
                            "d {d} q {q} m {m} row {r}: {ax} vs {want}"
                        );
                    }
                }
            }
        }
    }
}
