//! The matrix section's scales and distributions: the colour scale every
//! heatmap is read with, and the histogram of a metric's cells with its
//! axes (the count of cells against the value, ticks in the metric's
//! unit). Without them a reader saw coloured squares and bars and had to
//! guess what a colour or a bar's height meant.

use std::fmt::Write;

use super::details::esc;

/// Bins of the cell histograms.
const BINS: usize = 24;
/// Width of one histogram bar, px.
const BAR_PX: usize = 14;
/// Height of the histogram's plot, px.
const PLOT_PX: usize = 140;
/// Room left of the plot for the count ticks, px.
const LEFT_PX: usize = 44;
/// Room below the plot for the value ticks and the axis description, px.
const BELOW_PX: usize = 40;

/// The colour scale under a heatmap: a bar from the colour of a cell
/// twice as good as the median (blue) through the median (white) to twice
/// as bad (red), labelled with those values. `better` and `worse` are the
/// values at the ends, already formatted; `css` the three colours.
pub(super) fn colour_scale(
    h: &mut String,
    better: &str,
    median: &str,
    worse: &str,
    css: [String; 3],
) {
    let [blue, white, red] = css;
    let _ = writeln!(
        h,
        "<div class=colour-scale><div class=bar style=\"height:12px;max-width:480px;border:1px solid #ccc;\
         background:linear-gradient(to right,{blue},{white},{red})\"></div>\
         <div style=\"display:flex;justify-content:space-between;max-width:480px;font-size:12px;color:#555\">\
         <span>{} (2&times; better or more)</span><span>median {}</span><span>{} (2&times; worse or more)</span>\
         </div></div>",
        esc(better),
        esc(median),
        esc(worse)
    );
}

/// A histogram of `values` with its axes: x the value (`show` formats a
/// tick, `desc` names the axis with its unit), y the number of cells.
pub(super) fn histogram(
    h: &mut String,
    values: &[f64],
    show: impl Fn(f64) -> String,
    desc: &str,
    title: &str,
) {
    let (lo, hi) = values
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &v| {
            (a.min(v), b.max(v))
        });
    if values.is_empty() || !lo.is_finite() || !hi.is_finite() {
        return;
    }
    let width = (hi - lo).max(hi.abs() * 1e-9).max(f64::MIN_POSITIVE);
    let mut counts = [0usize; BINS];
    for v in values {
        let i = (((v - lo) / width) * BINS as f64) as usize;
        counts[i.min(BINS - 1)] += 1;
    }
    let top = counts.iter().copied().max().unwrap_or(1).max(1);
    let (x0, plot_w) = (LEFT_PX, BINS * BAR_PX);
    let (w, ht) = (x0 + plot_w + 30, 8 + PLOT_PX + BELOW_PX);
    let base = 8 + PLOT_PX;
    let _ = write!(
        h,
        "<figure class=histogram><figcaption>{}: distribution of {} cells, {} to {}</figcaption>\n\
         <svg xmlns='http://www.w3.org/2000/svg' width={w} height={ht} role=img font-family=sans-serif>\n",
        esc(title),
        values.len(),
        esc(&show(lo)),
        esc(&show(hi)),
    );
    for (i, &c) in counts.iter().enumerate() {
        let bh = (c as f64 / top as f64 * PLOT_PX as f64).round() as usize;
        let from = lo + width * i as f64 / BINS as f64;
        let to = lo + width * (i + 1) as f64 / BINS as f64;
        let _ = writeln!(
            h,
            "<rect x={} y={} width={} height={bh} fill='#4a7ab5'><title>{c} cells, {} to {}</title></rect>",
            x0 + i * BAR_PX,
            base - bh,
            BAR_PX - 2,
            esc(&show(from)),
            esc(&show(to))
        );
    }
    // Axes: the baseline with the lowest, middle and highest value; the
    // count axis with 0 and the tallest bar's count.
    let _ = writeln!(
        h,
        "<line x1={x0} y1={base} x2={} y2={base} stroke='#333'/>\
         <line x1={x0} y1=8 x2={x0} y2={base} stroke='#333'/>",
        x0 + plot_w
    );
    for (k, anchor) in [(0usize, "start"), (1, "middle"), (2, "end")] {
        let x = x0 + k * plot_w / 2;
        let v = lo + width * k as f64 / 2.0;
        let _ = writeln!(
            h,
            "<line x1={x} y1={base} x2={x} y2={} stroke='#333'/>\
             <text x={x} y={} font-size=11 text-anchor={anchor}>{}</text>",
            base + 4,
            base + 16,
            esc(&show(v))
        );
    }
    for (count, y) in [(0, base), (top, 8)] {
        let _ = writeln!(
            h,
            "<line x1={} y1={y} x2={x0} y2={y} stroke='#333'/>\
             <text x={} y={y} font-size=11 text-anchor=end dominant-baseline=middle>{count}</text>",
            x0 - 4,
            x0 - 6
        );
    }
    let _ = writeln!(
        h,
        "<text x={} y={} font-size=12 text-anchor=middle>{}</text>\
         <text x=12 y={} font-size=12 text-anchor=middle transform='rotate(-90 12 {})'>cells</text></svg></figure>",
        x0 + plot_w / 2,
        base + 34,
        esc(desc),
        8 + PLOT_PX / 2,
        8 + PLOT_PX / 2
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_histogram_has_both_axes_with_ticks_in_its_unit() {
        let mut h = String::new();
        let values: Vec<f64> = (0..40).map(|i| 100.0 + i as f64).collect();
        histogram(
            &mut h,
            &values,
            |v| format!("{v:.0} us"),
            "latency [us]",
            "Latency",
        );
        assert!(
            h.contains(">100 us</text>") && h.contains(">139 us</text>"),
            "{h}"
        );
        assert!(h.contains(">latency [us]</text>"), "x axis description");
        assert!(h.contains(">cells</text>"), "y axis description");
        assert_eq!(h.matches("<rect").count(), BINS);
        let mut none = String::new();
        histogram(&mut none, &[], |v| v.to_string(), "x", "t");
        assert!(none.is_empty());
    }
}
