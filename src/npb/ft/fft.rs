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
/// `re[i * BLOCK + b]` is point `i` of line `b`).
#[derive(Debug, Clone)]
pub struct Fft {
    n: usize,
    /// `exp(-2 pi i k / n)` for `k < n`.
    roots: Vec<Complex>,
    re: [Vec<f64>; 2],
    im: [Vec<f64>; 2],
}

#[inline]
#[cfg(test)]
fn add(a: Complex, b: Complex) -> Complex {
    [a[0] + b[0], a[1] + b[1]]
}

#[inline]
#[cfg(test)]
fn mul(a: Complex, b: Complex) -> Complex {
    [a[0] * b[0] - a[1] * b[1], a[0] * b[1] + a[1] * b[0]]
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
        let buf = || vec![0.0; n * BLOCK];
        Ok(Fft {
            n,
            roots,
            re: [buf(), buf()],
            im: [buf(), buf()],
        })
    }

    /// Transforms, in place, every line of `data` along one axis: line `l`
    /// of `lines` starts at `first(l)` and its points are `stride` apart.
    /// Lines go by blocks of [`BLOCK`]; lines next to each other should
    /// lie next to each other in `data` (for a strided axis, the gather
    /// then reads whole runs).
    pub fn lines(
        &mut self,
        data: &mut [Complex],
        lines: usize,
        first: impl Fn(usize) -> usize,
        stride: usize,
        dir: Direction,
    ) {
        let n = self.n;
        let mut starts = [0usize; BLOCK];
        let mut l0 = 0;
        while l0 < lines {
            let width = BLOCK.min(lines - l0);
            for (b, start) in starts.iter_mut().enumerate().take(width) {
                *start = first(l0 + b);
            }
            let starts = &starts[..width];
            // Whichever order reads `data` in runs: along a line when its
            // points are adjacent, across the block's lines otherwise.
            if stride == 1 {
                for (b, &start) in starts.iter().enumerate() {
                    for (i, v) in data[start..start + n].iter().enumerate() {
                        self.re[0][i * BLOCK + b] = v[0];
                        self.im[0][i * BLOCK + b] = v[1];
                    }
                }
            } else {
                for i in 0..n {
                    for (b, &start) in starts.iter().enumerate() {
                        let v = data[start + i * stride];
                        self.re[0][i * BLOCK + b] = v[0];
                        self.im[0][i * BLOCK + b] = v[1];
                    }
                }
            }
            let out = self.transform_block(dir);
            let (re, im) = (&self.re[out], &self.im[out]);
            if stride == 1 {
                for (b, &start) in starts.iter().enumerate() {
                    for (i, v) in data[start..start + n].iter_mut().enumerate() {
                        *v = [re[i * BLOCK + b], im[i * BLOCK + b]];
                    }
                }
            } else {
                for i in 0..n {
                    for (b, &start) in starts.iter().enumerate() {
                        data[start + i * stride] = [re[i * BLOCK + b], im[i * BLOCK + b]];
                    }
                }
            }
            l0 += width;
        }
    }

    /// Transforms `x` (exactly the transform's length) in place.
    #[cfg(test)]
    pub fn transform(&mut self, x: &mut [Complex], dir: Direction) {
        self.lines(x, 1, |_| 0, 1, dir);
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
mod tests {
    use super::*;

    fn dft(x: &[Complex], sign: f64) -> Vec<Complex> {
        let n = x.len();
        (0..n)
            .map(|k| {
                x.iter().enumerate().fold([0.0; 2], |acc, (j, v)| {
                    let t = sign * 2.0 * std::f64::consts::PI * ((j * k) % n) as f64 / n as f64;
                    add(acc, mul(*v, [t.cos(), t.sin()]))
                })
            })
            .collect()
    }

    fn signal(n: usize) -> Vec<Complex> {
        let mut state = crate::npb::rng::SEED_MG;
        (0..n)
            .map(|_| {
                let re = crate::npb::rng::randlc(&mut state, crate::npb::rng::MULTIPLIER);
                let im = crate::npb::rng::randlc(&mut state, crate::npb::rng::MULTIPLIER);
                [re - 0.5, im - 0.5]
            })
            .collect()
    }

    fn max_diff(a: &[Complex], b: &[Complex]) -> f64 {
        a.iter()
            .zip(b)
            .map(|(x, y)| (x[0] - y[0]).abs().max((x[1] - y[1]).abs()))
            .fold(0.0, f64::max)
    }

    #[test]
    fn a_pure_tone_lands_in_its_bin() {
        // x(j) = exp(2 pi i 3 j / 16): the forward transform is 16 at bin 3.
        let n = 16;
        let mut x: Vec<Complex> = (0..n)
            .map(|j| {
                let t = 2.0 * std::f64::consts::PI * 3.0 * j as f64 / n as f64;
                [t.cos(), t.sin()]
            })
            .collect();
        Fft::new(n).unwrap().transform(&mut x, Direction::Forward);
        for (k, v) in x.iter().enumerate() {
            let want = if k == 3 { [16.0, 0.0] } else { [0.0, 0.0] };
            assert!(max_diff(&[*v], &[want]) < 1e-12, "bin {k}: {v:?}");
        }
    }

    #[test]
    fn matches_the_direct_sum_in_both_directions() {
        for n in [1, 2, 4, 8, 32, 64] {
            let x = signal(n);
            let mut fft = Fft::new(n).unwrap();
            let mut f = x.clone();
            fft.transform(&mut f, Direction::Forward);
            assert!(max_diff(&f, &dft(&x, -1.0)) < 1e-12, "forward n {n}");
            let mut b = x.clone();
            fft.transform(&mut b, Direction::Inverse);
            assert!(max_diff(&b, &dft(&x, 1.0)) < 1e-12, "inverse n {n}");
        }
    }

    #[test]
    fn inverse_of_forward_is_n_times_identity() {
        let n = 128;
        let x = signal(n);
        let mut fft = Fft::new(n).unwrap();
        let mut y = x.clone();
        fft.transform(&mut y, Direction::Forward);
        fft.transform(&mut y, Direction::Inverse);
        let scaled: Vec<Complex> = y
            .iter()
            .map(|v| [v[0] / n as f64, v[1] / n as f64])
            .collect();
        assert!(max_diff(&scaled, &x) < 1e-14);
    }

    #[test]
    fn strided_lines_equal_contiguous_transforms() {
        // A 4 x 8 block: transform the columns (stride 4) of 8 points.
        let data = signal(32);
        let mut fft = Fft::new(8).unwrap();
        let mut by_lines = data.clone();
        fft.lines(&mut by_lines, 4, |l| l, 4, Direction::Forward);
        for col in 0..4 {
            let mut line: Vec<Complex> = (0..8).map(|i| data[col + 4 * i]).collect();
            fft.transform(&mut line, Direction::Forward);
            let got: Vec<Complex> = (0..8).map(|i| by_lines[col + 4 * i]).collect();
            assert_eq!(got, line);
        }
        assert!(Fft::new(12).is_err());
    }
}
