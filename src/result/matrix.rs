//! The result of `wulf matrix` (kind `matrix`): every pair of nodes
//! measured in both directions, latency and bandwidth, with every trial.
//!
//! Cells are directed: `from` measured against a server on `to` (the
//! ping-pong's one-way time is symmetric by construction; the stream's
//! bandwidth is `from` sending to `to`). Each node's fingerprint is stored
//! once, not per cell, so the file grows with the number of cells and the
//! trials they keep, not with N² fingerprints. The analysis (outliers,
//! slow nodes, asymmetric pairs, fingerprint differences) is stored too,
//! so a report draws it without recomputing; it is a pure function of the
//! cells and nodes ([`crate::analysis::matrix`]).

use serde::{Deserialize, Serialize};

pub use super::matrix_figures::{
    figures_of, CellFigures, Figure, LoadFigures, MatrixFigures, CELL_FIGURES_MAX_BYTES,
};
use super::Point;
use crate::sys::Host;

/// Version of the matrix schema.
pub const MATRIX_SCHEMA_VERSION: u32 = 5;
/// Oldest matrix schema this wulf reads (version 2 added optional fields:
/// `cells[].rate`, `cells[].alone_bandwidth`, `analysis.contention` and
/// three optional figures of `analysis.steps[]`; version 3 the optional
/// `cells[].net`, `cells[].remeasure`, `analysis.lossy_links` and
/// `analysis.unconfirmed`, then `budget_s` and `seed`; version 4 the
/// optional `nodes[].machine`, `cells[].intra_node`, `cells[].cut` and
/// `analysis.node_summary[].sent_bits_per_s` / `received_bits_per_s`;
/// version 5 the optional `cells[].net.dsack_segs` and
/// `analysis.lossy_links[].spurious_segs`, and `retrans_share` counts
/// only the retransmissions not reported as duplicates).
pub const MATRIX_OLDEST_SCHEMA_VERSION: u32 = 1;

/// The value of [`MatrixResult::kind`].
pub const MATRIX_KIND: &str = "matrix";

/// What a matrix run measures at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Pattern {
    /// Every pair, both directions: the tournament's rounds (LinkTest).
    Pairs,
    /// Step k: every node i sends to node i+k (mod N) at once (mpiGraph).
    Shift,
    /// The first half of the nodes to the second half at once, then back.
    Bisection,
    /// Step k: k disjoint pairs stream at once, k = 1 .. N/2 (OSU's
    /// osu_mbw_mr): how the aggregate grows with the pairs.
    Multipair,
}

super::envelope::result_document! {
    /// One `wulf matrix` run.
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
    #[serde(deny_unknown_fields)]
    pub struct MatrixResult {
        envelope {
            /// Always [`MATRIX_KIND`].
            kind,
            /// [`MATRIX_SCHEMA_VERSION`].
            schema_version,
            /// Version of the wulf that ran it (every agent runs the same).
            tool_version,
            /// False when cut short (Ctrl-C, a node lost): the cells present are
            /// complete, the missing ones are listed in `cells` with an error or
            /// absent.
            complete,
            /// Wall time of the whole matrix, seconds.
            wall_s,
        }
        /// Time spent in the measuring rounds alone, seconds (wall time less
        /// start-up and analysis): `wall_s - rounds_s` is coordination.
        pub rounds_s: f64,
        /// CPU time the coordinating process used, seconds (user + system).
        pub coordinator_cpu_s: f64,
        /// Transport between the nodes (`tcp`).
        pub via: String,
        /// How the agents were started (`ssh`, `lab:NAME`, `slurm`, `local`).
        pub launch: String,
        /// Ping-pong size of the latency matrix, bytes.
        pub latency_bytes: u64,
        /// Stream size of the bandwidth matrix, bytes.
        pub bandwidth_bytes: u64,
        /// Pairs measured one at a time (`--serial`) rather than a whole round
        /// at once.
        pub serial: bool,
        /// What was measured at once: `pairs` (the tournament), `shift`,
        /// `bisection` or `multipair`.
        #[serde(default = "pairs")]
        pub pattern: Pattern,
        /// Rounds of the tournament (pairs), or steps of the other patterns;
        /// cells name theirs in `round`.
        pub rounds: usize,
        /// The nodes, in the order given; cells refer to them by index.
        pub nodes: Vec<MatrixNode>,
        /// Every directed cell measured or tried.
        #[serde(deserialize_with = "super::matrix_read::cells")]
        pub cells: Vec<MatrixCell>,
        /// What the cells say (see [`crate::analysis::matrix`]).
        pub analysis: MatrixAnalysis,
        /// Non-fatal observations.
        #[serde(default)]
        pub warnings: Vec<String>,
        /// `--budget`, seconds: the rounds, the pairs alone and the
        /// re-measures together, kept within 1.2 x (`rounds_s`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub budget_s: Option<f64>,
        /// Seed of the random order of the rounds (`--seed` repeats it).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub seed: Option<u64>,
    }
}

