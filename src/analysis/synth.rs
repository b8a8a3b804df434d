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

impl Curve {
    /// A curve with no points yet.
    pub fn empty() -> Curve {
        Curve {
            bytes: Vec::new(),
            median_ns: Vec::new(),
            ci_low_ns: Vec::new(),
            ci_high_ns: Vec::new(),
        }
    }

    /// Add the point of size `bytes` summarising `samples`.
    pub fn push(&mut self, bytes: u64, samples: &[f64]) {
        let s = Summary::of(samples).expect("trials > 0");
        self.bytes.push(bytes);
        self.median_ns.push(s.median);
        self.ci_low_ns.push(s.ci_low);
        self.ci_high_ns.push(s.ci_high);
    }

    /// The analysis of this curve with no hints.
    pub fn analyse(&self) -> super::Analysis {
        super::analyse_curve(
            &self.bytes,
            &self.median_ns,
            &self.ci_low_ns,
            &self.ci_high_ns,
            &super::CauseHints::default(),
        )
    }
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
    let mut c = Curve::empty();
    for &b in sizes {
        let t = law(b);
        let samples: Vec<f64> = (0..trials)
            .map(|_| t * (1.0 + noise_rel * rng.symmetric()))
            .collect();
        c.push(b, &samples);
    }
    c
}

/// Hockney time in ns: alpha_ns + bytes * 8 / beta (bits per second).
pub fn hockney(alpha_ns: f64, beta_bits_per_s: f64) -> impl Fn(u64) -> f64 {
    move |b| alpha_ns + b as f64 * 8e9 / beta_bits_per_s
}

/// Noise as real runs on a small shared machine show it: each trial off by
/// a factor uniform in [1 - trial_rel, 1 + trial_rel], a share of trials
/// slowed further (preempted blocks), and a share of whole points slowed
/// together (a burst of other work during that point's trials, which the
/// point's own interval cannot see).
#[derive(Debug, Clone, Copy)]
pub struct Noise {
    /// Half-width of each trial's uniform relative noise.
    pub trial_rel: f64,
    /// Trials per point.
    pub trials: usize,
    /// Probability that a trial is slowed by up to `outlier_max` more.
    pub outlier_prob: f64,
    /// Largest extra slowdown of such a trial.
    pub outlier_max: f64,
    /// Probability that a whole point is slowed together.
    pub shift_prob: f64,
    /// Largest slowdown of such a point (at least a tenth of it).
    pub shift_max: f64,
}

impl Noise {
    /// The noise of loopback sweeps on the 2-vCPU machine the tests were
    /// written on (tcp and unix fixtures: median CV of the trials 5-7%,
    /// median interval width 4-5%, about 25 trials a point, a few points
    /// per sweep far off their neighbours and not so on the next run).
    pub fn this_machine() -> Noise {
        Noise {
            trial_rel: 0.08,
            trials: 25,
            outlier_prob: 0.05,
            outlier_max: 0.5,
            shift_prob: 0.06,
            shift_max: 0.6,
        }
    }
}

/// Measure `law(bytes)` at each of `sizes` under `noise`: (size, median,
/// interval) of each point.
pub fn measure_with(sizes: &[u64], law: impl Fn(u64) -> f64, noise: Noise, seed: u64) -> Curve {
    let mut rng = Rng::new(seed);
    let mut uniform = move || (rng.symmetric() + 1.0) / 2.0;
    let mut c = Curve::empty();
    for &b in sizes {
        let shift = if uniform() < noise.shift_prob {
            1.0 + noise.shift_max * (0.1 + 0.9 * uniform())
        } else {
            1.0
        };
        let t = law(b) * shift;
        let samples: Vec<f64> = (0..noise.trials)
            .map(|_| {
                let extra = if uniform() < noise.outlier_prob {
                    1.0 + noise.outlier_max * uniform()
                } else {
                    1.0
                };
                t * extra * (1.0 + noise.trial_rel * (2.0 * uniform() - 1.0))
            })
            .collect();
        c.push(b, &samples);
    }
    c
}
