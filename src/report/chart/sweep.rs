//! The report's charts as SVG text, drawn with plotters' SVG backend.
//!
//! Six charts, the studies' graphs: throughput vs size (linear or
//! logarithmic throughput, with memcpy as a limit line), the network
//! signature, saturation, small-message latency (with the cache-line floor
//! as a limit line), CPU cost per byte and efficiency against the physical
//! limit. Only confirmed events are marked. The charts of the machine's
//! own limits: [`super::limit`]. Axes and frame:
//! [`super::frame`].

use anyhow::Result;
use plotters::prelude::*;

use super::frame::{frame, num, size_tick, Axis, Ctx};

pub use super::cpu_cost::cpu_cost;

use crate::analysis::Analysis;
use crate::result::{Mode, SweepResult};

/// Size of one chart in pixels (two fit side by side on a 1280 px screen).
pub const CHART_PX: (u32, u32) = (620, 420);

/// Largest size in the small-message latency chart.
pub const SMALL_MESSAGE_MAX_BYTES: u64 = 4096;

/// Series colours: Tableau 10 without its grey (the limit lines are grey)
/// and nine more of distinct hue or lightness, so that a run of a dozen
/// results or more shows no two alike.
pub const PALETTE: [(u8, u8, u8); 18] = [
    (31, 119, 180),
    (255, 127, 14),
    (44, 160, 44),
    (214, 39, 40),
    (148, 103, 189),
    (140, 86, 75),
    (227, 119, 194),
    (23, 190, 207),
    (188, 189, 34),
    (0, 0, 128),
    (0, 128, 128),
    (128, 0, 0),
    (255, 187, 120),
    (102, 0, 153),
    (152, 223, 138),
    (0, 90, 0),
    (255, 0, 200),
    (174, 199, 232),
];

/// The colour of the i-th series. Beyond the palette the colours come
/// round again one step darker in blue, so every series keeps a colour of
/// its own: the page's toggles find a series by its colour, and a repeated
/// colour once hid a twin along with it.
pub fn color_rgb(i: usize) -> (u8, u8, u8) {
    let (r, g, b) = PALETTE[i % PALETTE.len()];
    let round = (i / PALETTE.len()) % 64;
    (r, g, b.wrapping_sub(3 * round as u8))
}

/// The colour of the i-th result as `#RRGGBB` (upper case, as plotters
/// writes it into the SVG, so a script can find a series by its colour).
pub fn color_hex(i: usize) -> String {
    let (r, g, b) = color_rgb(i);
    format!("#{r:02X}{g:02X}{b:02X}")
}

/// One result as drawn: label, colour index, data and analysis, and the
/// numbers its first drop-out and switch-over markers carry (D1, S1...,
/// numbered across all results so the list under the charts can name them).
#[derive(Clone)]
pub struct Series<'a> {
    /// Legend text.
    pub label: &'a str,
    /// Index of its colour ([`color_rgb`]).
    pub color: usize,
    /// The measurements.
    pub result: &'a SweepResult,
    /// Their analysis.
    pub analysis: &'a Analysis,
    /// Number of this result's first drop-out marker.
    pub first_dropout_no: usize,
    /// Number of this result's first switch-over marker.
    pub first_switchover_no: usize,
    /// The physical limit to draw efficiency against, bit/s.
    pub limit_bits_per_s: Option<f64>,
    /// For an in-process baseline, the machine limit it measures: drawn
    /// as a limit, not as a competitor ([`super::limit`]).
    pub limit_role: Option<crate::result::LimitRole>,
}

impl Series<'_> {
    pub(super) fn rgb(&self) -> RGBColor {
        let (r, g, b) = color_rgb(self.color);
        RGBColor(r, g, b)
    }

    /// (size, median time ns, throughput bit/s, noisy) of the plottable points.
    pub(super) fn points(&self) -> impl Iterator<Item = (f64, f64, f64, bool)> + '_ {
        let dirs = self.result.mode.bytes_per_op(1) as f64;
        self.result
            .points
            .iter()
            .filter(|p| p.bytes > 0 && p.median_ns.is_finite() && p.median_ns > 0.0)
            .map(move |p| {
                let t = p.median_ns;
                (p.bytes as f64, t, dirs * 8e9 * p.bytes as f64 / t, p.noisy)
            })
    }
}

