//! How many round trips a size's `--tails` pass times, and what the result
//! says when a busy machine left too few for its percentiles.
//!
//! The pass aims at [`TIME_PER_SIZE_NS`] of round trips and at least
//! [`FULL_SAMPLES`], enough for a p99.9 that is not simply the maximum.
//! It once planned its count from the size's median alone and ran it
//! whole: on a loaded machine the median round trip was 30 us but one in a
//! hundred took 3 ms, so the 3,000 planned took a second per size, and
//! `--tails` made a one-second sweep of 81 sizes last 74 to 99 s. Now the
//! pass runs in chunks of [`CHUNK`] and stops at its time ([`enough`]):
//! full tails where round trips are as fast as the median says, and never
//! more than [`MAX_TIME_PER_SIZE_NS`] a size (but at least
//! [`MIN_SAMPLES`]) where they are not. The sample count is in the
//! result, and a warning names the sizes whose p99.9 rests on fewer than
//! [`FULL_SAMPLES`].

use crate::result::{Point, Tails};

/// Largest size that gets a tail-latency pass.
pub const MAX_BYTES: u64 = 64 << 10;
/// Wall time aimed at for each size's tail pass, ns.
const TIME_PER_SIZE_NS: f64 = 100e6;
/// Wall time a size's tail pass may plan at most, ns.
const MAX_TIME_PER_SIZE_NS: f64 = 1e9;
/// Round trips for a p99.9 beyond the maximum (and the planned least
/// while time allows).
pub const FULL_SAMPLES: u64 = 1_000;
/// Round trips a pass takes whatever the time: a p50 and a max.
const MIN_SAMPLES: u64 = 30;
/// Most round trips per pass (the samples are kept in memory).
const MAX_SAMPLES: u64 = 100_000;

/// Round trips per block of a tail pass: the pass can stop between two,
/// and a block's few control messages are small beside 250 round trips.
pub const CHUNK: u64 = 250;

/// Whether a pass that has timed `samples` round trips in `elapsed_ns`
/// has enough: its aimed time with full tails, or its cap with a few.
pub fn enough(samples: u64, elapsed_ns: f64) -> bool {
    (elapsed_ns >= TIME_PER_SIZE_NS && samples >= FULL_SAMPLES)
        || (elapsed_ns >= MAX_TIME_PER_SIZE_NS && samples >= MIN_SAMPLES)
}

/// Most round trips to time for one size whose one-way median is
/// `median_one_way_ns` (the pass may stop sooner: [`enough`]).
pub fn round_trips(median_one_way_ns: f64) -> u64 {
    let rt_ns = (2.0 * median_one_way_ns).max(1.0);
    let aimed = ((TIME_PER_SIZE_NS / rt_ns) as u64).clamp(FULL_SAMPLES, MAX_SAMPLES);
    let cap = ((MAX_TIME_PER_SIZE_NS / rt_ns) as u64).max(MIN_SAMPLES);
    aimed.min(cap)
}

/// Longest round trip a tail histogram holds apart, ns (one hour); a
/// longer one is counted at this value.
const HISTOGRAM_MAX_NS: u64 = 3_600_000_000_000;

/// The percentiles of round-trip `samples_ns`, halved to one-way times;
/// `timer_cost_ns` is the clock read each sample includes.
pub fn summarise(samples_ns: &[u64], timer_cost_ns: f64) -> Tails {
    // Bounded explicitly: `Histogram::new` starts with a highest value of
    // 2 and `saturating_record` clamps instead of growing, which once made
    // every percentile 1 ns.
    let mut h = hdrhistogram::Histogram::<u64>::new_with_bounds(1, HISTOGRAM_MAX_NS, 3)
        .expect("1 ns .. 1 h at 3 significant digits is valid");
    for &s in samples_ns {
        h.saturating_record(s.max(1));
    }
    let half = |q: f64| h.value_at_quantile(q) as f64 / 2.0;
    Tails {
        samples: samples_ns.len() as u64,
        p50_ns: half(0.5),
        p99_ns: half(0.99),
        p999_ns: half(0.999),
        max_ns: h.max() as f64 / 2.0,
        timer_cost_ns,
    }
}

/// A warning naming the sizes whose tails rest on fewer than
/// [`FULL_SAMPLES`] round trips; `None` when every pass had enough.
pub fn short_tails_warning(points: &[Point]) -> Option<String> {
    let short: Vec<(u64, u64)> = points
        .iter()
        .filter_map(|p| Some((p.bytes, p.tails.as_ref()?.samples)))
        .filter(|(_, n)| *n < FULL_SAMPLES)
        .collect();
    let (first, fewest) = (
        short.first()?.0,
        short.iter().map(|s| s.1).min().unwrap_or(0),
    );
    Some(format!(
        "tails: {} size(s) from {} on got fewer than {FULL_SAMPLES} round trips (as few as \
         {fewest}: round trips were slow and each size's pass is capped at 1 s), so their p99.9 \
         is about their maximum; a quieter machine gives full tails",
        short.len(),
        crate::units::format_bytes(first),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_grow_with_the_samples_and_are_halved() {
        // 990 round trips of 20 us and 10 of 2 ms: p50 10 us one-way,
        // p99.9 and max 1 ms; never a saturated constant.
        let mut rt: Vec<u64> = vec![20_000; 990];
        rt.extend([2_000_000; 10]);
        let t = summarise(&rt, 20.0);
        assert_eq!(t.samples, 1_000);
        assert!((t.p50_ns - 10_000.0).abs() < 20.0, "{t:?}");
        assert!((t.max_ns - 1_000_000.0).abs() < 1_000.0, "{t:?}");
        assert!(t.p999_ns > 50.0 * t.p50_ns, "{t:?}");
    }

    #[test]
    fn a_pass_stops_at_its_time_with_full_tails_or_at_its_cap_with_a_few() {
        assert!(!enough(999, 2e8), "full tails need 1,000");
        assert!(enough(1_000, 1e8));
        assert!(!enough(5_000, 5e7), "the aimed time is not over");
        assert!(enough(30, 1e9), "the cap, with a p50 and a max");
        assert!(!enough(29, 5e9), "never fewer than 30");
    }

    #[test]
    fn the_pass_aims_at_its_time_and_never_plans_more_than_the_cap() {
        // 20 us round trips: 100 ms is 5,000 of them.
        assert_eq!(round_trips(10_000.0), 5_000);
        // 1 ms round trips: the floor of 1,000 (1 s) still fits the cap.
        assert_eq!(round_trips(500_000.0), 1_000);
        // 19 ms round trips (a machine at load 60): 52, not 1,000 (19 s).
        assert_eq!(round_trips(9_500_000.0), 52);
        // Pathologically slow: still a few.
        assert_eq!(round_trips(1e9), MIN_SAMPLES);
        // Fast: the ceiling.
        assert_eq!(round_trips(100.0), MAX_SAMPLES);
    }
}
