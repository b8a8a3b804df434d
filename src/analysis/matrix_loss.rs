//! Which links of a matrix lose segments: the cause that a slow cell,
//! alone, cannot name. Pure functions of the cells' kernel counters
//! ([`CellFigures::net`]).
//!
//! # Rules
//!
//! * A pair's share is its two cells' lost segments over their sent
//!   segments, together (one direction may carry most of the data). A lost
//!   segment is one retransmitted and not reported by the receiver as a
//!   duplicate (D-SACK): a busy host's late ACKs set off retransmissions
//!   of segments that arrived, and those are not the link's.
//! * **Lossy link**: its share is at least [`LOSSY_SHARE`], it retransmitted
//!   at least [`LOSSY_MIN_RETRANS`] segments (a handful of retransmissions
//!   in a short cell is a share of nothing), and it is at least
//!   [`LOSSY_OTHERS_RATIO`] times the largest share among the other pairs
//!   of both its nodes: when every link of a node loses, the node's own
//!   interface is the cause, not the link.
//! * A slow node one of whose links is lossy, and whose other cells are
//!   normal (their median within [`super::matrix::MIN_RELATIVE`] of all
//!   cells'), was blamed for the link: the verdict is withdrawn.

use std::collections::BTreeMap;

use super::matrix::MIN_RELATIVE;
use crate::result::matrix::{CellFigures, LossyLink, MatrixAnalysis};
use crate::stats::robust::median_mad;

/// Least share of segments lost that makes a link lossy.
pub const LOSSY_SHARE: f64 = 0.005;
/// Least segments lost over a link's cells to name it.
pub const LOSSY_MIN_RETRANS: u64 = 20;
/// How many times the other links' worst share a lossy link's must be.
pub const LOSSY_OTHERS_RATIO: f64 = 5.0;

/// What a pair's two cells counted together.
#[derive(Debug, Clone, Copy, Default)]
struct PairCount {
    out: u64,
    retrans: u64,
    spurious: u64,
    drops: u64,
}

impl PairCount {
    fn lost(&self) -> u64 {
        self.retrans.saturating_sub(self.spurious)
    }

    fn share(&self) -> f64 {
        if self.out == 0 {
            0.0
        } else {
            self.lost() as f64 / self.out as f64
        }
    }
}

/// The lossy links among `n` nodes (see the module's rules), worst first.
pub fn lossy_links(n: usize, cells: &[CellFigures]) -> Vec<LossyLink> {
    let mut pairs: BTreeMap<(usize, usize), PairCount> = BTreeMap::new();
    for c in cells.iter().filter(|c| c.from < n && c.to < n) {
        let Some(net) = c.net() else { continue };
        let p = pairs
            .entry((c.from.min(c.to), c.from.max(c.to)))
            .or_default();
        p.out = p.out.saturating_add(net.out_segs);
        p.retrans = p.retrans.saturating_add(net.retrans_segs);
        p.spurious = p
            .spurious
            .saturating_add(net.dsack_segs.min(net.retrans_segs));
        p.drops = p.drops.saturating_add(net.interface_drops);
    }
    let mut found: Vec<LossyLink> = pairs
        .iter()
        .filter(|(_, p)| p.share() >= LOSSY_SHARE && p.lost() >= LOSSY_MIN_RETRANS)
        .filter_map(|(&(a, b), p)| {
            let others = pairs
                .iter()
                .filter(|(&(x, y), _)| {
                    (x, y) != (a, b) && [a, b].iter().any(|k| *k == x || *k == y)
                })
                .map(|(_, q)| q.share())
                .fold(0.0, f64::max);
            (p.share() >= LOSSY_OTHERS_RATIO * others).then(|| LossyLink {
                a,
                b,
                retrans_share: p.share(),
                retrans_segs: p.retrans,
                spurious_segs: p.spurious,
                out_segs: p.out,
                interface_drops: p.drops,
                others_share: others,
            })
        })
        .collect();
    found.sort_by(|x, y| y.retrans_share.total_cmp(&x.retrans_share));
    found
}

/// Name the lossy links in `a` and withdraw the slow-node verdicts they
/// explain (see the module's rules).
pub fn apply(a: &mut MatrixAnalysis, n: usize, cells: &[CellFigures]) {
    a.lossy_links = lossy_links(n, cells);
    if a.lossy_links.is_empty() {
        return;
    }
    let on_lossy = |c: &CellFigures| {
        a.lossy_links
            .iter()
            .any(|l| (l.a, l.b) == (c.from.min(c.to), c.from.max(c.to)))
    };
    let links = &a.lossy_links;
    let keep: Vec<bool> = a
        .slow_nodes
        .iter()
        .map(|s| {
            if !links.iter().any(|l| l.a == s.node || l.b == s.node) {
                return true;
            }
            let value = |c: &CellFigures| match s.metric.as_str() {
                "latency" => c.latency_ns(),
                _ => c.bits_per_s(),
            };
            let all: Vec<f64> = cells.iter().filter_map(value).collect();
            let rest: Vec<f64> = cells
                .iter()
                .filter(|c| (c.from == s.node || c.to == s.node) && !on_lossy(c))
                .filter_map(value)
                .collect();
            let (Some((all, _)), Some((rest, _))) = (median_mad(&all), median_mad(&rest)) else {
                return true;
            };
            // Larger is worse: latency as is, bandwidth by its shortfall.
            let worse = if s.metric == "latency" {
                rest / all - 1.0
            } else {
                1.0 - rest / all
            };
            worse > MIN_RELATIVE
        })
        .collect();
    let mut keep = keep.into_iter();
    a.slow_nodes.retain(|_| keep.next().unwrap_or(true));
}

#[cfg(test)]
#[path = "matrix_loss_tests.rs"]
mod tests;
