//! The frame every report chart is drawn in: axes with given ticks, log
//! scales by transformation, the mesh, the legend, the SVG backend.
//!
//! Every chart has a log-scale x axis and some a log-scale y axis. Rather
//! than juggle plotters' distinct coordinate types for each combination,
//! values are transformed here (log10 where an axis is logarithmic) and
//! plotted on plain linear axes whose tick labels are turned back into
//! data units; so one drawing routine serves every chart.
//!
//! Text is emitted as SVG `<text>` elements and laid out by the browser;
//! plotters only estimates text widths (its "naive" font path, no font
//! files), which is enough for placing axis labels.

use std::fmt::Write;
use std::ops::Range;

use anyhow::Result;
use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint, Ranged};
use plotters::prelude::*;

use super::sweep::CHART_PX;

/// One axis: description (with unit), scale, range and ticks in data units.
pub(super) struct Axis {
    pub(super) desc: String,
    pub(super) log: bool,
    pub(super) lo: f64,
    pub(super) hi: f64,
    pub(super) ticks: Vec<f64>,
    pub(super) fmt: fn(f64) -> String,
}

impl Axis {
    pub(super) fn t(&self, v: f64) -> f64 {
        if self.log {
            v.log10()
        } else {
            v
        }
    }
    pub(super) fn inv(&self, v: f64) -> f64 {
        if self.log {
            10f64.powf(v)
        } else {
            v
        }
    }
    fn spec(&self) -> Ticked {
        Ticked {
            lo: self.t(self.lo),
            hi: self.t(self.hi),
            keys: self.ticks.iter().map(|&v| self.t(v)).collect(),
        }
    }

    /// A logarithmic axis over `lo..=hi` with ticks at powers of `base`
    /// thinned to at most [`MAX_TICKS`]. Whatever it is given (zero,
    /// infinities, NaN, 1e-300 .. 1e308) the range is first brought into
    /// [`LOG_SPAN`] and every loop below is bounded by it.
    pub(super) fn log(desc: &str, lo: f64, hi: f64, base: f64, fmt: fn(f64) -> String) -> Axis {
        let (lo, hi) = log_span(lo, hi);
        let (lo, hi) = (lo / 1.4, hi * 1.4);
        let base = if base.is_finite() && base > 1.0 {
            base
        } else {
            10.0
        };
        let mut ticks: Vec<f64> = Vec::new();
        let mut step = base;
        // At most log_base(1e600) steps (about 2,000 for base 2), each
        // pushing at most as many ticks: bounded work for any input.
        while step.is_finite() {
            ticks.clear();
            let mut v = step.powf((lo.ln() / step.ln()).ceil());
            while v <= hi && ticks.len() <= MAX_TICKS {
                ticks.push(v);
                v *= step;
            }
            if ticks.len() <= MAX_TICKS {
                break;
            }
            step *= base;
        }
        Axis {
            desc: desc.into(),
            log: true,
            lo,
            hi,
            ticks,
            fmt,
        }
    }

    /// A linear axis from `lo` to a little above `hi` with about 6 round
    /// ticks; bounded whatever it is given (non-finite values are replaced,
    /// at most 2 x [`MAX_TICKS`] ticks).
    pub(super) fn linear(desc: &str, lo: f64, hi: f64, fmt: fn(f64) -> String) -> Axis {
        let finite = |v: f64, or: f64| {
            if v.is_finite() {
                v.clamp(-1e300, 1e300)
            } else {
                or
            }
        };
        let lo = finite(lo, 0.0);
        let hi = finite(hi, lo + 1.0);
        let hi = if hi > lo { hi * 1.08 } else { lo + 1.0 };
        let raw = (hi - lo) / 6.0;
        let mag = 10f64.powf(raw.log10().floor());
        let step = [1.0, 2.0, 2.5, 5.0, 10.0]
            .iter()
            .map(|m| m * mag)
            .find(|s| *s >= raw)
            .unwrap_or(10.0 * mag);
        let ticks = if step > 0.0 && step.is_finite() {
            (0..2 * MAX_TICKS)
                .map(|k| (lo / step).ceil() * step + k as f64 * step)
                .take_while(|v| *v <= hi)
                .collect()
        } else {
            vec![lo]
        };
        Axis {
            desc: desc.into(),
            log: false,
            lo,
            hi,
            ticks,
            fmt,
        }
    }
}

/// Most ticks a logarithmic axis shows.
const MAX_TICKS: usize = 8;

/// The widest range a logarithmic axis spans, in data units.
const LOG_SPAN: (f64, f64) = (1e-300, 1e300);

/// `lo..=hi` made drawable on a log scale: non-positive and non-finite
/// ends replaced by the other end (or 1), both clamped to [`LOG_SPAN`],
/// in order.
fn log_span(lo: f64, hi: f64) -> (f64, f64) {
    let ok = |v: f64| v.is_finite() && v > 0.0;
    let (lo, hi) = match (ok(lo), ok(hi)) {
        (true, true) => (lo, hi),
        (true, false) => (lo, lo),
        (false, true) => (hi, hi),
        (false, false) => (1.0, 1.0),
    };
    let (lo, hi) = (
        lo.clamp(LOG_SPAN.0, LOG_SPAN.1),
        hi.clamp(LOG_SPAN.0, LOG_SPAN.1),
    );
    (lo.min(hi), lo.max(hi))
}

