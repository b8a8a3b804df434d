//! The result file of `wulf npb` (kind `npb`): one kernel and class, run
//! over several transports and process counts.
//!
//! It shares the conventions of the sweep result (a version, the tool
//! version, `complete`, the command line, the machine description, atomic
//! writing, unknown fields rejected) and is told apart from it by its
//! `kind` field. Each [`NpbRun`] keeps every repetition's time; the best
//! and median rates and the speedup are derived from them when the file is
//! written, so a reader never has to recompute them.

use serde::{Deserialize, Serialize};

use super::npb_outcome::Class;
use super::npb_outcome::NpbOutcome;

/// Version of the NPB result schema. Version 2 added the kernels EP, IS
/// and CG: an outcome's MG-only fields became optional and `checks` lists
/// what the other kernels verified. Version 1 files (MG only) read as
/// version 2 files with the MG fields present. Version 3 added the
/// measurement conditions (`conditions`, `runs[].cpu_whole`), optional.
/// Version 4 added each outcome's traffic (`sent_bytes`, `sent_messages`)
/// and EP's `annulus_counts`, optional; EP's `sx` and `sy` became NPB
/// 3.4.2's sums of |X| and |Y| (the signed sums are `signed sx`/`signed sy`).
pub const NPB_SCHEMA_VERSION: u32 = 4;

/// The oldest NPB result schema version this wulf still reads.
pub const NPB_OLDEST_SCHEMA_VERSION: u32 = 1;

/// The value of [`NpbResult::kind`].
pub const NPB_KIND: &str = "npb";

super::envelope::result_document! {
    /// One `wulf npb` invocation.
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
    #[serde(deny_unknown_fields)]
    pub struct NpbResult {
        envelope {
            /// Always [`NPB_KIND`]: what tells this file from a sweep result.
            kind,
            /// Version of this schema ([`NPB_SCHEMA_VERSION`]).
            schema_version,
            /// Version of the wulf that measured it.
            tool_version,
            /// False when the invocation was cut short (Ctrl-C): the runs present
            /// are complete and verified, some are missing.
            complete,
            /// Wall time of the whole invocation in seconds.
            wall_s,
        }
        /// The machine.
        pub host: crate::sys::Host,
        /// The kernel (`cg`, `ep`, `is` or `mg`).
        pub kernel: String,
        /// The problem class.
        pub class: Class,
        /// Verified runs per combination.
        pub repetitions: usize,
        /// One entry per transport and process count, in the order run.
        pub runs: Vec<NpbRun>,
        /// Non-fatal observations (more ranks than CPUs...).
        #[serde(default)]
        pub warnings: Vec<String>,
        /// The lab whose nodes the ranks ran in, one per node (`--lab`);
        /// absent otherwise.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub lab: Option<super::LabPlacement>,
        /// Background load and `--cost whole` calibration (version 3); absent
        /// otherwise.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub conditions: Option<crate::result::Conditions>,
        /// How the ranks were placed on nodes when they ran across a node
        /// list (`--hosts`, `--hostfile`, `--launch`); absent on one host.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub nodes: Option<NpbNodes>,
    }
}

/// The node list a run spread its ranks over.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NpbNodes {
    /// What started wulf's own ranks on them: `ssh`, `slurm`, `local`
    /// (simulated nodes on one machine) or `lab:NAME`; MPI transports
    /// always use their own launcher (`runs[].mpi.launcher_command`).
    pub launch: String,
    /// The nodes, in placement order, each with its process slots.
    pub hosts: Vec<NpbNodeSlots>,
}

/// One node of [`NpbNodes`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NpbNodeSlots {
    /// The node's name.
    pub name: String,
    /// Processes it takes (ranks fill a node's slots before the next).
    pub slots: usize,
}

/// Where one rank ran.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RankPlacement {
    /// The rank.
    pub rank: usize,
    /// The node wulf placed it on.
    pub node: String,
    /// The host name the rank's process saw (`gethostname`): the node's
    /// own name on a real cluster or in a lab, this machine's with
    /// `--launch local`; empty when the launcher did not say.
    pub hostname: String,
}

