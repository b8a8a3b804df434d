//! The four grid operators of MG and the norm, on one rank's block.
//!
//! A block is one contiguous `Vec<f64>` of `n1 x n2 x n3` values, x
//! fastest, including one ghost layer on every face (so `n1 = points + 2`).
//! Each operator writes the interior from the interior and ghosts; the
//! caller refreshes ghosts afterwards (halo exchange) where NPB does.
//!
//! # Why the loops look like this
//!
//! The 27-point stencils are evaluated the way NPB arranges them: for each
//! (y, z) row, one pass sums the four face-in-the-(y,z)-plane neighbours
//! and the four (y,z) corners of every x into two line buffers; a second
//! pass combines the centre row with those sums at x-1, x, x+1. That takes
//! the work from 27 loads to about 12 per point. Both passes run over
//! slices cut once per row to the row's exact length, so the compiler
//! proves every index in bounds, drops the checks and vectorises. The order
//! of additions inside each expression follows NPB's, so rounding matches
//! the reference implementation as closely as the language allows.
//!
//! The weight of face neighbours in A and of corners in S are zero for
//! every class (the spec's tables); like NPB we skip those terms.
//!
//! Two things go beyond NPB's code, neither changing a bit of the results
//! (a test checks it): each public kernel also exists compiled for AVX2 and
//! picks it at run time (`dispatch!`), and the prolongation is fused with
//! the residual that always follows it ([`interp_resid`]), plane by plane,
//! to read u from memory once instead of twice. The tests (in
//! `kernels_tests.rs`) check every operator against a plain evaluation of
//! the spec's definition.

use super::decomp::AXES;

/// Defines a public kernel `$name` that runs `$body` compiled for AVX2
/// when the CPU has it, and for the baseline instruction set otherwise.
///
/// Why: the kernels are partly bound by instruction throughput, and the
/// default x86-64 target stops at SSE2 (two doubles per instruction). AVX2
/// doubles that; measured, class W gains about 10%. Only the vector width
/// changes: no FMA contraction, so every result is bit for bit the same.
/// Detection is cached by the standard library, one load per kernel call.
macro_rules! dispatch {
    ($(#[$doc:meta])* pub fn $name:ident($($arg:ident: $ty:ty),* $(,)?) $(-> $ret:ty)? => $body:ident) => {
        $(#[$doc])*
        #[allow(clippy::too_many_arguments)] // arrays travel as separate slices
        pub fn $name($($arg: $ty),*) $(-> $ret)? {
            #[cfg(target_arch = "x86_64")]
            {
                #[target_feature(enable = "avx2")]
                #[allow(clippy::too_many_arguments)]
                fn wide($($arg: $ty),*) $(-> $ret)? {
                    $body($($arg),*)
                }
                if std::arch::is_x86_feature_detected!("avx2") {
                    // SAFETY: `wide` only needs AVX2, which the CPU has.
                    return unsafe { wide($($arg),*) };
                }
            }
            $body($($arg),*)
        }
    };
}

/// Dimensions of a block including its ghost layers: `n[0]` along x.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shape {
    /// Points along x, y and z, ghosts included.
    pub n: [usize; 3],
}

impl Shape {
    /// A block holding `interior` points along each axis plus ghosts.
    pub fn with_interior(interior: [usize; 3]) -> Self {
        Shape {
            n: interior.map(|p| p + 2),
        }
    }

    /// Number of values in the block.
    pub fn len(&self) -> usize {
        self.n[0] * self.n[1] * self.n[2]
    }

    /// Offset of the first value of row (y, z).
    #[inline]
    pub fn row(&self, y: usize, z: usize) -> usize {
        (y + self.n[1] * z) * self.n[0]
    }

    /// Offset of value (x, y, z).
    #[inline]
    pub fn at(&self, x: usize, y: usize, z: usize) -> usize {
        x + self.row(y, z)
    }
}

/// Scratch rows the operators reuse, sized once for the widest level so
/// that no operator allocates.
#[derive(Debug)]
pub struct Lines {
    a: Vec<f64>,
    b: Vec<f64>,
    c: Vec<f64>,
}

impl Lines {
    /// Scratch for rows of up to `width` values (ghosts included).
    pub fn new(width: usize) -> Self {
        Lines {
            a: vec![0.0; width],
            b: vec![0.0; width],
            c: vec![0.0; width],
        }
    }
}

/// The nine rows around row (y, z) that the stencils read, each cut to the
/// row length: centre, y-1, y+1, z-1, z+1 and the four (y, z) corners.
struct Nine<'a> {
    c: &'a [f64],
    ym: &'a [f64],
    yp: &'a [f64],
    zm: &'a [f64],
    zp: &'a [f64],
    ymzm: &'a [f64],
    ypzm: &'a [f64],
    ymzp: &'a [f64],
    ypzp: &'a [f64],
}

