//! Whether the hosts, not the links, set a matrix's cells (issue 35 item
//! 3): on 2 vCPUs, gigabit cells reached 0.55-0.77 of their links'
//! goodput while the pairs of a round ran at once, and a node 20% slower
//! than its peers was invisible among them.
//!
//! # Rule
//!
//! Each cell's bandwidth is set against its link's TCP goodput limit (the
//! slower end's, from the nodes' fingerprints: shaped rate or negotiated
//! speed, MTU, framing; [`crate::sys::link_limit`]), and each measuring
//! agent says how busy its host's CPUs were while the cell streamed. When
//! the median cell reaches less than [`HOST_BOUND_LINK_SHARE`] of its
//! link while the median host is at least [`SATURATED_CPU_SHARE`] busy,
//! the rounds are host-bound: nothing is judged from them (their slow
//! nodes, slow links and asymmetric pairs are counted as unconfirmed),
//! and the nodes are judged from the cells measured alone after the
//! rounds (one cell per node as sender and one as receiver, the ring
//! k -> k+1), with the slow-node rule of [`super::matrix`]. A node whose
//! link is a fraction slower is then named, and the fingerprints say why.

use crate::result::matrix::{CellFigures, HostBound, MatrixAnalysis, MatrixNode};
use crate::stats::robust::median_mad;
use crate::sys::link_limit::IpVersion;

/// Median share of their links' goodput below which the cells are not
/// link figures (a healthy lab's cells reach 0.97-1.01 alone).
pub const HOST_BOUND_LINK_SHARE: f64 = 0.85;
/// Median share of the hosts' CPUs busy from which they count as
/// saturated.
pub const SATURATED_CPU_SHARE: f64 = 0.85;

/// The TCP goodput limit of data leaving `node` over the interface it
/// serves on, bits/s, when its fingerprint tells it.
fn node_limit_bits_per_s(node: &MatrixNode) -> Option<f64> {
    let iface = node.host.as_ref()?.interfaces.first()?;
    let limit = iface.link_limit(IpVersion::V4, true)?;
    Some(limit.goodput_mbit_per_s(iface.framing()) * 1e6)
}

/// The verdict on the rounds' `cells` among `nodes`, when they are
/// host-bound (`alone_cells` still 0).
pub fn host_bound(nodes: &[MatrixNode], cells: &[CellFigures]) -> Option<HostBound> {
    let (shares, busy) = shares(nodes, cells);
    if shares.len() < 2 {
        return None;
    }
    let (link_share, _) = median_mad(&shares)?;
    let (cpu_busy_share, _) = median_mad(&busy)?;
    (link_share < HOST_BOUND_LINK_SHARE && cpu_busy_share >= SATURATED_CPU_SHARE).then_some(
        HostBound {
            link_share,
            cpu_busy_share,
            cells: shares.len(),
            alone_cells: 0,
            alone_link_share: None,
        },
    )
}

/// Per cell of `cells` whose link limit and host's CPUs are known: its
/// bandwidth over its link's goodput limit, and its host's busy share.
fn shares(nodes: &[MatrixNode], cells: &[CellFigures]) -> (Vec<f64>, Vec<f64>) {
    let limits: Vec<Option<f64>> = nodes.iter().map(node_limit_bits_per_s).collect();
    let mut shares = Vec::new();
    let mut busy = Vec::new();
    for c in cells.iter().filter(|c| c.error.is_none()) {
        let (Some(bits), Some(cpu)) = (c.bits_per_s(), c.net().and_then(|n| n.cpu_busy_share))
        else {
            continue;
        };
        let from = limits.get(c.from).copied().flatten();
        let to = limits.get(c.to).copied().flatten();
        let Some(limit) = from.zip(to).map(|(a, b)| a.min(b)).filter(|l| *l > 0.0) else {
            continue;
        };
        shares.push(bits / limit);
        busy.push(cpu);
    }
    (shares, busy)
}

/// The cells to measure alone when the rounds were host-bound: the ring
/// k -> k+1 (each node once as sender, once as receiver).
pub fn ring(n: usize) -> Vec<(usize, usize)> {
    if n < 2 {
        return Vec::new();
    }
    (0..n).map(|k| (k, (k + 1) % n)).collect()
}

/// When the rounds (`cells`) were host-bound: record it in `a`, count the
/// findings judged from them as unconfirmed, and judge the nodes from the
/// cells measured alone (`again`). Whether it applied (the re-measures
/// then are this ring, not the confirmations of
/// [`super::matrix_confirm`]).
pub fn apply(
    a: &mut MatrixAnalysis,
    nodes: &[MatrixNode],
    cells: &[CellFigures],
    again: &[CellFigures],
) -> bool {
    let Some(mut verdict) = host_bound(nodes, cells) else {
        return false;
    };
    a.unconfirmed += a.slow_nodes.len()
        + a.outlier_cells
            .iter()
            .filter(|c| !c.explained_by_node)
            .count()
        + a.asymmetric_pairs.len();
    a.slow_nodes.clear();
    a.outlier_cells.clear();
    a.asymmetric_pairs.clear();
    let alone: Vec<CellFigures> = again
        .iter()
        .filter(|c| c.error.is_none() && c.bits_per_s().is_some())
        .cloned()
        .collect();
    verdict.alone_cells = alone.len();
    verdict.alone_link_share = median_mad(&shares(nodes, &alone).0).map(|m| m.0);
    a.slow_nodes = super::matrix::slow_bandwidth_nodes(nodes, &alone);
    a.host_bound = Some(verdict);
    true
}