/// A line through `pts` (already transformed), filled dots where `solid`,
/// hollow ones elsewhere (noisy points), with a legend entry.
pub(super) fn line_with_dots(
    c: &mut Ctx<'_>,
    pts: &[(f64, f64, bool)],
    color: RGBColor,
    label: &str,
) -> Result<()> {
    // Thin, slightly transparent lines: noisy neighbours (the +-3 byte
    // perturbations) zigzag, and the dots carry the data.
    c.draw_series(LineSeries::new(
        pts.iter().map(|&(x, y, _)| (x, y)),
        color.mix(0.75).stroke_width(1),
    ))?
    .label(label)
    .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 22, y)], color.stroke_width(3)));
    c.draw_series(pts.iter().map(|&(x, y, noisy)| {
        let style = if noisy {
            WHITE.filled()
        } else {
            color.filled()
        };
        Circle::new((x, y), 3, style)
    }))?;
    c.draw_series(
        pts.iter()
            .filter(|p| p.2)
            .map(|&(x, y, _)| Circle::new((x, y), 3, color.stroke_width(1))),
    )?;
    Ok(())
}

/// Rings around the points of each drop-out, labelled D1, D2...; `at`
/// places a point (size, median ns, bit/s) on the chart, `None` when the
/// chart does not show it.
fn mark_dropouts(
    c: &mut Ctx<'_>,
    s: &Series,
    at: impl Fn(f64, f64, f64) -> Option<(f64, f64)>,
) -> Result<()> {
    let color = s.rgb();
    let pts: Vec<(f64, f64, f64, bool)> = s.points().collect();
    // Only confirmed drop-outs get a mark; the table lists them all.
    for (k, d) in s.analysis.dropouts.iter().enumerate() {
        if d.confirmed != Some(true) {
            continue;
        }
        let run: Vec<(f64, f64)> = pts
            .iter()
            .filter(|p| p.0 >= d.from_bytes as f64 && p.0 <= d.to_bytes as f64)
            .filter_map(|p| at(p.0, p.1, p.2))
            .collect();
        c.draw_series(
            run.iter()
                .map(|&p| Circle::new(p, 6, BLACK.mix(0.6).stroke_width(1))),
        )?;
        // The label goes above the run's highest point, clear of the axis.
        let top = run
            .iter()
            .copied()
            .reduce(|a, b| if b.1 > a.1 { b } else { a });
        if let Some((px, py)) = top {
            let name = format!("D{}", s.first_dropout_no + k);
            c.draw_series(std::iter::once(
                EmptyElement::at((px, py))
                    + Text::new(
                        name,
                        (-8, -22),
                        ("sans-serif", 12).into_font().color(&color),
                    ),
            ))?;
        }
    }
    Ok(())
}

/// The unit a throughput axis is drawn in (its description says which).
fn y_unit(y: &Axis) -> f64 {
    if y.desc.contains("Gbit/s") {
        1e9
    } else {
        1e6
    }
}

fn throughput_axis(series: &[Series]) -> Axis {
    let max = series
        .iter()
        .flat_map(|s| s.points().map(|p| p.2))
        .fold(0.0, f64::max);
    if max >= 2e9 {
        Axis::linear("throughput [Gbit/s]", 0.0, max / 1e9, num)
    } else {
        Axis::linear("throughput [Mbit/s]", 0.0, max / 1e6, num)
    }
}

/// A logarithmic throughput axis over every positive point of `series`
/// and of the `limit` curve.
fn log_throughput_axis(series: &[Series], limit: Option<&Series>) -> Axis {
    let (lo, hi) = series
        .iter()
        .chain(limit)
        .flat_map(|s| s.points().map(|p| p.2))
        .filter(|v| *v > 0.0)
        .fold((f64::MAX, 0.0f64), |(lo, hi), v| (lo.min(v), hi.max(v)));
    let (lo, hi) = if hi > 0.0 { (lo, hi) } else { (1e6, 1e6) };
    if hi >= 2e9 {
        Axis::log(
            "throughput [Gbit/s, log scale]",
            lo / 1e9,
            hi / 1e9,
            10.0,
            num,
        )
    } else {
        Axis::log(
            "throughput [Mbit/s, log scale]",
            lo / 1e6,
            hi / 1e6,
            10.0,
            num,
        )
    }
}

/// Peaks spanning more than this factor (two decades) make the
/// throughput chart logarithmic by default: on a linear axis the slower
/// curves would lie flat along the bottom.
pub const LOG_THROUGHPUT_SPAN: f64 = 100.0;

