//! The result of `wulf collective` (kind `collective`): one collective
//! operation (allreduce, alltoall, bcast, barrier) timed over a sweep of
//! sizes on each backend (an MPI library's own algorithm, or wulf's
//! process group running the plain one).
//!
//! It shares the conventions of the other kinds (a version, the tool
//! version, `complete`, the command line, the machine, unknown fields
//! rejected) and keeps every trial. A trial is one block of `repeats`
//! operations run by every rank at once; each rank times its own block, and
//! the trial's figure is the slowest rank's mean time per operation (as
//! OSU's benchmarks report collectives: a collective is done when its last
//! rank is). The ranks' average and the fastest rank are kept beside it.

use serde::{Deserialize, Serialize};

use crate::stats::Summary;

/// Version of the collective result schema. Version 2 added `nodes` and
/// `runs[].placement` (ranks placed over a node list).
pub const COLLECTIVE_SCHEMA_VERSION: u32 = 2;

/// Oldest collective schema version this wulf still reads (version 1 files
/// are version 2 files without the node fields).
pub const COLLECTIVE_OLDEST_SCHEMA_VERSION: u32 = 1;

/// The value of [`CollectiveResult::kind`].
pub const COLLECTIVE_KIND: &str = "collective";

super::envelope::result_document! {
    /// One `wulf collective` invocation.
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
    #[serde(deny_unknown_fields)]
    pub struct CollectiveResult {
        envelope {
            /// Always [`COLLECTIVE_KIND`].
            kind,
            /// [`COLLECTIVE_SCHEMA_VERSION`].
            schema_version,
            /// Version of the wulf that measured it.
            tool_version,
            /// False when a backend failed or the run was interrupted: what was
            /// measured is kept, `incomplete_reason` says what is missing.
            complete,
            /// Wall time of the whole invocation, seconds.
            wall_s,
        }
        /// The machine.
        pub host: crate::sys::Host,
        /// `allreduce`, `alltoall`, `bcast` or `barrier`.
        pub collective: String,
        /// Number of processes (ranks) of every backend.
        pub nprocs: usize,
        /// Time budget of each backend's sweep, seconds.
        pub budget_s: f64,
        /// Target relative half-width of each size's 95% confidence interval.
        pub precision: f64,
        /// One entry per backend, in the order run.
        pub runs: Vec<CollectiveRun>,
        /// Non-fatal observations (more ranks than CPUs...).
        #[serde(default)]
        pub warnings: Vec<String>,
        /// The lab whose nodes the ranks ran in, one per node (`--lab`);
        /// absent otherwise.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub lab: Option<super::LabPlacement>,
        /// How the ranks were placed on nodes when they ran across a node
        /// list (`--hosts`, `--hostfile`, `--launch`; version 2), as in an NPB
        /// result; absent on one host.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub nodes: Option<crate::result::NpbNodes>,
    }
}

/// One backend's sweep.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CollectiveRun {
    /// The transport linking the ranks (`mpi:openmpi`, `shm`, `tcp`...).
    pub via: String,
    /// Whose algorithm ran: the MPI call (`MPI_Allreduce`, the library
    /// picks its algorithm) or wulf's plain one, described.
    pub algorithm: String,
    /// How wulf's own transports made ranks wait (`spin`, `block`); MPI
    /// transports leave it to the library.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wait: Option<super::WaitMode>,
    /// Why this backend has no figures, or stopped early; None when it ran
    /// to the end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Every size measured, ascending.
    pub points: Vec<CollectivePoint>,
    /// For an MPI transport: the library, its launcher line and the
    /// environment that steered it (as in sweep results).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mpi: Option<crate::result::MpiInfo>,
    /// Across nodes (with [`CollectiveResult::nodes`], version 2): every
    /// rank's node and the host name it saw, in rank order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub placement: Option<Vec<crate::result::RankPlacement>>,
}

/// One size of one backend.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CollectivePoint {
    /// Message size, bytes: the buffer each rank reduces (allreduce), the
    /// block each rank sends to each rank (alltoall, as OSU counts it), the
    /// buffer broadcast (bcast); 0 for barrier.
    pub bytes: u64,
    /// Operations per trial.
    pub repeats: u64,
    /// Blocks run and dropped before the kept trials (calibration).
    pub warmup_trials: u64,
    /// The median's interval did not reach the precision in budget.
    pub noisy: bool,
    /// Median over trials of the slowest rank's mean time per operation,
    /// ns: the time of the collective.
    pub median_ns: f64,
    /// Fastest trial (slowest rank), ns.
    pub min_ns: f64,
    /// Slowest trial (slowest rank), ns.
    pub max_ns: f64,
    /// Lower bound of the median's 95% confidence interval, ns.
    pub ci_low_ns: f64,
    /// Upper bound of the median's 95% confidence interval, ns.
    pub ci_high_ns: f64,
    /// Median over trials of the ranks' average time per operation, ns.
    pub ranks_avg_median_ns: f64,
    /// Median over trials of the fastest rank's time per operation, ns.
    pub ranks_min_median_ns: f64,
    /// Every kept trial: the slowest rank's mean time per operation, ns.
    pub trials_ns: Vec<f64>,
    /// Every kept trial: the ranks' average, ns (same order).
    pub trials_ranks_avg_ns: Vec<f64>,
    /// Every kept trial: the fastest rank, ns (same order).
    pub trials_ranks_min_ns: Vec<f64>,
}

