//! What the sizes still to measure will cost at least, on this machine:
//! the estimate that decides when a point must end to leave the sizes
//! after it their least work, and which sizes are left out.
//!
//! The estimate starts from the last point's wall time per operation.
//! A bandwidth-bound size (from [`BANDWIDTH_BOUND_BYTES`]) is scaled by
//! the bytes; below it the last time is latency, and each byte beyond it
//! costs the sweep's *rate*: one block of a size near a mebibyte,
//! measured after the warm-up ([`measure_rate`]), with a margin for a
//! busy machine. Without that block the rate is a fixed 1
//! Gbit/s ([`LEAST_RATE_NS_PER_BYTE`]), slower than any local transport.
//!
//! Why the block: the fixed rate made the largest sizes of a default
//! sweep look like seconds each (8 MiB at 8 ns a byte is 67 ms an
//! operation, eight blocks of it), more than the whole budget, so every
//! size below 64 KiB ended at its least six trials to leave them that
//! time, whatever its interval. On the idle 2-vCPU VM, 317 of the 2,633
//! points of the default `wulf run` ended so and most were marked noisy
//! (issue 44); tcp's 80 small sizes took 0.42 s of its 2.55 s, and a
//! 64 KiB point 38 ms alone.

use std::time::Instant;

use anyhow::Result;

use super::link_fit::LEAST_BLOCKS;
use crate::measure::policy::{BlockRunner, PointOutcome, PointPlan};

/// From this size up a point's time per operation is taken as bandwidth
/// (scaled by the bytes to estimate a larger one).
pub(super) const BANDWIDTH_BOUND_BYTES: u64 = 64 << 10;

/// What a byte beyond a latency-bound size is assumed to cost when the
/// sweep's rate was not measured, ns: 1 Gbit/s, slower than any local
/// transport's copy.
pub(super) const LEAST_RATE_NS_PER_BYTE: f64 = 8.0;

/// What a block costs beyond its operations, ns (two control messages,
/// 0.05-0.2 ms on a loaded 2-vCPU VM), when nothing was measured yet.
pub(super) const BLOCK_OVERHEAD_NS: f64 = 100_000.0;

/// Operations in the block that measures the sweep's rate: a few, so a
/// single slow one (a page's first touch) does not set it alone.
const RATE_OPS: u64 = 3;

/// How many times the rate block's time per byte a larger size is costed
/// at. The block's time is partly latency, so its rate is already low
/// (tcp on the idle VM: 0.92 ns a byte a round trip at 64 KiB, 0.39 at
/// 6 MiB), but on a busy machine the largest sizes, past the caches,
/// cost more a byte than it (0.84 at 64 KiB, 2.3-4.7 from 1 MiB at load
/// 8); an estimate that is low ends in sizes left out at the deadline.
const RATE_MARGIN: f64 = 1.5;

/// What the last point cost, for estimating the next one's least work.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct LastCost {
    /// Its size.
    pub(super) bytes: u64,
    /// Its wall time per operation, ns (blocks' control messages included).
    pub(super) op_wall_ns: f64,
    /// What each byte beyond a latency-bound size costs an operation, ns.
    pub(super) ns_per_byte: f64,
}

impl LastCost {
    /// The cost of a point measured as `o`, with the sweep's rate
    /// `ns_per_byte` (see [`measure_rate`]).
    pub(super) fn of(bytes: u64, o: &PointOutcome, ns_per_byte: f64) -> LastCost {
        let ops = (o.trials_ns.len() as u64 * o.repeats + o.warmup_trials).max(1);
        LastCost {
            bytes,
            op_wall_ns: o.wall_ns as f64 / ops as f64,
            ns_per_byte,
        }
    }

