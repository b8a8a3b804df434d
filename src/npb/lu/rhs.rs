//! LU's spatial operator: the steady-state residual of the compressible
//! Navier-Stokes equations on the grid, central differences plus a
//! fourth-difference dissipation (NPB's `rhs`, and its `erhs` for the
//! forcing term).
//!
//! The operator is the sum of one term per direction, each computed along
//! lines of that direction: the convective flux difference, the viscous
//! flux difference plus a second difference, and the dissipation, which
//! near the faces of the grid takes the one-sided forms NPB prescribes.
//! Every term is pointwise, so a rank computes exactly the values of a
//! serial run once its ghosts hold its neighbours' points.

use super::grid::{Block, Coeffs, C1, C2, C3, C4, C5, GHOST, NV};
use super::rows::{
    add_second, dissipation_weights, points, sub_difference, sub_fourth, sub_one_sided,
};

/// Scratch for the operator's fluxes and for each point's `1 / rho`
/// followed by its velocities and specific energy (the state divided by
/// the density, computed once per point and direction, where NPB divides
/// four times): along x one line of points; along y and z three rows of a
/// ring (the rows below, at and above the one being updated).
#[derive(Debug)]
pub struct LineScratch {
    flux: Vec<[f64; NV]>,
    per_rho: Vec<[f64; NV]>,
    visc: Vec<[f64; NV]>,
    /// Points in a row of the ring.
    row: usize,
}

/// Scratch long enough for any line or row of `b`.
pub fn line_scratch(b: &Block) -> LineScratch {
    let row = b.ni.max(b.nj).max(b.nz) + 2;
    LineScratch {
        flux: vec![[0.0; NV]; 3 * row],
        per_rho: vec![[0.0; NV]; 3 * row],
        visc: vec![[0.0; NV]; 2 * row],
        row,
    }
}

/// `1 / rho` at every point of `field` (ghosts included) into `inv`, one
/// value a point. The operator and both sweeps of a step take it from
/// here: one division a point per step where they made eleven.
pub fn inverse_density(field: &[f64], inv: &mut [f64]) {
    for (r, u) in inv.iter_mut().zip(field.chunks_exact(NV)) {
        *r = 1.0 / u[0];
    }
}

/// Adds the operator applied to `w` (ghosts filled; `inv` its
/// [`inverse_density`]) to `out`, at every owned interior point of planes
/// 1 to `nz - 2`. A point gets its x, then y, then z terms, as in NPB.
pub fn add_operator(
    b: &Block,
    c: &Coeffs,
    state: (&[f64], &[f64]),
    out: &mut [f64],
    scratch: &mut LineScratch,
) {
    let [_, sy, sz] = b.strides();
    let points = b.iend + 1 - b.ist;
    for k in 1..b.nz - 1 {
        for j in b.jst..=b.jend {
            add_x(b, c, b.at(0, j, k), state, out, scratch);
        }
        // The y terms row by row of x, walking y.
        let rows = Rows {
            base: b.at(b.ist, 0, k),
            stride: sy,
            points,
            lo: b.jst,
            hi: b.jend,
            global0: b.jpt as isize - GHOST as isize,
        };
        add_across::<1>(b.n, c, &rows, state, out, scratch);
    }
    // The z terms row by row of x, walking z, for each y.
    for j in b.jst..=b.jend {
        let rows = Rows {
            base: b.at(b.ist, j, 0),
            stride: sz,
            points,
            lo: 1,
            hi: b.nz - 2,
            global0: 0,
        };
        add_across::<2>(b.n, c, &rows, state, out, scratch);
    }
}

/// `1 / rho` (given: `inv`), then the state's momenta and energy divided
/// by `rho`.
#[inline(always)]
fn per_rho(u: &[f64; NV], inv: f64) -> [f64; NV] {
    [inv, u[1] * inv, u[2] * inv, u[3] * inv, u[4] * inv]
}

/// The convective flux of state `u` (with `r = per_rho(u)`) through a
/// face normal to `dir`.
#[inline(always)]
fn convective<const DIR: usize>(u: &[f64; NV], r: &[f64; NV]) -> [f64; NV] {
    let n = DIR + 1;
    let vel = r[n];
    let q = 0.5 * (u[1] * u[1] + u[2] * u[2] + u[3] * u[3]) * r[0];
    let mut f = [
        u[n],
        u[1] * vel,
        u[2] * vel,
        u[3] * vel,
        (C1 * u[4] - C2 * q) * vel,
    ];
    f[n] += C2 * (u[4] - q);
    f
}

/// The viscous flux between neighbours along `dir`, from their states
/// divided by density, `hi` above `lo`.
#[inline(always)]
fn viscous<const DIR: usize>(hi: &[f64; NV], lo: &[f64; NV], t3: f64) -> [f64; NV] {
    let n = DIR + 1;
    let mut g = [0.0; NV];
    for m in 1..4 {
        let w = if m == n { 4.0 / 3.0 } else { 1.0 };
        g[m] = w * t3 * (hi[m] - lo[m]);
    }
    let sq = |v: &[f64; NV]| v[1] * v[1] + v[2] * v[2] + v[3] * v[3];
    g[4] = 0.5 * (1.0 - C1 * C5) * t3 * (sq(hi) - sq(lo))
        + (1.0 / 6.0) * t3 * (hi[n] * hi[n] - lo[n] * lo[n])
        + C1 * C5 * t3 * (hi[4] - lo[4]);
    g
}

