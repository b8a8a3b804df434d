//! Tests of the FFT against direct sums and of its strided lines.

use super::*;

#[inline]
fn add(a: Complex, b: Complex) -> Complex {
    [a[0] + b[0], a[1] + b[1]]
}

#[inline]
fn mul(a: Complex, b: Complex) -> Complex {
    [a[0] * b[0] - a[1] * b[1], a[0] * b[1] + a[1] * b[0]]
}

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
    let columns = Lines {
        count: 4,
        step: 1,
        stride: 4,
    };
    fft.lines(&mut by_lines, columns, Direction::Forward);
    for col in 0..4 {
        let mut line: Vec<Complex> = (0..8).map(|i| data[col + 4 * i]).collect();
        fft.transform(&mut line, Direction::Forward);
        let got: Vec<Complex> = (0..8).map(|i| by_lines[col + 4 * i]).collect();
        assert_eq!(got, line);
    }
    assert!(Fft::new(12).is_err());
}
