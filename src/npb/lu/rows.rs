//! The operator's difference terms over a row of points, five values a
//! point, the variable innermost as in the fields: the rows are slices of
//! one length, cut once per row, so the loops run without bounds checks
//! and the compiler vectorises them across points and variables.
//!
//! Each helper evaluates, value by value, the same expression in the same
//! order as the pointwise formulas (NPB's `rhs`), so the results are the
//! same to the bit whatever the direction or the row's extent.

use super::grid::NV;

/// The first `n` points of a row.
#[inline(always)]
pub fn points(v: &[f64], n: usize) -> &[[f64; NV]] {
    &v.as_chunks::<NV>().0[..n]
}

/// `out -= w * (hi - lo)`, value by value (the convective flux
/// difference).
#[inline(always)]
pub fn sub_difference(out: &mut [f64], hi: &[f64], lo: &[f64], w: f64) {
    let n = out.len();
    let (hi, lo) = (&hi[..n], &lo[..n]);
    for x in 0..n {
        out[x] -= w * (hi[x] - lo[x]);
    }
}

/// The viscous flux difference and the second difference of the state:
/// `out += visc * (g_hi - g_lo) + dd_t1 * (below - 2 here + above)`, less
/// the flux term for the density (variable 0), which has none.
#[inline(always)]
pub fn add_second(
    out: &mut [f64],
    (g_hi, g_lo): (&[f64], &[f64]),
    [below, here, above]: [&[f64]; 3],
    visc: f64,
    dd_t1: f64,
) {
    let out = out.as_chunks_mut::<NV>().0;
    let n = out.len();
    let (g_hi, g_lo) = (points(g_hi, n), points(g_lo, n));
    let (below, here, above) = (points(below, n), points(here, n), points(above, n));
    for p in 0..n {
        let (o, b, h, a) = (&mut out[p], &below[p], &here[p], &above[p]);
        o[0] += dd_t1 * (b[0] - 2.0 * h[0] + a[0]);
        for m in 1..NV {
            o[m] += visc * (g_hi[p][m] - g_lo[p][m]) + dd_t1 * (b[m] - 2.0 * h[m] + a[m]);
        }
    }
}

/// The fourth difference away from the faces: `out -= dssp * (w[-2] -
/// 4 w[-1] + 6 w[0] - 4 w[1] + w[2])`, `w` the five rows in order.
#[inline(always)]
pub fn sub_fourth(out: &mut [f64], w: [&[f64]; 5], dssp: f64) {
    let n = out.len();
    let [a, b, c, d, e] = w;
    let (a, b, c, d, e) = (&a[..n], &b[..n], &c[..n], &d[..n], &e[..n]);
    for x in 0..n {
        out[x] -= dssp * (a[x] - 4.0 * b[x] + 6.0 * c[x] - 4.0 * d[x] + e[x]);
    }
}

/// The one-sided dissipation next to a face: `out -= dssp * sum_q
/// weight[q] w[q]` over the rows of non-zero weight, `row(q)` giving row
/// `q` of the five (`q` = 2 the point's own).
#[inline(always)]
pub fn sub_one_sided<'a>(
    out: &mut [f64],
    weights: [f64; 5],
    row: impl Fn(usize) -> &'a [f64],
    dssp: f64,
) {
    let n = out.len();
    let rows: [Option<&[f64]>; 5] =
        std::array::from_fn(|q| (weights[q] != 0.0).then(|| &row(q)[..n]));
    for x in 0..n {
        let mut s = 0.0;
        for (wq, r) in weights.iter().zip(&rows) {
            if let Some(r) = r {
                s += wq * r[x];
            }
        }
        out[x] -= dssp * s;
    }
}

/// Weights of the dissipation at offsets -2..=2 for a point at global
/// index `g` of a side of `n` points: one-sided next to the faces.
#[inline(always)]
pub fn dissipation_weights(g: isize, n: isize) -> [f64; 5] {
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