    /// The least wall time a point of `bytes` planned as `plan` takes, ns:
    /// [`LEAST_BLOCKS`] blocks, each of one operation or the trial target,
    /// whichever is longer. From a size of [`BANDWIDTH_BOUND_BYTES`] or
    /// more the time per operation is scaled by the bytes (never down);
    /// below it the last size's time is latency, and each further byte is
    /// costed at the sweep's rate (scaling 16 us at 1 B by the bytes made
    /// 64 KiB cost 1 s per operation, and left every size but the first
    /// out of a 0.3 s sweep). An estimate that is low is caught by the
    /// deadline between trials, and the next size's rests on it.
    pub(super) fn least_ns(&self, bytes: u64, plan: &PointPlan) -> f64 {
        self.least_ns_at(bytes, plan.trial_target_ns)
    }

    /// [`LastCost::least_ns`] with blocks of at least `trial_target_ns`.
    pub(super) fn least_ns_at(&self, bytes: u64, trial_target_ns: u64) -> f64 {
        let scale = (bytes as f64 / self.bytes.max(1) as f64).max(1.0);
        let scaled = self.op_wall_ns * scale;
        let op_ns = if self.bytes >= BANDWIDTH_BOUND_BYTES {
            scaled
        } else {
            let more = bytes.saturating_sub(self.bytes) as f64 * self.ns_per_byte;
            scaled.min(self.op_wall_ns + more)
        };
        let block_ns = op_ns.max(trial_target_ns as f64) + BLOCK_OVERHEAD_NS;
        op_ns + BLOCK_OVERHEAD_NS + (LEAST_BLOCKS - 1) as f64 * block_ns
    }
}

/// The size the sweep's rate is measured at: large enough that latency is
/// a small part of an operation (25 us of tcp's 500 us round trip on the
/// idle VM), past the first levels of cache, and one operation of it
/// short enough to spend (3 ms over tcp, 35 ms over `pvm(daemon)`).
const RATE_BYTES: u64 = 1 << 20;

