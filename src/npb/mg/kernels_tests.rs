//! Each operator against a plain evaluation of the spec's definition,
//! on a serial periodic grid with pseudo-random values.
use super::*;

/// A full periodic grid of n^3 points plus ghosts, filled from `f` of
/// the global coordinates.
fn periodic(n: usize, f: impl Fn(usize, usize, usize) -> f64) -> (Shape, Vec<f64>) {
    let s = Shape::with_interior([n; 3]);
    let mut data = vec![0.0; s.len()];
    let g = |i: usize| (i + n - 1) % n;
    for z in 0..n + 2 {
        for y in 0..n + 2 {
            for x in 0..n + 2 {
                data[s.at(x, y, z)] = f(g(x), g(y), g(z));
            }
        }
    }
    (s, data)
}

fn noise(seed: u64) -> impl Fn(usize, usize, usize) -> f64 {
    move |x, y, z| {
        let h = (x as u64 * 73_856_093) ^ (y as u64 * 19_349_663) ^ (z as u64 * 83_492_791) ^ seed;
        (h.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 11) as f64 / (1u64 << 53) as f64 - 0.5
    }
}

/// Value at global (x, y, z) + d with periodic wrap, from a periodic block.
fn at(s: Shape, data: &[f64], n: usize, p: [usize; 3], d: [isize; 3]) -> f64 {
    let w = |i: usize, di: isize| ((i as isize + di).rem_euclid(n as isize)) as usize + 1;
    data[s.at(w(p[0], d[0]), w(p[1], d[1]), w(p[2], d[2]))]
}

/// Sum over the 27 offsets of `weights[number of non-zero offsets] * value`.
fn stencil(weights: &[f64; 4], value: impl Fn([isize; 3]) -> f64) -> f64 {
    let mut sum = 0.0;
    for dz in -1..=1isize {
        for dy in -1..=1isize {
            for dx in -1..=1isize {
                let k = [dx, dy, dz].iter().filter(|&&d| d != 0).count();
                sum += weights[k] * value([dx, dy, dz]);
            }
        }
    }
    sum
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-13 * (1.0 + b.abs())
}

const A: [f64; 4] = [-8.0 / 3.0, 0.0, 1.0 / 6.0, 1.0 / 12.0];
const C: [f64; 4] = [-3.0 / 8.0, 1.0 / 32.0, -1.0 / 64.0, 0.0];

#[test]
fn resid_and_psinv_are_the_27_point_stencils() {
    let n = 8;
    let (s, u) = periodic(n, noise(1));
    let (_, v) = periodic(n, noise(2));
    let mut lines = Lines::new(n + 2);
    let mut r = vec![0.0; s.len()];
    resid(s, &u, Some(&v), &mut r, &A, &mut lines);
    let mut r2 = v.clone();
    resid(s, &u, None, &mut r2, &A, &mut lines);
    let mut u2 = u.clone();
    psinv(s, &v, &mut u2, &C, &mut lines);
    for p in (0..n * n * n).map(|i| [i % n, (i / n) % n, i / (n * n)]) {
        let idx = s.at(p[0] + 1, p[1] + 1, p[2] + 1);
        let want = v[idx] - stencil(&A, |d| at(s, &u, n, p, d));
        assert!(close(r[idx], want), "resid at {p:?}");
        assert_eq!(r[idx], r2[idx], "in place at {p:?}");
        let want = u[idx] + stencil(&C, |d| at(s, &v, n, p, d));
        assert!(close(u2[idx], want), "psinv at {p:?}");
    }
}

fn same_bits(a: &[f64], b: &[f64]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits())
}

