//! The cost of reading the clock.
//!
//! `Instant::now()` is clock_gettime(CLOCK_MONOTONIC) through the vDSO,
//! about 20-30 ns on a KVM guest. A timed block reads the clock twice and
//! the interval contains the cost of one read, so the engine subtracts one
//! measured read from every block. Per-message samples (`--tails`) cannot
//! subtract it reliably (its jitter is of the same order), so they report
//! it beside the percentiles instead.

use std::time::Instant;

/// Median cost of one `Instant::now()` in ns, from back-to-back reads.
pub fn clock_read_cost_ns() -> f64 {
    const SAMPLES: usize = 2001;
    let mut deltas = [0u64; SAMPLES];
    for d in deltas.iter_mut() {
        let a = Instant::now();
        let b = Instant::now();
        *d = b.duration_since(a).as_nanos() as u64;
    }
    deltas.sort_unstable();
    deltas[SAMPLES / 2] as f64
}

#[cfg(test)]
mod tests {
    #[test]
    fn clock_cost_is_plausible() {
        let c = super::clock_read_cost_ns();
        // Any clock slower than 100 us per read would make timing useless.
        assert!((0.0..100_000.0).contains(&c), "{c}");
    }
}
