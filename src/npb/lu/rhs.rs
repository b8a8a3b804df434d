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

use super::grid::{Block, Coeffs, C1, C2, C3, C4, C5, NV};

/// Scratch for one line: the fluxes, and each point's `1 / rho` followed
/// by its velocities and specific energy (the state divided by the
/// density, computed once per point and direction, where NPB divides
/// four times).
#[derive(Debug)]
pub struct LineScratch {
    flux: Vec<[f64; NV]>,
    per_rho: Vec<[f64; NV]>,
}

/// Scratch long enough for any line of `b`.
pub fn line_scratch(b: &Block) -> LineScratch {
    let len = b.ni.max(b.nj).max(b.nz) + 1;
    LineScratch {
        flux: vec![[0.0; NV]; len],
        per_rho: vec![[0.0; NV]; len],
    }
}

/// One line of a direction: where it starts in the field, its stride, the
/// range of its interior points, and the global index of its point 0.
struct Line {
    base: usize,
    stride: usize,
    lo: usize,
    hi: usize,
    global0: isize,
}

#[inline(always)]
fn load(w: &[f64], at: usize) -> [f64; NV] {
    let mut v = [0.0; NV];
    v.copy_from_slice(&w[at..at + NV]);
    v
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
/// 1 to `nz - 2`.
pub fn add_operator(
    b: &Block,
    c: &Coeffs,
    (w, inv): (&[f64], &[f64]),
    out: &mut [f64],
    flux: &mut LineScratch,
) {
    let [sx, sy, sz] = b.strides();
    let ghost = super::grid::GHOST as isize;
    for k in 1..b.nz - 1 {
        for j in b.jst..=b.jend {
            let line = Line {
                base: b.at(0, j, k),
                stride: sx,
                lo: b.ist,
                hi: b.iend,
                global0: b.ipt as isize - ghost,
            };
            add_line::<0>(b.n, c, &line, (w, inv), out, flux);
        }
        for i in b.ist..=b.iend {
            let line = Line {
                base: b.at(i, 0, k),
                stride: sy,
                lo: b.jst,
                hi: b.jend,
                global0: b.jpt as isize - ghost,
            };
            add_line::<1>(b.n, c, &line, (w, inv), out, flux);
        }
    }
    for j in b.jst..=b.jend {
        for i in b.ist..=b.iend {
            let line = Line {
                base: b.at(i, j, 0),
                stride: sz,
                lo: 1,
                hi: b.nz - 2,
                global0: 0,
            };
            add_line::<2>(b.n, c, &line, (w, inv), out, flux);
        }
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

/// Weights of the dissipation at offsets -2..=2 for a point at global
/// index `g` of a side of `n` points: one-sided next to the faces.
#[inline(always)]
fn dissipation_weights(g: isize, n: isize) -> [f64; 5] {
    if g == 1 {
        [0.0, 0.0, 5.0, -4.0, 1.0]
    } else if g == 2 {
        [0.0, -4.0, 6.0, -4.0, 1.0]
    } else if g == n - 3 {
        [1.0, -4.0, 6.0, -4.0, 0.0]
    } else if g == n - 2 {
        [1.0, -4.0, 5.0, 0.0, 0.0]
    } else {
        [1.0, -4.0, 6.0, -4.0, 1.0]
    }
}

// The line's points are indices into the field and the flux scratch at
// once, as in the formulas.
#[allow(clippy::needless_range_loop)]
fn add_line<const DIR: usize>(
    n: usize,
    c: &Coeffs,
    line: &Line,
    (w, inv): (&[f64], &[f64]),
    out: &mut [f64],
    scratch: &mut LineScratch,
) {
    let dir = DIR;
    let (t1, t2, t3, dd) = (c.t1[dir], c.t2[dir], c.t3[dir], c.dd[dir]);
    let at = |p: usize| line.base + p * line.stride;
    let LineScratch { flux, per_rho: r } = scratch;
    for p in line.lo - 1..=line.hi + 1 {
        let u = load(w, at(p));
        r[p] = per_rho(&u, inv[at(p) / NV]);
        flux[p] = convective::<DIR>(&u, &r[p]);
    }
    for p in line.lo..=line.hi {
        let o = at(p);
        for m in 0..NV {
            out[o + m] -= t2 * (flux[p + 1][m] - flux[p - 1][m]);
        }
    }
    for p in line.lo..=line.hi + 1 {
        flux[p] = viscous::<DIR>(&r[p], &r[p - 1], t3);
    }
    let visc = t3 * C3 * C4;
    for p in line.lo..=line.hi {
        let (o, below, above) = (at(p), at(p - 1), at(p + 1));
        out[o] += dd * t1 * (w[below] - 2.0 * w[o] + w[above]);
        for m in 1..NV {
            out[o + m] += visc * (flux[p + 1][m] - flux[p][m])
                + dd * t1 * (w[below + m] - 2.0 * w[o + m] + w[above + m]);
        }
    }
    let (s1, n) = (line.stride, n as isize);
    for p in line.lo..=line.hi {
        let g = line.global0 + p as isize;
        let o = at(p);
        if (3..n - 3).contains(&g) {
            // Away from the faces: the plain fourth difference.
            for m in 0..NV {
                let x = o + m;
                out[x] -= c.dssp
                    * (w[x - 2 * s1] - 4.0 * w[x - s1] + 6.0 * w[x] - 4.0 * w[x + s1]
                        + w[x + 2 * s1]);
            }
            continue;
        }
        let wt = dissipation_weights(g, n);
        for m in 0..NV {
            let mut s = 0.0;
            for (q, wq) in wt.iter().enumerate() {
                if *wq != 0.0 {
                    s += wq * w[o + q * s1 - 2 * s1 + m];
                }
            }
            out[o + m] -= c.dssp * s;
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