/// Whether the throughput chart of `series` and the `limit` curve reads
/// better with a logarithmic axis: their peaks span more than
/// [`LOG_THROUGHPUT_SPAN`].
pub fn throughput_wants_log(series: &[Series], limit: Option<&Series>) -> bool {
    let peaks: Vec<f64> = series
        .iter()
        .chain(limit)
        .filter_map(|s| s.points().map(|p| p.2).reduce(f64::max))
        .filter(|p| *p > 0.0)
        .collect();
    let hi = peaks.iter().copied().fold(0.0, f64::max);
    let lo = peaks.iter().copied().fold(f64::MAX, f64::min);
    hi > 0.0 && hi / lo > LOG_THROUGHPUT_SPAN
}

pub(super) fn size_axis(series: &[Series], max_bytes: u64) -> Axis {
    let (lo, hi) = series
        .iter()
        .flat_map(|s| s.points().map(|p| p.0))
        .filter(|b| *b <= max_bytes as f64)
        .fold((f64::MAX, 0.0f64), |(lo, hi), b| (lo.min(b), hi.max(b)));
    let (lo, hi) = if hi > 0.0 { (lo, hi) } else { (1.0, 1.0) };
    Axis::log("message size [bytes, log scale]", lo, hi, 4.0, size_tick)
}

/// What the times are: one-way (ping-pong, stream), the exchange of both
/// directions (bidir), or either when results of both kinds are overlaid.
pub(super) fn time_word(series: &[Series]) -> &'static str {
    let bidir = series
        .iter()
        .filter(|s| s.result.mode == Mode::Bidir)
        .count();
    match bidir {
        0 => "one-way time",
        n if n == series.len() => "exchange time",
        _ => "time per message (bidir: exchange)",
    }
}

fn time_axis(series: &[Series], desc: &str) -> Axis {
    let (lo, hi) = series
        .iter()
        .flat_map(|s| s.points().map(|p| p.1 / 1e3))
        .fold((f64::MAX, 0.0f64), |(lo, hi), t| (lo.min(t), hi.max(t)));
    let (lo, hi) = if hi > 0.0 { (lo, hi) } else { (1.0, 1.0) };
    Axis::log(desc, lo, hi, 10.0, num)
}

/// Throughput against message size (log x; log y when `log`), with the
/// `limit` curve (memcpy) as a grey dashed limit line, confirmed
/// switch-overs as dashed lines (S1...) and confirmed drop-outs ringed
/// (D1...). On the linear axis the limit is cut off at the top of the
/// transports' range.
pub fn throughput_vs_size(series: &[Series], limit: Option<&Series>, log: bool) -> Result<String> {
    let x = size_axis(series, u64::MAX);
    let y = if log {
        log_throughput_axis(series, limit)
    } else {
        throughput_axis(series)
    };
    let unit = y_unit(&y);
    // Middle left: the top carries the switch-over labels, the bottom the
    // small sizes' near-zero throughput.
    frame(&x, &y, |c| {
        if let Some(m) = limit {
            let (xs, top) = ((x.t(x.lo), x.t(x.hi)), y.t(y.hi));
            super::limit::memcpy_limit_line(c, m, xs, top, |b| x.t(b), |r| y.t(r / unit))?;
        }
        for s in series {
            let color = s.rgb();
            let pts: Vec<_> = s
                .points()
                .map(|p| (x.t(p.0), y.t(p.2 / unit), p.3))
                .collect();
            line_with_dots(c, &pts, color, s.label)?;
            for (k, seg) in s.analysis.segments.iter().skip(1).enumerate() {
                if seg.confirmed != Some(true) {
                    continue;
                }
                let px = x.t(seg.from_bytes as f64);
                c.draw_series(DashedLineSeries::new(
                    [(px, y.t(y.lo)), (px, y.t(y.hi))],
                    6,
                    5,
                    color.mix(0.6).stroke_width(1),
                ))?;
                // Each result's labels on their own line, so that results
                // switching at the same size stay readable.
                let line = 2 + 14 * (s.color % 12) as i32;
                c.draw_series(std::iter::once(
                    EmptyElement::at((px, y.t(y.hi)))
                        + Text::new(
                            format!("S{}", s.first_switchover_no + k),
                            (3, line),
                            ("sans-serif", 12).into_font().color(&color),
                        ),
                ))?;
            }
            mark_dropouts(c, s, |b, _, bps| Some((x.t(b), y.t(bps / unit))))?;
        }
        Ok(())
    })
}