/// A linear plotters axis (in transformed units) whose ticks are given
/// rather than computed: plotters' own f64 axes pick decimal ticks, which
/// suit neither sizes (powers of two) nor log-transformed values.
#[derive(Clone)]
pub(super) struct Ticked {
    lo: f64,
    hi: f64,
    keys: Vec<f64>,
}

impl Ranged for Ticked {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, v: &f64, limit: (i32, i32)) -> i32 {
        let f = (v - self.lo) / (self.hi - self.lo);
        limit.0 + (f * (limit.1 - limit.0) as f64).round() as i32
    }

    fn key_points<H: KeyPointHint>(&self, _hint: H) -> Vec<f64> {
        self.keys.clone()
    }

    fn range(&self) -> Range<f64> {
        self.lo..self.hi
    }
}

pub(super) type Ctx<'a> = ChartContext<'a, SVGBackend<'a>, Cartesian2d<Ticked, Ticked>>;

/// Draw a frame with the axes and let `body` draw into it; returns the SVG.
///
/// The legend goes below the plot, never over it: a report overlays up to
/// a dozen results, and a legend box of a dozen lines inside the plot
/// covered the data whichever corner it took. The SVG is drawn tall enough
/// as usual and the legend moved down afterwards ([`legend_below`]).
pub(super) fn frame(
    x: &Axis,
    y: &Axis,
    body: impl FnOnce(&mut Ctx<'_>) -> Result<()>,
) -> Result<String> {
    let h_px = CHART_PX.1;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, CHART_PX).into_drawing_area();
        root.fill(&WHITE)?;
        let mut chart = ChartBuilder::on(&root)
            .margin(14)
            .x_label_area_size(46)
            .y_label_area_size(64)
            .build_cartesian_2d(x.spec(), y.spec())?;
        let (xf, yf) = (|v: &f64| (x.fmt)(x.inv(*v)), |v: &f64| (y.fmt)(y.inv(*v)));
        chart
            .configure_mesh()
            .x_desc(x.desc.as_str())
            .y_desc(y.desc.as_str())
            .x_label_formatter(&xf)
            .y_label_formatter(&yf)
            .axis_desc_style(("sans-serif", 15))
            .label_style(("sans-serif", 12))
            .bold_line_style(BLACK.mix(0.10))
            .light_line_style(TRANSPARENT)
            .draw()?;
        body(&mut chart)?;
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .margin(LEGEND_PAD_PX)
            .label_font(("sans-serif", 13))
            .background_style(WHITE.mix(LEGEND_OPACITY))
            .border_style(TRANSPARENT)
            .draw()?;
        root.present()?;
    }
    Ok(legend_below(&svg, h_px))
}

/// Padding around the legend, px.
const LEGEND_PAD_PX: u32 = 6;
/// The legend box's fill opacity: written into the SVG as
/// `opacity="0.87"`, which no other element of a chart uses, so the box
/// can be found again ([`legend_below`], the browser test).
const LEGEND_OPACITY: f64 = 0.87;
/// Height of one legend line, px, when the SVG does not tell.
const LEGEND_ROW_PX: f64 = 17.0;

/// `svg` (a chart `chart_h` px high) with its legend moved from inside the
/// plot to below it, the SVG grown to hold it. Plotters draws the legend
/// last and only inside the plotting area: everything from its box on is
/// wrapped in a translated group, and the box (which plotters clips to
/// the plot) is given the legend's height.
fn legend_below(svg: &str, chart_h: u32) -> String {
    let marker = "opacity=\"0.87\"";
    let Some(at) = svg.match_indices("<rect").map(|(i, _)| i).find(|&i| {
        svg[i..]
            .split('\n')
            .next()
            .is_some_and(|l| l.contains(marker))
    }) else {
        return svg.to_string();
    };
    let Some(end) = svg.rfind("</svg>") else {
        return svg.to_string();
    };
    let rect_line = svg[at..].split('\n').next().unwrap_or("");
    let (Some(x), Some(y), Some(w)) = (
        attr(rect_line, "x"),
        attr(rect_line, "y"),
        attr(rect_line, "width"),
    ) else {
        return svg.to_string();
    };
    let legend = &svg[at + rect_line.len()..end];
    let texts: Vec<f64> = legend
        .lines()
        .filter(|l| l.starts_with("<text"))
        .filter_map(|l| attr(l, "y"))
        .collect();
    let last = texts.iter().copied().fold(y, f64::max);
    let h = last - y + LEGEND_ROW_PX + f64::from(LEGEND_PAD_PX);
    let top = f64::from(chart_h);
    let dy = top - y;
    let total = (top + h + f64::from(LEGEND_PAD_PX)).ceil() as u32;
    let mut out = String::with_capacity(svg.len() + 200);
    out.push_str(&svg[..at]);
    let _ = writeln!(
        out,
        "<g transform=\"translate(0,{dy})\">\n<rect x=\"{x}\" y=\"{y}\" width=\"{w}\" height=\"{h}\" \
         {marker} fill=\"#FFFFFF\" stroke=\"none\"/>{legend}</g>"
    );
    out.push_str(&svg[end..]);
    let w_px = CHART_PX.0;
    out.replacen(
        &format!("height=\"{chart_h}\" viewBox=\"0 0 {w_px} {chart_h}\""),
        &format!("height=\"{total}\" viewBox=\"0 0 {w_px} {total}\""),
        1,
    )
}

