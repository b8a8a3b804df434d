//! BT's 5x5 block arithmetic (NPB's `binvcrhs`, `matvec_sub`,
//! `matmul_sub`): a block is indexed `[row][column]`, a row being one of
//! the five equations and a column one of the five unknowns of a point.
//!
//! The inverse is Gauss-Jordan elimination without pivoting, as NPB's:
//! the diagonal blocks of BT's systems are dominated by the identity (the
//! time step is small), so no pivot comes near zero.

/// Values per point, the side of a block.
pub const B: usize = 5;

/// A 5x5 block, `[row][column]`.
pub type Block = [[f64; B]; B];

/// The identity block.
#[cfg(test)]
pub const IDENTITY: Block = {
    let mut b = [[0.0; B]; B];
    let mut i = 0;
    while i < B {
        b[i][i] = 1.0;
        i += 1;
    }
    b
};

/// `c <- b^-1 c` and `r <- b^-1 r`, destroying `b` (NPB's `binvcrhs`):
/// the elimination that leaves the normalised upper block `C'` and
/// right-hand side `r'` of a row of the block-tridiagonal system.
#[inline(always)]
pub fn binvcrhs(b: &mut Block, c: &mut Block, r: &mut [f64; B]) {
    // One call per pivot with the pivot a constant: every loop below then
    // has constant bounds and unrolls into straight-line code, as NPB's
    // hand-unrolled routine is; a loop over the pivot left the row tails
    // `p + 1..B` as short loops of unknown length.
    pivot_step::<0>(b, c, r);
    pivot_step::<1>(b, c, r);
    pivot_step::<2>(b, c, r);
    pivot_step::<3>(b, c, r);
    pivot_step::<4>(b, c, r);
}

/// Pivot `P` of [`binvcrhs`]: row `P` normalised, then removed from every
/// other row.
#[inline(always)]
fn pivot_step<const P: usize>(b: &mut Block, c: &mut Block, r: &mut [f64; B]) {
    let pivot = 1.0 / b[P][P];
    for v in &mut b[P][P + 1..] {
        *v *= pivot;
    }
    for v in c[P].iter_mut() {
        *v *= pivot;
    }
    r[P] *= pivot;
    // The pivot row by value: the other rows are updated from it.
    let (bp, cp, rp) = (b[P], c[P], r[P]);
    for q in 0..B {
        if q == P {
            continue;
        }
        let coeff = b[q][P];
        for j in P + 1..B {
            b[q][j] -= coeff * bp[j];
        }
        for (x, y) in c[q].iter_mut().zip(&cp) {
            *x -= coeff * y;
        }
        r[q] -= coeff * rp;
    }
}

/// `r <- r - a v` (NPB's `matvec_sub`).
#[inline(always)]
pub fn matvec_sub(a: &Block, v: &[f64; B], r: &mut [f64; B]) {
    for (row, out) in a.iter().zip(r.iter_mut()) {
        let mut s = 0.0;
        for col in 0..B {
            s += row[col] * v[col];
        }
        *out -= s;
    }
}

/// `c <- c - a b` (NPB's `matmul_sub`).
#[inline(always)]
pub fn matmul_sub(a: &Block, b: &Block, c: &mut Block) {
    for row in 0..B {
        for col in 0..B {
            let mut s = 0.0;
            for k in 0..B {
                s += a[row][k] * b[k][col];
            }
            c[row][col] -= s;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A made-up block, dominated by its diagonal as BT's are.
    fn block(seed: usize) -> Block {
        let mut b = [[0.0; B]; B];
        for (i, row) in b.iter_mut().enumerate() {
            for (j, v) in row.iter_mut().enumerate() {
                *v = (((i * 7 + j * 3 + seed * 11) % 13) as f64 - 6.0) / 10.0;
            }
            row[i] += 4.0;
        }
        b
    }

    /// `a b` written out, not through the functions under test.
    fn product(a: &Block, b: &Block) -> Block {
        std::array::from_fn(|i| std::array::from_fn(|j| (0..B).map(|k| a[i][k] * b[k][j]).sum()))
    }

    #[test]
    fn binvcrhs_solves_with_the_block_it_destroys() {
        for seed in 0..5 {
            let (b, c) = (block(seed), block(seed + 7));
            let r: [f64; B] = std::array::from_fn(|i| i as f64 - 1.5 + seed as f64);
            let (mut b2, mut c2, mut r2) = (b, c, r);
            binvcrhs(&mut b2, &mut c2, &mut r2);
            // b (b^-1 c) = c and b (b^-1 r) = r.
            let back = product(&b, &c2);
            for i in 0..B {
                let br: f64 = (0..B).map(|k| b[i][k] * r2[k]).sum();
                assert!(
                    (br - r[i]).abs() < 1e-12,
                    "seed {seed} row {i}: {br} vs {}",
                    r[i]
                );
                for j in 0..B {
                    assert!(
                        (back[i][j] - c[i][j]).abs() < 1e-12,
                        "seed {seed} ({i},{j})"
                    );
                }
            }
        }
        // The identity leaves both sides as they were.
        let (mut i, mut c, mut r) = (IDENTITY, block(3), [1.0, 2.0, 3.0, 4.0, 5.0]);
        binvcrhs(&mut i, &mut c, &mut r);
        assert_eq!(c, block(3));
        assert_eq!(r, [1.0, 2.0, 3.0, 4.0, 5.0]);
    }

    #[test]
    fn matmul_and_matvec_subtract_the_direct_product() {
        let (a, b, c) = (block(1), block(2), block(4));
        let mut out = c;
        matmul_sub(&a, &b, &mut out);
        let ab = product(&a, &b);
        for i in 0..B {
            for j in 0..B {
                assert!((out[i][j] - (c[i][j] - ab[i][j])).abs() < 1e-14);
            }
        }
        let v = [0.5, -1.0, 2.0, 0.25, 3.0];
        let mut r = [1.0; B];
        matvec_sub(&a, &v, &mut r);
        for i in 0..B {
            let av: f64 = (0..B).map(|k| a[i][k] * v[k]).sum();
            assert!((r[i] - (1.0 - av)).abs() < 1e-14);
        }
        // A product with the identity is the block itself.
        let mut z = b;
        matmul_sub(&IDENTITY, &b, &mut z);
        assert_eq!(z, [[0.0; B]; B]);
    }
}
