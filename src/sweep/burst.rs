//! The peak of a sweep across a shaped lab link, without the shaper's
//! free burst.
//!
//! After an idle moment a token bucket lets its burst through without the
//! bytes' serialization time (two frames in the lab: see
//! [`crate::lab::shaper`]), and a ping-pong idles the link between
//! messages. A message of `S` bytes then pays the link for only
//! `S - free` of them, and its throughput may reach `S / (S - free)` times
//! the link: a Fast Ethernet "peak" of 197 Mbit/s at 1 KiB, 2.06x its
//! goodput (issue 28). The peak is therefore taken only from sizes where
//! that factor is at most [`BURST_EXCESS`]; smaller sizes stay in the
//! points, and a warning names the bound.

use crate::result::{LabPlacement, Placement, Point, Summary};

/// Most the free burst may lift a size's throughput above the link for
/// the size to count toward the peak.
pub const BURST_EXCESS: f64 = 1.05;

/// Smallest size the peak may be taken from across a lab link whose
/// shaper lets `free_bytes` through free: `S / (S - free) <= BURST_EXCESS`
/// (21 times the free burst at 5%); 0 without a burst.
pub fn peak_min_bytes(free_bytes: u64) -> u64 {
    if free_bytes == 0 {
        return 0;
    }
    (free_bytes as f64 * BURST_EXCESS / (BURST_EXCESS - 1.0)).ceil() as u64
}

/// The free burst of the lab links in `placement` (the largest), bytes; 0
/// outside a lab.
pub fn free_burst_bytes(placement: &Placement) -> u64 {
    free_burst_of(placement.lab.as_ref())
}

fn free_burst_of(lab: Option<&LabPlacement>) -> u64 {
    lab.and_then(|l| l.links.iter().map(|k| k.free_burst_bytes).max())
        .unwrap_or(0)
}

/// The peak of `points` across the lab links `lab` (past their free
/// burst), bits/s: what the link's efficiency is read from.
pub fn lab_peak_bits_per_s(points: &[Point], lab: Option<&LabPlacement>) -> Option<f64> {
    summary(points, peak_min_bytes(free_burst_of(lab)))
        .0
        .peak_bits_per_s
}

/// The summary of `points`, its peak taken from sizes past the free burst
/// of a lab link (`min_bytes`, from [`peak_min_bytes`]); with the warning
/// that says so when that changed the peak, or that no size was past it.
pub fn summary(points: &[Point], min_bytes: u64) -> (Summary, Option<String>) {
    let mut all = Summary::from_points(points);
    if min_bytes == 0 || points.is_empty() {
        return (all, None);
    }
    let free = (min_bytes as f64 * (BURST_EXCESS - 1.0) / BURST_EXCESS).round();
    let from = points.partition_point(|p| p.bytes < min_bytes);
    if from == points.len() {
        return (
            all,
            Some(format!(
                "every size is below {min_bytes} B: the lab shaper's free burst ({free} B after an \
                 idle link) lifts each above the link's rate, so the peak is not the link's; sweep \
                 to {min_bytes} B or more for it"
            )),
        );
    }
    let beyond = Summary::from_points(&points[from..]);
    if beyond.peak_bytes == all.peak_bytes {
        return (all, None);
    }
    let warning = format!(
        "peak taken from {min_bytes} B on, where the lab shaper's free burst ({free} B after an \
         idle link) adds at most {:.0}%: the highest throughput of all sizes, {:.1} Mbit/s at {} B, \
         crossed partly free",
        (BURST_EXCESS - 1.0) * 100.0,
        all.peak_bits_per_s.unwrap_or(0.0) / 1e6,
        all.peak_bytes.unwrap_or(0)
    );
    all.peak_bits_per_s = beyond.peak_bits_per_s;
    all.peak_bytes = beyond.peak_bytes;
    all.peak_memcpy_fraction = beyond.peak_memcpy_fraction;
    all.peak_c2c_fraction = beyond.peak_c2c_fraction;
    (all, Some(warning))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sweep::point::test_point;

    #[test]
    fn the_bound_is_where_the_burst_adds_five_percent() {
        assert_eq!(peak_min_bytes(0), 0);
        // fe at MTU 1500: two frames of 1514 B.
        let min = peak_min_bytes(3028);
        assert_eq!(min, 63_588);
        assert!(min as f64 / (min - 3028) as f64 <= BURST_EXCESS + 1e-12);
    }

    /// An fe link's ping-pong: 1 KiB crosses free at twice the link, the
    /// large sizes at the link. The peak is the large sizes', and says why.
    #[test]
    fn the_peak_skips_sizes_within_the_burst() {
        // One-way ns at 95.6 Mbit/s, and 1 KiB at 194.6 Mbit/s.
        let at = |b: u64, bits_per_s: f64| test_point(b, b as f64 * 8.0 / bits_per_s * 1e9);
        let points = [at(1024, 194.6e6), at(65536, 90.0e6), at(1 << 20, 95.6e6)];
        let min = peak_min_bytes(3028);
        let (s, w) = summary(&points, min);
        assert_eq!(s.peak_bytes, Some(1 << 20));
        assert!((s.peak_bits_per_s.unwrap() - 95.6e6).abs() < 1.0);
        let w = w.unwrap();
        assert!(
            w.contains("194.6 Mbit/s at 1024 B") && w.contains("63588 B"),
            "{w}"
        );
        // Outside a lab: the plain maximum.
        let (s, w) = summary(&points, 0);
        assert_eq!((s.peak_bytes, w), (Some(1024), None));
        // No size past the burst: the maximum, and a warning that says so.
        let (s, w) = summary(&points[..1], min);
        assert_eq!(s.peak_bytes, Some(1024));
        assert!(w.unwrap().contains("every size is below 63588 B"));
        // The peak already past the burst: no warning.
        let (s, w) = summary(&points[1..], min);
        assert_eq!((s.peak_bytes, w), (Some(1 << 20), None));
    }
}
