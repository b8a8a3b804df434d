//! SP's line solves on one rank, two lines at a time: where one cell is
//! the whole grid (a single rank) no line hands anything to another
//! rank, so neighbouring lines are eliminated side by side, each value of
//! a row a pair (one lane per line). Every step is then one two-wide
//! operation, three reciprocals a row cost two-wide divisions for two
//! lines, and the two lines' right-hand sides are read from neighbouring
//! points. Each lane does exactly the arithmetic of [`super::adi`]'s
//! serial elimination of its line, in the same order: the results are
//! the same bit for bit.

use super::adi::{forward, line_starts, Scratch, SYSTEM_OF};
use super::cells::{Cell, NV};
use super::rhs::{dissipation_weights, points, points_mut, Consts};

/// Lines solved together.
const LANES: usize = 2;

/// One value of every lane.
type Lane = [f64; LANES];

/// The lanes' rows (15 coefficients, three systems of 5 diagonals), their
/// right-hand sides (two rows more, the zeros beyond the high face) and
/// the normalised upper diagonals `(d, e)` of the three systems.
#[derive(Debug, Default)]
pub struct LaneScratch {
    rows: Vec<[Lane; 15]>,
    rhs: Vec<[Lane; NV]>,
    de: Vec<[Lane; 6]>,
    starts: Vec<usize>,
    terms: Vec<[Lane; 3]>,
}

/// `a - b * c` per lane.
#[inline(always)]
fn minus_product(a: &mut Lane, b: &Lane, c: &Lane) {
    for z in 0..LANES {
        a[z] -= b[z] * c[z];
    }
}

/// Eliminates a normalised row (`de`, its right-hand sides `src`) from
/// the row `gap` (1 or 2) rows below, lane by lane as `adi::eliminate`.
#[inline(always)]
fn eliminate(
    row: &mut [Lane; 15],
    rhs: &mut [Lane; NV],
    gap: usize,
    de: &[Lane; 6],
    src: &[Lane; NV],
) {
    let f = [row[2 - gap], row[7 - gap], row[12 - gap]];
    for q in 0..3 {
        minus_product(&mut row[5 * q + 3 - gap], &f[q], &de[2 * q]);
        minus_product(&mut row[5 * q + 4 - gap], &f[q], &de[2 * q + 1]);
    }
    for m in 0..NV {
        minus_product(&mut rhs[m], &f[SYSTEM_OF[m]], &src[m]);
    }
}

/// The lanes' rows (NPB's `lhs`, `lhsp`, `lhsm` of each line), built
/// two-wide in place: each lane computes exactly [`build_rows`](super::adi::build_rows)'s values
/// (the same expressions in the same order), without building every line
/// into a scratch row first and copying it over coefficient by
/// coefficient. `terms` keeps the point terms (`cv`, `rhon`, `speed`) of
/// both lanes from one point before the line to one after.
fn build_lane_rows(
    k: &Consts,
    cell: &Cell,
    d: usize,
    firsts: [usize; LANES],
    rows: &mut [[Lane; 15]],
    terms: &mut Vec<[Lane; 3]>,
) {
    let len = rows.len();
    let s = cell.stride(d);
    terms.resize(len + 2, [[0.0; LANES]; 3]);
    let terms = &mut terms[..len + 2];
    for z in 0..LANES {
        // The line's points from one before its first (a ghost) on.
        let line = &cell.aux[firsts[z] - s..];
        for (r, t) in terms.iter_mut().enumerate() {
            let a = &line[r * s];
            t[0][z] = a.vel[d];
            t[1][z] = k.rho_max(d, a.rho_i);
            t[2][z] = a.speed;
        }
    }
    let last = cell.n as isize - 1;
    let (dtt1, dtt2) = (k.dtt1[d], k.dtt2[d]);
    let g0 = cell.global(d, cell.owned(d).start);
    for (r, row) in rows.iter_mut().enumerate() {
        let g = g0 + r as isize;
        if g == 0 || g == last {
            *row = [[0.0; LANES]; 15];
            for c in [2, 7, 12] {
                row[c] = [1.0; LANES];
            }
            continue;
        }
        let w = dissipation_weights(g, cell.n).map(|wo| wo * k.dtdssp);
        let (t0, t1, t2) = (&terms[r], &terms[r + 1], &terms[r + 2]);
        for z in 0..LANES {
            let base = [
                0.0 + w[0],
                (-dtt2 * t0[0][z] - dtt1 * t0[1][z]) + w[1],
                (1.0 + 2.0 * dtt1 * t1[1][z]) + w[2],
                (dtt2 * t2[0][z] - dtt1 * t2[1][z]) + w[3],
                0.0 + w[4],
            ];
            for q in 0..3 {
                for c in 0..5 {
                    row[5 * q + c][z] = base[c];
                }
            }
            row[6][z] -= dtt2 * t0[2][z];
            row[8][z] += dtt2 * t2[2][z];
            row[11][z] += dtt2 * t0[2][z];
            row[13][z] -= dtt2 * t2[2][z];
        }
    }
}

