//! SP's spatial operator: the constants of the discretisation, the
//! forcing term that makes the exact solution steady, the right-hand side
//! of a step (NPB's `compute_rhs`), and the pointwise changes of variables
//! between the ADI sweeps (`txinvr`, `ninvr`, `pinvr`, `tzetar`).
//!
//! Every axis uses the same formulas with its own velocity, so the code
//! loops over axes; per point the terms are added in NPB's order (x
//! fluxes, x dissipation, then y, then z).

use super::cells::{Aux, Cell, GHOST, NV};
use crate::npb::lu::exact;

/// Gas constants (NPB's `c1`, `c2`, `c3 c4`, `c1 c5`).
const C1: f64 = 1.4;
const C2: f64 = 0.4;
const C3C4: f64 = 0.1;
const C1C5: f64 = 1.4 * 1.4;
/// `sqrt(1/2)`, NPB's `bt`.
const BT: f64 = std::f64::consts::FRAC_1_SQRT_2;

/// The dissipation stencil of global point `g` along an axis of `n`
/// points, for offsets -2..=2: one-sided next to the faces.
pub fn dissipation_weights(g: isize, n: usize) -> [f64; 5] {
    let n = n as isize;
    match g {
        1 => [0.0, 0.0, 5.0, -4.0, 1.0],
        2 => [0.0, -4.0, 6.0, -4.0, 1.0],
        _ if g == n - 3 => [1.0, -4.0, 6.0, -4.0, 0.0],
        _ if g == n - 2 => [1.0, -4.0, 5.0, 0.0, 0.0],
        _ => [1.0, -4.0, 6.0, -4.0, 1.0],
    }
}

/// The constants of the discretisation (NPB's `set_constants`), per axis.
#[derive(Debug, Clone, Copy)]
pub struct Consts {
    /// Points per side.
    pub n: usize,
    /// Time step.
    pub dt: f64,
    /// `1 / h^2`, `1 / 2h` (NPB's `tx1`, `tx2`...).
    t1: [f64; 3],
    t2: [f64; 3],
    /// Second-difference weight per axis (NPB's `dx*`, `dy*`, `dz*`).
    pub dd: [f64; 3],
    /// Viscous coefficients per axis (NPB's `xxcon1..5`).
    con: [[f64; 5]; 3],
    /// Fourth-difference dissipation (NPB's `dssp`).
    dssp: f64,
    /// `dt / h^2`, `dt / 2h` (NPB's `dttx1`, `dttx2`...).
    pub dtt1: [f64; 3],
    /// See [`Self::dtt1`].
    pub dtt2: [f64; 3],
    /// `dt * dssp` (NPB's `comz1`).
    pub dtdssp: f64,
}

impl Consts {
    /// The constants for `n` points a side and time step `dt`.
    pub fn new(n: usize, dt: f64) -> Consts {
        let h = 1.0 / (n - 1) as f64;
        let t1 = 1.0 / (h * h);
        let t2 = 1.0 / (2.0 * h);
        let t3 = 1.0 / h;
        let dd = [0.75, 0.75, 1.0];
        let c3c4t3 = C3C4 * t3;
        let con = [
            c3c4t3 * (4.0 / 3.0) * t3,
            c3c4t3 * t3,
            c3c4t3 * (1.0 - C1C5) * t3,
            c3c4t3 * (1.0 / 6.0) * t3,
            c3c4t3 * C1C5 * t3,
        ];
        let dssp = 0.25 * 1.0f64.max(0.75);
        Consts {
            n,
            dt,
            t1: [t1; 3],
            t2: [t2; 3],
            dd,
            con: [con; 3],
            dssp,
            dtt1: [dt * t1; 3],
            dtt2: [dt * t2; 3],
            dtdssp: dt * dssp,
        }
    }

    /// NPB's `rhon`/`rhoq`/`rhos` of a point along axis `d`: the largest
    /// viscous eigenvalue, NPB's `max(dd + 4/3 ru1, dd + c1c5 ru1, dd +
    /// ru1, dd)`. A density is positive, so `ru1 >= 0` and, `c1c5` (1.96)
    /// being the largest factor, the second term is the largest: rounding
    /// is monotonic, so this is the same value bit for bit without the
    /// three maxima (`f64::max` also tests for NaN: 1.1 G of SP W's
    /// instructions under cachegrind).
    #[inline(always)]
    pub fn rho_max(&self, d: usize, rho_i: f64) -> f64 {
        let ru1 = C3C4 * rho_i;
        debug_assert!(ru1 >= 0.0, "a density below zero: {rho_i}");
        self.dd[d] + C1C5 * ru1
    }
}