impl<'a> Nine<'a> {
    #[inline]
    fn around(s: Shape, data: &'a [f64], y: usize, z: usize) -> Self {
        let n1 = s.n[0];
        let row = |yy: usize, zz: usize| &data[s.row(yy, zz)..s.row(yy, zz) + n1];
        Nine {
            c: row(y, z),
            ym: row(y - 1, z),
            yp: row(y + 1, z),
            zm: row(y, z - 1),
            zp: row(y, z + 1),
            ymzm: row(y - 1, z - 1),
            ypzm: row(y + 1, z - 1),
            ymzp: row(y - 1, z + 1),
            ypzp: row(y + 1, z + 1),
        }
    }
}

/// Fills `faces[x]` with the four (y, z)-face neighbours and `corners[x]`
/// with the four (y, z) corners of every x of the row, in NPB's order.
#[inline(always)]
fn plane_sums(nine: &Nine, faces: &mut [f64], corners: &mut [f64]) {
    let n = nine.c.len();
    let (faces, corners) = (&mut faces[..n], &mut corners[..n]);
    let (ym, yp, zm, zp) = (&nine.ym[..n], &nine.yp[..n], &nine.zm[..n], &nine.zp[..n]);
    let (a, b, c, d) = (
        &nine.ymzm[..n],
        &nine.ypzm[..n],
        &nine.ymzp[..n],
        &nine.ypzp[..n],
    );
    for x in 0..n {
        faces[x] = ym[x] + yp[x] + zm[x] + zp[x];
        corners[x] = a[x] + b[x] + c[x] + d[x];
    }
}

/// One row of `r = v - A u`, from the centre row `u` and its plane sums.
#[inline(always)]
fn resid_row(out: &mut [f64], v: &[f64], u: &[f64], faces: &[f64], corners: &[f64], a: &[f64; 4]) {
    let n = out.len();
    let (v, u, f, e) = (&v[..n], &u[..n], &faces[..n], &corners[..n]);
    for x in 1..n - 1 {
        // u1 of NPB is `f`, u2 is `e`: edges are e[x] + f[x-1] + f[x+1],
        // corners e[x-1] + e[x+1] (a[1], the face weight, is zero).
        out[x] =
            v[x] - a[0] * u[x] - a[2] * (e[x] + f[x - 1] + f[x + 1]) - a[3] * (e[x - 1] + e[x + 1]);
    }
}

/// `r = v - A u` on the interior rows of plane `z`; `v` of `None` means r
/// itself (each output reads only its own old value, so a copy of the row
/// stands in for v without changing the arithmetic).
#[inline(always)]
fn resid_plane(
    s: Shape,
    u: &[f64],
    v: Option<&[f64]>,
    r: &mut [f64],
    a: &[f64; 4],
    lines: &mut Lines,
    z: usize,
) {
    let [n1, n2, _] = s.n;
    for y in 1..n2 - 1 {
        let nine = Nine::around(s, u, y, z);
        plane_sums(&nine, &mut lines.a, &mut lines.b);
        let at = s.row(y, z);
        let v_row = match v {
            Some(v) => &v[at..at + n1],
            None => {
                lines.c[..n1].copy_from_slice(&r[at..at + n1]);
                &lines.c[..n1]
            }
        };
        resid_row(&mut r[at..at + n1], v_row, nine.c, &lines.a, &lines.b, a);
    }
}

