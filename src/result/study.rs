//! The summary file of `wulf study` (kind `study`): which sweeps a study
//! ran, in which lab, the figures its tables need, and the tables.
//!
//! Each sweep of a study is an ordinary sweep result saved beside the
//! summary (`cases[].file`, relative to the summary's directory), so every
//! tool that reads sweep results reads a study's sweeps too. The summary
//! shares the conventions of the other kinds (version, tool version,
//! `complete`, command line, machine, atomic writing, unknown fields
//! rejected) and is told apart by its `kind`. The tables are stored as
//! plain rows and cells so a report draws them without recomputing.

use serde::{Deserialize, Serialize};

/// Version of the study summary schema.
///
/// 2: the cases' CPU per byte (`cpu_bytes`, `cpu_client_ns_per_byte`,
/// `cpu_server_ns_per_byte`, `cpu_whole_ns_per_byte`), the study's
/// `sweep_args`, and the study `lean-stacks`. Version 1 files are still
/// read (the new fields are absent there).
///
/// 3: `lean-stacks` measures every stack in interleaved rounds (the cases'
/// `round`; rounds after the first have role `round`), its tables show the
/// best and the median over the rounds and their spread.
///
/// 4: `fe-vs-ge` measures every case in interleaved rounds too (its cases'
/// `round`), and the studies that compare cases carry their `ratios`,
/// taken within each round, with their range over the rounds and the
/// side they name faster (none where the range reaches 1). Versions 1-3
/// are still read (no `ratios` there).
pub const STUDY_SCHEMA_VERSION: u32 = 4;

/// The value of [`StudyResult::kind`].
pub const STUDY_KIND: &str = "study";

super::envelope::result_document! {
    /// One `wulf study` invocation.
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
    #[serde(deny_unknown_fields)]
    pub struct StudyResult {
        envelope {
            /// Always [`STUDY_KIND`].
            kind,
            /// [`STUDY_SCHEMA_VERSION`].
            schema_version,
            /// Version of the wulf that ran it.
            tool_version,
            /// False when cut short (Ctrl-C): the cases present are complete.
            complete,
            /// Wall time of the whole study, seconds.
            wall_s,
        }
        /// The machine the lab ran on.
        pub host: crate::sys::Host,
        /// The study (`mtu-buffers`, `fe-vs-ge`).
        pub study: String,
        /// What it reproduces, in words (the published study's table and
        /// figures, cited by authors and year).
        pub about: String,
        /// Budget scale: `quick`, `default` or `thorough`.
        pub effort: String,
        /// Every sweep the study ran (or tried), in the order run.
        pub cases: Vec<StudyCaseResult>,
        /// The study's tables.
        pub tables: Vec<StudyTable>,
        /// Non-fatal observations (a transport that could not run, noise).
        #[serde(default)]
        pub warnings: Vec<String>,
        /// Options every sweep of the study ran with besides its own
        /// (`--cost whole`, `--load SPEC`); empty for none (version 2).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        pub sweep_args: Vec<String>,
        /// `lean-stacks` in a lab (version 3): the NAS runs behind its NAS
        /// tables (Bounanos and Fleury 2007, Table 2), one kernel over
        /// every stack per run, in interleaved rounds; absent for the other
        /// studies and against a real peer.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        pub nas: Vec<StudyNasCase>,
        /// The ratios between cases the study compares, each taken within
        /// each round and summarised over the rounds (version 4): `fe-vs-ge`
        /// each transport's GE over FE, each against tcp and PVM's daemon
        /// route against its direct one; `lean-stacks` each stack's
        /// latency against tcp's. Empty for the other studies.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        pub ratios: Vec<StudyRatio>,
    }
}