fn pairs() -> Pattern {
    Pattern::Pairs
}

/// One node of a matrix.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MatrixNode {
    /// The name it was given as (`--hosts`).
    pub name: String,
    /// The address its agent served on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub address: Option<String>,
    /// Its fingerprint, as its agent read it (interfaces toward the
    /// coordinator).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<Host>,
    /// Why the node is missing or was lost, when it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The host this process ran on, when the matrix ran several
    /// processes per host (`--ppn`; `name` is then `HOST/K`, K its local
    /// rank): cells between two processes of one machine are intra-node.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine: Option<String>,
}

impl MatrixNode {
    /// A node named `name` (a host, or `HOST/K` for one of several
    /// processes per host), nothing else known yet.
    pub fn named(name: &str) -> MatrixNode {
        MatrixNode {
            name: name.to_string(),
            address: None,
            host: None,
            error: None,
            machine: name.split_once('/').map(|(host, _)| host.to_string()),
        }
    }
}

/// Whether nodes `a` and `b` are two processes of one machine (`--ppn`):
/// their cells measure no link, and are kept out of the link findings.
pub fn intra_node(nodes: &[MatrixNode], a: usize, b: usize) -> bool {
    match (nodes.get(a), nodes.get(b)) {
        (Some(x), Some(y)) => x.machine.is_some() && x.machine == y.machine,
        _ => false,
    }
}

/// One directed cell.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MatrixCell {
    /// Index of the measuring node.
    pub from: usize,
    /// Index of the node it measured against.
    pub to: usize,
    /// Tournament round (0-based).
    pub round: usize,
    /// The ping-pong point at `latency_bytes` (one-way time).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency: Option<Point>,
    /// The stream point at `bandwidth_bytes`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bandwidth: Option<Point>,
    /// A stream at `latency_bytes`: the small-message rate (the
    /// `multipair` pattern, as OSU's osu_mbw_mr).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<Point>,
    /// The stream at `bandwidth_bytes` again with no other pair at work,
    /// right after the cell's step (the `shift` and `bisection` patterns):
    /// what the pair gives alone, against `bandwidth` under the pattern.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alone_bandwidth: Option<Point>,
    /// Why the cell failed, when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Time the measuring agent spent on the cell (both sweeps with their
    /// set-up), seconds: a round lasts as long as its slowest cell, and
    /// what the rounds took beyond that is coordination.
    #[serde(default)]
    pub measure_s: f64,
    /// The measuring node's TCP and interface counters over the cell: a
    /// lossy link shows as retransmitted segments (absent when the node
    /// could not read them, and in results before schema 3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub net: Option<CellNet>,
    /// A suspicious cell measured again alone, after the rounds: the
    /// finding stands only when this confirms it (`pairs`; a re-measure
    /// follows every cell of the rounds in the file).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub remeasure: bool,
    /// Both ends are processes of one machine (`--ppn`): the cell measured
    /// no link, and no link finding rests on it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub intra_node: bool,
    /// The cell was cut at its deadline (a lossy link, a loaded host): its
    /// sweeps stopped with the trials measured so far, which it keeps; a
    /// part that had none is absent. Partial, not failed.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cut: bool,
}

/// What the measuring node's kernel counted over one cell (its network
/// namespace's counters, after minus before; on a lab node, that node's
/// traffic alone; on a shared host, everything it sent meanwhile).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CellNet {
    /// TCP segments sent.
    pub out_segs: u64,
    /// TCP segments retransmitted.
    pub retrans_segs: u64,
    /// Retransmitted segments the receiver reported as received twice
    /// (D-SACK): spurious retransmissions after a late ACK (a preempted
    /// receiver on a busy host), not losses.
    #[serde(default)]
    pub dsack_segs: u64,
    /// Drops and errors of the node's interfaces (loopback excluded).
    #[serde(default)]
    pub interface_drops: u64,
    /// Share (0 to 1) of all the measuring host's CPUs busy while the
    /// cell streamed (`/proc/stat`: user, nice, system, irq, softirq over
    /// all ticks): near 1, the host, not the link, may set the cell.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_busy_share: Option<f64>,
}