/// The portable body of [`resid`]; inlined into each instruction-set
/// variant.
#[inline(always)]
fn resid_impl(
    s: Shape,
    u: &[f64],
    v: Option<&[f64]>,
    r: &mut [f64],
    a: &[f64; 4],
    lines: &mut Lines,
) {
    for z in 1..s.n[2] - 1 {
        resid_plane(s, u, v, r, a, lines, z);
    }
}

/// The portable body of [`psinv`]; inlined into each instruction-set
/// variant.
#[inline(always)]
fn psinv_impl(s: Shape, r: &[f64], u: &mut [f64], c: &[f64; 4], lines: &mut Lines) {
    let [n1, n2, n3] = s.n;
    for z in 1..n3 - 1 {
        for y in 1..n2 - 1 {
            let nine = Nine::around(s, r, y, z);
            plane_sums(&nine, &mut lines.a, &mut lines.b);
            let at = s.row(y, z);
            let out = &mut u[at..at + n1];
            let (rc, f, e) = (&nine.c[..n1], &lines.a[..n1], &lines.b[..n1]);
            for x in 1..n1 - 1 {
                // r1 of NPB is `f`, r2 is `e`; c[3], the corner weight, is zero.
                out[x] = out[x]
                    + c[0] * rc[x]
                    + c[1] * (rc[x - 1] + rc[x + 1] + f[x])
                    + c[2] * (e[x] + f[x - 1] + f[x + 1]);
            }
        }
    }
}

/// The portable body of [`rprj3`]; inlined into each instruction-set
/// variant.
#[inline(always)]
fn rprj3_impl(fs: Shape, fine: &[f64], cs: Shape, coarse: &mut [f64], lines: &mut Lines) {
    let [m1, m2, m3] = cs.n;
    debug_assert!(AXES.iter().all(|&ax| fs.n[ax] == 2 * cs.n[ax] - 2));
    let n1 = fs.n[0];
    for j3 in 1..m3 - 1 {
        for j2 in 1..m2 - 1 {
            let nine = Nine::around(fs, fine, 2 * j2, 2 * j3);
            // Plane sums are needed only at odd fine x (the coarse points'
            // neighbours): x1[t], y1[t] hold them for fine x = 2t - 1.
            let (x1, y1) = (&mut lines.a[..m1], &mut lines.b[..m1]);
            let (ym, yp, zm, zp) = (
                &nine.ym[..n1],
                &nine.yp[..n1],
                &nine.zm[..n1],
                &nine.zp[..n1],
            );
            let (a, b, c, d) = (
                &nine.ymzm[..n1],
                &nine.ymzp[..n1],
                &nine.ypzm[..n1],
                &nine.ypzp[..n1],
            );
            for t in 1..m1 {
                let i = 2 * t - 1;
                x1[t] = ym[i] + yp[i] + zm[i] + zp[i];
                y1[t] = a[i] + b[i] + c[i] + d[i];
            }
            let rc = &nine.c[..n1];
            let at = cs.row(j2, j3);
            let out = &mut coarse[at..at + m1];
            for j in 1..m1 - 1 {
                let i = 2 * j;
                let y2 = a[i] + b[i] + c[i] + d[i];
                let x2 = ym[i] + yp[i] + zm[i] + zp[i];
                out[j] = 0.5 * rc[i]
                    + 0.25 * (rc[i - 1] + rc[i + 1] + x2)
                    + 0.125 * (x1[j] + x1[j + 1] + y2)
                    + 0.0625 * (y1[j] + y1[j + 1]);
            }
        }
    }
}