/// A ratio between two cases of a study (version 4), taken within each
/// round (both measured under the same conditions), over the rounds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StudyRatio {
    /// The figure: `latency` (a time: below 1 the numerator is faster) or
    /// `peak` (a rate: above 1 the numerator is faster).
    pub figure: String,
    /// Where: the link (`fe`), `ge/fe` for a link against another, or a
    /// lean-stacks group (`ge, MTU 1500`).
    pub link: String,
    /// The case above the line (a transport, or the link of `ge/fe`).
    pub numerator: String,
    /// The case below it.
    pub denominator: String,
    /// The ratio in each round both ran in, in round order.
    pub per_round: Vec<f64>,
    /// Their median.
    pub median: f64,
    /// The lowest round's ratio.
    pub low: f64,
    /// The highest round's ratio.
    pub high: f64,
    /// The chance that `low..high` holds the median ratio, 1 - 2 / 2^n
    /// over n rounds (0.75 for 3, 0.94 for 5; 0 for one round).
    pub coverage: f64,
    /// The side that takes less time, only where every round agrees (the
    /// range lies on one side of 1) and two rounds or more ran; absent:
    /// no winner.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub faster: Option<String>,
}

/// One NAS run of a study: one kernel over each stack in turn, its ranks
/// one per lab node (`wulf npb KERNEL --lab LINK --via STACKS`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StudyNasCase {
    /// Unique within the study, also the file's stem (`nas-cg-ge-mtu1500-r1`).
    pub label: String,
    /// The kernel (`cg`, `ep`, `is`, `mg`).
    pub kernel: String,
    /// Its class (`S`).
    pub class: String,
    /// Processes (one per lab node).
    pub nprocs: usize,
    /// The lab link as named.
    pub link: String,
    /// MTU of the nodes.
    pub mtu_bytes: u32,
    /// The round, from 1.
    pub round: u32,
    /// True when run under the study's `--load` (the loaded half of the
    /// round); false: unloaded.
    pub loaded: bool,
    /// The NAS result file, relative to the summary's directory; absent
    /// when the run failed as a whole.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// Why there are no figures, when the run failed as a whole.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Per stack, in the order run.
    pub stacks: Vec<StudyNasStack>,
}