/// The numeric attribute `name` of one SVG element's line.
fn attr(line: &str, name: &str) -> Option<f64> {
    let key = format!(" {name}=\"");
    let from = line.find(&key)? + key.len();
    let len = line[from..].find('"')?;
    line[from..from + len].parse().ok()
}

/// Tick label of a size: `1`, `16`, `256`, `4Ki`, `64Ki`, `1Mi`.
pub(super) fn size_tick(v: f64) -> String {
    let b = v.round() as u64;
    for (unit, size) in [("Gi", 1u64 << 30), ("Mi", 1 << 20), ("Ki", 1 << 10)] {
        if b >= size && b.is_multiple_of(size) {
            return format!("{}{unit}", b / size);
        }
    }
    format!("{b}")
}

/// Tick label of a plain number, with no more digits than it needs.
///
/// From 10,000 on with an SI prefix (`10k`, `1M`, `2.5G`): "1000000" on a
/// log axis of Mop/s or of percentages was cut at the chart's left edge at
/// 800 and 1300 px alike (issue 49); no label is wider than five
/// characters up to 1e12.
pub(super) fn num(v: f64) -> String {
    let a = v.abs();
    if a >= 1e4 {
        let (scale, prefix) = [(1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")]
            .into_iter()
            .find(|(s, _)| a >= *s)
            .unwrap_or((1e3, "k"));
        if a < 1e15 {
            return format!("{}{prefix}", num(v / scale));
        }
    }
    if a == 0.0 {
        "0".into()
    } else if a >= 100.0 {
        format!("{v:.0}")
    } else if a >= 1.0 {
        let s = format!("{v:.1}");
        s.trim_end_matches(".0").to_string()
    } else {
        // Enough decimals for two significant digits: a log axis reaching
        // 0.0001 Gbit/s once printed "0" there.
        let decimals = (1.0 - a.log10().floor()).clamp(3.0, 12.0) as usize;
        let s = format!("{v:.decimals$}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tick_labels() {
        assert_eq!(size_tick(4096.0), "4Ki");
        assert_eq!(size_tick(1.0), "1");
        assert_eq!(size_tick(1048576.0), "1Mi");
        assert_eq!(num(10.0), "10");
        assert_eq!(num(2.5), "2.5");
        assert_eq!(num(0.01), "0.01");
        assert_eq!(num(1000.0), "1000");
        assert_eq!(num(10_000.0), "10k");
        assert_eq!(num(1e6), "1M");
        assert_eq!(num(2.5e9), "2.5G");
        assert_eq!(num(-1e6), "-1M");
        assert!(num(1e300).starts_with("1000"), "{}", num(1e300));
        assert_eq!(num(0.0001), "0.0001");
        assert_eq!(num(0.25), "0.25");
    }

    #[test]
    fn axes_have_few_ticks_inside_their_range() {
        let a = Axis::log("x", 1.0, 8.0 * 1048576.0, 4.0, size_tick);
        assert!(a.ticks.len() <= 8 && a.ticks.len() >= 4, "{:?}", a.ticks);
        assert!(a.ticks.iter().all(|t| *t >= a.lo && *t <= a.hi));
        let l = Axis::linear("y", 0.0, 59.0, num);
        assert_eq!(l.ticks.first(), Some(&0.0));
        assert!(l.ticks.len() >= 4 && l.ticks.len() <= 8, "{:?}", l.ticks);
    }

    /// Whatever an axis is given (a hostile result file once made a tick
    /// loop run until the OOM killer came), it ends with a few ticks.
    #[test]
    fn axes_are_bounded_for_any_input() {
        let extremes = [
            0.0,
            -0.0,
            -1.0,
            1e-300,
            5e-324,
            1e308,
            f64::MAX,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
            1.0,
        ];
        for &lo in &extremes {
            for &hi in &extremes {
                for base in [2.0, 4.0, 10.0, 1.0, 0.0, f64::NAN] {
                    let a = Axis::log("x", lo, hi, base, num);
                    assert!(
                        a.ticks.len() <= MAX_TICKS,
                        "{lo} {hi} {base}: {:?}",
                        a.ticks
                    );
                    assert!(a.lo.is_finite() && a.hi.is_finite() && a.lo > 0.0 && a.lo <= a.hi);
                }
                let l = Axis::linear("y", lo, hi, num);
                assert!(l.ticks.len() <= 2 * MAX_TICKS, "{lo} {hi}: {:?}", l.ticks);
                assert!(l.lo.is_finite() && l.hi.is_finite());
            }
        }
    }
}
