//! What a link matrix says: the slow nodes, the slow single links, the
//! asymmetric pairs, and the fingerprint fields that differ between nodes
//! (the usual cause). Pure functions of the cells and the nodes.
//!
//! # Rules
//!
//! Each metric is judged so that larger is worse: latency as measured,
//! bandwidth by its shortfall. Statistics are the median and scaled MAD,
//! and a value counts as outlying when its modified z score exceeds 3.5
//! ([`crate::stats::robust`]) *and* it is more than [`MIN_RELATIVE`] worse
//! than the median (the MAD of near-identical links can be tiny; a few
//! percent is not a bad link).
//!
//! * **Slow node**: with every cell touching node k in one set and every
//!   other cell in the reference set, node k is slow when the median of
//!   its cells is outlying against the reference and at least
//!   [`SLOW_NODE_SHARE`] of its cells are. A global median cannot do this
//!   on a small cluster: one slow node of four touches half the cells.
//!   From [`EXACT_REFERENCE_NODES`] nodes on, a node touches 2/N of the
//!   cells or less (under 1.6%), and the reference is all cells: the
//!   median and MAD move by less than that share of ranks, and the
//!   analysis stays O(cells) instead of O(N x cells) (a 1,000-node matrix
//!   would otherwise sort a million values a thousand times per metric).
//! * **Outlying cell**: outlying against the cells that touch no slow node;
//!   a cell touching a slow node is marked as explained by it, the others
//!   are slow single links.
//! * **Asymmetric pair**: both directions measured, their medians'
//!   confidence intervals apart, and the larger over the smaller beyond
//!   [`ASYMMETRY_RATIO`] (latency: twice that, as a
//!   ping-pong's two directions share one round trip and differ only by
//!   noise and the ends' load).
//! * **Fingerprint differences**: every field of the nodes' fingerprints,
//!   flattened to dotted paths, whose value is not the same on all nodes,
//!   leaving out what always differs (host name, load, boot id).

use std::collections::BTreeMap;

use crate::result::matrix::Pattern;
use crate::result::matrix::{
    AsymmetricPair, CellFigures, FieldValue, FingerprintDifference, MatrixAnalysis, MatrixNode,
    NodeContention, NodeSummary, OutlierCell, SlowNode, Spread, StepSummary,
};
use crate::stats::robust::{median_mad, z_score, OUTLIER_Z};

/// Least relative shortfall of an outlying value.
pub const MIN_RELATIVE: f64 = 0.15;
/// Share of a node's cells that must be outlying for the node to be slow.
pub const SLOW_NODE_SHARE: f64 = 0.75;
/// Bandwidth ratio between a pair's directions that makes it asymmetric.
pub const ASYMMETRY_RATIO: f64 = 1.3;
/// Nodes from which a node's reference set is all cells, not the cells
/// that do not touch it (see the module's rules).
pub const EXACT_REFERENCE_NODES: usize = 128;
/// Fingerprint fields that differ on every machine by nature.
const NOT_COMPARED: &[&str] = &[
    "hostname",
    "load_before",
    "load_after",
    "boot_id",
    "path_crosses_interface",
];

/// A metric of the cells.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Metric {
    Latency,
    Bandwidth,
}

impl Metric {
    fn name(self) -> &'static str {
        match self {
            Metric::Latency => "latency",
            Metric::Bandwidth => "bandwidth",
        }
    }

    fn value(self, c: &CellFigures) -> Option<f64> {
        match self {
            Metric::Latency => c.latency_ns(),
            Metric::Bandwidth => c.bits_per_s(),
        }
    }

    /// Signed so that positive is worse.
    fn badness(self, value: f64, median: f64, mad: f64) -> f64 {
        let z = z_score(value, median, mad, MIN_RELATIVE / OUTLIER_Z);
        match self {
            Metric::Latency => z,
            Metric::Bandwidth => -z,
        }
    }

    fn outlying(self, value: f64, median: f64, mad: f64) -> bool {
        let relative = match self {
            Metric::Latency => value / median - 1.0,
            Metric::Bandwidth => 1.0 - value / median,
        };
        relative > MIN_RELATIVE && self.badness(value, median, mad) > OUTLIER_Z
    }
}

