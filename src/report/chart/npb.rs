//! The charts of an NPB result (`wulf npb`) as SVG text: total Mop/s and
//! speedup against the process count, one line per transport. Drawn in the
//! same frame as the sweep charts ([`super::frame`]), so both kinds
//! of result look alike in one report.

use anyhow::Result;
use plotters::prelude::*;

use super::frame::{frame, num, Axis, Ctx};
use super::sweep::color_rgb;
use crate::result::{NpbResult, NpbRun};

/// Transports in the order first run: the order of the legend, of the
/// table rows and of the colours, so a transport keeps its colour across a
/// result's charts and tables.
pub fn transports(r: &NpbResult) -> Vec<&str> {
    let mut vias: Vec<&str> = Vec::new();
    for run in &r.runs {
        if !vias.contains(&run.via.as_str()) {
            vias.push(&run.via);
        }
    }
    vias
}

/// The distinct process counts, ascending.
pub fn process_counts(r: &NpbResult) -> Vec<usize> {
    let mut nps: Vec<usize> = r.runs.iter().map(|x| x.nprocs).collect();
    nps.sort_unstable();
    nps.dedup();
    nps
}

/// The palette colour of series `i` (the order of the legend and tables).
pub(super) fn rgb(i: usize) -> RGBColor {
    let (r, g, b) = color_rgb(i);
    RGBColor(r, g, b)
}

/// Process counts on a log2 scale with a tick at each count actually run
/// (counts are usually powers of two, but MG also takes others, and a
/// tick at an unused power would suggest a measurement that is not there).
fn process_axis(r: &NpbResult) -> Axis {
    let nps = process_counts(r);
    let lo = nps.first().copied().unwrap_or(1).max(1) as f64;
    let hi = nps.last().copied().unwrap_or(1).max(1) as f64;
    let mut axis = Axis::log("processes [log2 scale]", lo, hi, 2.0, num);
    // Every count while they fit; beyond a dozen, the powers of two only.
    let counts: Vec<f64> = nps.iter().map(|&n| n as f64).collect();
    if counts.len() <= 12 {
        axis.ticks = counts;
    }
    axis
}

/// Tick label of a ratio on a log2 axis: `1/4`, `1/2`, `1`, `2`, `16`
/// (fractions of powers of two read badly as decimals: 0.062).
fn ratio_tick(v: f64) -> String {
    if v >= 1.0 || v <= 0.0 {
        num(v)
    } else {
        format!("1/{}", num(1.0 / v))
    }
}

/// (process count, figure) of one transport's runs that have the figure.
fn line_of(r: &NpbResult, via: &str, figure: fn(&NpbRun) -> Option<f64>) -> Vec<(f64, f64)> {
    let mut pts: Vec<(f64, f64)> = r
        .runs
        .iter()
        .filter(|x| x.via == via && x.error.is_none())
        .filter_map(|x| Some((x.nprocs as f64, figure(x)?)))
        .filter(|p| p.1.is_finite() && p.1 > 0.0)
        .collect();
    pts.sort_by(|a, b| a.0.total_cmp(&b.0));
    pts
}

/// A transport's line with dots and a legend entry (the collective
/// charts draw theirs alike).
pub(super) fn draw_line(
    c: &mut Ctx<'_>,
    pts: Vec<(f64, f64)>,
    color: RGBColor,
    label: &str,
) -> Result<()> {
    c.draw_series(LineSeries::new(pts.clone(), color.stroke_width(2)))?
        .label(label)
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 22, y)], color.stroke_width(3)));
    c.draw_series(pts.into_iter().map(|p| Circle::new(p, 4, color.filled())))?;
    Ok(())
}

