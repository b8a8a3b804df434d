//! The charts of the machine's own limits: the memory hierarchy seen by
//! memcpy, and intra-node transports against those limits.
//!
//! The in-process baselines are references, not competitors: memcpy is
//! the most any copy between two processes of this machine could move,
//! and the cache-line ping-pong the least time any message between them
//! could take. So they are not curves beside the transports' but limits
//! drawn on the transports' charts ([`memcpy_limit_line`], and the floor
//! on the latency chart in [`super::sweep`]), and here:
//!
//! * [`memory_hierarchy`]: memcpy bandwidth against size with the cache
//!   sizes of the host marked (as HINT showed memory hierarchies), so the
//!   steps of the curve can be read as cache levels;
//! * [`memcpy_fraction`]: each intra-node transport's throughput as a
//!   share of memcpy's at the same size (`points[].limits`);
//! * [`c2c_fraction`]: the same against the core-to-core single copy
//!   between the two CPUs (`points[].limits.c2c_bits_per_s`), the limit a
//!   transfer between two processes there can reach;
//! * [`floor_multiple`]: its one-way time as a multiple of the cache-line
//!   floor (`points[].limits.floor_ns`).

use anyhow::Result;
use plotters::prelude::*;

use super::frame::{frame, num, Axis, Ctx};
use super::sweep::{line_with_dots, size_axis, time_word, Series};
use crate::units::format_bytes;

/// The memcpy curve of `s` drawn as a limit on a throughput chart: a grey
/// dashed line without dots, points outside the axes (`x_range` and
/// `y_top`, in chart units) left out. `to_y` maps a rate in bit/s to the
/// chart's y value, `to_x` a size.
pub(super) fn memcpy_limit_line(
    c: &mut Ctx<'_>,
    s: &Series,
    x_range: (f64, f64),
    y_top: f64,
    to_x: impl Fn(f64) -> f64,
    to_y: impl Fn(f64) -> f64,
) -> Result<()> {
    // Runs of points inside the axis, each drawn on its own: a line
    // joining the runs either side of a stretch above the axis would cut
    // across the chart.
    let mut runs: Vec<Vec<(f64, f64)>> = vec![Vec::new()];
    for p in s.points() {
        let (x, y) = (to_x(p.0), to_y(p.2));
        if x < x_range.0 || x > x_range.1 {
            continue;
        }
        match runs.last_mut() {
            Some(run) if y <= y_top => run.push((x, y)),
            Some(run) if !run.is_empty() => runs.push(Vec::new()),
            _ => {}
        }
    }
    let grey = RGBColor(110, 110, 110);
    let mut labelled = false;
    for run in runs.into_iter().filter(|r| !r.is_empty()) {
        let drawn = c.draw_series(DashedLineSeries::new(run, 7, 4, grey.stroke_width(2)))?;
        if !labelled {
            drawn
                .label(format!("{} (limit)", s.label))
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 22, y)], grey.stroke_width(2))
                });
            labelled = true;
        }
    }
    Ok(())
}

/// Cache levels of the host that ran `s` (data and unified caches), as
/// (name, bytes), smallest first.
fn cache_levels(s: &Series) -> Vec<(String, u64)> {
    let mut levels: Vec<(String, u64)> = s
        .result
        .host
        .caches
        .iter()
        .flatten()
        .filter(|c| c.kind != "Instruction" && c.size_bytes > 0)
        .map(|c| (format!("L{}", c.level), c.size_bytes))
        .collect();
    levels.sort_by_key(|l| l.1);
    levels.dedup();
    levels
}

/// memcpy bandwidth against size (log x, linear y in Gbit/s) with each
/// cache size of the host marked by a dashed line.
pub fn memory_hierarchy(s: &Series) -> Result<String> {
    let x = size_axis(std::slice::from_ref(s), u64::MAX);
    let max = s.points().map(|p| p.2 / 1e9).fold(0.0, f64::max);
    let y = Axis::linear("memcpy bandwidth [Gbit/s]", 0.0, max, num);
    let levels = cache_levels(s);
    // Upper left: bandwidth rises with size, so the small sizes leave the
    // top left free, and the cache labels sit at the top further right.
    frame(&x, &y, |c| {
        let grey = BLACK.mix(0.55);
        let right = x.t(x.lo) + 0.8 * (x.t(x.hi) - x.t(x.lo));
        for (k, (name, bytes)) in levels.iter().enumerate() {
            let b = *bytes as f64;
            if b < x.lo || b > x.hi {
                continue;
            }
            let px = x.t(b);
            // Labels near the right edge go to the left of their line.
            let dx = if px > right { -78 } else { 4 };
            c.draw_series(DashedLineSeries::new(
                [(px, y.lo), (px, y.hi)],
                5,
                4,
                grey.stroke_width(1),
            ))?;
            // Staggered, so neighbouring levels' labels do not overlap.
            c.draw_series(std::iter::once(
                EmptyElement::at((px, y.hi))
                    + Text::new(
                        format!("{name} {}", format_bytes(*bytes)),
                        (dx, 4 + 16 * (k as i32 % 3)),
                        ("sans-serif", 12).into_font().color(&BLACK.mix(0.75)),
                    ),
            ))?;
        }
        let pts: Vec<_> = s.points().map(|p| (x.t(p.0), p.2 / 1e9, p.3)).collect();
        line_with_dots(c, &pts, s.rgb(), s.label)
    })
}