/// Analyse a matrix measured with `pattern`: the rules above, and for the
/// load patterns the per-step aggregates ([`step_summaries`]). Multipair
/// steps repeat the same few pairs, so they are summarised per step only.
pub fn analyse_pattern(
    pattern: Pattern,
    nodes: &[MatrixNode],
    cells: &[CellFigures],
) -> MatrixAnalysis {
    analyse_pattern_with(pattern, nodes, cells, Confirmation::WhenRemeasured)
}

/// What a run's analysis does with a finding whose cells were never
/// measured again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Confirmation {
    /// It stands as found (cells read from a file of a wulf that did not
    /// re-measure, or built by hand).
    WhenRemeasured,
    /// It is unconfirmed and nothing is named from it: a run that
    /// re-measures its suspicious cells and could not (the budget spent,
    /// an interrupt) names only what a re-measure confirmed (issue 44: a
    /// healthy fe lab named 2-3 links from cells cut at their deadline).
    Required,
}

/// [`analyse_pattern`] with the rule for findings never measured again.
pub fn analyse_pattern_with(
    pattern: Pattern,
    nodes: &[MatrixNode],
    cells: &[CellFigures],
    confirmation: Confirmation,
) -> MatrixAnalysis {
    // Only a pairs run re-measures its suspicious cells.
    let confirmation = if pattern == Pattern::Pairs {
        confirmation
    } else {
        Confirmation::WhenRemeasured
    };
    let analyse =
        |nodes: &[MatrixNode], cells: &[CellFigures]| analyse_with(nodes, cells, confirmation);
    match pattern {
        Pattern::Pairs => analyse(nodes, cells),
        Pattern::Multipair => MatrixAnalysis {
            fingerprint_differences: fingerprint_differences(nodes),
            steps: step_summaries(cells),
            ..MatrixAnalysis::default()
        },
        Pattern::Shift | Pattern::Bisection => MatrixAnalysis {
            steps: step_summaries(cells),
            contention: contention(nodes.len(), cells),
            ..analyse(nodes, cells)
        },
    }
}

/// What the cells of each step achieved together.
pub fn step_summaries(cells: &[CellFigures]) -> Vec<StepSummary> {
    let mut by_step: BTreeMap<usize, Vec<&CellFigures>> = BTreeMap::new();
    for c in cells {
        by_step.entry(c.round as usize).or_default().push(c);
    }
    // A sum over the pairs that have the figure; none when none has it.
    let total = |cs: &[&CellFigures], f: fn(&CellFigures) -> Option<f64>| {
        let v: Vec<f64> = cs.iter().filter_map(|c| f(c)).collect();
        (!v.is_empty()).then(|| v.iter().sum())
    };
    by_step
        .into_iter()
        .map(|(step, cs)| {
            let bw: Vec<f64> = cs.iter().filter_map(|c| c.bits_per_s()).collect();
            StepSummary {
                step,
                pairs: cs.len(),
                aggregate_bits_per_s: bw.iter().sum(),
                min_bits_per_s: bw
                    .iter()
                    .copied()
                    .fold(f64::INFINITY, f64::min)
                    .min(f64::MAX),
                median_bits_per_s: median_mad(&bw).map_or(0.0, |m| m.0),
                pingpong_rate_per_s: cs
                    .iter()
                    .filter_map(|c| c.latency_ns())
                    .map(|ns| 1e9 / (2.0 * ns))
                    .sum(),
                rate_messages_per_s: total(&cs, |c| c.load().rate_messages_per_s),
                rate_bits_per_s: total(&cs, |c| c.load().rate_bits_per_s),
                alone_median_bits_per_s: {
                    let alone: Vec<f64> = cs
                        .iter()
                        .filter_map(|c| c.load().alone_bits_per_s)
                        .collect();
                    median_mad(&alone).map(|m| m.0)
                },
            }
        })
        .collect()
}