/// Failed runs as crosses in the transport's colour at `y` (the bottom of
/// the chart): a failure has no figure, but leaving it out would read as
/// "not run".
fn mark_failures(c: &mut Ctx<'_>, r: &NpbResult, x: &Axis, y: f64) -> Result<()> {
    if !has_failures(r) {
        return Ok(());
    }
    let vias = transports(r);
    // The legend entry is grey: the crosses themselves take the colour of
    // their transport.
    c.draw_series(r.runs.iter().filter(|x| x.error.is_some()).map(|run| {
        let k = vias.iter().position(|v| *v == run.via).unwrap_or(0);
        Cross::new((x.t(run.nprocs as f64), y), 6, rgb(k).stroke_width(2))
    }))?
    .label("failed run")
    .legend(|(lx, ly)| Cross::new((lx + 11, ly), 5, BLACK.mix(0.6).stroke_width(2)));
    Ok(())
}

/// Whether any run of `r` failed (the captions explain the crosses then).
pub fn has_failures(r: &NpbResult) -> bool {
    r.runs.iter().any(|x| x.error.is_some())
}

/// Total Mop/s (best repetition) against the process count, one line per
/// transport; linear rate axis from zero, so drops read at their true size.
pub fn mops_vs_processes(r: &NpbResult) -> Result<String> {
    let x = process_axis(r);
    let max = r
        .runs
        .iter()
        .filter_map(|x| x.best_mop_s)
        .filter(|v| v.is_finite())
        .fold(0.0, f64::max);
    let y = Axis::linear("total rate [Mop/s]", 0.0, max, num);
    frame(&x, &y, |c| {
        for (k, via) in transports(r).iter().enumerate() {
            let pts = line_of(r, via, |x| x.best_mop_s)
                .into_iter()
                .map(|(n, v)| (x.t(n), v))
                .collect();
            draw_line(c, pts, rgb(k), via)?;
        }
        mark_failures(c, r, &x, y.lo)
    })
}

/// Speedup against the process count, log-log, with the ideal (speedup =
/// processes) as a dashed line: on log-log axes it is the diagonal, and
/// distance below it is the loss factor. `None` when no run has a speedup
/// (no one-process run to compare with).
pub fn speedup_vs_processes(r: &NpbResult) -> Result<Option<String>> {
    let speedups: Vec<f64> = r
        .runs
        .iter()
        .filter(|x| x.error.is_none())
        .filter_map(|x| x.speedup)
        .filter(|v| v.is_finite() && *v > 0.0)
        .collect();
    if speedups.is_empty() {
        return Ok(None);
    }
    let x = process_axis(r);
    let nps = process_counts(r);
    let (np_lo, np_hi) = (
        nps.first().copied().unwrap_or(1).max(1) as f64,
        nps.last().copied().unwrap_or(1).max(1) as f64,
    );
    // The range holds both the measured speedups and the ideal line.
    let lo = speedups.iter().copied().fold(np_lo, f64::min);
    let hi = speedups.iter().copied().fold(np_hi, f64::max);
    let y = Axis::log(
        "speedup [× one process, log2 scale]",
        lo,
        hi,
        2.0,
        ratio_tick,
    );
    let svg = frame(&x, &y, |c| {
        let ideal = BLACK.mix(0.6).stroke_width(1);
        c.draw_series(DashedLineSeries::new(
            [(x.t(np_lo), y.t(np_lo)), (x.t(np_hi), y.t(np_hi))],
            8,
            5,
            ideal,
        ))?
        .label("ideal (speedup = processes)")
        .legend(move |(lx, ly)| {
            EmptyElement::at((lx, ly))
                + PathElement::new(vec![(0, 0), (8, 0)], ideal)
                + PathElement::new(vec![(13, 0), (22, 0)], ideal)
        });
        for (k, via) in transports(r).iter().enumerate() {
            let pts = line_of(r, via, |x| x.speedup)
                .into_iter()
                .map(|(n, v)| (x.t(n), y.t(v)))
                .collect();
            draw_line(c, pts, rgb(k), via)?;
        }
        mark_failures(c, r, &x, y.t(y.lo))
    })?;
    Ok(Some(svg))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ratio_ticks_read_as_fractions() {
        assert_eq!(ratio_tick(0.25), "1/4");
        assert_eq!(ratio_tick(0.0625), "1/16");
        assert_eq!(ratio_tick(1.0), "1");
        assert_eq!(ratio_tick(8.0), "8");
    }
}