/// One transport at one process count.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NpbRun {
    /// Transport linking the ranks (`shm`, `tcp`, `mpi:openmpi`...).
    pub via: String,
    /// Number of processes.
    pub nprocs: usize,
    /// How wulf's own transports made ranks wait: `spin` (sockets
    /// busy-polled too) or `block`; MPI transports leave it to the library.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wait: Option<super::WaitMode>,
    /// Why this combination has no figures (failed, or impossible such as
    /// a process count the kernel cannot use); None when it ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Every verified repetition, in the order run.
    pub outcomes: Vec<NpbOutcome>,
    /// Highest Mop/s over the repetitions (NPB reports one run; the best
    /// is the figure least disturbed by other load).
    pub best_mop_s: Option<f64>,
    /// Median Mop/s over the repetitions.
    pub median_mop_s: Option<f64>,
    /// `best_mop_s / nprocs`.
    pub best_mop_s_per_process: Option<f64>,
    /// Best time of the one-process run over the same transport divided by
    /// this run's best time; None without a one-process run.
    pub speedup: Option<f64>,
    /// `speedup / nprocs`: 1 is perfect scaling.
    pub parallel_efficiency: Option<f64>,
    /// For an MPI transport: the library, its launcher line and the
    /// environment that steered it (as in sweep results); absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mpi: Option<crate::result::MpiInfo>,
    /// Whole CPU the machine spent over this combination's runs, start-up
    /// and verification included (`--cost whole`, version 3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_whole: Option<crate::load::whole::WholeCpu>,
    /// Across nodes: every rank's node, in rank order (see
    /// [`NpbResult::nodes`]); absent on one host.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub placement: Option<Vec<RankPlacement>>,
    /// Other work on the measuring machine during this combination's
    /// runs, in CPUs: the CPU time of the processes wulf did not start
    /// (every process in `/proc` but wulf, its descendants and kernel
    /// threads), over the wall time (schema 4). Above 0.25 the
    /// run was not made on a quiet machine and is marked so. Absent where
    /// not measured (ranks on other hosts).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub foreign_cpus: Option<f64>,
    /// When the run failed verification: each value compared, as the
    /// failing rank computed it, beside NPB's reference (schema 4), so the
    /// file keeps the wrong value, not only the error's text.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failed_checks: Vec<FailedCheck>,
}

/// A value a failed verification compared ([`NpbRun::failed_checks`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FailedCheck {
    /// NPB's name of the value (`zeta`, `norm`, `partial verifications
    /// passed`...).
    pub name: String,
    /// What the run computed, to 14 significant digits; null when it was
    /// not a finite number (NaN, infinite).
    pub value: Option<f64>,
    /// NPB's reference.
    pub reference: f64,
    /// `|value - reference| / |reference|`; null where not a number.
    pub relative_error: Option<f64>,
    /// The largest relative error the kernel allows, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowed_relative_error: Option<f64>,
}

/// Foreign work, in CPUs ([`NpbRun::foreign_cpus`]), above which a run
/// was not made on a quiet machine: a quarter of a CPU, well above the few
/// percent an idle system's daemons take.
pub const FOREIGN_CPUS_WARN: f64 = 0.25;

impl NpbRun {
    /// Whether other work shared the machine with this run beyond
    /// [`FOREIGN_CPUS_WARN`] (its figures are marked `*` in the tables).
    pub fn on_busy_machine(&self) -> bool {
        self.foreign_cpus.is_some_and(|f| f > FOREIGN_CPUS_WARN)
    }

    /// A run from its outcomes (or its error), with the best and median
    /// rates derived; the speedup is filled in by [`fill_speedups`].
    pub fn new(via: &str, nprocs: usize, outcome: Result<Vec<NpbOutcome>, String>) -> NpbRun {
        let (outcomes, error) = match outcome {
            Ok(o) => (o, None),
            Err(e) => (Vec::new(), Some(e)),
        };
        let mut rates: Vec<f64> = outcomes.iter().map(|o| o.mop_s).collect();
        rates.sort_by(f64::total_cmp);
        let best = rates.last().copied();
        let median = (!rates.is_empty()).then(|| crate::stats::quantile_sorted(&rates, 0.5));
        NpbRun {
            via: via.to_string(),
            nprocs,
            wait: None,
            error,
            outcomes,
            best_mop_s: best,
            median_mop_s: median,
            best_mop_s_per_process: best.map(|b| b / nprocs as f64),
            speedup: None,
            parallel_efficiency: None,
            mpi: None,
            cpu_whole: None,
            placement: None,
            foreign_cpus: None,
            failed_checks: Vec::new(),
        }
    }

    /// Shortest time over the repetitions, seconds.
    pub fn best_time_s(&self) -> Option<f64> {
        self.outcomes
            .iter()
            .map(|o| o.time_s)
            .min_by(f64::total_cmp)
    }

    /// Seed 001's communication rows of the fastest verified repetition:
    /// MB/s, messages/s and mean message bytes ([`NpbOutcome::communication`]).
    pub fn communication(&self) -> Option<[f64; 3]> {
        self.outcomes
            .iter()
            .min_by(|a, b| a.time_s.total_cmp(&b.time_s))?
            .communication()
    }
}

/// Sets each run's speedup against the one-process run over the same
/// transport (or, when that transport has none, over any transport: one
/// process sends no messages, so its time does not depend on it).
pub fn fill_speedups(runs: &mut [NpbRun]) {
    let serial_any = runs
        .iter()
        .filter(|r| r.nprocs == 1)
        .filter_map(NpbRun::best_time_s)
        .min_by(f64::total_cmp);
    let serial: Vec<(String, Option<f64>)> = runs
        .iter()
        .filter(|r| r.nprocs == 1)
        .map(|r| (r.via.clone(), r.best_time_s()))
        .collect();
    for run in runs.iter_mut() {
        let base = serial
            .iter()
            .find(|(via, _)| *via == run.via)
            .and_then(|(_, t)| *t)
            .or(serial_any);
        run.speedup = match (base, run.best_time_s()) {
            (Some(b), Some(t)) if t > 0.0 => Some(b / t),
            _ => None,
        };
        run.parallel_efficiency = run.speedup.map(|s| s / run.nprocs as f64);
    }
}