/// The network signature graph: throughput against transfer time (log
/// time; log throughput too when the peaks span more than
/// [`LOG_THROUGHPUT_SPAN`], as on the throughput chart).
pub fn signature(series: &[Series]) -> Result<String> {
    let x = time_axis(series, &format!("{} [µs, log scale]", time_word(series)));
    let y = if throughput_wants_log(series, None) {
        log_throughput_axis(series, None)
    } else {
        throughput_axis(series)
    };
    let unit = y_unit(&y);
    frame(&x, &y, |c| {
        for s in series {
            let pts: Vec<_> = s
                .points()
                .map(|p| (x.t(p.1 / 1e3), y.t(p.2 / unit), p.3))
                .collect();
            line_with_dots(c, &pts, s.rgb(), s.label)?;
            mark_dropouts(c, s, |_, t, bps| Some((x.t(t / 1e3), y.t(bps / unit))))?;
        }
        Ok(())
    })
}

/// The saturation graph: message size against transfer time, both log, the
/// saturation point ringed and labelled.
pub fn saturation(series: &[Series]) -> Result<String> {
    let x = time_axis(series, &format!("{} [µs, log scale]", time_word(series)));
    let y = size_axis(series, u64::MAX);
    frame(&x, &y, |c| {
        for s in series {
            let color = s.rgb();
            let pts: Vec<_> = s
                .points()
                .map(|p| (x.t(p.1 / 1e3), y.t(p.0), p.3))
                .collect();
            line_with_dots(c, &pts, color, s.label)?;
            let Some(at) = s.analysis.saturation_bytes else {
                continue;
            };
            if let Some(p) = s.points().find(|p| p.0 == at as f64) {
                let pos = (x.t(p.1 / 1e3), y.t(p.0));
                c.draw_series(std::iter::once(Circle::new(pos, 10, color.stroke_width(3))))?;
                // Labels of many results pile up on one another: beyond
                // a few, the rings stay and the summary table gives sizes.
                if series.len() > MAX_SATURATION_LABELS {
                    continue;
                }
                c.draw_series(std::iter::once(
                    EmptyElement::at(pos)
                        + Text::new(
                            format!("saturation {}", crate::units::format_bytes(at)),
                            (-150, -8),
                            ("sans-serif", 13).into_font().color(&color),
                        ),
                ))?;
            }
        }
        Ok(())
    })
}

/// Most results whose saturation point the saturation chart labels.
const MAX_SATURATION_LABELS: usize = 3;

/// Small-message medians spanning more than this factor (a decade) make
/// the latency axis logarithmic: one slow transport at milliseconds
/// otherwise flattens the others' microseconds onto the axis.
pub const LOG_LATENCY_SPAN: f64 = 10.0;

