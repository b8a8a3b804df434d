//! What every rank of a parallel NPB run executes, whoever started it.
//!
//! A run of `np` ranks is started either by wulf itself (the ranks are
//! `wulf worker` processes linked by one of wulf's transports) or by a
//! transport's own launcher (MPI's `mpirun`, see
//! [`crate::transport::Transport::launch_group`]). Either way each rank
//! receives the same [`RankJob`], builds its [`Communicator`] and calls
//! [`run_rank`]; rank 0's list of outcomes is the run's result.

use anyhow::Result;
use serde::{Deserialize, Serialize};

use super::comm::Communicator;
use super::{Class, Kernel, NpbOutcome};

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