impl CollectivePoint {
    /// A point from its kept trials (one entry per trial in each list, at
    /// least one), with the summary figures derived.
    pub fn from_trials(
        bytes: u64,
        repeats: u64,
        warmup_trials: u64,
        noisy: bool,
        trials: [Vec<f64>; 3],
    ) -> Option<CollectivePoint> {
        let [max, avg, min] = trials;
        let s = Summary::of(&max)?;
        let median = |v: &[f64]| Summary::of(v).map_or(f64::NAN, |s| s.median);
        Some(CollectivePoint {
            bytes,
            repeats,
            warmup_trials,
            noisy,
            median_ns: s.median,
            min_ns: s.min,
            max_ns: s.max,
            ci_low_ns: s.ci_low,
            ci_high_ns: s.ci_high,
            ranks_avg_median_ns: median(&avg),
            ranks_min_median_ns: median(&min),
            trials_ns: max,
            trials_ranks_avg_ns: avg,
            trials_ranks_min_ns: min,
        })
    }

    /// Half-width of the median's interval as a share of the median.
    pub fn relative_ci(&self) -> f64 {
        if self.median_ns <= 0.0 {
            return f64::INFINITY;
        }
        (self.median_ns - self.ci_low_ns).max(self.ci_high_ns - self.median_ns) / self.median_ns
    }
}

/// Whether the file at `path` is a collective result.
pub fn is_collective_result(path: &std::path::Path) -> bool {
    super::kind_of(path).as_deref() == Some(COLLECTIVE_KIND)
}

/// Read a collective result file (versions 1 and 2), rejecting other versions and unknown
/// fields, and values no measurement can produce.
pub fn read_collective_result(path: &std::path::Path) -> anyhow::Result<CollectiveResult> {
    let text = super::read_text(path)?;
    let origin = path.display().to_string();
    collective_from(&super::read::header(&text, &origin)?, &text, &origin)
}

/// The collective result in `text`, whose header `h` was read already.
pub(super) fn collective_from(
    h: &super::read::Header,
    text: &str,
    origin: &str,
) -> anyhow::Result<CollectiveResult> {
    let r: CollectiveResult = super::read::versioned_from(
        h,
        text,
        origin,
        "collective",
        COLLECTIVE_OLDEST_SCHEMA_VERSION..=COLLECTIVE_SCHEMA_VERSION,
    )?;
    check(&r).map_err(|e| anyhow::anyhow!("{origin}: {e}"))?;
    Ok(r)
}

/// The checks a file from anywhere must pass before it is drawn.
fn check(r: &CollectiveResult) -> Result<(), String> {
    if r.kind != COLLECTIVE_KIND {
        return Err(format!("kind is {:?}, not {COLLECTIVE_KIND:?}", r.kind));
    }
    for (i, run) in r.runs.iter().enumerate() {
        for (j, p) in run.points.iter().enumerate() {
            let at = format!("runs[{i}].points[{j}]");
            let lists = [&p.trials_ns, &p.trials_ranks_avg_ns, &p.trials_ranks_min_ns];
            if p.trials_ns.is_empty() || lists.iter().any(|l| l.len() != p.trials_ns.len()) {
                return Err(format!(
                    "{at}: the trial lists are empty or of different lengths"
                ));
            }
            let figures = [p.median_ns, p.min_ns, p.max_ns, p.ci_low_ns, p.ci_high_ns];
            let all = figures.iter().chain(lists.iter().flat_map(|l| l.iter()));
            if all.into_iter().any(|v| !v.is_finite() || *v < 0.0) {
                return Err(format!("{at}: a time is negative or not a number"));
            }
            if j > 0 && run.points[j - 1].bytes >= p.bytes {
                return Err(format!("{at}: sizes are not ascending"));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_point_derives_its_figures_from_its_trials() {
        let max: Vec<f64> = (1..=10).map(f64::from).collect();
        let avg = vec![0.5; 10];
        let min = vec![0.25; 10];
        let p = CollectivePoint::from_trials(8, 100, 2, false, [max, avg, min]).unwrap();
        assert_eq!(p.median_ns, 5.5);
        assert_eq!((p.min_ns, p.max_ns), (1.0, 10.0));
        assert_eq!(p.ranks_avg_median_ns, 0.5);
        assert_eq!(p.ranks_min_median_ns, 0.25);
        assert!(p.ci_low_ns <= p.median_ns && p.median_ns <= p.ci_high_ns);
        assert!(CollectivePoint::from_trials(8, 1, 2, true, [vec![], vec![], vec![]]).is_none());
    }
}
