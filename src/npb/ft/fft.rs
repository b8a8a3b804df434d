//! Our own 1-D complex FFT (radix-2 Stockham, self-sorting: no bit
//! reversal) for the power-of-two line lengths of FT, applied along one
//! axis of a block of lines.
//!
//! Values are `[re, im]` pairs so that a block of them travels as plain
//! bytes. Nothing here allocates once a [`Fft`] is built: the roots and
//! the two line buffers are made by [`Fft::new`].

use anyhow::{ensure, Result};

/// A complex value, `[re, im]`.
pub type Complex = [f64; 2];

/// Which way a transform goes: forward is `exp(-2 pi i jk / n)`, inverse
/// its conjugate, neither scaled (as NPB's, which divides by the number of
/// points in its checksum instead).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// `X(k) = sum_j x(j) exp(-2 pi i jk / n)`.
    Forward,
    /// `x(j) = sum_k X(k) exp(+2 pi i jk / n)`, unscaled.
    Inverse,
}

/// Lines transformed together: each pass then runs its innermost loop
/// across this many lines at once (contiguous, so it vectorizes), and the
/// gather of lines along a strided axis reads this many neighbours.
pub const BLOCK: usize = 16;

/// A transform of one length, with its roots and the buffers of one
/// block of lines (real and imaginary parts apart, point-major:
/// `re[i][b]` is point `i` of line `b`).
#[derive(Debug, Clone)]
pub struct Fft {
    n: usize,
    /// `exp(-2 pi i k / n)` for `k < n`.
    roots: Vec<Complex>,
    re: [Vec<[f64; BLOCK]>; 2],
    im: [Vec<[f64; BLOCK]>; 2],
}

impl Fft {
    /// A transform of `n` points; `n` must be a power of two.
    pub fn new(n: usize) -> Result<Self> {
        ensure!(n.is_power_of_two(), "FFT length {n} is not a power of two");
        let roots = (0..n)
            .map(|k| {
                let theta = -2.0 * std::f64::consts::PI * k as f64 / n as f64;
                [theta.cos(), theta.sin()]
            })
            .collect();
        let buf = || vec![[0.0; BLOCK]; n];
        Ok(Fft {
            n,
            roots,
            re: [buf(), buf()],
            im: [buf(), buf()],
        })
    }

    /// Transforms, in place, every line `at` of `data` along one axis.
    /// Lines go by blocks of [`BLOCK`], so a gather along a strided axis
    /// reads runs of [`BLOCK`] adjacent points.
    pub fn lines(&mut self, data: &mut [Complex], at: Lines, dir: Direction) {
        for l0 in (0..at.count).step_by(BLOCK) {
            let width = BLOCK.min(at.count - l0);
            self.gather(data, at, l0, width, |_, _| {});
            let out = self.transform_block(dir);
            self.scatter(out, data, at, l0, width);
        }
    }

    /// As [`Fft::lines`], but each point of `src` is first multiplied by
    /// its `factor` (same index) and written back, and the transformed
    /// lines go to `dst`: NPB's `evolve` then the transform, in one trip
    /// through memory instead of three (evolve writing a copy that the
    /// transform reads and writes again).
    pub fn lines_scaled(
        &mut self,
        src: &mut [Complex],
        factor: &[f64],
        dst: &mut [Complex],
        at: Lines,
        dir: Direction,
    ) {
        for l0 in (0..at.count).step_by(BLOCK) {
            let width = BLOCK.min(at.count - l0);
            self.gather(src, at, l0, width, |run, first| {
                let factor = &factor[first..first + run.len()];
                for (v, t) in run.iter_mut().zip(factor) {
                    *v = [v[0] * t, v[1] * t];
                }
            });
            let out = self.transform_block(dir);
            self.scatter(out, dst, at, l0, width);
        }
    }

    /// Loads lines `l0..l0 + width` into buffer pair 0, a run of adjacent
    /// points at a time (a line, or one point of every line of the
    /// block), after `prep(run, index of its first point)`.
    #[inline(always)]
    fn gather(
        &mut self,
        data: &mut [Complex],
        at: Lines,
        l0: usize,
        width: usize,
        mut prep: impl FnMut(&mut [Complex], usize),
    ) {
        let (n, re, im) = (self.n, &mut self.re[0], &mut self.im[0]);
        if at.stride == 1 {
            for b in 0..width {
                let first = (l0 + b) * at.step;
                let line = &mut data[first..first + n];
                prep(line, first);
                for ((r, m), v) in re.iter_mut().zip(im.iter_mut()).zip(&*line) {
                    (r[b], m[b]) = (v[0], v[1]);
                }
            }
            return;
        }
        debug_assert_eq!(at.step, 1, "neither points nor lines adjacent");
        for (i, (r, m)) in re.iter_mut().zip(im.iter_mut()).enumerate() {
            let first = l0 + i * at.stride;
            let run = &mut data[first..first + width];
            prep(run, first);
            for ((r, m), v) in r.iter_mut().zip(m.iter_mut()).zip(&*run) {
                (*r, *m) = (v[0], v[1]);
            }
        }
    }

