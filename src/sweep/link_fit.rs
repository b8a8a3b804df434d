//! A sweep over a slow link keeps its `--budget`: each point's share is
//! planned from what the sizes still to come will cost at least, at the
//! rate the link showed, and the largest sizes that cannot have their
//! least work in what is left are left out, with a warning and a record
//! in the result ([`SizesLeftOut`]).
//!
//! Why: a point takes at least [`LEAST_BLOCKS`] blocks (two calibration
//! blocks, then the trials the policy keeps when its budget runs out), a
//! block at least one operation. Over the 100 Mbit/s link of `--lab fe`
//! an 8 MiB round trip takes 1.4 s, so the top sizes of the default
//! schedule alone took ~230 s: `wulf sweep tcp --lab fe` ran 238 s
//! whatever its budget. Taking fewer trials of those sizes would keep the
//! budget too, but a point of one to five trials has no 95% interval of
//! its median and the curve analysis could not tell its drop-outs from
//! noise; a size not measured, named and explained, misleads nobody. So
//! sizes are left out, never measured short.
//!
//! The estimate of a size's one-way (per leg) time is a latency plus its
//! bytes at a rate ([`RateModel`]): the latency is the smallest median
//! measured, the rate the fastest of the last three sizes whose transfer
//! took at least as long as the latency (below that the rate is mostly
//! noise; interference only slows a size down, so the fastest is the least
//! disturbed), never above the goodput limit of the link the data crossed
//! when one is known (a shaper's free burst makes sizes within it faster
//! than the link).
//!
//! Only sweeps whose data crosses a link plan so
//! ([`super::budget::SweepClock::across_link`]). On this machine the
//! points share the budget evenly as before: at load 12 on a 2-vCPU VM a
//! shm point's median was once 200x its latency, the rate taken from it
//! left 122 of 124 sizes out, and no loopback size takes seconds a round
//! trip anyway.

use crate::measure::policy::MIN_TRIALS_ON_BUDGET;
use crate::result::{Mode, Point, SizesLeftOut};
use crate::units::{format_bits_per_s, format_bytes};

/// Blocks a point takes at least: two calibration blocks and the trials
/// kept when its budget runs out.
pub const LEAST_BLOCKS: u64 = 2 + MIN_TRIALS_ON_BUDGET as u64;

/// What a block costs beyond its operations and a control round trip, ns
/// (as the confirmation pass counts it: two control messages, 0.05-0.2 ms
/// on a loaded 2-vCPU VM).
const BLOCK_OVERHEAD_NS: f64 = 100_000.0;

/// Sizes the rate is taken from: the last three measured (a base size and
/// its +-3 B neighbours in the default schedule).
const RATE_POINTS: usize = 3;

/// Bytes per operation below which a size's time is taken as latency
/// only, never as a rate: its excess over the lowest median is noise, not
/// bytes (a 1 B bidir point cut at 126 us beside 1483 B at 50 us on a
/// loaded machine read as 212 kbit/s across a 1 Gbit/s link, and every
/// size after them was left out as needing 163 s).
const MIN_RATE_BYTES: u64 = 1024;

/// Where the rate of a [`RateModel`] came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RateFrom {
    /// The fastest of the last sizes measured, its latency taken off.
    Measured,
    /// The goodput limit of the link the data crossed.
    Link,
}

impl RateFrom {
    /// The name the result records (`sizes_left_out.rate_from`).
    pub fn name(self) -> &'static str {
        match self {
            RateFrom::Measured => "measured",
            RateFrom::Link => "link",
        }
    }
}

/// One size's time estimated from the sizes measured so far.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RateModel {
    /// The pattern (a ping-pong operation is two legs).
    pub mode: Mode,
    /// Per-leg latency, ns: the smallest median measured (0 before any).
    pub latency_ns: f64,
    /// The rate in the unit of `points[].bits_per_s`, and its source;
    /// None while unknown (a size then costs its latency).
    pub rate: Option<(f64, RateFrom)>,
}