impl CellNet {
    /// Segments retransmitted and not reported as duplicates: the
    /// losses.
    pub fn lost_segs(&self) -> u64 {
        self.retrans_segs.saturating_sub(self.dsack_segs)
    }

    /// The share of segments lost (0 to 1), when any were sent.
    pub fn lost_share(&self) -> Option<f64> {
        (self.out_segs > 0).then(|| self.lost_segs() as f64 / self.out_segs as f64)
    }
}

impl MatrixCell {
    /// Median one-way latency, ns.
    pub fn latency_ns(&self) -> Option<f64> {
        self.latency.as_ref().map(|p| p.median_ns)
    }

    /// Median bandwidth, bits/s.
    pub fn bits_per_s(&self) -> Option<f64> {
        self.bandwidth.as_ref().map(|p| p.bits_per_s)
    }
}

/// The findings of a matrix.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MatrixAnalysis {
    /// Median and spread of all cells, per metric.
    pub latency: Option<Spread>,
    /// Bandwidth over all cells.
    pub bandwidth: Option<Spread>,
    /// Cells far from the rest, worst first.
    pub outlier_cells: Vec<OutlierCell>,
    /// Nodes whose every link is slow: the node, not one link, is the cause.
    pub slow_nodes: Vec<SlowNode>,
    /// Pairs whose two directions differ much more than cells do.
    pub asymmetric_pairs: Vec<AsymmetricPair>,
    /// Fingerprint fields that are not the same on every node.
    pub fingerprint_differences: Vec<FingerprintDifference>,
    /// Per-node medians of its cells (both directions), in node order.
    pub node_summary: Vec<NodeSummary>,
    /// Per step of a load pattern (shift, bisection, multipair): what the
    /// pairs measuring at once achieved together. Empty for `pairs`.
    #[serde(default)]
    pub steps: Vec<StepSummary>,
    /// Per node, its bandwidth as a sender under the load pattern against
    /// the same pairs alone (shift and bisection with the pairs also
    /// measured alone). Empty otherwise.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub contention: Vec<NodeContention>,
    /// Links whose cells retransmitted far more than the other cells of
    /// both their nodes: their loss, not the nodes, is named as the cause.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lossy_links: Vec<LossyLink>,
    /// Findings of the rounds (slow links, asymmetric pairs) that their
    /// cells' re-measures alone did not confirm, and so are not listed.
    #[serde(default)]
    pub unconfirmed: usize,
    /// Set when the hosts, not the links, limited the rounds: cells well
    /// below their links' goodput while the hosts' CPUs were saturated.
    /// Nodes are then judged from cells measured alone, never from the
    /// contended ones.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_bound: Option<HostBound>,
}

/// The verdict that the hosts limited a matrix's rounds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HostBound {
    /// Median over the rounds' cells of each cell's bandwidth over its
    /// link's TCP goodput limit (the slower end's, from the fingerprints).
    pub link_share: f64,
    /// Median share of the measuring hosts' CPUs busy during those cells.
    pub cpu_busy_share: f64,
    /// Cells the two medians rest on.
    pub cells: usize,
    /// Cells measured alone (one pair at a time) after the rounds, from
    /// which the nodes were judged; 0 when the budget left none.
    pub alone_cells: usize,
    /// Median share of their links' goodput the cells alone reached:
    /// below [`crate::analysis::matrix_host::HOST_BOUND_LINK_SHARE`], the
    /// host limits even one pair, and a link slower by less than that is
    /// out of sight.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alone_link_share: Option<f64>,
}

/// A link that loses segments while the other links of both its nodes do
/// not.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LossyLink {
    /// One node index (the lower).
    pub a: usize,
    /// The other node index.
    pub b: usize,
    /// Segments lost (retransmitted and not reported as duplicates) over
    /// segments sent, both directions' cells together.
    pub retrans_share: f64,
    /// Segments retransmitted, both directions.
    pub retrans_segs: u64,
    /// Of those, the segments the receivers reported as duplicates
    /// (D-SACK): spurious, left out of the share (version 5).
    #[serde(default)]
    pub spurious_segs: u64,
    /// Segments sent, both directions.
    pub out_segs: u64,
    /// The interfaces' drops and errors the two ends counted over the
    /// link's cells.
    pub interface_drops: u64,
    /// The largest share among the other cells of its two nodes.
    pub others_share: f64,
}

