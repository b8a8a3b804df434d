//! A sweep's point built from the measuring policy's outcome: the
//! figures of its headline trials (the clean ones, see
//! [`crate::measure::policy`]), throughput and CPU costs (beside the engine, so
//! that engine.rs stays under 600 lines).

use crate::measure::policy::PointOutcome;
use crate::result::{CpuCost, Mode, Point};
use crate::stats::Summary;

/// Build a result point from the policy's outcome.
pub fn make_point(bytes: u64, mode: Mode, o: &PointOutcome) -> Point {
    // The headline: the clean trials (or every one, see the policy).
    let headline = o.headline_ns();
    let s = Summary::of(&headline).expect("a point has at least one trial");
    let ops = headline.len() as u64 * o.repeats;
    // Payload crossing the channel and messages per operation.
    let (bytes_per_op, msgs_per_op) = match mode {
        Mode::Pingpong | Mode::Bidir => (2 * bytes, 2),
        Mode::Stream => (bytes, 1),
    };
    let cost = |(user, sys): (u64, u64)| CpuCost {
        user_ns: user,
        sys_ns: sys,
        ns_per_byte: (user + sys) as f64 / (ops * bytes_per_op) as f64,
        ns_per_message: (user + sys) as f64 / (ops * msgs_per_op) as f64,
    };
    Point {
        bytes,
        trials_ns: o.trials_ns.clone(),
        repeats: o.repeats,
        trials: o.trials_ns.len() as u64,
        warmup_trials: o.warmup_trials,
        min_ns: s.min,
        median_ns: s.median,
        mean_ns: s.mean,
        stddev_ns: s.stddev,
        p90_ns: s.p90,
        p99_ns: s.p99,
        ci_low_ns: s.ci_low,
        ci_high_ns: s.ci_high,
        bits_per_s: mode.bytes_per_op(bytes) as f64 * 8.0 / (s.median * 1e-9),
        noisy: o.noisy,
        cut: false,
        cpu_client: cost(o.client_cpu_ns),
        cpu_server: cost(o.server_cpu_ns),
        tails: None,
        limits: None,
        cpu_whole: None,
        clean_share: o.clean_share(),
        disturbed_trials: (0..o.disturbed.len() as u32)
            .filter(|&i| o.disturbed[i as usize])
            .collect(),
    }
}

/// A point with `bytes` and a constant trial time, for tests elsewhere.
#[cfg(test)]
pub fn test_point(bytes: u64, median_ns: f64) -> Point {
    let o = crate::measure::policy::PointOutcome {
        trials_ns: vec![median_ns; 10],
        repeats: 1,
        warmup_trials: 2,
        noisy: false,
        interrupted: false,
        client_cpu_ns: (0, 0),
        server_cpu_ns: (0, 0),
        wall_ns: 0,
        disturbed: vec![false; 10],
        delay_known: true,
        headline_clean: true,
    };
    make_point(bytes, Mode::Pingpong, &o)
}