/// The forcing term at global point `g` (NPB's `exact_rhs`): minus the
/// spatial operator applied to the exact solution.
fn forcing_at(k: &Consts, g: [isize; 3]) -> [f64; NV] {
    let mut f = [0.0; NV];
    for d in 0..3 {
        // The exact solution and its derived quantities at offsets -2..=2.
        let mut ue = [[0.0; NV]; 5];
        let mut buf = [[0.0; NV]; 5];
        let mut cuf = [0.0; 5];
        let mut q = [0.0; 5];
        for (o, e) in ue.iter_mut().enumerate() {
            let mut p = g;
            p[d] += o as isize - 2;
            *e = exact(k.n, p[0], p[1], p[2]);
            let dtpp = 1.0 / e[0];
            for m in 1..NV {
                buf[o][m] = dtpp * e[m];
            }
            cuf[o] = buf[o][1 + d] * buf[o][1 + d];
            buf[o][0] = buf[o][1] * buf[o][1] + buf[o][2] * buf[o][2] + buf[o][3] * buf[o][3];
            q[o] = 0.5 * (buf[o][1] * e[1] + buf[o][2] * e[2] + buf[o][3] * e[3]);
        }
        let (t2, ddt1, con) = (k.t2[d], k.dd[d] * k.t1[d], k.con[d]);
        let diff = |a: [f64; 5]| a[3] - 2.0 * a[2] + a[1];
        let col = |m: usize| [ue[0][m], ue[1][m], ue[2][m], ue[3][m], ue[4][m]];
        let bcol = |m: usize| [buf[0][m], buf[1][m], buf[2][m], buf[3][m], buf[4][m]];
        let v = 1 + d;
        f[0] += -t2 * (ue[3][v] - ue[1][v]) + ddt1 * diff(col(0));
        for c in 0..3 {
            let m = 1 + c;
            f[m] += if c == d {
                -t2 * ((ue[3][m] * buf[3][v] + C2 * (ue[3][4] - q[3]))
                    - (ue[1][m] * buf[1][v] + C2 * (ue[1][4] - q[1])))
                    + con[0] * diff(bcol(m))
            } else {
                -t2 * (ue[3][m] * buf[3][v] - ue[1][m] * buf[1][v]) + con[1] * diff(bcol(m))
            } + ddt1 * diff(col(m));
        }
        f[4] += -t2
            * (buf[3][v] * (C1 * ue[3][4] - C2 * q[3]) - buf[1][v] * (C1 * ue[1][4] - C2 * q[1]))
            + 0.5 * con[2] * diff(bcol(0))
            + con[3] * diff(cuf)
            + con[4] * diff(bcol(4))
            + ddt1 * diff(col(4));
        let w = dissipation_weights(g[d], k.n);
        for (m, fm) in f.iter_mut().enumerate() {
            let s: f64 = (0..5).map(|o| w[o] * ue[o][m]).sum();
            *fm -= k.dssp * s;
        }
    }
    f.map(|v| -v)
}

/// Fills the cell's forcing term at its interior points (zero elsewhere).
pub fn set_forcing(k: &Consts, cell: &mut Cell) {
    cell.forcing.fill(0.0);
    let points: Vec<(usize, [usize; 3])> = cell.interior_points().collect();
    for (pt, [i, j, l]) in points {
        let g = [cell.global(0, i), cell.global(1, j), cell.global(2, l)];
        cell.forcing[NV * pt..NV * pt + NV].copy_from_slice(&forcing_at(k, g));
    }
}

/// The derived quantities of one point's state.
#[inline(always)]
pub(crate) fn aux_of(u: &[f64]) -> Aux {
    let rho_i = 1.0 / u[0];
    let square = 0.5 * (u[1] * u[1] + u[2] * u[2] + u[3] * u[3]) * rho_i;
    let speed = (C1 * C2 * rho_i * (u[4] - square)).sqrt();
    Aux {
        rho_i,
        vel: [u[1] * rho_i, u[2] * rho_i, u[3] * rho_i],
        square,
        qs: square * rho_i,
        speed,
        ainv: 1.0 / speed,
    }
}

