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
use super::mg::{run_mg, Decomposition, MgOutcome, MgParams};
use super::Class;

/// The work of one rank: `repetitions` verified runs of MG of `class`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RankJob {
    /// The problem class.
    pub class: Class,
    /// Runs, one after another, in the same processes.
    pub repetitions: usize,
    /// Bound, in milliseconds, of every wait for another rank.
    pub timeout_ms: u64,
}

impl RankJob {
    /// Fails, before any process starts, when the job cannot run on `np`
    /// ranks (not a power of two, or too many to split the grid).
    pub fn check_process_count(&self, np: usize) -> Result<()> {
        let levels = MgParams::of(self.class).levels;
        Decomposition::new(np, 0)?.lowest_distributed_level(levels)?;
        Ok(())
    }
}

/// Runs `job` on this rank of `comm`. Every rank must call it; every rank
/// gets the same outcomes (one per repetition), or the first error.
pub fn run_rank(job: &RankJob, comm: &dyn Communicator) -> Result<Vec<MgOutcome>> {
    (0..job.repetitions.max(1))
        .map(|_| run_mg(job.class, comm))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(class: Class) -> RankJob {
        RankJob {
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