/// One stack's figure in a [`StudyNasCase`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StudyNasStack {
    /// The transport the ranks ran over.
    pub via: String,
    /// Best Mop/s of the run (all processes together).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mop_s: Option<f64>,
    /// Why there is no figure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// One sweep of a study.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StudyCaseResult {
    /// Short label (`mtu 9000, buf 64KiB`).
    pub label: String,
    /// What the case is for: `cell` (one table cell) or `curve` (a full
    /// sweep for the graph families).
    pub role: String,
    /// Transport measured.
    pub transport: String,
    /// The lab link as named (`ge`, `fe`, `600mbit`).
    pub link: String,
    /// Its rate, bits/s.
    pub link_bits_per_s: u64,
    /// MTU of both nodes.
    pub mtu_bytes: u32,
    /// SO_SNDBUF and SO_RCVBUF requested; None = the kernel's default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub socket_buffer_bytes: Option<u64>,
    /// Communication pattern.
    pub mode: crate::result::Mode,
    /// The sweep result file, relative to the summary's directory; None
    /// when the sweep failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// Why there are no figures, when the sweep failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Median one-way time at the smallest size, ns.
    pub latency_ns: Option<f64>,
    /// Smallest size the peak is taken from: 16 times the emulated link's
    /// free burst (the bytes an idle token bucket lets through without
    /// their serialization time), beyond which that burst adds under 7%.
    pub peak_min_bytes: u64,
    /// Highest median throughput at sizes from `peak_min_bytes`, bits/s.
    pub peak_bits_per_s: Option<f64>,
    /// Size of the peak.
    pub peak_bytes: Option<u64>,
    /// Smallest size reaching half of `peak_bits_per_s` (Hockney's n_1/2).
    pub n_half_bytes: Option<u64>,
    /// Theoretical TCP goodput of the emulated link (shaper framing), bits/s.
    pub goodput_bits_per_s: f64,
    /// `peak_bits_per_s / goodput_bits_per_s`.
    pub peak_fraction: Option<f64>,
    /// Size the CPU figures are taken at (the measured size nearest 64
    /// KiB); absent without figures (version 2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_bytes: Option<u64>,
    /// getrusage CPU of the measuring end's thread per byte at
    /// `cpu_bytes`, ns (version 2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_client_ns_per_byte: Option<f64>,
    /// The same of the peer's thread, ns (version 2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_server_ns_per_byte: Option<f64>,
    /// The whole machine's CPU per byte at `cpu_bytes` (`--cost whole`),
    /// ns (version 2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_whole_ns_per_byte: Option<f64>,
    /// Which round of an interleaved study the case was measured in
    /// (`lean-stacks`: every stack once per round, version 3; `fe-vs-ge`:
    /// every transport over both links once per round, version 4); absent
    /// where the study measures each case once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub round: Option<u32>,
    /// The transport beneath this one (`layers`: `ucx(tcp)` over `tcp`,
    /// `mpi:openmpi(ucx-tcp)` over `ucx(tcp)`), whose figures in the same
    /// round its overhead is taken over; absent at the bottom and in the
    /// other studies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub over: Option<String>,
    /// Sizes whose points did not reach their precision within the budget
    /// (marked noisy in the sweep): a table's figure from one of them is
    /// marked noisy (absent in results before this field).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub noisy_bytes: Vec<u64>,
    /// The point behind `latency_ns` (the smallest size) is noisy.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub latency_noisy: bool,
    /// The point behind `latency_ns` had fewer than 3 clean blocks, the
    /// clean ones the faster: other work kept an end off its CPU, so the
    /// figure is that work's as much as the transport's
    /// (`measure::policy::interfered`; the point is marked noisy too).
    /// Absent in results before this field.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub latency_interfered: bool,
    /// Every point the peak could be taken from was so (above); when only
    /// some were, the peak is the others' best.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub peak_interfered: bool,
}

/// A table of figures: rows by one factor, columns by another.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StudyTable {
    /// Title (`Peak throughput, Mbit/s, by socket buffer and MTU`).
    pub title: String,
    /// Header of the row labels (`socket buffer`).
    pub row_header: String,
    /// Column headers (`MTU 1500` ...).
    pub columns: Vec<String>,
    /// The rows.
    pub rows: Vec<StudyRow>,
    /// Decimals to print the cells with.
    pub decimals: usize,
}

/// One row of a [`StudyTable`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StudyRow {
    /// Row label.
    pub label: String,
    /// One cell per column; None where the case failed or was not run.
    pub cells: Vec<Option<f64>>,
    /// Per cell, whether the point behind its figure is noisy (empty:
    /// none marked; the table's title counts its noisy points).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub noisy: Vec<bool>,
}

/// Whether `path` holds a study summary (by its `kind`).
pub fn is_study_result(path: &std::path::Path) -> bool {
    super::read::kind_of(path).as_deref() == Some(STUDY_KIND)
}

/// Read and validate a study summary.
pub fn read_study_result(path: &std::path::Path) -> anyhow::Result<StudyResult> {
    let text = super::read_text(path)?;
    let origin = path.display().to_string();
    study_from(&super::read::header(&text, &origin)?, &text, &origin)
}

/// The study summary in `text`, whose header `h` was read already.
pub(super) fn study_from(
    h: &super::read::Header,
    text: &str,
    origin: &str,
) -> anyhow::Result<StudyResult> {
    let at =
        |v: std::ops::RangeInclusive<u32>| super::read::versioned_from(h, text, origin, "study", v);
    match at(STUDY_SCHEMA_VERSION..=STUDY_SCHEMA_VERSION) {
        Ok(r) => Ok(r),
        // Versions 1 to 3 lack only optional fields: read them as they are.
        Err(e) => at(1..=STUDY_SCHEMA_VERSION - 1).map_err(|_| e),
    }
}