#[cfg(test)]
#[path = "matrix_host_tests.rs"]
mod tests;

/// A node's link limit below this share of the other nodes' median is a
/// slower link worth naming.
pub const SLOWER_LINK_SHARE: f64 = 0.95;

/// Name the nodes on a link a fraction slower than their peers' (issue
/// 35: an 800 Mbit/s node among gigabit ones): the slow-node rule needs
/// 15% and a clean spread, which a 20% slower link in noisy cells misses.
/// The fingerprints say which node's link limit is below the others'
/// (by `1 - r`); the node is named, with that cause, when the median of
/// its cells (`touching`) is closer to the expected `r` times the other
/// cells' median than to equal. A node already named gets the cause.
pub fn by_link(
    nodes: &[MatrixNode],
    cells: &[CellFigures],
    touching: &[Vec<usize>],
    slow: &mut Vec<crate::result::matrix::SlowNode>,
) {
    let limits: Vec<Option<f64>> = nodes.iter().map(node_limit_bits_per_s).collect();
    if nodes.len() < 3 || touching.len() != nodes.len() {
        return;
    }
    let mut mine_mask = vec![false; cells.len()];
    for (k, mine_idx) in touching.iter().enumerate() {
        let Some(limit) = limits[k] else { continue };
        let others: Vec<f64> = limits
            .iter()
            .enumerate()
            .filter(|&(i, _)| i != k)
            .filter_map(|(_, l)| *l)
            .collect();
        let Some((others_limit, _)) = median_mad(&others) else {
            continue;
        };
        let expected = limit / others_limit;
        if expected >= SLOWER_LINK_SHARE {
            continue;
        }
        for &i in mine_idx {
            mine_mask[i] = true;
        }
        let value = |c: &CellFigures| c.bits_per_s().filter(|_| c.error.is_none());
        let mine: Vec<f64> = mine_idx.iter().filter_map(|&i| value(&cells[i])).collect();
        let rest: Vec<f64> = cells
            .iter()
            .zip(&mine_mask)
            .filter(|(_, &m)| !m)
            .filter_map(|(c, _)| value(c))
            .collect();
        for &i in mine_idx {
            mine_mask[i] = false;
        }
        let (Some((m_mine, _)), Some((m_rest, _))) = (median_mad(&mine), median_mad(&rest)) else {
            continue;
        };
        let midpoint = m_rest * (1.0 + expected) / 2.0;
        let cause = cause_of(nodes, k, limit, others_limit);
        if let Some(s) = slow
            .iter_mut()
            .find(|s| s.node == k && s.metric == "bandwidth")
        {
            s.cause = Some(cause);
            continue;
        }
        if m_mine < midpoint {
            slow.push(crate::result::matrix::SlowNode {
                node: k,
                metric: "bandwidth".into(),
                value: m_mine,
                median: m_rest,
                share_outlying: mine.iter().filter(|&&v| v < midpoint).count() as f64
                    / mine.len() as f64,
                cause: Some(cause),
            });
        }
    }
}

/// The words of a slower link's cause: the fingerprint field that sets
/// it and the goodput limits.
fn cause_of(nodes: &[MatrixNode], k: usize, limit: f64, others: f64) -> String {
    let iface = nodes[k].host.as_ref().and_then(|h| h.interfaces.first());
    let field = match iface {
        Some(i) if i.is_shaped() => format!(
            "interfaces[0].shaped_rate_bits_per_s {}",
            i.shaped_rate_bits_per_s.unwrap_or(0)
        ),
        Some(i) => format!(
            "interfaces[0].speed_mbit_per_s {} (mtu {})",
            i.speed_mbit_per_s.unwrap_or(0),
            i.mtu_bytes.unwrap_or(0)
        ),
        None => "its link".to_string(),
    };
    format!(
        "its link: {field}, a TCP goodput limit of {:.1} Mbit/s against {:.1} on the other nodes",
        limit / 1e6,
        others / 1e6
    )
}

/// On hosts whose CPUs were saturated while the rounds ran (the median
/// cell's host at least [`SATURATED_CPU_SHARE`] busy), a node's slower
/// ping-pongs are its scheduling, not its link: a node slow by latency, a
/// link slow by latency or a pair asymmetric by latency is then not named
/// from the contended cells (each counts as unconfirmed), since a
/// re-measure on the same saturated hosts waits for the same CPUs. Seen on
/// the 2-vCPU development machine: a healthy node named "slow" at 22 us
/// against 10 us in one of two runs of the same lab; a healthy 4-node fe
/// lab beside stress-ng (load 9, hosts 100% busy) named three slow links
/// at 19.5-22.1 us against a median of 15.4 us, re-measures confirming.
pub fn latency_on_busy_hosts(a: &mut MatrixAnalysis, cells: &[CellFigures]) {
    let busy: Vec<f64> = cells
        .iter()
        .filter_map(|c| c.net().and_then(|n| n.cpu_busy_share))
        .collect();
    let saturated = median_mad(&busy).is_some_and(|(m, _)| m >= SATURATED_CPU_SHARE);
    if !saturated {
        return;
    }
    let before = a.slow_nodes.len() + a.outlier_cells.len() + a.asymmetric_pairs.len();
    a.slow_nodes.retain(|s| s.metric != "latency");
    // A latency cell a slow node explains goes with the node.
    a.outlier_cells.retain(|c| c.metric != "latency");
    a.asymmetric_pairs.retain(|p| p.metric != "latency");
    let after = a.slow_nodes.len() + a.outlier_cells.len() + a.asymmetric_pairs.len();
    a.unconfirmed += before - after;
}