/// A series and its points against a limit: (size, value, noisy).
type LimitCurve<'a> = (&'a Series<'a>, Vec<(f64, f64, bool)>);

/// (size, value) of the points of `s` that carry the limit `get` reads.
fn against_limit(
    s: &Series,
    get: impl Fn(&crate::result::Point) -> Option<f64>,
) -> Vec<(f64, f64, bool)> {
    let dirs = s.result.mode.bytes_per_op(1) as f64;
    s.result
        .points
        .iter()
        .filter(|p| p.bytes > 0 && p.median_ns > 0.0)
        .filter_map(|p| {
            let v = get(p)?;
            let rate = dirs * 8e9 * p.bytes as f64 / p.median_ns;
            (v.is_finite() && v > 0.0).then_some((p.bytes as f64, rate / v, p.noisy))
        })
        .collect()
}

/// Throughput as a percentage of memcpy's at the same size, for the
/// transports whose points carry that limit; `None` when none do.
pub fn memcpy_fraction(series: &[Series]) -> Result<Option<String>> {
    fraction_chart(
        series,
        |p| p.limits?.memcpy_bits_per_s,
        "throughput / memcpy at that size",
    )
}

/// Throughput as a percentage of the core-to-core single copy at the same
/// size, for the transports whose points carry it; `None` when none do.
pub fn c2c_fraction(series: &[Series]) -> Result<Option<String>> {
    fraction_chart(
        series,
        |p| p.limits?.c2c_bits_per_s,
        "throughput / core-to-core single copy",
    )
}

/// Throughput as a percentage of the rate limit `get` reads from each
/// point, on a y axis called `label`.
fn fraction_chart(
    series: &[Series],
    get: impl Fn(&crate::result::Point) -> Option<f64> + Copy,
    label: &str,
) -> Result<Option<String>> {
    let curves: Vec<LimitCurve> = series
        .iter()
        .map(|s| (s, against_limit(s, get)))
        .filter(|(_, v)| !v.is_empty())
        .collect();
    if curves.is_empty() {
        return Ok(None);
    }
    // Logarithmic: the shares span orders of magnitude (a tenth of memcpy
    // at small sizes, 66,000% of a warm-cache c2c limit at some), which a
    // linear axis flattened to a line at 0 (issue 49); the 100% line shows
    // when reached.
    let vals = || {
        curves
            .iter()
            .flat_map(|(_, v)| v.iter().map(|p| 100.0 * p.1))
    };
    let lo = vals().fold(f64::MAX, f64::min);
    let hi = vals().fold(f64::MIN, f64::max);
    let x = size_axis(series, u64::MAX);
    let y = Axis::log(&format!("{label} [%, log scale]"), lo, hi, 10.0, num);
    let svg = frame(&x, &y, |c| {
        if y.hi >= 100.0 && y.lo <= 100.0 {
            c.draw_series(DashedLineSeries::new(
                [(x.t(x.lo), y.t(100.0)), (x.t(x.hi), y.t(100.0))],
                8,
                5,
                BLACK.mix(0.6).stroke_width(1),
            ))?;
        }
        for (s, v) in &curves {
            let pts: Vec<_> = v
                .iter()
                .map(|p| (x.t(p.0), y.t(100.0 * p.1), p.2))
                .collect();
            line_with_dots(c, &pts, s.rgb(), s.label)?;
        }
        Ok(())
    })?;
    Ok(Some(svg))
}

