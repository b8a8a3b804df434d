//! Checks of a decoded sweep result for values no measurement produces.
//!
//! The schema says what types fields have; these checks say what values
//! they may hold, so that a file edited by hand, damaged, or written by
//! something else is refused with the field named instead of drawing
//! nonsense (a negative latency, an infinite throughput) or tripping the
//! analysis. Bounds are generous: a time per operation up to 10^15 ns (11
//! days), sizes up to 2^50 bytes.

use super::{Point, SweepResult};

/// Longest time per operation accepted, ns.
const MAX_TIME_NS: f64 = 1e15;
/// Largest message size accepted, bytes.
const MAX_BYTES: u64 = 1 << 50;
/// Highest throughput accepted, bits/s (far above any memory bus).
const MAX_BITS_PER_S: f64 = 1e18;

/// Check a sweep result; the error names the first offending field.
pub fn sweep(r: &SweepResult) -> Result<(), String> {
    let mut previous: Option<u64> = None;
    for (i, p) in r.points.iter().enumerate() {
        point(p).map_err(|e| format!("points[{i}].{e}"))?;
        if let Some(before) = previous {
            if p.bytes <= before {
                return Err(format!(
                    "points[{i}].bytes ({}) does not follow the size before it ({before}): sizes must ascend",
                    p.bytes
                ));
            }
        }
        previous = Some(p.bytes);
    }
    let s = &r.summary;
    for (name, v) in [
        ("latency_ns", s.latency_ns),
        ("peak_bits_per_s", s.peak_bits_per_s),
        ("latency_floor_multiple", s.latency_floor_multiple),
        ("peak_memcpy_fraction", s.peak_memcpy_fraction),
        ("peak_c2c_fraction", s.peak_c2c_fraction),
    ] {
        if let Some(v) = v {
            finite_non_negative(v, f64::MAX).map_err(|e| format!("summary.{name} {e}"))?;
        }
    }
    finite_non_negative(r.wall_s, f64::MAX).map_err(|e| format!("wall_s {e}"))?;
    Ok(())
}

fn point(p: &Point) -> Result<(), String> {
    if p.bytes == 0 || p.bytes > MAX_BYTES {
        return Err(format!("bytes is {}, outside 1 to 2^50", p.bytes));
    }
    for (name, v) in [
        ("min_ns", p.min_ns),
        ("median_ns", p.median_ns),
        ("mean_ns", p.mean_ns),
        ("stddev_ns", p.stddev_ns),
        ("p90_ns", p.p90_ns),
        ("p99_ns", p.p99_ns),
        ("ci_low_ns", p.ci_low_ns),
        ("ci_high_ns", p.ci_high_ns),
    ] {
        finite_non_negative(v, MAX_TIME_NS).map_err(|e| format!("{name} {e}"))?;
    }
    for (j, &t) in p.trials_ns.iter().enumerate() {
        finite_non_negative(t, MAX_TIME_NS).map_err(|e| format!("trials_ns[{j}] {e}"))?;
    }
    finite_non_negative(p.bits_per_s, MAX_BITS_PER_S).map_err(|e| format!("bits_per_s {e}"))?;
    if p.ci_low_ns > p.ci_high_ns {
        return Err(format!(
            "ci_low_ns ({}) is above ci_high_ns ({})",
            p.ci_low_ns, p.ci_high_ns
        ));
    }
    for (name, v) in [
        ("cpu_client.ns_per_byte", p.cpu_client.ns_per_byte),
        ("cpu_client.ns_per_message", p.cpu_client.ns_per_message),
        ("cpu_server.ns_per_byte", p.cpu_server.ns_per_byte),
        ("cpu_server.ns_per_message", p.cpu_server.ns_per_message),
    ] {
        finite_non_negative(v, f64::MAX).map_err(|e| format!("{name} {e}"))?;
    }
    if let Some(l) = &p.limits {
        for (name, v) in [
            ("limits.memcpy_bits_per_s", l.memcpy_bits_per_s),
            ("limits.floor_ns", l.floor_ns),
            ("limits.c2c_bits_per_s", l.c2c_bits_per_s),
            ("limits.c2c_two_copy_bits_per_s", l.c2c_two_copy_bits_per_s),
        ] {
            if let Some(v) = v {
                finite_non_negative(v, f64::MAX).map_err(|e| format!("{name} {e}"))?;
            }
        }
    }
    if let Some(t) = &p.tails {
        for (name, v) in [
            ("tails.p50_ns", t.p50_ns),
            ("tails.p99_ns", t.p99_ns),
            ("tails.p999_ns", t.p999_ns),
            ("tails.max_ns", t.max_ns),
        ] {
            finite_non_negative(v, MAX_TIME_NS).map_err(|e| format!("{name} {e}"))?;
        }
    }
    Ok(())
}

fn finite_non_negative(v: f64, max: f64) -> Result<(), String> {
    if !v.is_finite() {
        Err(format!("is {v}, not a finite number"))
    } else if v < 0.0 {
        Err(format!("is negative ({v})"))
    } else if v > max {
        Err(format!("is {v:e}, beyond any measurement"))
    } else {
        Ok(())
    }
}
