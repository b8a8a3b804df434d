//! What every rank of a parallel NPB run executes, whoever started it.
//!
//! A run of `np` ranks is started either by wulf itself (the ranks are
//! `wulf worker` processes linked by one of wulf's transports) or by a
//! transport's own launcher (MPI's `mpirun`, see
//! [`crate::launch::mpi::launch_group`]). Either way each rank
//! receives the same [`RankJob`], builds its [`Communicator`] and calls
//! [`run_rank`]; rank 0's list of outcomes is the run's result.

use std::time::Duration;

use anyhow::Result;
use serde::{Deserialize, Serialize};

use super::{Class, Kernel, NpbOutcome};
use crate::comm::Communicator;

/// The work of one rank: `repetitions` verified runs of `kernel` of `class`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RankJob {
    /// The kernel (MG when absent, as before there were others).
    #[serde(default)]
    pub kernel: Kernel,
    /// The problem class.
    pub class: Class,
    /// Runs, one after another, in the same processes.
    pub repetitions: usize,
    /// Bound, in milliseconds, of every wait for another rank.
    pub timeout_ms: u64,
}

impl RankJob {
    /// Fails with a usage error, before any process starts, when the job
    /// cannot run on `np` ranks (see [`Kernel::check_process_count`]).
    pub fn check_process_count(&self, np: usize) -> Result<()> {
        self.kernel.check_process_count(self.class, np)
    }
}

/// What a parallel run of a [`RankJob`] brings back.
#[derive(Debug, Clone, PartialEq)]
pub struct GroupRun {
    /// Rank 0's outcomes, one per repetition, all verified.
    pub outcomes: Vec<NpbOutcome>,
    /// The host name each rank ran on, in rank order (see [`RankRun`]).
    pub hostnames: Vec<String>,
    /// For a run under an MPI launcher: the library, its launcher line
    /// and the environment that steered it, as sweep results record them.
    pub mpi: Option<crate::result::MpiInfo>,
}

/// What one rank's part of a run returns.
#[derive(Debug, Clone, PartialEq)]
pub struct RankRun {
    /// The outcomes, one per repetition (the same on every rank).
    pub outcomes: Vec<NpbOutcome>,
    /// On rank 0: the host name every rank ran on, in rank order (where
    /// the launcher really put them, which a result records beside where
    /// wulf asked for them); empty on the other ranks.
    pub hostnames: Vec<String>,
}

/// Longest host name carried, bytes (a message of fixed length: a
/// receive must know its length).
const HOSTNAME_BYTES: usize = 256;

/// Runs `job` on this rank of `comm`. Every rank must call it; every rank
/// gets the same outcomes (one per repetition), or the first error.
pub fn run_rank(job: &RankJob, comm: &dyn Communicator) -> Result<RankRun> {
    let hostnames = gather_hostnames(comm)?;
    let outcomes = (0..job.repetitions.max(1))
        .map(|_| job.kernel.run(job.class, comm))
        .collect::<Result<Vec<_>>>()?;
    Ok(RankRun {
        outcomes,
        hostnames,
    })
}

/// Every rank's host name at rank 0 (empty elsewhere), before the timed
/// runs so it costs them nothing.
fn gather_hostnames(comm: &dyn Communicator) -> Result<Vec<String>> {
    let own = nix::unistd::gethostname()
        .map(|h| h.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut buf = [0u8; HOSTNAME_BYTES];
    let n = own.len().min(HOSTNAME_BYTES);
    buf[..n].copy_from_slice(&own.as_bytes()[..n]);
    if comm.rank() != 0 {
        comm.send_bytes(0, &buf)?;
        return Ok(Vec::new());
    }
    let mut names = vec![own];
    for from in 1..comm.size() {
        comm.recv_bytes(from, &mut buf)?;
        let end = buf.iter().position(|&b| b == 0).unwrap_or(HOSTNAME_BYTES);
        names.push(String::from_utf8_lossy(&buf[..end]).into_owned());
    }
    Ok(names)
}

/// Run time allowed per NPB repetition, on top of the timeout (MG of
/// class C takes minutes).
const RUN_PER_REPETITION: Duration = Duration::from_secs(30 * 60);

/// Everything a group of ranks can run, whoever starts them: a NAS kernel
/// or a collective benchmark (`wulf collective`). The process groups
/// ([`crate::launch::group`], MPI's launcher) carry a task and bring back its
/// [`TaskOutput`] without knowing which it is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RankTask {
    /// Verified runs of a NAS kernel.
    Npb(RankJob),
    /// A size sweep of one collective.
    Collective(crate::collective::CollectiveJob),
}