/// Each node's bandwidth as a sender under a load pattern against the
/// same cells alone (medians of the cells that have both); empty when no
/// cell was measured alone.
pub fn contention(n: usize, cells: &[CellFigures]) -> Vec<NodeContention> {
    let mut by_node: Vec<(Vec<f64>, Vec<f64>)> = vec![(Vec::new(), Vec::new()); n];
    for c in cells {
        if let (Some(loaded), Some(alone), Some(node)) = (
            c.bits_per_s(),
            c.load().alone_bits_per_s,
            by_node.get_mut(c.from),
        ) {
            node.0.push(loaded);
            node.1.push(alone);
        }
    }
    by_node
        .iter()
        .enumerate()
        .filter_map(|(node, (loaded, alone))| {
            let (loaded, alone) = (median_mad(loaded)?.0, median_mad(alone)?.0);
            (alone > 0.0).then(|| NodeContention {
                node,
                loaded_bits_per_s: loaded,
                alone_bits_per_s: alone,
                kept: loaded / alone,
            })
        })
        .collect()
}

/// Analyse a matrix (a finding never measured again stands as found).
pub fn analyse(nodes: &[MatrixNode], cells: &[CellFigures]) -> MatrixAnalysis {
    analyse_with(nodes, cells, Confirmation::WhenRemeasured)
}

/// Analyse a matrix, with `confirmation`'s rule for findings whose cells
/// were never measured again.
pub fn analyse_with(
    nodes: &[MatrixNode],
    cells: &[CellFigures],
    confirmation: Confirmation,
) -> MatrixAnalysis {
    // Cells between two processes of one machine (`--ppn`) measure no
    // link: a node is judged by its inter-node cells alone.
    let several_per_host = nodes.iter().any(|x| x.machine.is_some());
    let inter: std::borrow::Cow<[CellFigures]> = if several_per_host {
        cells
            .iter()
            .filter(|c| !crate::result::matrix::intra_node(nodes, c.from, c.to))
            .cloned()
            .collect::<Vec<_>>()
            .into()
    } else {
        cells.into()
    };
    // The rounds' cells are judged; their re-measures alone confirm.
    let (cells, again) = super::matrix_confirm::split(&inter);
    let mut a = MatrixAnalysis {
        fingerprint_differences: fingerprint_differences(nodes),
        ..MatrixAnalysis::default()
    };
    let touching = touching(nodes.len(), cells);
    for metric in [Metric::Latency, Metric::Bandwidth] {
        let values: Vec<f64> = cells.iter().filter_map(|c| metric.value(c)).collect();
        let spread = median_mad(&values).map(|(median, mad)| Spread {
            median,
            mad,
            cells: values.len(),
        });
        match metric {
            Metric::Latency => a.latency = spread,
            Metric::Bandwidth => a.bandwidth = spread,
        }
        let mut slow = slow_nodes(cells, &touching, metric, spread);
        if metric == Metric::Bandwidth {
            // A node on a link a fraction slower, by its fingerprint.
            super::matrix_host::by_link(nodes, cells, &touching, &mut slow);
        }
        a.outlier_cells
            .extend(outlier_cells(nodes.len(), cells, metric, &slow));
        a.slow_nodes.extend(slow);
        a.asymmetric_pairs.extend(asymmetric_pairs(cells, metric));
    }
    a.outlier_cells.sort_by(|x, y| y.score.total_cmp(&x.score));
    // A host's counters are its network namespace's: with several
    // processes per host (`--ppn`) a cell's retransmissions are also its
    // neighbours', measuring at once over the same link, and name no link.
    if !several_per_host {
        super::matrix_loss::apply(&mut a, nodes.len(), cells);
    }
    // Host-bound rounds are judged from the cells measured alone instead.
    if !super::matrix_host::apply(&mut a, nodes, cells, again) {
        super::matrix_confirm::apply(&mut a, again, confirmation == Confirmation::Required);
    }
    super::matrix_host::latency_on_busy_hosts(&mut a, cells);
    a.node_summary = touching
        .iter()
        .enumerate()
        .map(|(k, mine)| {
            let med = |m: Metric| {
                let v: Vec<f64> = mine.iter().filter_map(|&i| m.value(&cells[i])).collect();
                median_mad(&v).map(|x| x.0)
            };
            // mpiGraph's two views: what the node sent, what it received.
            let way = |sent: bool| {
                let v: Vec<f64> = mine
                    .iter()
                    .filter(|&&i| (cells[i].from == k) == sent)
                    .filter_map(|&i| cells[i].bits_per_s())
                    .collect();
                median_mad(&v).map(|x| x.0)
            };
            NodeSummary {
                node: k,
                latency_ns: med(Metric::Latency),
                bits_per_s: med(Metric::Bandwidth),
                failed_cells: mine.iter().filter(|&&i| cells[i].error.is_some()).count(),
                sent_bits_per_s: way(true),
                received_bits_per_s: way(false),
            }
        })
        .collect();
    a
}

