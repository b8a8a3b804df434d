//! What the launching wulf and the ranks of its MPI job tell each other,
//! through files in a private temporary directory (the job's only shared
//! state, so launcher output formats never matter):
//!
//! * `job.json`: the [`JobKind`] (a sweep's [`Job`] or an NPB
//!   [`GroupJob`]), written before launch;
//! * `ready`: rank 0 once every rank is initialised (and, for a sweep,
//!   connected);
//! * `heartbeat`: rewritten by rank 0's watchdog every 0.6 s;
//! * `progress.jsonl`: one measured point per line, as measured;
//! * `stop`: the launching wulf was interrupted; rank 0 stops between trials;
//! * `report.json`: rank 0's [`Report`], written atomically at the end.
//!
//! Sweeps have two ranks; NPB group jobs have any number, of which rank 0
//! alone reports.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::error::{peer, usage, WulfError};
use crate::npb::{RankTask, TaskOutput};
use crate::result::SweepResult;
use crate::sweep::engine::SweepSpec;

/// File names inside the job directory.
pub const JOB: &str = "job.json";
/// See the module documentation.
pub const READY: &str = "ready";
/// See the module documentation.
pub const HEARTBEAT: &str = "heartbeat";
/// See the module documentation.
pub const PROGRESS: &str = "progress.jsonl";
/// See the module documentation.
pub const STOP: &str = "stop";
/// See the module documentation.
pub const REPORT: &str = "report.json";

/// What `job.json` holds: the kind of job, then everything its ranks need.
/// Externally tagged (`{"Sweep": {...}}`), so each kind keeps
/// `deny_unknown_fields`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum JobKind {
    /// A two-rank sweep: rank 0 measures, rank 1 is its peer. Boxed: a
    /// sweep's spec is large, and the file is read once.
    Sweep(Box<Job>),
    /// A group task (an NPB kernel, a collective): every rank runs
    /// [`crate::npb::RankTask::run`] over MPI.
    NpbGroup(GroupJob),
    /// One rank per node, each an agent of a matrix coordinator whose
    /// cells run over this MPI ([`AgentJob`]).
    Agent(AgentJob),
}

/// Everything a rank of an agent job needs: each rank joins the
/// coordinator as the agent of node `hosts[rank]` (the launcher places
/// rank i on host i) and measures against the other ranks over MPI.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentJob {
    /// Transport name as listed (`mpi:openmpi`...).
    pub transport: String,
    /// The compiled adapter to load.
    pub adapter: PathBuf,
    /// Non-blocking sends in flight in stream mode.
    pub window: u64,
    /// The nodes, in rank order.
    pub hosts: Vec<String>,
    /// Where the coordinator listens.
    pub coordinator: std::net::SocketAddr,
    /// The run's one-time secret. It is in this file, in a directory only
    /// its owner can read, because MPI launchers pass the environment to
    /// remote ranks unevenly and a command line would show it.
    pub secret: String,
    /// Bound, in milliseconds, of an MPI call making no progress.
    pub timeout_ms: u64,
    /// The job directory.
    pub dir: PathBuf,
}

/// Everything a rank of a sweep needs.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Job {
    /// Transport name as listed (`mpi:openmpi(tcp)`...).
    pub transport: String,
    /// The compiled adapter to load.
    pub adapter: PathBuf,
    /// Non-blocking sends in flight in stream mode.
    pub window: u64,
    /// The sweep, as the user asked for it.
    pub spec: SweepSpec,
    /// The job directory.
    pub dir: PathBuf,
    /// The limits the launching wulf knows (its baselines' and earlier
    /// sweeps'), which rank 0 then does not measure again.
    #[serde(default)]
    pub limits: crate::sweep::limits_carry::Known,
}

/// Everything a rank of a group job (NPB, `wulf collective`) needs.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GroupJob {
    /// Transport name as listed (`mpi:openmpi(tcp)`...), the communicator's
    /// backend name.
    pub transport: String,
    /// The compiled adapter to load.
    pub adapter: PathBuf,
    /// Ranks launched: a job of another size (an `-np` in `--mpi-arg`) fails.
    pub np: usize,
    /// What every rank runs.
    pub task: RankTask,
    /// The job directory.
    pub dir: PathBuf,
}

/// What rank 0 reports at the end.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Report {
    /// The result, complete or not; None if the sweep never started (and
    /// for NPB group jobs).
    pub result: Option<SweepResult>,
    /// A group job's output (NPB outcomes, a collective's sizes); None on
    /// failure (and for sweeps, whose reports therefore need not mention it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<TaskOutput>,
    /// Why the sweep stopped or failed.
    pub error: Option<String>,
    /// wulf's exit code for that error (0 without one).
    pub exit_code: i32,
    /// MPI_Get_library_version.
    pub library_version: String,
    /// MPI_Get_version.
    pub standard_version: String,
    /// Thread support provided.
    pub thread_level: String,
    /// MPI_Get_processor_name of each rank.
    pub processors: Vec<String>,
    /// An NPB group job's host name of every rank, in rank order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hostnames: Option<Vec<String>>,
}

impl Report {
    /// The error as wulf's own kind, so the exit code survives the trip.
    pub fn error(&self) -> Option<anyhow::Error> {
        let msg = self.error.clone()?;
        Some(match self.exit_code {
            2 => usage(msg),
            3 => peer(msg),
            130 => WulfError::Interrupted.into(),
            _ => anyhow::Error::msg(msg),
        })
    }
}

/// Read a JSON file of the job directory.
pub fn read<T: serde::de::DeserializeOwned>(path: &Path) -> Result<T> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    serde_json::from_str(&text).with_context(|| format!("{} is malformed", path.display()))
}

/// Write a JSON file of the job directory atomically.
pub fn write<T: Serialize>(path: &Path, value: &T) -> Result<()> {
    crate::result::write_atomically(path, &serde_json::to_vec(value)?)
}
