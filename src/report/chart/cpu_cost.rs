//! The CPU cost chart: CPU time per byte moved against message size, for
//! each end of each result (and the whole machine where it was measured).
//! Apart from [`super::sweep`] only to keep files short; it draws with the
//! same series and frame.

use anyhow::Result;
use plotters::prelude::*;

use super::frame::{frame, num, Axis};
use super::sweep::{size_axis, Series};

/// Reads one end's CPU cost per byte from a point.
type CpuOf = fn(&crate::result::Point) -> f64;

/// CPU time per byte moved against size, both ends: the measuring end (A)
/// solid, the peer (B) dashed, and with `--cost whole` the whole machine
/// (--cost whole or soak: everything the sweep cost the machine) dotted; log-log.
pub fn cpu_cost(series: &[Series]) -> Result<String> {
    let x = size_axis(series, u64::MAX);
    let vals = || {
        series.iter().flat_map(|s| {
            s.result.points.iter().flat_map(|p| {
                [
                    p.cpu_client.ns_per_byte,
                    p.cpu_server.ns_per_byte,
                    whole_of(p),
                ]
            })
        })
    };
    let lo = vals().filter(|v| *v > 0.0).fold(f64::MAX, f64::min);
    let hi = vals().filter(|v| v.is_finite()).fold(0.0, f64::max);
    let (lo, hi) = if hi > 0.0 { (lo, hi) } else { (1.0, 1.0) };
    let y = Axis::log("CPU time per byte [ns/B, log scale]", lo, hi, 10.0, num);
    frame(&x, &y, |c| {
        for s in series {
            let color = s.rgb();
            let mut ends: Vec<(&str, CpuOf)> = vec![
                ("A, measuring end", |p| p.cpu_client.ns_per_byte),
                ("B, peer", |p| p.cpu_server.ns_per_byte),
            ];
            if s.result.points.iter().any(|p| p.cpu_whole.is_some()) {
                ends.push(("whole machine", whole_of));
            }
            for (k, (end, get)) in ends.into_iter().enumerate() {
                let pts: Vec<(f64, f64)> = s
                    .result
                    .points
                    .iter()
                    .filter(|p| p.bytes > 0 && get(p) > 0.0 && get(p).is_finite())
                    .map(|p| (x.t(p.bytes as f64), y.t(get(p))))
                    .collect();
                let style = color.stroke_width(2);
                let label = format!("{}: {end}", s.label);
                // Two short strokes draw the dashed legend entry.
                let legend = move |(lx, ly): (i32, i32)| {
                    let gap = if k == 0 { 0 } else { 5 };
                    EmptyElement::at((lx, ly))
                        + PathElement::new(vec![(0, 0), (11 - gap, 0)], style)
                        + PathElement::new(vec![(11 + gap, 0), (22, 0)], style)
                };
                if k == 0 {
                    c.draw_series(LineSeries::new(pts, style))?
                        .label(label)
                        .legend(legend);
                } else if k == 2 {
                    let thin = color.stroke_width(1);
                    c.draw_series(DashedLineSeries::new(pts, 2, 3, thin))?
                        .label(label)
                        .legend(move |(lx, ly)| {
                            PathElement::new(vec![(lx, ly), (lx + 22, ly)], thin)
                        });
                } else {
                    c.draw_series(DashedLineSeries::new(pts, 6, 4, style))?
                        .label(label)
                        .legend(legend);
                }
            }
        }
        Ok(())
    })
}

/// The whole-machine CPU per byte of a point (`--cost whole`), 0 when not
/// measured (0 is never drawn on the log axis).
fn whole_of(p: &crate::result::Point) -> f64 {
    p.cpu_whole
        .as_ref()
        .and_then(|w| w.ns_per_byte)
        .unwrap_or(0.0)
}