impl RateModel {
    /// The model of a sweep in `mode` that measured `points` (ascending)
    /// over a link whose goodput limit is `link_bits_per_s` (None:
    /// unknown, loopback).
    pub fn from_points(points: &[Point], mode: Mode, link_bits_per_s: Option<f64>) -> RateModel {
        let lowest = points.iter().map(|p| p.median_ns).fold(f64::MAX, f64::min);
        let latency_ns = if points.is_empty() { 0.0 } else { lowest };
        // The fastest of the last sizes whose transfer took at least their
        // latency: interference only adds time, so the fastest is the
        // least disturbed (one slowed size must not leave out the rest);
        // the last, since a machine that cannot fill the link shows it at
        // the large sizes (ge at load 12: 1.4-1.7x the link's time).
        let recent = &points[points.len().saturating_sub(RATE_POINTS)..];
        let measured = recent
            .iter()
            .filter(|p| mode.bytes_per_op(p.bytes) >= MIN_RATE_BYTES)
            .filter_map(|p| {
                let transfer_ns = p.median_ns - latency_ns;
                (transfer_ns > 0.0 && transfer_ns >= latency_ns)
                    .then(|| mode.bytes_per_op(p.bytes) as f64 * 8.0 / (transfer_ns * 1e-9))
            })
            .reduce(f64::max);
        let link = link_bits_per_s.filter(|r| r.is_finite() && *r > 0.0);
        let rate = match (measured, link) {
            (Some(m), Some(l)) if l < m => Some((l, RateFrom::Link)),
            (Some(m), _) => Some((m, RateFrom::Measured)),
            (None, Some(l)) => Some((l, RateFrom::Link)),
            (None, None) => None,
        };
        RateModel {
            mode,
            latency_ns,
            rate,
        }
    }

    /// Estimated one-way (per leg) time of `bytes`, ns: what `median_ns`
    /// would be.
    pub fn leg_ns(&self, bytes: u64) -> f64 {
        let transfer_ns = self.rate.map_or(0.0, |(r, _)| {
            self.mode.bytes_per_op(bytes) as f64 * 8.0 / r * 1e9
        });
        self.latency_ns + transfer_ns
    }

    /// The least wall time a point of `bytes` takes, ns: [`LEAST_BLOCKS`]
    /// blocks of one operation, each with its control round trip.
    pub fn least_ns(&self, bytes: u64) -> f64 {
        let legs = if self.mode == Mode::Pingpong {
            2.0
        } else {
            1.0
        };
        let block_ns = legs * self.leg_ns(bytes) + 2.0 * self.latency_ns + BLOCK_OVERHEAD_NS;
        LEAST_BLOCKS as f64 * block_ns
    }
}

/// The plan for the next point.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NextPoint {
    /// How many of the sizes still to measure (from the next on) fit.
    pub keep: usize,
    /// The next point's share, ns: its least work and an even part of
    /// what the kept sizes' least work leaves (0 when none fits).
    pub budget_ns: u64,
    /// The kept sizes' least work, ns.
    pub least_ns: f64,
}

/// Plan the next point of `sizes` (those still to measure, ascending)
/// within `left_ns`: the most sizes, smallest first, whose least work
/// fits, at least one when `keep_one` (a sweep's first size is always
/// measured: a result without points tells nothing).
pub fn next_point(model: &RateModel, sizes: &[u64], left_ns: u64, keep_one: bool) -> NextPoint {
    let mut least_ns = 0.0;
    let mut keep = 0;
    for &b in sizes {
        let l = model.least_ns(b);
        if least_ns + l > left_ns as f64 && !(keep == 0 && keep_one) {
            break;
        }
        least_ns += l;
        keep += 1;
    }
    let budget_ns = match sizes.first() {
        Some(&first) if keep > 0 => {
            let spare_ns = (left_ns as f64 - least_ns).max(0.0);
            (model.least_ns(first) + spare_ns / keep as f64) as u64
        }
        _ => 0,
    };
    NextPoint {
        keep,
        budget_ns,
        least_ns,
    }
}

/// The record of `sizes` left out with `left_ns` of the points' time left
/// in a sweep of `budget_s`, `main_share` of which the points get.
pub fn left_out(
    model: &RateModel,
    sizes: &[u64],
    left_ns: u64,
    budget_s: f64,
    main_share: f64,
) -> SizesLeftOut {
    let least_s = sizes.iter().map(|&b| model.least_ns(b)).sum::<f64>() * 1e-9;
    SizesLeftOut {
        sizes_bytes: sizes.to_vec(),
        rate_bits_per_s: model.rate.map(|r| r.0),
        rate_from: model.rate.map(|r| r.1.name().to_string()),
        latency_ns: model.latency_ns,
        least_s,
        left_s: left_ns as f64 * 1e-9,
        budget_hint_s: round_up_budget(budget_s + least_s / main_share),
        reason: Some(LeftOutReason::Link.name().to_string()),
    }
}