/// One-way time as a multiple of the cache-line floor (log y), for the
/// transports, against the run's one floor `run_floor`
/// ([`crate::report::floor`]); `None` without one. Also returns how many
/// points were withheld.
///
/// Every transport is divided by ONE floor, the run's: a floor per point
/// or per sweep, each measured at its own (busy or quiet) moment, would
/// bend the curves by the machine's load instead of the transports' cost,
/// and tell a different floor from the table's and the answer's. A multiple below
/// 1x is impossible (no transfer beats the cache-line hand-off), so such
/// a point is withheld rather than drawn: it says the floor was measured
/// at a busy moment, not that the transport beat it.
pub fn floor_multiple(
    series: &[Series],
    run_floor: Option<f64>,
) -> Result<Option<(String, usize)>> {
    let mut withheld = 0usize;
    let floor = run_floor.unwrap_or(f64::INFINITY);
    let curves: Vec<LimitCurve> = series
        .iter()
        .map(|s| {
            let v: Vec<(f64, f64, bool)> =
                if floor.is_finite() && crate::report::floor::applies(s.result) {
                    s.result
                        .points
                        .iter()
                        .filter(|p| p.bytes > 0 && p.median_ns > 0.0)
                        .filter_map(|p| {
                            let multiple = p.median_ns / floor;
                            if multiple < 1.0 {
                                withheld += 1;
                                return None;
                            }
                            Some((p.bytes as f64, multiple, p.noisy))
                        })
                        .collect()
                } else {
                    Vec::new()
                };
            (s, v)
        })
        .filter(|(_, v)| !v.is_empty())
        .collect();
    if curves.is_empty() {
        return Ok(None);
    }
    let vals = || curves.iter().flat_map(|(_, v)| v.iter().map(|p| p.1));
    let lo = vals().fold(f64::MAX, f64::min).min(1.0);
    let hi = vals().fold(1.0, f64::max);
    let x = size_axis(series, u64::MAX);
    let y = Axis::log(
        &format!("{} / cache-line floor [×, log scale]", time_word(series)),
        lo,
        hi,
        10.0,
        num,
    );
    let svg = frame(&x, &y, |c| {
        c.draw_series(DashedLineSeries::new(
            [(x.t(x.lo), 0.0), (x.t(x.hi), 0.0)],
            8,
            5,
            BLACK.mix(0.6).stroke_width(1),
        ))?;
        for (s, v) in &curves {
            let pts: Vec<_> = v.iter().map(|p| (x.t(p.0), y.t(p.1), p.2)).collect();
            line_with_dots(c, &pts, s.rgb(), s.label)?;
        }
        Ok(())
    })?;
    Ok(Some((svg, withheld)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::Analysis;
    use crate::result::Limits as PointLimits;

    fn fixture() -> crate::result::SweepResult {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/tcp-pingpong.json"
        );
        crate::result::read_result(std::path::Path::new(path)).unwrap()
    }

    /// Floors measured point by point at busy and quiet moments: the chart
    /// divides by the least one, and a point below it is withheld, not
    /// drawn as beating the cache-line hand-off.
    #[test]
    fn one_floor_per_transport_and_nothing_below_it() {
        let mut r = fixture();
        let least_ns = r.points[0].median_ns / 2.0;
        for (i, p) in r.points.iter_mut().enumerate() {
            // Every other point carries a floor measured at a busy moment.
            let floor_ns = if i % 2 == 0 {
                least_ns
            } else {
                least_ns * 50.0
            };
            p.limits = Some(PointLimits {
                floor_ns: Some(floor_ns),
                ..p.limits.unwrap_or_default()
            });
        }
        // One point faster than the least floor: impossible, withheld.
        r.points[1].median_ns = least_ns / 3.0;
        let a = Analysis::of(&r);
        let s = Series {
            label: "tcp",
            color: 0,
            result: &r,
            analysis: &a,
            first_dropout_no: 1,
            first_switchover_no: 1,
            limit_bits_per_s: None,
            limit_role: None,
        };
        let floor = crate::report::floor::run_floor_ns([&r]);
        assert_eq!(floor, Some(least_ns));
        let (svg, withheld) = floor_multiple(std::slice::from_ref(&s), floor)
            .unwrap()
            .unwrap();
        assert_eq!(withheld, 1);
        assert!(svg.contains("<svg"));
        // Without floors there is no chart.
        let mut bare = r.clone();
        for p in bare.points.iter_mut() {
            p.limits = None;
        }
        let a = Analysis::of(&bare);
        let s = Series {
            result: &bare,
            analysis: &a,
            ..s
        };
        let floor = crate::report::floor::run_floor_ns([&bare]);
        assert!(floor_multiple(std::slice::from_ref(&s), floor)
            .unwrap()
            .is_none());
    }
}