/// Adds to one fine row the interpolation of one coarse line `src`:
/// fine 2c gets `w_on * src[c]`, fine 2c+1 gets `w_mid * (src[c] + src[c+1])`.
#[inline(always)]
fn interp_row(fine: &mut [f64], src: &[f64], w_on: f64, w_mid: f64) {
    let pairs = src.len() - 1;
    for (out, w) in fine[..2 * pairs].chunks_exact_mut(2).zip(src.windows(2)) {
        out[0] += w_on * w[0];
        out[1] += w_mid * (w[0] + w[1]);
    }
}

/// Adds `Q z` to the two fine planes 2 c3 and 2 c3 + 1 (ghost planes
/// included), from coarse planes c3 and c3 + 1.
#[inline(always)]
fn interp_planes(
    cs: Shape,
    coarse: &[f64],
    fs: Shape,
    fine: &mut [f64],
    lines: &mut Lines,
    c3: usize,
) {
    let [m1, m2, _] = cs.n;
    let n1 = fs.n[0];
    for c2 in 0..m2 - 1 {
        let row = |y: usize, z: usize| &coarse[cs.row(y, z)..cs.row(y, z) + m1];
        let (z00, z10, z01, z11) = (
            row(c2, c3),
            row(c2 + 1, c3),
            row(c2, c3 + 1),
            row(c2 + 1, c3 + 1),
        );
        let (z1, z2, z3) = (&mut lines.a[..m1], &mut lines.b[..m1], &mut lines.c[..m1]);
        for x in 0..m1 {
            z1[x] = z10[x] + z00[x];
            z2[x] = z01[x] + z00[x];
            z3[x] = z11[x] + z01[x] + z1[x];
        }
        let (y0, z0) = (2 * c2, 2 * c3);
        let mut add = |y: usize, z: usize, src: &[f64], w_on: f64, w_mid: f64| {
            let at = fs.row(y, z);
            interp_row(&mut fine[at..at + n1], src, w_on, w_mid);
        };
        add(y0, z0, z00, 1.0, 0.5);
        add(y0 + 1, z0, z1, 0.5, 0.25);
        add(y0, z0 + 1, z2, 0.5, 0.25);
        add(y0 + 1, z0 + 1, z3, 0.25, 0.125);
    }
}

/// Prolongation `u = u + Q z` alone, for the tests (the solver always
/// follows it with a residual, so it uses [`interp_resid`]).
#[cfg(test)]
fn interp_impl(cs: Shape, coarse: &[f64], fs: Shape, fine: &mut [f64], lines: &mut Lines) {
    debug_assert!(AXES.iter().all(|&ax| fs.n[ax] == 2 * cs.n[ax] - 2));
    for c3 in 0..cs.n[2] - 1 {
        interp_planes(cs, coarse, fs, fine, lines, c3);
    }
}

/// The portable body of [`interp_resid`]; inlined into each instruction-set
/// variant.
#[inline(always)]
#[allow(clippy::too_many_arguments)] // the union of interp's and resid's
fn interp_resid_impl(
    cs: Shape,
    coarse: &[f64],
    fs: Shape,
    u: &mut [f64],
    v: Option<&[f64]>,
    r: &mut [f64],
    a: &[f64; 4],
    lines: &mut Lines,
) {
    debug_assert!(AXES.iter().all(|&ax| fs.n[ax] == 2 * cs.n[ax] - 2));
    let last = fs.n[2] - 2;
    for c3 in 0..cs.n[2] - 1 {
        // Planes up to 2 c3 + 1 of u are now final, so the residual of
        // planes 2 c3 - 1 and 2 c3 (which read one plane either side) can
        // be taken while those planes are still in cache.
        interp_planes(cs, coarse, fs, u, lines, c3);
        for z in [2 * c3, 2 * c3 + 1] {
            if (2..=last + 1).contains(&z) {
                resid_plane(fs, u, v, r, a, lines, z - 1);
            }
        }
    }
}

