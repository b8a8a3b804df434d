//! The charts of an NPB result (`wulf npb`) as SVG text: total Mop/s and
//! speedup against the process count, one line per transport. Drawn in the
//! same frame as the sweep charts ([`super::frame`]), so both kinds
//! of result look alike in one report.

use anyhow::Result;
use plotters::prelude::*;

use super::frame::{frame, num, Axis, Ctx};
use super::sweep::color_rgb;
use crate::result::{NpbResult, NpbRun, SweepResult};

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

/// The colour of each transport in a report: a transport the sweep part
/// drew keeps its colour there (that of its first sweep), one it did not
/// takes the next free colour. The NPB section once numbered its own
/// transports from the first colour, so tcp was blue above and orange
/// below (issue 49).
#[derive(Debug, Clone, Default)]
pub struct Colours {
    by_name: Vec<(String, usize)>,
}

impl Colours {
    /// The colours of a report of `sweeps` (series `i` drawn in colour
    /// `i`) and `npb`.
    pub fn new(sweeps: &[SweepResult], npb: &[NpbResult]) -> Colours {
        let mut by_name: Vec<(String, usize)> = Vec::new();
        for (i, s) in sweeps.iter().enumerate() {
            if !by_name.iter().any(|(n, _)| *n == s.transport) {
                by_name.push((s.transport.clone(), i));
            }
        }
        let mut next = sweeps.len();
        for via in npb.iter().flat_map(transports) {
            if !by_name.iter().any(|(n, _)| n == via) {
                by_name.push((via.to_string(), next));
                next += 1;
            }
        }
        Colours { by_name }
    }

    /// The colour index of transport `via` (0 for one never seen).
    pub fn of(&self, via: &str) -> usize {
        self.by_name
            .iter()
            .find(|(n, _)| n == via)
            .map_or(0, |(_, i)| *i)
    }
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
fn mark_failures(
    c: &mut Ctx<'_>,
    r: &NpbResult,
    x: &Axis,
    y: f64,
    colours: &Colours,
) -> Result<()> {
    if !has_failures(r) {
        return Ok(());
    }
    // The legend entry is grey: the crosses themselves take the colour of
    // their transport.
    c.draw_series(r.runs.iter().filter(|x| x.error.is_some()).map(|run| {
        let k = colours.of(&run.via);
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
/// transport, log-log: the rates of one kernel span an order of magnitude
/// and more (18x between np=2 over tcp and np=8 over shm), which a linear
/// axis from zero crushed into its floor (issue 49); on log axes a drop
/// reads as the same distance at any rate.
pub fn mops_vs_processes(r: &NpbResult, colours: &Colours) -> Result<String> {
    let x = process_axis(r);
    let rates = || {
        r.runs
            .iter()
            .filter_map(|x| x.best_mop_s)
            .filter(|v| v.is_finite() && *v > 0.0)
    };
    let lo = rates().fold(f64::MAX, f64::min);
    let hi = rates().fold(f64::MIN, f64::max);
    let y = Axis::log("total rate [Mop/s, log2 scale]", lo, hi, 2.0, num);
    frame(&x, &y, |c| {
        for via in transports(r) {
            let pts = line_of(r, via, |x| x.best_mop_s)
                .into_iter()
                .map(|(n, v)| (x.t(n), y.t(v)))
                .collect();
            draw_line(c, pts, rgb(colours.of(via)), via)?;
        }
        mark_failures(c, r, &x, y.t(y.lo), colours)
    })
}

/// Speedup against the process count, log-log, with the ideal (speedup =
/// processes) as a dashed line: on log-log axes it is the diagonal, and
/// distance below it is the loss factor. `None` when no run has a speedup
/// (no one-process run to compare with).
pub fn speedup_vs_processes(r: &NpbResult, colours: &Colours) -> Result<Option<String>> {
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
        for via in transports(r) {
            let pts = line_of(r, via, |x| x.speedup)
                .into_iter()
                .map(|(n, v)| (x.t(n), y.t(v)))
                .collect();
            draw_line(c, pts, rgb(colours.of(via)), via)?;
        }
        mark_failures(c, r, &x, y.t(y.lo), colours)
    })?;
    Ok(Some(svg))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_transport_keeps_its_sweep_colour_in_the_npb_section() {
        let sweep = |t: &str| {
            let path = concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/tests/fixtures/tcp-pingpong.json"
            );
            let mut r = crate::result::read_result(std::path::Path::new(path)).unwrap();
            r.transport = t.into();
            r
        };
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/npb-mg-S.json");
        let npb: NpbResult = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        // The fixture runs shm first, then tcp; the sweeps drew unix, tcp.
        let c = Colours::new(&[sweep("unix"), sweep("tcp"), sweep("tcp")], &[npb]);
        assert_eq!((c.of("unix"), c.of("tcp"), c.of("shm")), (0, 1, 3));
    }

    #[test]
    fn ratio_ticks_read_as_fractions() {
        assert_eq!(ratio_tick(0.25), "1/4");
        assert_eq!(ratio_tick(0.0625), "1/16");
        assert_eq!(ratio_tick(1.0), "1");
        assert_eq!(ratio_tick(8.0), "8");
    }
}
