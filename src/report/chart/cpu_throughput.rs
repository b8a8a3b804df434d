//! Throughput per unit of CPU time against message size (Bounanos and Fleury 2007, Fig. 2:
//! "throughput per unit of system time"): how much data a second of CPU
//! moves. A stack that spends less CPU per byte leaves more to the
//! application, which shows when nodes are loaded.
//!
//! Two measures per result: getrusage's (the CPU time of both ends'
//! measuring threads, solid) and, with `--cost whole` or `soak`, the whole
//! machine's (softirqs, interrupts and kernel threads included, dotted). Bits per CPU-second = 8e9 / (CPU ns per byte), the reciprocal of
//! the CPU chart's figure, so the two charts agree point by point.

use anyhow::Result;
use plotters::prelude::*;

use super::frame::{frame, num, Axis};
use super::sweep::{size_axis, Series};
use crate::result::Point;

/// Reads a CPU cost per byte (ns) from a point; 0 or less when unknown.
type PerByte = fn(&Point) -> f64;

/// getrusage's CPU per byte: both ends' measuring threads.
fn getrusage_ns_per_byte(p: &Point) -> f64 {
    p.cpu_client.ns_per_byte + p.cpu_server.ns_per_byte
}

/// The whole machine's CPU per byte (`--cost whole`), 0 when not measured.
fn whole_ns_per_byte(p: &Point) -> f64 {
    p.cpu_whole
        .as_ref()
        .and_then(|w| w.ns_per_byte)
        .unwrap_or(0.0)
}

/// Bits moved per CPU-second for a CPU cost of `ns_per_byte`; `None` when
/// the cost is unknown (zero, negative or not finite).
pub fn bits_per_cpu_s(ns_per_byte: f64) -> Option<f64> {
    (ns_per_byte > 0.0 && ns_per_byte.is_finite()).then(|| 8e9 / ns_per_byte)
}

/// The points of one measure of one result: (bytes, bits per CPU-second).
fn curve(s: &Series, get: PerByte) -> Vec<(f64, f64)> {
    s.result
        .points
        .iter()
        .filter(|p| p.bytes > 0)
        .filter_map(|p| bits_per_cpu_s(get(p)).map(|v| (p.bytes as f64, v)))
        .collect()
}

/// One line of the chart: its series, which CPU measure (index), and its
/// (message size, throughput per CPU-second) points.
type Curve<'s, 'a> = (&'s Series<'a>, usize, Vec<(f64, f64)>);

/// The chart as SVG; `None` when no result has a CPU figure to draw.
pub fn throughput_per_cpu(series: &[Series]) -> Result<Option<String>> {
    let measures: [(&str, PerByte); 2] = [
        ("getrusage", getrusage_ns_per_byte),
        ("whole machine", whole_ns_per_byte),
    ];
    let curves: Vec<Curve> = series
        .iter()
        .flat_map(|s| {
            measures
                .iter()
                .enumerate()
                .map(move |(k, (_, get))| (s, k, curve(s, *get)))
        })
        .filter(|(_, _, c)| !c.is_empty())
        .collect();
    if curves.is_empty() {
        return Ok(None);
    }
    let vals = || curves.iter().flat_map(|(_, _, c)| c.iter().map(|p| p.1));
    let lo = vals().fold(f64::MAX, f64::min) / 1e9;
    let hi = vals().fold(0.0, f64::max) / 1e9;
    let x = size_axis(series, u64::MAX);
    let y = Axis::log(
        "throughput per CPU time [Gbit per CPU-second, log scale]",
        lo,
        hi,
        10.0,
        num,
    );
    let svg = frame(&x, &y, |c| {
        for (s, k, pts) in &curves {
            let color = s.rgb();
            let pts: Vec<(f64, f64)> = pts.iter().map(|(b, v)| (x.t(*b), y.t(v / 1e9))).collect();
            let label = format!("{}: {}", s.label, measures[*k].0);
            if *k == 0 {
                let style = color.stroke_width(2);
                c.draw_series(LineSeries::new(pts, style))?
                    .label(label)
                    .legend(move |(lx, ly)| PathElement::new(vec![(lx, ly), (lx + 22, ly)], style));
            } else {
                let thin = color.stroke_width(1);
                c.draw_series(DashedLineSeries::new(pts, 2, 3, thin))?
                    .label(label)
                    .legend(move |(lx, ly)| PathElement::new(vec![(lx, ly), (lx + 22, ly)], thin));
            }
        }
        Ok(())
    })?;
    Ok(Some(svg))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bits_per_cpu_second_is_the_reciprocal_of_the_cost() {
        // 1 ns per byte: a CPU-second moves 1e9 bytes, 8 Gbit.
        assert_eq!(bits_per_cpu_s(1.0), Some(8e9));
        assert_eq!(bits_per_cpu_s(0.5), Some(16e9));
        assert_eq!(bits_per_cpu_s(0.0), None);
        assert_eq!(bits_per_cpu_s(f64::NAN), None);
        assert_eq!(bits_per_cpu_s(-1.0), None);
    }
}