/// The slow nodes by bandwidth among `n` nodes from `cells` alone (the
/// ring measured alone when the rounds were host-bound,
/// [`super::matrix_host`]).
pub(super) fn slow_bandwidth_nodes(nodes: &[MatrixNode], cells: &[CellFigures]) -> Vec<SlowNode> {
    let values: Vec<f64> = cells.iter().filter_map(CellFigures::bits_per_s).collect();
    let spread = median_mad(&values).map(|(median, mad)| Spread {
        median,
        mad,
        cells: values.len(),
    });
    let touching = touching(nodes.len(), cells);
    let mut slow = slow_nodes(cells, &touching, Metric::Bandwidth, spread);
    super::matrix_host::by_link(nodes, cells, &touching, &mut slow);
    slow
}

/// The indices of the cells touching each of `n` nodes: one pass, so
/// that per-node figures cost O(cells) in all, not O(N x cells).
fn touching(n: usize, cells: &[CellFigures]) -> Vec<Vec<usize>> {
    let mut by_node = vec![Vec::new(); n];
    for (i, c) in cells.iter().enumerate() {
        if let Some(v) = by_node.get_mut(c.from) {
            v.push(i);
        }
        if c.to != c.from {
            if let Some(v) = by_node.get_mut(c.to) {
                v.push(i);
            }
        }
    }
    by_node
}

fn slow_nodes(
    cells: &[CellFigures],
    touching: &[Vec<usize>],
    metric: Metric,
    all: Option<Spread>,
) -> Vec<SlowNode> {
    let n = touching.len();
    // Three nodes at least: with two, every cell touches both.
    if n < 3 {
        return Vec::new();
    }
    let mut out = Vec::new();
    let mut mine_mask = vec![false; cells.len()];
    for (k, mine_idx) in touching.iter().enumerate() {
        let mine: Vec<f64> = mine_idx
            .iter()
            .filter_map(|&i| metric.value(&cells[i]))
            .collect();
        let reference = if n < EXACT_REFERENCE_NODES {
            for &i in mine_idx {
                mine_mask[i] = true;
            }
            let others: Vec<f64> = cells
                .iter()
                .zip(&mine_mask)
                .filter(|(_, &m)| !m)
                .filter_map(|(c, _)| metric.value(c))
                .collect();
            for &i in mine_idx {
                mine_mask[i] = false;
            }
            median_mad(&others)
        } else {
            all.map(|s| (s.median, s.mad))
        };
        let (Some((m_mine, _)), Some((median, mad))) = (median_mad(&mine), reference) else {
            continue;
        };
        let outlying = mine
            .iter()
            .filter(|&&v| metric.outlying(v, median, mad))
            .count();
        let share = outlying as f64 / mine.len() as f64;
        if metric.outlying(m_mine, median, mad) && share >= SLOW_NODE_SHARE {
            out.push(SlowNode {
                node: k,
                metric: metric.name().into(),
                value: m_mine,
                median,
                share_outlying: share,
                cause: None,
            });
        }
    }
    out
}

fn outlier_cells(
    n: usize,
    cells: &[CellFigures],
    metric: Metric,
    slow: &[SlowNode],
) -> Vec<OutlierCell> {
    let mut is_slow = vec![false; n];
    for s in slow {
        is_slow[s.node] = true;
    }
    let slow_node = |k: usize| is_slow.get(k).copied().unwrap_or(false);
    let touches_slow = |c: &CellFigures| slow_node(c.from) || slow_node(c.to);
    let reference: Vec<f64> = cells
        .iter()
        .filter(|c| !touches_slow(c))
        .filter_map(|c| metric.value(c))
        .collect();
    // Too few healthy cells to tell a bad one from the rest.
    if reference.len() < 3 {
        return Vec::new();
    }
    let Some((median, mad)) = median_mad(&reference) else {
        return Vec::new();
    };
    cells
        .iter()
        .filter_map(|c| {
            let v = metric.value(c)?;
            metric.outlying(v, median, mad).then(|| OutlierCell {
                from: c.from,
                to: c.to,
                metric: metric.name().into(),
                value: v,
                median,
                score: metric.badness(v, median, mad),
                explained_by_node: touches_slow(c),
            })
        })
        .collect()
}