/// Rows of points along x that a direction's terms walk across: row `q`
/// starts at `base + q * stride` and holds `points` points; the rows
/// `lo..=hi` are updated, their global index is `global0 + q`.
struct Rows {
    base: usize,
    stride: usize,
    points: usize,
    lo: usize,
    hi: usize,
    global0: isize,
}

/// The per-density state and the convective flux of the `per_rho.len()`
/// points of `w` from offset `at`.
#[inline(always)]
fn fluxes<const DIR: usize>(
    (w, inv): (&[f64], &[f64]),
    at: usize,
    per_rho_out: &mut [[f64; NV]],
    flux: &mut [[f64; NV]],
) {
    let n = per_rho_out.len();
    let u = points(&w[at..], n);
    let inv = &inv[at / NV..at / NV + n];
    let flux = &mut flux[..n];
    for p in 0..n {
        per_rho_out[p] = per_rho(&u[p], inv[p]);
        flux[p] = convective::<DIR>(&u[p], &per_rho_out[p]);
    }
}

/// The viscous fluxes between the points of `lo` and those of `hi`.
#[inline(always)]
fn viscous_row<const DIR: usize>(hi: &[[f64; NV]], lo: &[[f64; NV]], t3: f64, g: &mut [[f64; NV]]) {
    let n = g.len();
    let (hi, lo) = (&hi[..n], &lo[..n]);
    for p in 0..n {
        g[p] = viscous::<DIR>(&hi[p], &lo[p], t3);
    }
}

/// Adds the x terms at the interior points of the line starting at `base`
/// (padded x index 0).
fn add_x(
    b: &Block,
    c: &Coeffs,
    base: usize,
    (w, inv): (&[f64], &[f64]),
    out: &mut [f64],
    scratch: &mut LineScratch,
) {
    let (t1, t2, t3, dd) = (c.t1[0], c.t2[0], c.t3[0], c.dd[0]);
    let (lo, hi) = (b.ist, b.iend);
    let len = hi + 1 - lo;
    let at = |p: usize| base + p * NV;
    // Fluxes at the points lo - 1 ..= hi + 1, index 0 being lo - 1.
    let r = &mut scratch.per_rho[..len + 2];
    let f = &mut scratch.flux[..len + 2];
    fluxes::<0>((w, inv), at(lo - 1), r, f);
    let o = &mut out[at(lo)..at(hi + 1)];
    sub_difference(o, f[2..].as_flattened(), f.as_flattened(), t2);
    // Viscous fluxes between points p - 1 and p, p = lo ..= hi + 1.
    let g = &mut scratch.visc[..len + 1];
    viscous_row::<0>(&r[1..], r, t3, g);
    let row = |d: usize| &w[at(lo + d - 2)..];
    let visc = t3 * C3 * C4;
    add_second(
        o,
        (g[1..].as_flattened(), g.as_flattened()),
        [row(1), row(2), row(3)],
        visc,
        dd * t1,
    );
    // The dissipation: the plain fourth difference on the points away
    // from the faces, the one-sided forms point by point next to them.
    let (g0, n) = (b.ipt as isize - GHOST as isize, b.n as isize);
    let inner_lo = (3 - g0).max(lo as isize) as usize;
    let inner_hi = (n - 4 - g0).min(hi as isize) as usize;
    for p in (lo..inner_lo).chain(inner_hi + 1..=hi) {
        let o = &mut out[at(p)..at(p + 1)];
        let wt = dissipation_weights(g0 + p as isize, n);
        sub_one_sided(o, wt, |q| &w[at(p + q - 2)..], c.dssp);
    }
    if inner_lo <= inner_hi {
        let o = &mut out[at(inner_lo)..at(inner_hi + 1)];
        let row = |d: usize| &w[at(inner_lo + d - 2)..];
        sub_fourth(o, [row(0), row(1), row(2), row(3), row(4)], c.dssp);
    }
}