/// What rank 0 of a [`RankTask`] brings back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskOutput {
    /// The NPB outcomes, one per repetition, all verified.
    Npb(Vec<NpbOutcome>),
    /// The measured sizes of a collective.
    Collective(crate::collective::CollectiveOutput),
}

/// What one rank's part of a [`RankTask`] returns.
#[derive(Debug, Clone, PartialEq)]
pub struct RankOutput {
    /// The task's output (the same on every rank for NPB; rank 0's is the
    /// one a collective measured).
    pub output: TaskOutput,
    /// On rank 0: the host name of every rank, in rank order (see
    /// [`RankRun`]); empty on the other ranks.
    pub hostnames: Vec<String>,
}

/// What a parallel run of a [`RankTask`] brings back.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskRun {
    /// Rank 0's output.
    pub output: TaskOutput,
    /// As [`RankOutput::hostnames`] on rank 0 (empty when not known).
    pub hostnames: Vec<String>,
    /// As [`GroupRun::mpi`].
    pub mpi: Option<crate::result::MpiInfo>,
}

impl TaskRun {
    /// The NPB view of a run of [`RankTask::Npb`].
    pub fn into_group_run(self) -> Result<GroupRun> {
        match self.output {
            TaskOutput::Npb(outcomes) => Ok(GroupRun {
                outcomes,
                hostnames: self.hostnames,
                mpi: self.mpi,
            }),
            TaskOutput::Collective(_) => anyhow::bail!("an NPB run brought back another output"),
        }
    }
}

impl RankTask {
    /// Bound, in milliseconds, of every wait for another rank.
    pub fn timeout_ms(&self) -> u64 {
        match self {
            RankTask::Npb(job) => job.timeout_ms,
            RankTask::Collective(job) => job.timeout_ms,
        }
    }

    /// Fails with a usage error, before any process starts, when the task
    /// cannot run on `np` ranks.
    pub fn check_process_count(&self, np: usize) -> Result<()> {
        match self {
            RankTask::Npb(job) => job.check_process_count(np),
            RankTask::Collective(job) => job.check_process_count(np),
        }
    }

    /// Longest the ranks may run once started, besides the timeout: a
    /// launcher still running after it is killed.
    pub fn run_allowance(&self) -> Duration {
        match self {
            RankTask::Npb(job) => job.repetitions.max(1) as u32 * RUN_PER_REPETITION,
            RankTask::Collective(job) => job.run_allowance(),
        }
    }

    /// Whether rank 0 stops between measurements when asked (a
    /// collective keeps what it measured); an NPB run is simply ended.
    pub fn stops_gracefully(&self) -> bool {
        matches!(self, RankTask::Collective(_))
    }

    /// Runs the task on this rank of `comm`; every rank must call it.
    pub fn run(&self, comm: &dyn Communicator) -> Result<RankOutput> {
        match self {
            RankTask::Npb(job) => run_rank(job, comm).map(|run| RankOutput {
                output: TaskOutput::Npb(run.outcomes),
                hostnames: run.hostnames,
            }),
            RankTask::Collective(job) => {
                // Where the ranks really ran, for the placement a result
                // records; before the timed sweep, so it costs it nothing.
                let hostnames = gather_hostnames(comm)?;
                crate::collective::run_rank(job, comm).map(|out| RankOutput {
                    output: TaskOutput::Collective(out),
                    hostnames,
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(class: Class) -> RankJob {
        RankJob {
            kernel: Kernel::Mg,
            class,
            repetitions: 1,
            timeout_ms: 1000,
        }
    }

    #[test]
    fn process_counts_are_checked_before_any_process_starts() {
        // Class S has 32 points a side: 16x16x16 ranks can split it (two
        // points each), 16x16x32 cannot.
        assert!(job(Class::S).check_process_count(4096).is_ok());
        let e = job(Class::S).check_process_count(8192).unwrap_err();
        assert!(format!("{e}").contains("too many"), "{e}");
        let e = job(Class::W).check_process_count(3).unwrap_err();
        assert!(format!("{e}").contains("power-of-two"), "{e}");
    }
}