fn asymmetric_pairs(cells: &[CellFigures], metric: Metric) -> Vec<AsymmetricPair> {
    // Value and confidence interval of the median's time, per direction.
    type Seen = Option<(f64, f64, f64)>;
    let mut by_pair: BTreeMap<(usize, usize), [Seen; 2]> = BTreeMap::new();
    for c in cells {
        let point = match metric {
            Metric::Latency => c.latency,
            Metric::Bandwidth => c.bandwidth,
        };
        let (Some(v), Some(p)) = (metric.value(c), point) else {
            continue;
        };
        let key = (c.from.min(c.to), c.from.max(c.to));
        by_pair.entry(key).or_default()[usize::from(c.from > c.to)] =
            Some((v, p.ci_low_ns, p.ci_high_ns));
    }
    let limit = match metric {
        Metric::Latency => 2.0 * ASYMMETRY_RATIO,
        Metric::Bandwidth => ASYMMETRY_RATIO,
    };
    by_pair
        .into_iter()
        .filter_map(|((a, b), [ab, ba])| {
            let ((ab, ab_lo, ab_hi), (ba, ba_lo, ba_hi)) = (ab?, ba?);
            let ratio = ab.max(ba) / ab.min(ba);
            // Overlapping intervals: the difference may be noise.
            let apart = ab_hi < ba_lo || ba_hi < ab_lo;
            (ratio > limit && apart).then(|| AsymmetricPair {
                a,
                b,
                metric: metric.name().into(),
                a_to_b: ab,
                b_to_a: ba,
                ratio,
            })
        })
        .collect()
}

/// Fields of the nodes' fingerprints that are not the same everywhere.
pub fn fingerprint_differences(nodes: &[MatrixNode]) -> Vec<FingerprintDifference> {
    let mut fields: BTreeMap<String, BTreeMap<String, Vec<usize>>> = BTreeMap::new();
    let with_host: Vec<(usize, serde_json::Value)> = nodes
        .iter()
        .enumerate()
        .filter_map(|(i, n)| Some((i, serde_json::to_value(n.host.as_ref()?).ok()?)))
        .collect();
    for (i, v) in &with_host {
        let mut flat = Vec::new();
        flatten("", v, &mut flat);
        for (path, value) in flat {
            fields
                .entry(path)
                .or_default()
                .entry(value)
                .or_default()
                .push(*i);
        }
    }
    fields
        .into_iter()
        .filter_map(|(field, values)| {
            // A field some nodes lack counts as differing too.
            let present: usize = values.values().map(Vec::len).sum();
            if values.len() < 2 && present == with_host.len() {
                return None;
            }
            let mut values: Vec<FieldValue> = values
                .into_iter()
                .map(|(value, nodes)| FieldValue { value, nodes })
                .collect();
            values.sort_by_key(|v| std::cmp::Reverse(v.nodes.len()));
            Some(FingerprintDifference { field, values })
        })
        .collect()
}

fn flatten(prefix: &str, v: &serde_json::Value, out: &mut Vec<(String, String)>) {
    match v {
        serde_json::Value::Object(map) => {
            for (k, x) in map {
                if prefix.is_empty() && NOT_COMPARED.contains(&k.as_str()) {
                    continue;
                }
                let path = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                flatten(&path, x, out);
            }
        }
        serde_json::Value::Array(items) => {
            for (i, x) in items.iter().enumerate() {
                flatten(&format!("{prefix}[{i}]"), x, out);
            }
        }
        serde_json::Value::Null => {}
        other => out.push((prefix.to_string(), other.to_string())),
    }
}

#[cfg(test)]
#[path = "matrix_tests.rs"]
mod tests;
