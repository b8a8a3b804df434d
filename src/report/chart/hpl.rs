//! The Linpack chart (`wulf hpl` results, `wulf study linpack`): HPL's
//! Gflop/s against the node count, one line per link kind, as Innocente et al. 2000
//! compared Fast Ethernet, Gigabit and Myrinet. Drawn in the frame of
//! every report chart ([`super::frame`]).

use anyhow::Result;
use plotters::prelude::*;

use super::frame::{frame, num, Axis};
use super::npb::{draw_line, rgb};
use crate::result::hpl::{link_kind, HplResult};

/// Link kinds in the order first given: the legend's, the table rows' and
/// the colours' order.
pub fn links(results: &[HplResult]) -> Vec<String> {
    let mut v: Vec<String> = Vec::new();
    for r in results {
        let k = link_kind(r);
        if !v.contains(&k) {
            v.push(k);
        }
    }
    v
}

/// The distinct process counts (nodes with a lab), ascending.
pub fn node_counts(results: &[HplResult]) -> Vec<usize> {
    let mut v: Vec<usize> = results.iter().map(|r| r.np).collect();
    v.sort_unstable();
    v.dedup();
    v
}

/// The best passing rate of `link` at each node count: (nodes, Gflop/s).
pub fn line(results: &[HplResult], link: &str) -> Vec<(usize, f64)> {
    node_counts(results)
        .into_iter()
        .filter_map(|np| {
            let best = results
                .iter()
                .filter(|r| r.np == np && r.passed && link_kind(r) == link)
                .map(|r| r.gflops)
                .filter(|g| g.is_finite())
                .fold(f64::NAN, f64::max);
            best.is_finite().then_some((np, best))
        })
        .collect()
}

/// Gflop/s against nodes, one line per link kind; linear rate axis from
/// zero (a flat line is the interconnect holding the nodes back), nodes on
/// a log2 axis with a tick at each count run. None without a passing run.
pub fn gflops_vs_nodes(results: &[HplResult]) -> Result<Option<String>> {
    let kinds = links(results);
    let lines: Vec<Vec<(usize, f64)>> = kinds.iter().map(|k| line(results, k)).collect();
    let max = lines.iter().flatten().map(|p| p.1).fold(0.0, f64::max);
    if max <= 0.0 {
        return Ok(None);
    }
    let nps = node_counts(results);
    let lo = nps.first().copied().unwrap_or(1).max(1) as f64;
    let hi = nps.last().copied().unwrap_or(1).max(1) as f64;
    let mut x = Axis::log("nodes (MPI processes) [log2 scale]", lo, hi, 2.0, num);
    if nps.len() <= 12 {
        x.ticks = nps.iter().map(|&n| n as f64).collect();
    }
    let y = Axis::linear("HPL rate [Gflop/s]", 0.0, max, num);
    let svg = frame(&x, &y, |c| {
        for (k, (kind, pts)) in kinds.iter().zip(lines).enumerate() {
            let pts = pts.into_iter().map(|(n, g)| (x.t(n as f64), g)).collect();
            draw_line(c, pts, rgb(k), kind)?;
        }
        // Failed residual checks as crosses on the bottom axis.
        let failed: Vec<(f64, f64)> = results
            .iter()
            .filter(|r| !r.passed)
            .map(|r| (x.t(r.np as f64), y.lo))
            .collect();
        if !failed.is_empty() {
            c.draw_series(
                failed
                    .into_iter()
                    .map(|p| Cross::new(p, 6, BLACK.mix(0.6).stroke_width(2))),
            )?
            .label("residual check failed")
            .legend(|(lx, ly)| Cross::new((lx + 11, ly), 5, BLACK.mix(0.6).stroke_width(2)));
        }
        Ok(())
    })?;
    Ok(Some(svg))
}