/// One node's bandwidth under a load pattern against alone.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NodeContention {
    /// Node index.
    pub node: usize,
    /// Median bandwidth of its cells as a sender under the pattern, bits/s.
    pub loaded_bits_per_s: f64,
    /// Median bandwidth of the same cells alone, bits/s.
    pub alone_bits_per_s: f64,
    /// `loaded_bits_per_s / alone_bits_per_s`: the share of its bandwidth
    /// the node keeps under contention.
    pub kept: f64,
}

/// The cells of one step of a load pattern, measured at the same time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StepSummary {
    /// Step (the cells' `round`).
    pub step: usize,
    /// Pairs measuring at once.
    pub pairs: usize,
    /// Sum of the pairs' stream bandwidths, bits/s.
    pub aggregate_bits_per_s: f64,
    /// The slowest pair's bandwidth, bits/s.
    pub min_bits_per_s: f64,
    /// The median pair's bandwidth, bits/s.
    pub median_bits_per_s: f64,
    /// Ping-pong round trips per second of all pairs together (each pair:
    /// 1 / (2 x one-way time)); the small-message rate under this load.
    pub pingpong_rate_per_s: f64,
    /// Messages per second of all pairs' small-message streams together
    /// (`multipair`: osu_mbw_mr's message rate).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_messages_per_s: Option<f64>,
    /// Sum of the pairs' small-message stream bandwidths, bits/s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_bits_per_s: Option<f64>,
    /// The median pair's bandwidth alone, bits/s (the pairs measured
    /// alone too).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alone_median_bits_per_s: Option<f64>,
}

/// Median and median absolute deviation of a set of cells.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Spread {
    /// Median.
    pub median: f64,
    /// Median absolute deviation, scaled by 1.4826 to estimate a standard
    /// deviation under normality.
    pub mad: f64,
    /// Cells counted.
    pub cells: usize,
}

/// A cell far from the rest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OutlierCell {
    /// Measuring node index.
    pub from: usize,
    /// Peer node index.
    pub to: usize,
    /// `latency` or `bandwidth`.
    pub metric: String,
    /// The cell's value (ns or bits/s).
    pub value: f64,
    /// The median of all cells.
    pub median: f64,
    /// Robust z score: (value - median) / MAD, signed so that positive is
    /// worse (slower latency, lower bandwidth).
    pub score: f64,
    /// Whether a slow node explains it (the cell touches one).
    pub explained_by_node: bool,
}

/// A node whose links are slow as a whole.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SlowNode {
    /// Node index.
    pub node: usize,
    /// `latency` or `bandwidth`.
    pub metric: String,
    /// Median of the node's cells.
    pub value: f64,
    /// Median of all cells.
    pub median: f64,
    /// Share of the node's cells that are outliers in the same direction.
    pub share_outlying: f64,
    /// The fingerprint difference that explains it, when one does: a
    /// link whose goodput limit (shaped rate or negotiated speed, MTU) is
    /// below the other nodes' (`interfaces[0]...: 800 Mbit/s against
    /// 1000`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cause: Option<String>,
}

/// A pair whose directions disagree.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AsymmetricPair {
    /// The lower node index.
    pub a: usize,
    /// The higher node index.
    pub b: usize,
    /// `latency` or `bandwidth`.
    pub metric: String,
    /// a→b value.
    pub a_to_b: f64,
    /// b→a value.
    pub b_to_a: f64,
    /// Larger over smaller.
    pub ratio: f64,
}

/// One fingerprint field that differs between nodes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FingerprintDifference {
    /// Dotted path of the field (`interfaces[0].mtu_bytes`).
    pub field: String,
    /// Each distinct value and the nodes that have it, most common first.
    pub values: Vec<FieldValue>,
}

/// A value of a fingerprint field and who has it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FieldValue {
    /// The value, as JSON text.
    pub value: String,
    /// Node indices with it.
    pub nodes: Vec<usize>,
}

/// One node's medians.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NodeSummary {
    /// Node index.
    pub node: usize,
    /// Median latency of its cells, ns.
    pub latency_ns: Option<f64>,
    /// Median bandwidth of its cells, bits/s.
    pub bits_per_s: Option<f64>,
    /// Cells that failed.
    pub failed_cells: usize,
    /// Median bandwidth of its cells as the sender (its row), bits/s:
    /// mpiGraph's send view (intra-node cells left out).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sent_bits_per_s: Option<f64>,
    /// Median bandwidth of its cells as the receiver (its column),
    /// bits/s: mpiGraph's receive view.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub received_bits_per_s: Option<f64>,
}

pub use super::matrix_read::{
    is_matrix_result, read_matrix_figures, read_matrix_figures_within, read_matrix_result,
    read_matrix_result_within, MAX_MATRIX_BYTES,
};