/// Why sizes were left out (`sizes_left_out.reason`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LeftOutReason {
    /// Planned against the link's rate before they were reached.
    Link,
    /// The next size's least work would have ended past the deadline.
    LeastWork,
    /// The deadline passed during the size before them.
    Deadline,
}

impl LeftOutReason {
    /// The name the result records.
    pub fn name(self) -> &'static str {
        match self {
            LeftOutReason::Link => "link",
            LeftOutReason::LeastWork => "least_work",
            LeftOutReason::Deadline => "deadline",
        }
    }
}

/// The record of `sizes` left out on this machine for `reason`, each
/// one's least work estimated by `least_ns` (ns), with `left_ns` to the
/// deadline in a sweep of `budget_s`.
pub fn left_out_here(
    sizes: &[u64],
    least_ns: &dyn Fn(u64) -> f64,
    left_ns: u64,
    budget_s: f64,
    reason: LeftOutReason,
) -> SizesLeftOut {
    let least_s = sizes.iter().map(|&b| least_ns(b)).sum::<f64>() * 1e-9;
    SizesLeftOut {
        sizes_bytes: sizes.to_vec(),
        rate_bits_per_s: None,
        rate_from: None,
        latency_ns: 0.0,
        least_s,
        left_s: left_ns as f64 * 1e-9,
        budget_hint_s: round_up_budget(budget_s + least_s / 0.9),
        reason: Some(reason.name().to_string()),
    }
}

/// A budget a user would type: whole seconds up to a minute, then steps
/// of 10 s up to five minutes, then whole minutes.
fn round_up_budget(s: f64) -> f64 {
    let step = if s <= 60.0 {
        1.0
    } else if s <= 300.0 {
        10.0
    } else {
        60.0
    };
    (s / step).ceil() * step
}

