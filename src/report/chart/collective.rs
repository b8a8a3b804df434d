//! The chart of a collective result (`wulf collective`) as SVG text: time
//! per operation against message size, both axes logarithmic, one line per
//! backend with its 95% intervals as whiskers and noisy sizes as open
//! circles. Drawn in the frame of the other charts
//! ([`super::frame`]), with the NPB charts' lines and colours.

use anyhow::Result;
use plotters::prelude::*;

use super::frame::{frame, num, size_tick, Axis};
use super::npb::{draw_line, rgb};
use crate::result::collective::CollectiveResult;

/// Time against size, or None when the result has fewer than two sizes
/// (a barrier has one: its table says all).
pub fn time_vs_size(r: &CollectiveResult) -> Result<Option<String>> {
    let points = || r.runs.iter().flat_map(|run| run.points.iter());
    let sizes = || points().map(|p| p.bytes as f64).filter(|b| *b > 0.0);
    let (lo, hi) = sizes().fold((f64::MAX, 0.0f64), |(lo, hi), b| (lo.min(b), hi.max(b)));
    if hi <= lo {
        return Ok(None);
    }
    let times_us = || {
        points()
            .flat_map(|p| [p.ci_low_ns, p.ci_high_ns, p.median_ns])
            .map(|ns| ns / 1e3)
            .filter(|us| us.is_finite() && *us > 0.0)
    };
    let t_lo = times_us().fold(f64::MAX, f64::min);
    let t_hi = times_us().fold(0.0, f64::max);
    if t_hi <= 0.0 {
        return Ok(None);
    }
    let x = Axis::log("message size [bytes, log scale]", lo, hi, 4.0, size_tick);
    let y = Axis::log(
        "time per operation [us, log scale]",
        t_lo,
        t_hi.max(t_lo * 1.01),
        10.0,
        num,
    );
    let svg = frame(&x, &y, |c| {
        for (k, run) in r.runs.iter().enumerate() {
            let shown: Vec<_> = run
                .points
                .iter()
                .filter(|p| p.bytes > 0 && p.median_ns > 0.0)
                .collect();
            if shown.is_empty() {
                continue;
            }
            let color = rgb(k);
            let at = |b: u64, ns: f64| (x.t(b as f64), y.t((ns / 1e3).max(t_lo)));
            c.draw_series(shown.iter().map(|p| {
                PathElement::new(
                    vec![at(p.bytes, p.ci_low_ns), at(p.bytes, p.ci_high_ns)],
                    color.mix(0.7).stroke_width(1),
                )
            }))?;
            let line = shown.iter().map(|p| at(p.bytes, p.median_ns)).collect();
            draw_line(c, line, color, &run.via)?;
            c.draw_series(
                shown
                    .iter()
                    .filter(|p| p.noisy)
                    .map(|p| Circle::new(at(p.bytes, p.median_ns), 6, color.stroke_width(1))),
            )?;
        }
        Ok(())
    })?;
    Ok(Some(svg))
}