/// One-way time of small messages (up to [`SMALL_MESSAGE_MAX_BYTES`]) with
/// the 95% confidence interval of each median as an error bar, and the
/// cache-line floor (ns) as a grey dashed limit line when known.
pub fn small_message_latency(series: &[Series], floor_ns: Option<f64>) -> Result<String> {
    let x = size_axis(series, SMALL_MESSAGE_MAX_BYTES);
    let small = |s: &Series| {
        s.result
            .points
            .iter()
            .filter(|p| p.bytes > 0 && p.bytes <= SMALL_MESSAGE_MAX_BYTES && p.median_ns > 0.0)
            .cloned()
            .collect::<Vec<_>>()
    };
    // The axis shows every median with room above, and the intervals as
    // far as that: one noisy point's interval reaching a hundred times the
    // latency would otherwise flatten every curve (bars are cut at the top).
    let fold_max = |f: fn(&crate::result::Point) -> f64| {
        series
            .iter()
            .flat_map(|s| small(s).into_iter().map(|p| f(&p) / 1e3))
            .fold(0.0, f64::max)
    };
    let max_us = fold_max(|p| p.ci_high_ns.max(p.median_ns))
        .min(1.5 * fold_max(|p| p.median_ns))
        .max(floor_ns.unwrap_or(0.0) / 1e3);
    // The medians decide the scale; a floor far below them (120 ns under
    // 10 us) reads well as a line along the bottom of a linear axis.
    let medians_min_us = series
        .iter()
        .flat_map(|s| small(s).into_iter().map(|p| p.median_ns / 1e3))
        .filter(|v| *v > 0.0)
        .fold(f64::MAX, f64::min);
    let medians_max_us = fold_max(|p| p.median_ns);
    let log = medians_min_us < f64::MAX && medians_max_us / medians_min_us > LOG_LATENCY_SPAN;
    let min_us = floor_ns.map_or(medians_min_us, |f| medians_min_us.min(f / 1e3));
    let word = time_word(series);
    let y = if log {
        Axis::log(
            &format!("{word} [µs, log scale]"),
            min_us,
            max_us,
            10.0,
            num,
        )
    } else {
        Axis::linear(&format!("{word} [µs]"), 0.0, max_us, num)
    };
    let top_us = if log { y.hi } else { max_us * 1.08 };
    // On a log axis an interval reaching zero is cut at the bottom.
    let yt = |us: f64| y.t(us.max(if log { y.lo } else { f64::MIN }));
    frame(&x, &y, |c| {
        if let Some(f) = floor_ns {
            let grey = RGBColor(110, 110, 110);
            let us = f / 1e3;
            c.draw_series(DashedLineSeries::new(
                [(x.t(x.lo), yt(us)), (x.t(x.hi), yt(us))],
                7,
                4,
                grey.stroke_width(2),
            ))?
            .label(format!("cache-line floor ({f:.0} ns, limit)"))
            .legend(move |(lx, ly)| {
                PathElement::new(vec![(lx, ly), (lx + 22, ly)], grey.stroke_width(2))
            });
        }
        for s in series {
            let color = s.rgb();
            let pts = small(s);
            let line: Vec<_> = pts
                .iter()
                .map(|p| (x.t(p.bytes as f64), yt(p.median_ns / 1e3), p.noisy))
                .collect();
            line_with_dots(c, &line, color, s.label)?;
            c.draw_series(pts.iter().map(|p| {
                let px = x.t(p.bytes as f64);
                let (lo, hi) = (p.ci_low_ns / 1e3, (p.ci_high_ns / 1e3).min(top_us));
                PathElement::new(
                    vec![(px, yt(lo)), (px, yt(hi))],
                    color.mix(0.7).stroke_width(1),
                )
            }))?;
            c.draw_series(pts.iter().flat_map(|p| {
                let px = x.t(p.bytes as f64);
                [p.ci_low_ns, p.ci_high_ns]
                    .into_iter()
                    .filter(|v| v / 1e3 <= top_us)
                    .map(move |v| {
                        EmptyElement::at((px, yt(v / 1e3)))
                            + PathElement::new(
                                vec![(-3, 0), (3, 0)],
                                color.mix(0.7).stroke_width(1),
                            )
                    })
            }))?;
            // Drop-outs among small messages show here far better than on
            // the throughput chart, where small sizes sit near zero.
            mark_dropouts(c, s, |b, t, _| {
                (b <= SMALL_MESSAGE_MAX_BYTES as f64).then(|| (x.t(b), yt(t / 1e3)))
            })?;
        }
        Ok(())
    })
}

/// Throughput as a percentage of each result's physical limit; `None` when
/// no result carries one.
pub fn efficiency(series: &[Series]) -> Result<Option<String>> {
    let with_limit: Vec<&Series> = series
        .iter()
        .filter(|s| s.limit_bits_per_s.is_some())
        .collect();
    if with_limit.is_empty() {
        return Ok(None);
    }
    let pct = |s: &Series, bps: f64| 100.0 * bps / s.limit_bits_per_s.unwrap_or(f64::NAN);
    let max = with_limit
        .iter()
        .flat_map(|s| s.points().map(|p| pct(s, p.2)))
        .fold(100.0, f64::max);
    let x = size_axis(series, u64::MAX);
    let y = Axis::linear("throughput / physical limit [%]", 0.0, max, num);
    let svg = frame(&x, &y, |c| {
        c.draw_series(DashedLineSeries::new(
            [(x.t(x.lo), 100.0), (x.t(x.hi), 100.0)],
            8,
            5,
            BLACK.mix(0.6).stroke_width(1),
        ))?;
        for s in &with_limit {
            let pts: Vec<_> = s.points().map(|p| (x.t(p.0), pct(s, p.2), p.3)).collect();
            line_with_dots(c, &pts, s.rgb(), s.label)?;
        }
        Ok(())
    })?;
    Ok(Some(svg))
}