/// The portable body of [`norm_parts`]; inlined into each instruction-set
/// variant.
#[inline(always)]
fn norm_parts_impl(s: Shape, r: &[f64]) -> (f64, f64) {
    let [n1, n2, n3] = s.n;
    // Four partial sums let the additions vectorise; the norm is checked
    // to 1e-8, far above the rounding this reordering can cause.
    let mut sums = [0.0f64; 4];
    let mut max_abs = 0.0f64;
    for z in 1..n3 - 1 {
        for y in 1..n2 - 1 {
            let at = s.row(y, z);
            let row = &r[at + 1..at + n1 - 1];
            let mut chunks = row.chunks_exact(4);
            for chunk in &mut chunks {
                for (acc, x) in sums.iter_mut().zip(chunk) {
                    *acc += x * x;
                    max_abs = max_abs.max(x.abs());
                }
            }
            for x in chunks.remainder() {
                sums[0] += x * x;
                max_abs = max_abs.max(x.abs());
            }
        }
    }
    ((sums[0] + sums[1]) + (sums[2] + sums[3]), max_abs)
}

dispatch! {
    /// `r = v - A u` on the interior of one block; `v` of `None` means
    /// `r = r - A u` (the coarse-level residual, where NPB passes `r` as
    /// both `v` and `r`).
    pub fn resid(s: Shape, u: &[f64], v: Option<&[f64]>, r: &mut [f64], a: &[f64; 4], lines: &mut Lines) => resid_impl
}

dispatch! {
    /// `u = u + S r` on the interior of one block.
    pub fn psinv(s: Shape, r: &[f64], u: &mut [f64], c: &[f64; 4], lines: &mut Lines) => psinv_impl
}

dispatch! {
    /// Restriction `s = P r` from a fine block `fine` (shape `fs`) to the
    /// coarse block `coarse` (shape `cs`, half the interior points per axis).
    ///
    /// Coarse interior point j sits on fine interior point 2j+1 (spec); with
    /// one ghost on each side that is array index 2j' on the fine block for
    /// array index j' on the coarse one.
    pub fn rprj3(fs: Shape, fine: &[f64], cs: Shape, coarse: &mut [f64], lines: &mut Lines) => rprj3_impl
}

dispatch! {
    /// Sum of squares and largest magnitude over the interior of one block.
    pub fn norm_parts(s: Shape, r: &[f64]) -> (f64, f64) => norm_parts_impl
}

dispatch! {
    /// Prolongation `u = u + Q z` from the coarse block `coarse` (shape
    /// `cs`) to the fine block `u` (shape `fs`), ghosts included, then
    /// [`resid`] with the new u (`r = v - A u`, or `r = r - A u` for `v` of
    /// `None`).
    ///
    /// Fine index 2c (with ghosts) takes coarse index c; fine 2c+1 the mean
    /// of coarse c and c+1 (spec: fine 2j+1 takes coarse j counting interior
    /// points). The fine ghosts come out right from the coarse ghosts, so u
    /// needs no exchange afterwards, as in NPB.
    ///
    /// Why fused: the residual of each plane is taken as soon as the planes
    /// it reads are prolongated, while they are in cache, which saves a
    /// sweep through u. The arithmetic is that of the two separate steps, so
    /// are the bits.
    pub fn interp_resid(
        cs: Shape,
        coarse: &[f64],
        fs: Shape,
        u: &mut [f64],
        v: Option<&[f64]>,
        r: &mut [f64],
        a: &[f64; 4],
        lines: &mut Lines,
    ) => interp_resid_impl
}

#[cfg(test)]
#[path = "kernels_tests.rs"]
mod tests;