/// The points of a field of [`NV`] values per point.
#[inline(always)]
pub fn points(v: &[f64]) -> &[[f64; NV]] {
    v.as_chunks::<NV>().0
}

/// The points of a field of [`NV`] values per point, to write.
#[inline(always)]
pub fn points_mut(v: &mut [f64]) -> &mut [[f64; NV]] {
    v.as_chunks_mut::<NV>().0
}

/// The flux and dissipation terms of axis `d` at one point, added to `r`
/// in NPB's order: `u` and `a` are the states and derived quantities at
/// offsets -2..=2 and -1..=1 along `d`, `w` the dissipation stencil.
#[inline(always)]
fn axis_terms(
    k: &Consts,
    d: usize,
    r: &mut [f64; NV],
    u: [&[f64; NV]; 5],
    a: [&Aux; 3],
    w: &[f64; 5],
) {
    let [umm, um, u0, up, upp] = u;
    let [am, a0, ap] = a;
    let (t2, ddt1, con) = (k.t2[d], k.dd[d] * k.t1[d], k.con[d]);
    let (vm, v0, vp) = (am.vel[d], a0.vel[d], ap.vel[d]);
    let sec = |m: usize| up[m] - 2.0 * u0[m] + um[m];
    r[0] += ddt1 * sec(0) - t2 * (up[1 + d] - um[1 + d]);
    for c in 0..3 {
        let m = 1 + c;
        let pressure = if c == d {
            (up[4] - ap.square - um[4] + am.square) * C2
        } else {
            0.0
        };
        let visc = if c == d { con[1] * (4.0 / 3.0) } else { con[1] };
        r[m] += ddt1 * sec(m) + visc * (ap.vel[c] - 2.0 * a0.vel[c] + am.vel[c])
            - t2 * (up[m] * vp - um[m] * vm + pressure);
    }
    r[4] += ddt1 * sec(4)
        + con[2] * (ap.qs - 2.0 * a0.qs + am.qs)
        + con[3] * (vp * vp - 2.0 * v0 * v0 + vm * vm)
        + con[4] * (up[4] * ap.rho_i - 2.0 * u0[4] * a0.rho_i + um[4] * am.rho_i)
        - t2 * ((C1 * up[4] - C2 * ap.square) * vp - (C1 * um[4] - C2 * am.square) * vm);
    for m in 0..NV {
        let sum = w[0] * umm[m] + w[1] * um[m] + w[2] * u0[m] + w[3] * up[m] + w[4] * upp[m];
        r[m] -= k.dssp * sum;
    }
}

/// The interior dissipation stencil (NPB's `dssp` weights away from the
/// faces). A row passes it as a constant so that its multiplications by
/// one fold away: the same values, bit for bit, as the general weights.
const INNER_WEIGHTS: [f64; 5] = [1.0, -4.0, 6.0, -4.0, 1.0];

/// Adds axis `D`'s terms to one row segment of the right-hand side `r`:
/// `u[o]` are the states at offset `o - 2` along the axis of each point,
/// `a[o]` the derived quantities at `o - 1`, every slice as long as `r`
/// (so the loop runs without bounds checks), `w` the segment's stencil.
#[inline(always)]
fn axis_row<const D: usize>(
    k: &Consts,
    r: &mut [[f64; NV]],
    u: [&[[f64; NV]]; 5],
    a: [&[Aux]; 3],
    w: &[f64; 5],
) {
    let len = r.len();
    let u = u.map(|s| &s[..len]);
    let a = a.map(|s| &s[..len]);
    for (i, r) in r.iter_mut().enumerate() {
        let us = [&u[0][i], &u[1][i], &u[2][i], &u[3][i], &u[4][i]];
        axis_terms(k, D, r, us, [&a[0][i], &a[1][i], &a[2][i]], w);
    }
}