/// Adds the terms of direction `DIR` (y or z) at the rows `lo..=hi` of
/// `rows`, each row once the fluxes of its neighbours are known: the
/// fluxes of rows `q - 1`, `q`, `q + 1` lie in a ring of three slots.
fn add_across<const DIR: usize>(
    n: usize,
    c: &Coeffs,
    rows: &Rows,
    (w, inv): (&[f64], &[f64]),
    out: &mut [f64],
    scratch: &mut LineScratch,
) {
    let (t1, t2, t3, dd) = (c.t1[DIR], c.t2[DIR], c.t3[DIR], c.dd[DIR]);
    let visc = t3 * C3 * C4;
    let len = rows.points;
    let at = |q: usize| rows.base + q * rows.stride;
    let wrow = |q: usize| &w[at(q)..at(q) + NV * len];
    let LineScratch {
        flux,
        per_rho: rho,
        visc: g,
        row: cap,
    } = scratch;
    let cap = *cap;
    let slot = |q: usize, ring: usize| (q % ring) * cap..(q % ring) * cap + len;
    for q in rows.lo - 1..=rows.lo {
        fluxes::<DIR>((w, inv), at(q), &mut rho[slot(q, 3)], &mut flux[slot(q, 3)]);
    }
    let q = rows.lo;
    viscous_row::<DIR>(
        &rho[slot(q, 3)],
        &rho[slot(q - 1, 3)],
        t3,
        &mut g[slot(q, 2)],
    );
    let nn = n as isize;
    for q in rows.lo..=rows.hi {
        fluxes::<DIR>(
            (w, inv),
            at(q + 1),
            &mut rho[slot(q + 1, 3)],
            &mut flux[slot(q + 1, 3)],
        );
        let o = &mut out[at(q)..at(q) + NV * len];
        let (f_hi, f_lo) = (&flux[slot(q + 1, 3)], &flux[slot(q - 1, 3)]);
        sub_difference(o, f_hi.as_flattened(), f_lo.as_flattened(), t2);
        let (r_hi, r_lo) = (&rho[slot(q + 1, 3)], &rho[slot(q, 3)]);
        viscous_row::<DIR>(r_hi, r_lo, t3, &mut g[slot(q + 1, 2)]);
        let (g_hi, g_lo) = (&g[slot(q + 1, 2)], &g[slot(q, 2)]);
        let here = [wrow(q - 1), wrow(q), wrow(q + 1)];
        add_second(
            o,
            (g_hi.as_flattened(), g_lo.as_flattened()),
            here,
            visc,
            dd * t1,
        );
        let gq = rows.global0 + q as isize;
        if (3..nn - 3).contains(&gq) {
            let five = [wrow(q - 2), here[0], here[1], here[2], wrow(q + 2)];
            sub_fourth(o, five, c.dssp);
        } else {
            let wt = dissipation_weights(gq, nn);
            sub_one_sided(o, wt, |d| wrow(q + d - 2), c.dssp);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::grid::{Block, ProcGrid};
    use super::*;

    #[test]
    fn a_fluid_at_rest_feels_only_the_one_sided_dissipation() {
        // Uniform density and energy, no velocity: every flux and second
        // difference vanishes, and so does the dissipation except next to
        // the faces, where NPB's one-sided weights sum to 2 (5 - 4 + 1)
        // and 1 (-4 + 6 - 4 + 1): at global x = 1 (y, z inside), the
        // residual is -dssp * 2 * u from x plus nothing from y and z.
        let b = Block::new(12, ProcGrid::of(1), 0).unwrap();
        let c = Coeffs::new(12, 0.5);
        let state = [1.5, 0.0, 0.0, 0.0, 2.5];
        let mut w = vec![0.0; b.field_len()];
        for v in w.chunks_exact_mut(NV) {
            v.copy_from_slice(&state);
        }
        let mut out = vec![0.0; b.field_len()];
        let mut inv = vec![0.0; b.field_len() / NV];
        inverse_density(&w, &mut inv);
        add_operator(&b, &c, (&w, &inv), &mut out, &mut line_scratch(&b));
        let at = |gi: usize, gj: usize, gk: usize| b.at(gi + 2, gj + 2, gk);
        let corner_free = at(1, 5, 5);
        for m in 0..NV {
            let want = -c.dssp * 2.0 * state[m];
            assert!(
                (out[corner_free + m] - want).abs() < 1e-12,
                "{m}: {}",
                out[corner_free + m]
            );
            // Deep inside, nothing.
            assert!(out[at(5, 5, 5) + m].abs() < 1e-12);
            // At x = 2: weights -4 + 6 - 4 + 1 = -1.
            let want = c.dssp * state[m];
            assert!((out[at(2, 5, 5) + m] - want).abs() < 1e-12);
        }
        // Next to two faces the terms add: x = 1 and z = 10 (n - 2, weights
        // 1 - 4 + 5 = 2).
        let both = at(1, 5, 10);
        assert!((out[both] - (-c.dssp * 4.0 * state[0])).abs() < 1e-12);
        // The faces themselves are left alone.
        assert_eq!(out[at(0, 5, 5)], 0.0);
    }

    #[test]
    fn convective_flux_carries_the_normal_momentum() {
        let u = [2.0, 1.0, 0.5, -0.5, 5.0];
        let f = convective::<1>(&u, &per_rho(&u, 1.0 / u[0]));
        assert_eq!(f[0], u[2]);
        let q = 0.5 * (1.0 + 0.25 + 0.25) / 2.0;
        assert!((f[2] - (u[2] * u[2] / 2.0 + C2 * (u[4] - q))).abs() < 1e-15);
        assert!((f[1] - u[1] * u[2] / 2.0).abs() < 1e-15);
    }
}