/// Solves the whole lines starting at `firsts` of a cell that spans the
/// grid along `d`.
fn solve_lanes(
    k: &Consts,
    cell: &mut Cell,
    d: usize,
    firsts: [usize; LANES],
    ls: &mut LaneScratch,
) {
    let len = cell.size[d];
    let s = cell.stride(d);
    ls.rows.resize(len, [[0.0; LANES]; 15]);
    ls.rhs.resize(len + 2, [[0.0; LANES]; NV]);
    ls.de.resize(len, [[0.0; LANES]; 6]);
    let (rows, rhs, des) = (
        &mut ls.rows[..len],
        &mut ls.rhs[..len + 2],
        &mut ls.de[..len],
    );
    build_lane_rows(k, cell, d, firsts, rows, &mut ls.terms);
    let line = points(&cell.rhs);
    for (r, v) in rhs[..len].iter_mut().enumerate() {
        for (z, &first) in firsts.iter().enumerate() {
            for m in 0..NV {
                v[m][z] = line[first + r * s][m];
            }
        }
    }
    for r in 0..len {
        let row = &mut rows[r];
        let mut de = [[0.0; LANES]; 6];
        let mut f = [[0.0; LANES]; 3];
        for q in 0..3 {
            for z in 0..LANES {
                f[q][z] = 1.0 / row[5 * q + 2][z];
                row[5 * q + 3][z] *= f[q][z];
                row[5 * q + 4][z] *= f[q][z];
            }
            de[2 * q] = row[5 * q + 3];
            de[2 * q + 1] = row[5 * q + 4];
        }
        for m in 0..NV {
            for z in 0..LANES {
                rhs[r][m][z] *= f[SYSTEM_OF[m]][z];
            }
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
    // Beyond the high face the solution counts as zero.
    rhs[len] = [[0.0; LANES]; NV];
    rhs[len + 1] = [[0.0; LANES]; NV];
    for r in (0..len).rev() {
        let fac = des[r];
        let (next1, next2) = (rhs[r + 1], rhs[r + 2]);
        for m in 0..NV {
            let q = SYSTEM_OF[m];
            minus_product(&mut rhs[r][m], &fac[2 * q], &next1[m]);
            minus_product(&mut rhs[r][m], &fac[2 * q + 1], &next2[m]);
        }
    }
    let line = points_mut(&mut cell.rhs);
    for (r, v) in rhs[..len].iter().enumerate() {
        for (z, &first) in firsts.iter().enumerate() {
            for m in 0..NV {
                line[first + r * s][m] = v[m][z];
            }
        }
    }
}

/// Solves every line of `cell` along `d`, the cell being the whole grid
/// (one rank): pairs of neighbouring lines together, an odd last line
/// alone through [`forward`] (which solves a line that hands nothing on).
pub fn solve_cell(k: &Consts, cell: &mut Cell, d: usize, sc: &mut Scratch, ls: &mut LaneScratch) {
    let mut starts = std::mem::take(&mut ls.starts);
    line_starts(cell, d, &mut starts);
    let whole = starts.len() - starts.len() % LANES;
    for pair in starts[..whole].chunks_exact(LANES) {
        solve_lanes(k, cell, d, [pair[0], pair[1]], ls);
    }
    for &first in &starts[whole..] {
        forward(k, cell, d, first, sc, None, &mut []);
    }
    ls.starts = starts;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::npb::sp::cells::Layout;
    use crate::npb::sp::rhs::{compute_rhs, set_forcing};

    #[test]
    fn lanes_solve_every_line_as_the_serial_elimination_bit_for_bit() {
        // 13 points: 11 x 11 = 121 lines per axis, an odd one left over.
        let k = Consts::new(13, 0.015);
        let (_, mut cells) = Layout::new(13, 1, 0);
        let mut c = cells.remove(0);
        set_forcing(&k, &mut c);
        c.initialise();
        compute_rhs(&k, &mut c);
        for d in 0..3 {
            let (mut one, mut two) = (c.clone(), c.clone());
            let mut sc = Scratch::default();
            let mut starts = Vec::new();
            line_starts(&one, d, &mut starts);
            assert_eq!(starts.len() % LANES, 1);
            for &first in &starts {
                forward(&k, &mut one, d, first, &mut sc, None, &mut []);
            }
            solve_cell(&k, &mut two, d, &mut sc, &mut LaneScratch::default());
            assert_ne!(one.rhs, c.rhs, "axis {d}: nothing solved");
            assert!(
                one.rhs
                    .iter()
                    .zip(&two.rhs)
                    .all(|(a, b)| a.to_bits() == b.to_bits()),
                "axis {d}"
            );
        }
    }
}