/// [`axis_row`] over a segment of one stencil `w`, the interior one as a
/// constant.
#[inline(always)]
fn axis_segment<const D: usize>(
    k: &Consts,
    r: &mut [[f64; NV]],
    u: [&[[f64; NV]]; 5],
    a: [&[Aux]; 3],
    w: &[f64; 5],
) {
    if *w == INNER_WEIGHTS {
        axis_row::<D>(k, r, u, a, &INNER_WEIGHTS);
    } else {
        axis_row::<D>(k, r, u, a, w);
    }
}

/// Axis `D`'s terms on the row of interior points `at` (point indices),
/// whose neighbours along the axis are `s` points apart; `weights(i)` is
/// the stencil of the row's point `i`. The row is cut into runs of one
/// stencil (along x the points next to the faces differ from the rest).
#[inline(always)]
fn axis_terms_row<const D: usize>(
    k: &Consts,
    rhs: &mut [[f64; NV]],
    u: &[[f64; NV]],
    aux: &[Aux],
    at: std::ops::Range<usize>,
    s: usize,
    weights: impl Fn(usize) -> [f64; 5],
) {
    let len = at.len();
    let mut i = 0;
    while i < len {
        let w = weights(i);
        let mut end = i + 1;
        while end < len && weights(end) == w {
            end += 1;
        }
        let (first, last) = (at.start + i, at.start + end);
        let us = std::array::from_fn(|o| &u[first + o * s - 2 * s..last + o * s - 2 * s]);
        let aa = std::array::from_fn(|o| &aux[first + o * s - s..last + o * s - s]);
        axis_segment::<D>(k, &mut rhs[first..last], us, aa, &w);
        i = end;
    }
}

/// NPB's `compute_rhs`: the derived quantities on the owned points and
/// one ghost layer, then `rhs = dt (forcing + fluxes + dissipation)` at
/// the interior points (the forcing, zero, on the faces). Row by row, the
/// three axes' terms one axis at a time along the row (NPB makes one pass
/// over the grid per axis): each loop is short enough to keep its values
/// in registers, and the row's neighbours are still in cache for the next
/// axis. Per point the terms are added in NPB's order.
pub fn compute_rhs(k: &Consts, cell: &mut Cell) {
    let [di, dj, dk] = cell.dims;
    let u = points(&cell.u);
    for l in 1..dk - 1 {
        for j in 1..dj - 1 {
            let row = (l * dj + j) * di + 1..(l * dj + j) * di + di - 1;
            for (a, v) in cell.aux[row.clone()].iter_mut().zip(&u[row]) {
                *a = aux_of(v);
            }
        }
    }
    cell.rhs.copy_from_slice(&cell.forcing);
    let (sj, sl) = (di, di * dj);
    let (ri, rj, rl) = (cell.interior(0), cell.interior(1), cell.interior(2));
    let (low, n) = (cell.low, k.n);
    // The stencil of padded index `at` along `d` (one-sided by the faces).
    let weights =
        |d: usize, at: usize| dissipation_weights((low[d] + at) as isize - GHOST as isize, n);
    let (aux, rhs) = (&cell.aux[..], points_mut(&mut cell.rhs));
    for l in rl {
        let wl = weights(2, l);
        for j in rj.clone() {
            let wj = weights(1, j);
            let row = (l * dj + j) * di;
            let at = row + ri.start..row + ri.end;
            axis_terms_row::<0>(k, rhs, u, aux, at.clone(), 1, |i| weights(0, ri.start + i));
            axis_terms_row::<1>(k, rhs, u, aux, at.clone(), sj, |_| wj);
            axis_terms_row::<2>(k, rhs, u, aux, at.clone(), sl, |_| wl);
            for r in rhs[at].iter_mut() {
                for v in r.iter_mut() {
                    *v *= k.dt;
                }
            }
        }
    }
}

/// Applies `f` to the right-hand side of every interior point, with the
/// point's state and derived quantities (row by row, as slices: no index
/// arithmetic or bounds check per point).
fn pointwise(cell: &mut Cell, f: impl Fn(&mut [f64; NV], &[f64; NV], &Aux)) {
    let (ri, rj, rl) = (cell.interior(0), cell.interior(1), cell.interior(2));
    let [di, dj, _] = cell.dims;
    let (u, aux, rhs) = (points(&cell.u), &cell.aux[..], points_mut(&mut cell.rhs));
    for l in rl {
        for j in rj.clone() {
            let row = (l * dj + j) * di;
            let at = row + ri.start..row + ri.end;
            let (r, u, a) = (&mut rhs[at.clone()], &u[at.clone()], &aux[at]);
            for ((r, u), a) in r.iter_mut().zip(u).zip(a) {
                f(r, u, a);
            }
        }
    }
}

