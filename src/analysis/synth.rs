//! Synthetic curves for the analysis tests: NetPIPE's size schedule, a time
//! law per size, and trials with bounded multiplicative noise summarised by
//! the same statistics a real run uses.

use crate::stats::Summary;

/// NetPIPE's default sizes up to `max_bytes`: 1, 2, 3, 4, 6, 8, 12, ...
/// (powers of two and 3 * 2^(k-1)), and from 16 bytes on each base size
/// minus and plus 3 bytes as well.
pub fn netpipe_sizes(max_bytes: u64) -> Vec<u64> {
    let mut out = vec![1, 2, 3];
    let mut p = 4u64;
    while p <= max_bytes {
        for base in [p, p + p / 2] {
            if base < 16 {
                out.push(base);
            } else {
                out.extend([base - 3, base, base + 3]);
            }
        }
        p *= 2;
    }
    out.retain(|&b| b <= max_bytes);
    out
}

/// A curve as `analyse_curve` takes it.
pub struct Curve {
    pub bytes: Vec<u64>,
    pub median_ns: Vec<f64>,
    pub ci_low_ns: Vec<f64>,
    pub ci_high_ns: Vec<f64>,
}

/// xorshift64*: a small deterministic generator, so tests never flake.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.max(1))
    }

    /// Uniform in [-1, 1].
    pub fn symmetric(&mut self) -> f64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        let x = self.0.wrapping_mul(0x2545_f491_4f6c_dd1d);
        (x >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
    }
}

/// Measure `law(bytes)` (ns) at every size with `trials` trials, each off
/// by a factor uniform in [1 - noise_rel, 1 + noise_rel].
pub fn measure(
    sizes: &[u64],
    law: impl Fn(u64) -> f64,
    noise_rel: f64,
    trials: usize,
    seed: u64,
) -> Curve {
    let mut rng = Rng::new(seed);
    let mut c = Curve {
        bytes: Vec::new(),
        median_ns: Vec::new(),
        ci_low_ns: Vec::new(),
        ci_high_ns: Vec::new(),
    };
    for &b in sizes {
        let t = law(b);
        let samples: Vec<f64> = (0..trials)
            .map(|_| t * (1.0 + noise_rel * rng.symmetric()))
            .collect();
        let s = Summary::of(&samples).expect("trials > 0");
        c.bytes.push(b);
        c.median_ns.push(s.median);
        c.ci_low_ns.push(s.ci_low);
        c.ci_high_ns.push(s.ci_high);
    }
    c
}

/// Hockney time in ns: alpha_ns + bytes * 8 / beta (bits per second).
pub fn hockney(alpha_ns: f64, beta_bits_per_s: f64) -> impl Fn(u64) -> f64 {
    move |b| alpha_ns + b as f64 * 8e9 / beta_bits_per_s
}