#[test]
fn portable_and_dispatched_kernels_agree_bit_for_bit() {
    // On a CPU with AVX2 the public kernels run the AVX2 build; the claim
    // is that only speed changes, never a bit of the result.
    let (nf, nc) = (16, 8);
    let (fs, u) = periodic(nf, noise(6));
    let (_, v) = periodic(nf, noise(7));
    let (cs, z) = periodic(nc, noise(8));
    let mut l = Lines::new(nf + 2);

    let (mut x, mut y) = (vec![0.0; fs.len()], vec![0.0; fs.len()]);
    resid(fs, &u, Some(&v), &mut x, &A, &mut l);
    resid_impl(fs, &u, Some(&v), &mut y, &A, &mut l);
    assert!(same_bits(&x, &y), "resid");

    let (mut x, mut y) = (v.clone(), v.clone());
    resid(fs, &u, None, &mut x, &A, &mut l);
    resid_impl(fs, &u, None, &mut y, &A, &mut l);
    assert!(same_bits(&x, &y), "resid in place");

    let (mut x, mut y) = (u.clone(), u.clone());
    psinv(fs, &v, &mut x, &C, &mut l);
    psinv_impl(fs, &v, &mut y, &C, &mut l);
    assert!(same_bits(&x, &y), "psinv");

    let (mut x, mut y) = (vec![0.0; cs.len()], vec![0.0; cs.len()]);
    rprj3(fs, &u, cs, &mut x, &mut l);
    rprj3_impl(fs, &u, cs, &mut y, &mut l);
    assert!(same_bits(&x, &y), "rprj3");

    // The fused prolongation and residual against the two calls, with v
    // given and in place.
    for v_given in [true, false] {
        let (mut u1, mut u2) = (u.clone(), u.clone());
        let (mut r1, mut r2) = (v.clone(), v.clone());
        let rhs = v_given.then_some(&v[..]);
        interp_resid(cs, &z, fs, &mut u1, rhs, &mut r1, &A, &mut l);
        interp_impl(cs, &z, fs, &mut u2, &mut l);
        resid_impl(fs, &u2, rhs, &mut r2, &A, &mut l);
        assert!(same_bits(&u1, &u2) && same_bits(&r1, &r2), "interp_resid");
    }

    let (x, y) = (norm_parts(fs, &u), norm_parts_impl(fs, &u));
    assert!(same_bits(&[x.0, x.1], &[y.0, y.1]), "norm_parts");
}

#[test]
fn residual_of_a_constant_is_zero() {
    let n = 4;
    let (s, u) = periodic(n, |_, _, _| 3.0);
    let v = vec![0.0; s.len()];
    let mut r = vec![1.0; s.len()];
    resid(s, &u, Some(&v), &mut r, &A, &mut Lines::new(n + 2));
    assert!(r[s.at(1, 1, 1)].abs() < 1e-14);
}

#[test]
fn rprj3_puts_coarse_j_on_fine_2j_plus_1() {
    let (nf, nc) = (8, 4);
    let (fs, fine) = periodic(nf, noise(3));
    let cs = Shape::with_interior([nc; 3]);
    let mut coarse = vec![0.0; cs.len()];
    rprj3(fs, &fine, cs, &mut coarse, &mut Lines::new(nf + 2));
    let p = [0.5, 0.25, 0.125, 0.0625];
    for j in (0..nc * nc * nc).map(|i| [i % nc, (i / nc) % nc, i / (nc * nc)]) {
        let centre = j.map(|c| 2 * c + 1);
        let want = stencil(&p, |d| at(fs, &fine, nf, centre, d));
        assert!(
            close(coarse[cs.at(j[0] + 1, j[1] + 1, j[2] + 1)], want),
            "at {j:?}"
        );
    }
}

#[test]
fn interp_is_trilinear_with_ghosts() {
    let (nf, nc) = (8, 4);
    let (cs, coarse) = periodic(nc, noise(4));
    let (fs, before) = periodic(nf, noise(5));
    let mut fine = before.clone();
    interp_impl(cs, &coarse, fs, &mut fine, &mut Lines::new(nf + 2));
    // Fine global i = 2j+1 takes coarse j; i = 2j+2 the mean of j, j+1.
    let taps = |i: usize| -> Vec<(usize, f64)> {
        if i % 2 == 1 {
            vec![((i - 1) / 2, 1.0)]
        } else {
            let j = (i / 2 + nc - 1) % nc;
            vec![(j, 0.5), ((j + 1) % nc, 0.5)]
        }
    };
    // Every fine index with ghosts: array index k is global (k - 1) mod nf.
    for k in
        (0..(nf + 2).pow(3)).map(|i| [i % (nf + 2), (i / (nf + 2)) % (nf + 2), i / (nf + 2).pow(2)])
    {
        let g = k.map(|i| (i + nf - 1) % nf);
        let mut want = before[fs.at(k[0], k[1], k[2])];
        for (jx, wx) in taps(g[0]) {
            for (jy, wy) in taps(g[1]) {
                for (jz, wz) in taps(g[2]) {
                    want += wx * wy * wz * coarse[cs.at(jx + 1, jy + 1, jz + 1)];
                }
            }
        }
        assert!(close(fine[fs.at(k[0], k[1], k[2])], want), "at {k:?}");
    }
}

#[test]
fn norm_parts_cover_the_interior_only() {
    let n = 5;
    let (s, r) = periodic(n, |x, y, z| if (x, y, z) == (2, 3, 4) { -2.0 } else { 1.0 });
    let (sum, max) = norm_parts(s, &r);
    assert_eq!(sum, (n * n * n - 1) as f64 + 4.0);
    assert_eq!(max, 2.0);
}
