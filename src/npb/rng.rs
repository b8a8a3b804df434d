//! NPB's pseudo-random number generator, shared by every kernel.
//!
//! The generator is the linear congruential sequence
//! `x(k+1) = a * x(k) mod 2^46` with `a = 5^13`; the value handed out is
//! `x(k+1) / 2^46`, in (0, 1). NPB computes the product exactly with
//! double-precision splitting into 23-bit halves; we get the same integers
//! more cheaply from 64-bit wrapping multiplication: 2^46 divides 2^64, so
//! `(x * a mod 2^64) mod 2^46 == x * a mod 2^46` for any operands, and the
//! mask keeps the low 46 bits. Every state is below 2^46 < 2^53, so the
//! conversion to `f64` is exact too.
//!
//! Parallel ranks start at their own block of the stream with
//! [`jump`], which computes `a^m` by binary powering (O(log m) products).

/// The multiplier `a = 5^13`.
pub const MULTIPLIER: u64 = 1_220_703_125;

/// The seed of MG, CG and IS.
pub const SEED_MG: u64 = 314_159_265;

/// The seed of EP.
pub const SEED_EP: u64 = 271_828_183;

/// Number of bits of the modulus: states live in `[0, 2^46)`.
pub const MODULUS_BITS: u32 = 46;

/// `2^46 - 1`: masks a product down to its residue modulo `2^46`.
const MASK: u64 = (1 << MODULUS_BITS) - 1;

/// `2^-46`, exact in `f64`: scales a state to the unit interval.
const INV_TWO_POW_46: f64 = 1.0 / (1u64 << MODULUS_BITS) as f64;

/// `a * b mod 2^46` for `a, b < 2^46`, exact.
#[inline]
pub fn mul_mod(a: u64, b: u64) -> u64 {
    debug_assert!(a <= MASK && b <= MASK, "operands must be below 2^46");
    // Why wrapping: the true product can need 92 bits, but only its low 46
    // bits matter and wrapping multiplication keeps the low 64 exactly.
    a.wrapping_mul(b) & MASK
}

/// The value a state stands for: `x / 2^46`, in (0, 1) for a non-zero state.
#[inline]
pub fn to_unit(x: u64) -> f64 {
    x as f64 * INV_TWO_POW_46
}

/// NPB's `randlc`: advances `x` once (`x = a * x mod 2^46`) and returns the
/// new value scaled to (0, 1).
#[inline]
pub fn randlc(x: &mut u64, a: u64) -> f64 {
    *x = mul_mod(*x, a);
    to_unit(*x)
}

/// NPB's `vranlc`: fills `out` with the next `out.len()` values of the
/// sequence (each one advance of `x`), leaving `x` at the last state used.
pub fn vranlc(x: &mut u64, a: u64, out: &mut [f64]) {
    let mut state = *x;
    for value in out.iter_mut() {
        state = mul_mod(state, a);
        *value = to_unit(state);
    }
    *x = state;
}

/// `a^m mod 2^46` by binary powering.
pub fn pow_mod(a: u64, m: u64) -> u64 {
    let mut result = 1u64;
    let mut base = a & MASK;
    let mut exp = m;
    while exp > 0 {
        if exp & 1 == 1 {
            result = mul_mod(result, base);
        }
        base = mul_mod(base, base);
        exp >>= 1;
    }
    result
}

/// The state `m` steps after `x`: `a^m * x mod 2^46`.
pub fn jump(x: u64, a: u64, m: u64) -> u64 {
    mul_mod(x, pow_mod(a, m))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// NPB's own double-precision `randlc` (Bailey's 23-bit splitting), used
    /// only as an independent check of the integer arithmetic above.
    fn randlc_split(x: &mut f64, a: f64) -> f64 {
        let r23 = 0.5f64.powi(23);
        let r46 = r23 * r23;
        let t23 = 2f64.powi(23);
        let t46 = t23 * t23;
        let a1 = (r23 * a).trunc();
        let a2 = a - t23 * a1;
        let x1 = (r23 * *x).trunc();
        let x2 = *x - t23 * x1;
        let t1 = a1 * x2 + a2 * x1;
        let t2 = (r23 * t1).trunc();
        let z = t1 - t23 * t2;
        let t3 = t23 * z + a2 * x2;
        let t4 = (r46 * t3).trunc();
        *x = t3 - t46 * t4;
        r46 * *x
    }

    #[test]
    fn first_outputs_from_the_mg_seed() {
        // Computed independently with arbitrary-precision integers:
        // x_k = 314159265 * (5^13)^k mod 2^46.
        let expected: [u64; 5] = [
            55_909_509_111_989,
            61_155_031_930_969,
            45_573_031_421_645,
            55_279_057_169_489,
            1_250_169_187_877,
        ];
        let mut x = SEED_MG;
        for want in expected {
            let value = randlc(&mut x, MULTIPLIER);
            assert_eq!(x, want);
            assert_eq!(value, want as f64 / 2f64.powi(46));
        }
        assert!((to_unit(expected[0]) - 0.794_521_911_188_738_3).abs() < 1e-16);
    }

    #[test]
    fn matches_npb_double_precision_splitting() {
        let mut xi = SEED_MG;
        let mut xf = SEED_MG as f64;
        for _ in 0..10_000 {
            let vi = randlc(&mut xi, MULTIPLIER);
            let vf = randlc_split(&mut xf, MULTIPLIER as f64);
            assert_eq!(vi, vf);
            assert_eq!(xi as f64, xf);
        }
    }

    #[test]
    fn jump_ahead_equals_stepping() {
        for m in [0u64, 1, 2, 3, 63, 64, 100, 1000, 4097] {
            let mut x = SEED_MG;
            for _ in 0..m {
                randlc(&mut x, MULTIPLIER);
            }
            assert_eq!(jump(SEED_MG, MULTIPLIER, m), x, "m = {m}");
        }
        // Known far values, computed independently.
        assert_eq!(pow_mod(MULTIPLIER, 100), 23_315_553_419_825);
        assert_eq!(jump(SEED_MG, MULTIPLIER, 100), 54_040_635_609_297);
        assert_eq!(jump(SEED_MG, MULTIPLIER, 1_000_000), 50_447_193_586_593);
    }

    #[test]
    fn vranlc_equals_repeated_randlc() {
        let mut xa = SEED_EP;
        let mut xb = SEED_EP;
        let mut out = [0.0; 130];
        vranlc(&mut xa, MULTIPLIER, &mut out);
        for value in out {
            assert_eq!(value, randlc(&mut xb, MULTIPLIER));
        }
        assert_eq!(xa, xb);
    }
}