    /// Stores buffer pair `out` back to lines `l0..l0 + width` of `data`,
    /// by the runs of [`Fft::gather`].
    #[inline(always)]
    fn scatter(&self, out: usize, data: &mut [Complex], at: Lines, l0: usize, width: usize) {
        let (n, re, im) = (self.n, &self.re[out], &self.im[out]);
        if at.stride == 1 {
            for b in 0..width {
                let first = (l0 + b) * at.step;
                for ((r, m), v) in re.iter().zip(im).zip(&mut data[first..first + n]) {
                    *v = [r[b], m[b]];
                }
            }
            return;
        }
        for (i, (r, m)) in re.iter().zip(im).enumerate() {
            let first = l0 + i * at.stride;
            for ((r, m), v) in r.iter().zip(m).zip(&mut data[first..first + width]) {
                *v = [*r, *m];
            }
        }
    }

    /// Transforms `x` (exactly the transform's length) in place.
    #[cfg(test)]
    pub fn transform(&mut self, x: &mut [Complex], dir: Direction) {
        let one = Lines {
            count: 1,
            step: 0,
            stride: 1,
        };
        self.lines(x, one, dir);
    }

    /// The Stockham passes on a block of lines, radix 4 while at least
    /// four points are left to combine, then one radix-2 pass if the
    /// length is an odd power of two (half the passes over the block of a
    /// radix-2 transform: the block, 64 KiB at 256 points, outgrows the
    /// L1 cache, so each pass costs a trip to L2). A radix-4 pass with
    /// quarter-length `m` and stride `s` takes the four points
    /// `x[q + s (p + j m)]` to `y[q + s (4p + j)]`, `j < 4`, twiddled by
    /// root `j p s` of the whole length; a radix-2 pass with half-length
    /// `m` takes `a = x[q + s p]`, `b = x[q + s (p + m)]` to
    /// `y[q + 2 s p] = a + b` and `y[q + s (2p + 1)] = (a - b) w^(p s)`;
    /// every line of the block at once. The result lands in natural
    /// order, in buffer pair 0 or 1 (returned).
    fn transform_block(&mut self, dir: Direction) -> usize {
        let n = self.n;
        let mut from = 0;
        let (mut len, mut s) = (n, 1);
        while len >= 2 {
            let ([r0, r1], [i0, i1]) = (&mut self.re, &mut self.im);
            let (xr, xi, yr, yi) = if from == 0 {
                (&*r0, &*i0, r1, i1)
            } else {
                (&*r1, &*i1, r0, i0)
            };
            let (xr, xi) = (xr.as_flattened(), xi.as_flattened());
            let (yr, yi) = (yr.as_flattened_mut(), yi.as_flattened_mut());
            let root = |k: usize| {
                let w = self.roots[k];
                match dir {
                    Direction::Forward => (w[0], w[1]),
                    Direction::Inverse => (w[0], -w[1]),
                }
            };
            if len >= 4 {
                let m = len / 4;
                for p in 0..m {
                    let w = [root(p * s), root(2 * p * s), root(3 * p * s)];
                    for q in 0..s {
                        let at = [0, 1, 2, 3].map(|j| q + s * (p + j * m));
                        radix4([xr, xi], at, w, dir, [yr, yi], q + s * 4 * p, s);
                    }
                }
                len /= 4;
                s *= 4;
            } else {
                let m = len / 2;
                for p in 0..m {
                    let w = root(p * s);
                    for q in 0..s {
                        let ia = (q + s * p) * BLOCK;
                        let ib = (q + s * (p + m)) * BLOCK;
                        let o0 = (q + s * 2 * p) * BLOCK;
                        let o1 = (q + s * (2 * p + 1)) * BLOCK;
                        butterfly(
                            [&xr[ia..ia + BLOCK], &xi[ia..ia + BLOCK]],
                            [&xr[ib..ib + BLOCK], &xi[ib..ib + BLOCK]],
                            w,
                            yr,
                            yi,
                            [o0, o1],
                        );
                    }
                }
                len /= 2;
                s *= 2;
            }
            from = 1 - from;
        }
        from
    }
}

/// Where the lines of [`Fft::lines`] lie: point `i` of line `l <
/// count` is at `l * step + i * stride`, and either the points of a line
/// or the lines are adjacent (`stride` or `step` is 1).
#[derive(Debug, Clone, Copy)]
pub struct Lines {
    /// How many lines.
    pub count: usize,
    /// From the first point of one line to the next line's.
    pub step: usize,
    /// From one point of a line to the next.
    pub stride: usize,
}