/// NPB's `txinvr`: the right-hand side into the characteristic variables
/// of the x sweep.
pub fn txinvr(cell: &mut Cell) {
    pointwise(cell, |r, _, a| {
        let [uu, vv, ww] = a.vel;
        let ac2inv = a.ainv * a.ainv;
        let [r1, r2, r3, r4, r5] = [r[0], r[1], r[2], r[3], r[4]];
        let t1 = C2 * ac2inv * (a.qs * r1 - uu * r2 - vv * r3 - ww * r4 + r5);
        let t2 = BT * a.rho_i * (uu * r1 - r2);
        let t3 = (BT * a.rho_i * a.speed) * t1;
        r[0] = r1 - t1;
        r[1] = -a.rho_i * (ww * r1 - r4);
        r[2] = a.rho_i * (vv * r1 - r3);
        r[3] = -t2 + t3;
        r[4] = t2 + t3;
    });
}

/// NPB's `ninvr`: from the x sweep's variables to the y sweep's.
pub fn ninvr(cell: &mut Cell) {
    pointwise(cell, |r, _, _| {
        let [r1, r2, r3, r4, r5] = [r[0], r[1], r[2], r[3], r[4]];
        let t1 = BT * r3;
        let t2 = 0.5 * (r4 + r5);
        r[0] = -r2;
        r[1] = r1;
        r[2] = BT * (r4 - r5);
        r[3] = -t1 + t2;
        r[4] = t1 + t2;
    });
}

/// NPB's `pinvr`: from the y sweep's variables to the z sweep's.
pub fn pinvr(cell: &mut Cell) {
    pointwise(cell, |r, _, _| {
        let [r1, r2, r3, r4, r5] = [r[0], r[1], r[2], r[3], r[4]];
        let t1 = BT * r1;
        let t2 = 0.5 * (r4 + r5);
        r[0] = BT * (r4 - r5);
        r[1] = -r3;
        r[2] = r2;
        r[3] = -t1 + t2;
        r[4] = t1 + t2;
    });
}

/// NPB's `tzetar`: from the z sweep's variables back to the conserved
/// ones, the step's update.
pub fn tzetar(cell: &mut Cell) {
    pointwise(cell, |r, u, a| {
        let [xvel, yvel, zvel] = a.vel;
        let ac2u = a.speed * a.speed;
        let [r1, r2, r3, r4, r5] = [r[0], r[1], r[2], r[3], r[4]];
        let uzik1 = u[0];
        let btuz = BT * uzik1;
        let t1 = btuz * a.ainv * (r4 + r5);
        let t2 = r3 + t1;
        let t3 = btuz * (r4 - r5);
        r[0] = t2;
        r[1] = -uzik1 * r2 + xvel * t2;
        r[2] = uzik1 * r1 + yvel * t2;
        r[3] = zvel * t2 + t3;
        r[4] = uzik1 * (-xvel * r2 + yvel * r1) + a.qs * t2 + 2.5 * ac2u * t1 + zvel * t3;
    });
}

/// NPB's `add`: the update added to the solution.
pub fn add(cell: &mut Cell) {
    pointwise_mut(cell, |u, r| {
        for (v, dv) in u.iter_mut().zip(r) {
            *v += dv;
        }
    });
}

/// Applies `f` to the state and the update of every interior point.
fn pointwise_mut(cell: &mut Cell, f: impl Fn(&mut [f64; NV], &[f64; NV])) {
    let (ri, rj, rl) = (cell.interior(0), cell.interior(1), cell.interior(2));
    let [di, dj, _] = cell.dims;
    let (u, rhs) = (points_mut(&mut cell.u), points(&cell.rhs));
    for l in rl {
        for j in rj.clone() {
            let row = (l * dj + j) * di;
            let at = row + ri.start..row + ri.end;
            for (u, r) in u[at.clone()].iter_mut().zip(&rhs[at]) {
                f(u, r);
            }
        }
    }
}