/// The sweep's rate for [`LastCost`], ns a byte an operation: one block of
/// [`RATE_OPS`] operations of the bandwidth-bound size in `sizes` closest
/// to [`RATE_BYTES`], its timed part per operation and byte times
/// [`RATE_MARGIN`]. The fixed [`LEAST_RATE_NS_PER_BYTE`] when no size is
/// bandwidth-bound, the first size already is (the points scale their own
/// time), or `deadline` has passed. Never less than the fixed rate's
/// hundredth (0.08 ns a byte, 100 Gbit/s): a block too short to time says
/// nothing of a rate; never more than the fixed rate: a slower transport
/// is costed as before.
pub(super) fn measure_rate(
    sizes: &[u64],
    runner: &mut dyn BlockRunner,
    deadline: Instant,
) -> Result<f64> {
    let bandwidth_bound = sizes.iter().filter(|&&b| b >= BANDWIDTH_BOUND_BYTES);
    let Some(&bytes) = bandwidth_bound.min_by_key(|&&b| b.abs_diff(RATE_BYTES)) else {
        return Ok(LEAST_RATE_NS_PER_BYTE);
    };
    let first_bound = sizes.first().is_some_and(|&b| b >= BANDWIDTH_BOUND_BYTES);
    if first_bound || Instant::now() >= deadline {
        return Ok(LEAST_RATE_NS_PER_BYTE);
    }
    let b = runner.run(bytes, RATE_OPS)?;
    let ns_per_byte = b.timed_ns as f64 / (RATE_OPS * bytes) as f64 * RATE_MARGIN;
    // Never above the fixed rate: one block a neighbour preempted would
    // otherwise leave out sizes the fixed rate kept (measured at 64 KiB,
    // a preempted block at load 8 left shm 94-97 of 124 sizes out,
    // against 36-74 with the fixed rate).
    Ok(ns_per_byte.clamp(LEAST_RATE_NS_PER_BYTE / 100.0, LEAST_RATE_NS_PER_BYTE))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::policy::BlockTiming;

    /// A runner whose every operation takes `op_ns`.
    struct Fixed {
        op_ns: u64,
        ran: Vec<(u64, u64)>,
    }

    impl BlockRunner for Fixed {
        fn run(&mut self, bytes: u64, repeats: u64) -> Result<BlockTiming> {
            self.ran.push((bytes, repeats));
            let timed_ns = self.op_ns * repeats;
            Ok(BlockTiming {
                op_ns: self.op_ns as f64,
                timed_ns,
                wall_ns: timed_ns + 100_000,
                ..BlockTiming::default()
            })
        }
    }

    #[test]
    fn the_rate_is_one_block_of_the_bandwidth_bound_size_nearest_a_mebibyte() {
        let far = Instant::now() + std::time::Duration::from_secs(60);
        // 1 MiB in 1,048,576 ns an operation: 1 ns a byte, times the margin.
        let mut r = Fixed {
            op_ns: 1 << 20,
            ran: Vec::new(),
        };
        let sizes = [1, 1024, 65_536, (1 << 20) - 3, 1 << 20, 8 << 20];
        let rate = measure_rate(&sizes, &mut r, far).unwrap();
        assert_eq!(r.ran, vec![(1 << 20, RATE_OPS)]);
        assert!((rate - RATE_MARGIN).abs() < 1e-9, "{rate}");
        // Below a mebibyte, the largest bandwidth-bound size.
        r.ran.clear();
        measure_rate(&[1, 65_536, 98_304], &mut r, far).unwrap();
        assert_eq!(r.ran, vec![(98_304, RATE_OPS)]);
        r.op_ns = 98_304;
        let rate = measure_rate(&[1, 65_536, 98_304], &mut r, far).unwrap();
        assert!((rate - RATE_MARGIN).abs() < 1e-9, "{rate}");
        // No bandwidth-bound size, or the first one is: the fixed rate,
        // and nothing run.
        r = Fixed {
            op_ns: 1,
            ran: Vec::new(),
        };
        assert_eq!(
            measure_rate(&[1, 1024], &mut r, far).unwrap(),
            LEAST_RATE_NS_PER_BYTE
        );
        assert_eq!(
            measure_rate(&[1 << 20], &mut r, far).unwrap(),
            LEAST_RATE_NS_PER_BYTE
        );
        // Past the deadline: nothing run either.
        let past = Instant::now();
        assert_eq!(
            measure_rate(&[1, 1 << 20], &mut r, past).unwrap(),
            LEAST_RATE_NS_PER_BYTE
        );
        assert!(r.ran.is_empty());
        // A block too quick to time: the floor.
        let floor = measure_rate(&[1, 1 << 20], &mut r, far).unwrap();
        assert_eq!(floor, LEAST_RATE_NS_PER_BYTE / 100.0);
        // A block slower than the fixed rate (a preempted one): the fixed
        // rate.
        r.op_ns = 100 << 20;
        let slow = measure_rate(&[1, 1 << 20], &mut r, far).unwrap();
        assert_eq!(slow, LEAST_RATE_NS_PER_BYTE);
    }

    /// The small sizes' estimate of a large one follows the rate: at the
    /// fixed 8 ns a byte, 8 MiB after 1 B costs 8 blocks of 67 ms; at a
    /// measured 0.25 ns a byte, 2 ms each.
    #[test]
    fn a_large_size_after_a_small_one_is_costed_at_the_rate() {
        let cost = |ns_per_byte| LastCost {
            bytes: 1,
            op_wall_ns: 20_000.0,
            ns_per_byte,
        };
        let eight_mib = 8u64 << 20;
        let fixed = cost(LEAST_RATE_NS_PER_BYTE).least_ns_at(eight_mib, 50_000);
        let measured = cost(0.25).least_ns_at(eight_mib, 50_000);
        let per_block = |ns: f64| ns / LEAST_BLOCKS as f64;
        assert!((per_block(fixed) - 67.2e6).abs() < 1e6, "{fixed}");
        assert!((per_block(measured) - 2.22e6).abs() < 0.1e6, "{measured}");
        // A bandwidth-bound last size scales its own time, whatever the rate.
        let big = LastCost {
            bytes: 1 << 20,
            op_wall_ns: 1e6,
            ns_per_byte: 1e9,
        };
        assert!((big.least_ns_at(2 << 20, 0) - LEAST_BLOCKS as f64 * 2.1e6).abs() < 1.0);
    }
}
