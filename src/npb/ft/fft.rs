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

/// A transform of one length, with its roots and line buffers.
#[derive(Debug, Clone)]
pub struct Fft {
    n: usize,
    /// `exp(-2 pi i k / n)` for `k < n / 2`.
    roots: Vec<Complex>,
    line: Vec<Complex>,
    scratch: Vec<Complex>,
}

#[inline]
fn add(a: Complex, b: Complex) -> Complex {
    [a[0] + b[0], a[1] + b[1]]
}

#[inline]
fn sub(a: Complex, b: Complex) -> Complex {
    [a[0] - b[0], a[1] - b[1]]
}

#[inline]
fn mul(a: Complex, b: Complex) -> Complex {
    [a[0] * b[0] - a[1] * b[1], a[0] * b[1] + a[1] * b[0]]
}

impl Fft {
    /// A transform of `n` points; `n` must be a power of two.
    pub fn new(n: usize) -> Result<Self> {
        ensure!(n.is_power_of_two(), "FFT length {n} is not a power of two");
        let roots = (0..n / 2)
            .map(|k| {
                let theta = -2.0 * std::f64::consts::PI * k as f64 / n as f64;
                [theta.cos(), theta.sin()]
            })
            .collect();
        Ok(Fft {
            n,
            roots,
            line: vec![[0.0; 2]; n],
            scratch: vec![[0.0; 2]; n],
        })
    }

    /// Transforms, in place, every line of `data` along one axis: line `l`
    /// of `lines` starts at `first(l)` and its points are `stride` apart.
    pub fn lines(
        &mut self,
        data: &mut [Complex],
        lines: usize,
        first: impl Fn(usize) -> usize,
        stride: usize,
        dir: Direction,
    ) {
        for l in 0..lines {
            let start = first(l);
            for (i, v) in self.line.iter_mut().enumerate() {
                *v = data[start + i * stride];
            }
            self.transform_line(dir);
            for (i, v) in self.line.iter().enumerate() {
                data[start + i * stride] = *v;
            }
        }
    }

    /// Transforms `x` (exactly the transform's length) in place.
    #[cfg(test)]
    pub fn transform(&mut self, x: &mut [Complex], dir: Direction) {
        self.line.copy_from_slice(x);
        self.transform_line(dir);
        x.copy_from_slice(&self.line);
    }

    /// The Stockham passes on `self.line`: pass with half-length `m` and
    /// stride `s` takes `a = x[q + s p]`, `b = x[q + s (p + m)]` to
    /// `y[q + 2 s p] = a + b` and `y[q + s (2p + 1)] = (a - b) w^p`, with
    /// `w = exp(-+2 pi i / (2m))` = root `p s` of the whole length; the
    /// result lands in natural order.
    fn transform_line(&mut self, dir: Direction) {
        let n = self.n;
        let mut in_line = true;
        let (mut half, mut s) = (n / 2, 1);
        while half >= 1 {
            let (x, y) = if in_line {
                (&self.line, &mut self.scratch)
            } else {
                (&self.scratch, &mut self.line)
            };
            for p in 0..half {
                let mut w = self.roots[p * s];
                if dir == Direction::Inverse {
                    w[1] = -w[1];
                }
                for q in 0..s {
                    let a = x[q + s * p];
                    let b = x[q + s * (p + half)];
                    y[q + s * 2 * p] = add(a, b);
                    y[q + s * (2 * p + 1)] = mul(sub(a, b), w);
                }
            }
            in_line = !in_line;
            half /= 2;
            s *= 2;
        }
        if !in_line {
            self.line.copy_from_slice(&self.scratch);
        }
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