/// One radix-4 butterfly across a block of lines: the four points
/// `at` of `x` (real and imaginary lanes) to `y[first + j s]`, `j < 4`,
/// output `j` twiddled by `w[j - 1]`. With `t = a0 + a2`, `u = a0 - a2`,
/// `v = a1 + a3`, `d = a1 - a3`: outputs `t + v`, `(u -+ i d) w1`,
/// `(t - v) w2`, `(u +- i d) w3` (upper signs forward). Lanes are read
/// and written in place (whole arrays copied here become `memmove`
/// calls).
#[inline(always)]
fn radix4(
    [xr, xi]: [&[f64]; 2],
    at: [usize; 4],
    w: [(f64, f64); 3],
    dir: Direction,
    [yr, yi]: [&mut [f64]; 2],
    first: usize,
    s: usize,
) {
    // Forward multiplies d by -i, inverse by +i.
    let sign = match dir {
        Direction::Forward => 1.0,
        Direction::Inverse => -1.0,
    };
    let lane =
        |v: &[f64], i: usize| -> [f64; BLOCK] { v[at[i] * BLOCK..][..BLOCK].try_into().unwrap() };
    let (a0r, a1r, a2r, a3r) = (lane(xr, 0), lane(xr, 1), lane(xr, 2), lane(xr, 3));
    let (a0i, a1i, a2i, a3i) = (lane(xi, 0), lane(xi, 1), lane(xi, 2), lane(xi, 3));
    let mut y = [[0.0; BLOCK]; 8];
    for k in 0..BLOCK {
        let (tr, ti) = (a0r[k] + a2r[k], a0i[k] + a2i[k]);
        let (ur, ui) = (a0r[k] - a2r[k], a0i[k] - a2i[k]);
        let (vr, vi) = (a1r[k] + a3r[k], a1i[k] + a3i[k]);
        // -i d (forward) is (d.im, -d.re); +i d is (-d.im, d.re).
        let (er, ei) = (sign * (a1i[k] - a3i[k]), -sign * (a1r[k] - a3r[k]));
        y[0][k] = tr + vr;
        y[1][k] = ti + vi;
        let (b1r, b1i) = (ur + er, ui + ei);
        let (b2r, b2i) = (tr - vr, ti - vi);
        let (b3r, b3i) = (ur - er, ui - ei);
        y[2][k] = b1r * w[0].0 - b1i * w[0].1;
        y[3][k] = b1r * w[0].1 + b1i * w[0].0;
        y[4][k] = b2r * w[1].0 - b2i * w[1].1;
        y[5][k] = b2r * w[1].1 + b2i * w[1].0;
        y[6][k] = b3r * w[2].0 - b3i * w[2].1;
        y[7][k] = b3r * w[2].1 + b3i * w[2].0;
    }
    for j in 0..4 {
        let o = (first + j * s) * BLOCK;
        let (re, im): (&mut [f64; BLOCK], &mut [f64; BLOCK]) = (
            (&mut yr[o..o + BLOCK]).try_into().unwrap(),
            (&mut yi[o..o + BLOCK]).try_into().unwrap(),
        );
        *re = y[2 * j];
        *im = y[2 * j + 1];
    }
}

/// One radix-2 butterfly across a block of lines: `a + b` to `out[0]`,
/// `(a - b) w` to `out[1]`.
#[inline(always)]
fn butterfly(
    a: [&[f64]; 2],
    b: [&[f64]; 2],
    (wr, wi): (f64, f64),
    yr: &mut [f64],
    yi: &mut [f64],
    out: [usize; 2],
) {
    let (ar, ai): (&[f64; BLOCK], &[f64; BLOCK]) =
        (a[0].try_into().unwrap(), a[1].try_into().unwrap());
    let (br, bi): (&[f64; BLOCK], &[f64; BLOCK]) =
        (b[0].try_into().unwrap(), b[1].try_into().unwrap());
    {
        let sr: &mut [f64; BLOCK] = (&mut yr[out[0]..out[0] + BLOCK]).try_into().unwrap();
        for k in 0..BLOCK {
            sr[k] = ar[k] + br[k];
        }
        let si: &mut [f64; BLOCK] = (&mut yi[out[0]..out[0] + BLOCK]).try_into().unwrap();
        for k in 0..BLOCK {
            si[k] = ai[k] + bi[k];
        }
    }
    let mut dr = [0.0; BLOCK];
    let mut di = [0.0; BLOCK];
    for k in 0..BLOCK {
        dr[k] = ar[k] - br[k];
        di[k] = ai[k] - bi[k];
    }
    let tr: &mut [f64; BLOCK] = (&mut yr[out[1]..out[1] + BLOCK]).try_into().unwrap();
    for k in 0..BLOCK {
        tr[k] = dr[k] * wr - di[k] * wi;
    }
    let ti: &mut [f64; BLOCK] = (&mut yi[out[1]..out[1] + BLOCK]).try_into().unwrap();
    for k in 0..BLOCK {
        ti[k] = dr[k] * wi + di[k] * wr;
    }
}

#[cfg(test)]
#[path = "fft_tests.rs"]
mod tests;