/// The warning a sweep of `budget_s` gives for `l`, after measuring the
/// sizes up to `last_kept` (None: none).
pub fn warning(l: &SizesLeftOut, budget_s: f64, last_kept: Option<u64>) -> String {
    let first = l.sizes_bytes.first().copied().unwrap_or(0);
    let last = l.sizes_bytes.last().copied().unwrap_or(0);
    let which = if first == last {
        format_bytes(first)
    } else {
        format!("{}..{}", format_bytes(first), format_bytes(last))
    };
    let sizes_hint = last_kept.map_or_else(
        || "a smaller --sizes".to_string(),
        |b| format!("--sizes up to {}", format_bytes(b)),
    );
    let rate = match (
        l.reason.as_deref(),
        l.rate_bits_per_s,
        l.rate_from.as_deref(),
    ) {
        (Some("deadline"), _, _) => {
            return format!(
                "{} sizes left out ({which}): the {budget_s} s budget's deadline passed during \
                 the size before them (that size keeps its trials; marked cut when it was \
                 stopped short); pass --budget {:.0}s or {sizes_hint}",
                l.sizes_bytes.len(),
                l.budget_hint_s
            )
        }
        (Some("least_work"), _, _) => "the time per operation of the sizes measured".to_string(),
        (_, Some(r), Some("link")) => format!("the link's limit ~{}", format_bits_per_s(r)),
        (_, Some(r), _) => format!("the link's measured ~{}", format_bits_per_s(r)),
        (_, None, _) => "the latency measured".to_string(),
    };
    format!(
        "{} sizes left out ({which}): {rate} leaves no time for them within the {budget_s} s \
         budget (their least work, {LEAST_BLOCKS} blocks each, takes ~{:.1} s; {:.1} s was left); \
         pass --budget {:.0}s or {sizes_hint}",
        l.sizes_bytes.len(),
        l.least_s,
        l.left_s,
        l.budget_hint_s
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sweep::point::test_point;

    /// A ping-pong curve of `latency_ns` plus `bytes` at `rate` (bit/s).
    fn line(sizes: &[u64], latency_ns: f64, rate: f64) -> Vec<Point> {
        sizes
            .iter()
            .map(|&b| test_point(b, latency_ns + b as f64 * 8.0 / rate * 1e9))
            .collect()
    }

    /// The rate is the fastest size's, its latency taken off (a size slowed
    /// by other work does not lower it); a faster link limit does not
    /// change it, a slower one (a shaper's burst made the sizes beat the
    /// link) replaces it.
    #[test]
    fn the_rate_is_measured_or_the_links() {
        // 2 KiB at 327 Mbit/s: a free burst the later sizes did not get.
        let mut points = line(&[1, 2048, 4096, 65536], 50_000.0, 100e6);
        points[1] = test_point(2048, 100_100.0);
        points.push(test_point(65539, 30e6));
        let m = RateModel::from_points(&points, Mode::Pingpong, None);
        let (rate, from) = m.rate.unwrap();
        assert!((rate / 100e6 - 1.0).abs() < 1e-3, "{rate}");
        assert_eq!(from, RateFrom::Measured);
        // 1 B is 8 bits at 100 Mbit/s: 80 ns past the latency.
        assert!((m.latency_ns - 50_080.0).abs() < 1.0, "{m:?}");
        let faster = RateModel::from_points(&points, Mode::Pingpong, Some(1e9));
        assert_eq!(faster.rate, m.rate);
        let slower = RateModel::from_points(&points, Mode::Pingpong, Some(50e6));
        assert_eq!(slower.rate, Some((50e6, RateFrom::Link)));
        // 8 MiB one way at the model's rate (100 Mbit/s within 0.1%):
        // 0.671 s, plus the latency.
        let leg_s = m.leg_ns(8 << 20) * 1e-9;
        let want_s = m.latency_ns * 1e-9 + 8.0 * 8_388_608.0 / rate;
        assert!((leg_s - want_s).abs() < 1e-6, "{leg_s} against {want_s}");
        assert!((leg_s / 0.671 - 1.0).abs() < 2e-3, "{leg_s}");
    }

    /// While the largest size is mostly latency its rate is noise: none
    /// is taken (the link's when known), and sizes cost their latency.
    #[test]
    fn a_latency_bound_curve_gives_no_rate() {
        let points = line(&[1, 8, 64], 20_000.0, 100e9);
        let m = RateModel::from_points(&points, Mode::Pingpong, None);
        assert_eq!(m.rate, None);
        assert_eq!(m.leg_ns(8 << 20), m.latency_ns);
        let l = RateModel::from_points(&points, Mode::Pingpong, Some(94e6));
        assert_eq!(l.rate, Some((94e6, RateFrom::Link)));
        let none = RateModel::from_points(&[], Mode::Stream, None);
        assert_eq!((none.latency_ns, none.rate), (0.0, None));
        // A small size slowed past twice the latency (a cut 1 B point on
        // a loaded machine) is no rate: 126 us at 1 B beside 50 us at
        // 1483 B once read as 212 kbit/s.
        let mut slow_small = line(&[1, 1483], 50_000.0, 1e9);
        slow_small[0].median_ns = 126_000.0;
        slow_small[1].median_ns = 50_000.0;
        let m = RateModel::from_points(&slow_small, Mode::Bidir, Some(956e6));
        assert_eq!(m.rate, Some((956e6, RateFrom::Link)));
    }

    /// The least work of a point: eight blocks of one operation (two legs
    /// in ping-pong), each with its control round trip and overhead.
    #[test]
    fn least_work_is_eight_blocks_of_one_operation() {
        let m = RateModel {
            mode: Mode::Pingpong,
            latency_ns: 100_000.0,
            rate: Some((94e6, RateFrom::Link)),
        };
        let leg_ns = 100_000.0 + 8.0 * 8_388_608.0 / 94e6 * 1e9;
        let block_ns = 2.0 * leg_ns + 200_000.0 + BLOCK_OVERHEAD_NS;
        assert!((m.least_ns(8 << 20) - 8.0 * block_ns).abs() < 1.0);
        // At the lab's fe goodput an 8 MiB point needs 11.4 s at least.
        assert!((11.0e9..11.8e9).contains(&m.least_ns(8 << 20)));
        let stream = RateModel {
            mode: Mode::Stream,
            ..m
        };
        assert!(stream.least_ns(8 << 20) < 0.55 * m.least_ns(8 << 20));
    }

    /// Every size fits: each gets its least work and an even part of the
    /// rest, and the shares of all sizes add up to what is left; with no
    /// rate (loopback) that is within a percent of an even split.
    #[test]
    fn shares_reserve_the_least_work_of_the_sizes_to_come() {
        let sizes = crate::message::schedule::netpipe(1, 8 << 20, true);
        let slow = RateModel {
            mode: Mode::Pingpong,
            latency_ns: 100_000.0,
            rate: Some((94e6, RateFrom::Link)),
        };
        let left_ns = 300_000_000_000;
        let p = next_point(&slow, &sizes, left_ns, false);
        assert_eq!(p.keep, sizes.len());
        let spare_ns = left_ns as f64 - p.least_ns;
        let even_ns = spare_ns / sizes.len() as f64;
        assert!((p.budget_ns as f64 - (slow.least_ns(1) + even_ns)).abs() < 2.0);
        let all: f64 = sizes.iter().map(|&b| slow.least_ns(b) + even_ns).sum();
        assert!((all - left_ns as f64).abs() < 1e3, "{all}");
        let lo = RateModel {
            mode: Mode::Pingpong,
            latency_ns: 10_000.0,
            rate: None,
        };
        let left_ns = 1_500_000_000;
        let p = next_point(&lo, &sizes, left_ns, false);
        let even = left_ns as f64 / sizes.len() as f64;
        assert_eq!(p.keep, sizes.len());
        assert!((p.budget_ns as f64 / even - 1.0).abs() < 0.01, "{p:?}");
    }

    /// What does not fit is the largest sizes; none fit: none kept, unless
    /// the first size of a sweep (always measured).
    #[test]
    fn the_largest_sizes_that_do_not_fit_are_left_out() {
        let sizes = crate::message::schedule::netpipe(1, 8 << 20, true);
        let m = RateModel {
            mode: Mode::Pingpong,
            latency_ns: 100_000.0,
            rate: Some((94e6, RateFrom::Link)),
        };
        let p = next_point(&m, &sizes, 8_000_000_000, false);
        assert!(p.keep > 80 && p.keep < sizes.len(), "{p:?}");
        assert!(p.least_ns <= 8e9);
        let kept = &sizes[..p.keep];
        let next = sizes[p.keep];
        assert!(p.least_ns + m.least_ns(next) > 8e9);
        assert!(*kept.last().unwrap() < 1 << 20, "{kept:?}");
        let big = [8 << 20];
        assert_eq!(next_point(&m, &big, 5_000_000_000, false).keep, 0);
        let first = next_point(&m, &big, 5_000_000_000, true);
        assert_eq!(first.keep, 1);
        assert!(first.budget_ns as f64 >= m.least_ns(8 << 20) - 1.0);
    }

    /// The record and the warning name the sizes, the rate, the time they
    /// need and a budget that holds them.
    #[test]
    fn the_warning_says_which_sizes_why_and_what_to_pass() {
        let m = RateModel {
            mode: Mode::Pingpong,
            latency_ns: 100_000.0,
            rate: Some((94.1e6, RateFrom::Link)),
        };
        let sizes = [4 << 20, 6 << 20, 8 << 20];
        let l = left_out(&m, &sizes, 1_200_000_000, 10.0, 0.9);
        assert_eq!(l.sizes_bytes, sizes);
        assert_eq!(l.rate_from.as_deref(), Some("link"));
        let least_s: f64 = sizes.iter().map(|&b| m.least_ns(b)).sum::<f64>() * 1e-9;
        assert!((l.least_s - least_s).abs() < 1e-6, "{l:?}");
        assert!((l.left_s - 1.2).abs() < 1e-9, "{l:?}");
        assert!(l.budget_hint_s >= 10.0 + least_s / 0.9);
        // 25.7 s of least work and a tenth kept for the pass: 38.5 s.
        assert_eq!(l.budget_hint_s, 39.0, "{l:?}");
        let w = warning(&l, 10.0, Some(3 << 20));
        for part in [
            "3 sizes left out (4 MiB..8 MiB)",
            "~94.1 Mbit/s",
            "10 s budget",
            "--budget 39s",
            "--sizes up to 3 MiB",
        ] {
            assert!(w.contains(part), "{part:?} not in {w}");
        }
        assert_eq!(round_up_budget(7.2), 8.0);
        assert_eq!(round_up_budget(301.0), 360.0);
    }
}
