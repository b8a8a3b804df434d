//! `wulf collective`: one collective operation timed over a sweep of sizes,
//! on every rank of a group at once, with the statistics of `wulf sweep`.
//!
//! The same code runs over each backend through the NAS communicator
//! ([`crate::comm::Communicator`]): over `mpi:NAME` the ranks are an
//! MPI job and each operation is the library's own call (MPI_Allreduce,
//! MPI_Alltoall, MPI_Bcast, MPI_Barrier through wulf's adapter), so the
//! library picks its algorithm; over wulf's own transports (shm, tcp, unix,
//! cma) the ranks are wulf's process group and each operation is the
//! communicator's plain algorithm ([`Collective::plain_algorithm`]). The
//! two compare directly: same sizes, same timing, same statistics.
//!
//! * [`Collective`]: which operation, its sizes and its rules;
//! * [`CollectiveJob`]: what every rank gets;
//! * [`run_rank`] ([`rank`]): what every rank runs; rank 0 drives the
//!   repetition policy of `wulf sweep` and the others follow it.

mod rank;

pub use rank::run_rank;

use std::time::Duration;

use anyhow::Result;
use serde::{Deserialize, Serialize};

use crate::error::usage;
use crate::result::collective::CollectivePoint;

/// Largest message size, bytes: an MPI count is an `int`, and a rank holds
/// a few buffers of this size (times the ranks for alltoall).
pub const MAX_BYTES: u64 = 64 << 20;

/// Most bytes an alltoall's buffers may hold on one rank (one block per
/// rank, twice).
pub const MAX_ALLTOALL_BUFFER_BYTES: u64 = 1 << 30;

/// A collective operation `wulf collective` times.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Collective {
    /// Element-wise sum of `f64` values over all ranks, left on every rank.
    Allreduce,
    /// Every rank sends a block of the size to every rank.
    Alltoall,
    /// Rank 0's buffer copied to every rank.
    Bcast,
    /// Every rank waits for all.
    Barrier,
}

impl Collective {
    /// The name on the command line and in results.
    pub fn name(self) -> &'static str {
        match self {
            Collective::Allreduce => "allreduce",
            Collective::Alltoall => "alltoall",
            Collective::Bcast => "bcast",
            Collective::Barrier => "barrier",
        }
    }

    /// The MPI call a library runs for it.
    pub fn mpi_call(self) -> &'static str {
        match self {
            Collective::Allreduce => "MPI_Allreduce (MPI_DOUBLE, MPI_SUM, in place)",
            Collective::Alltoall => "MPI_Alltoall (MPI_BYTE)",
            Collective::Bcast => "MPI_Bcast (MPI_BYTE, root 0)",
            Collective::Barrier => "MPI_Barrier",
        }
    }

    /// What wulf's own process group runs for it (the communicator's
    /// default methods).
    pub fn plain_algorithm(self) -> &'static str {
        match self {
            Collective::Allreduce => {
                "plain: rank 0 gathers and sums in rank order, then sends the sum to each rank"
            }
            Collective::Alltoall => "plain: size-1 pairwise exchange rounds",
            Collective::Bcast => "plain: root 0 sends to each rank in turn",
            Collective::Barrier => "plain: an allreduce of one value",
        }
    }

    /// Sizes measured when `--sizes` is not given, bytes: powers of two up
    /// to 1 MiB (as OSU's benchmarks), from the smallest size the operation
    /// takes; barrier has one, 0.
    pub fn default_sizes(self) -> Vec<u64> {
        let smallest = match self {
            Collective::Barrier => return vec![0],
            Collective::Allreduce => 8,
            Collective::Alltoall | Collective::Bcast => 1,
        };
        std::iter::successors(Some(smallest), |&b| Some(b * 2))
            .take_while(|&b| b <= 1 << 20)
            .collect()
    }

    /// Why `bytes` is not a size this operation can take on `np` ranks.
    pub fn check_size(self, bytes: u64, np: usize) -> Result<(), String> {
        let name = self.name();
        match self {
            Collective::Barrier if bytes != 0 => {
                Err("barrier moves no data: it takes no --sizes".into())
            }
            Collective::Barrier => Ok(()),
            _ if bytes == 0 || bytes > MAX_BYTES => Err(format!(
                "{name}: size {bytes} B is outside 1 B..{} MiB",
                MAX_BYTES >> 20
            )),
            Collective::Allreduce if !bytes.is_multiple_of(8) => Err(format!(
                "allreduce sums f64 values: {bytes} B is not a multiple of 8 bytes"
            )),
            Collective::Alltoall if 2 * bytes * np as u64 > MAX_ALLTOALL_BUFFER_BYTES => {
                Err(format!(
                    "alltoall of {bytes} B blocks on {np} ranks needs {} MiB of buffers per rank (at most {} MiB)",
                    (2 * bytes * np as u64) >> 20,
                    MAX_ALLTOALL_BUFFER_BYTES >> 20
                ))
            }
            _ => Ok(()),
        }
    }
}

impl std::fmt::Display for Collective {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Everything every rank of a collective run needs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CollectiveJob {
    /// The operation.
    pub collective: Collective,
    /// Sizes, bytes, ascending (barrier: `[0]`).
    pub sizes_bytes: Vec<u64>,
    /// Wall time of the whole sweep, ms (rank 0 shares it among the sizes).
    pub budget_ms: u64,
    /// Target relative half-width of each size's 95% interval.
    pub precision: f64,
    /// Bound, in milliseconds, of every wait for another rank.
    pub timeout_ms: u64,
}

impl CollectiveJob {
    /// Fails with a usage error when a size cannot be run on `np` ranks, or
    /// there are fewer than two ranks (nothing to be collective with).
    pub fn check_process_count(&self, np: usize) -> Result<()> {
        if np < 2 {
            return Err(usage(format!(
                "{} needs at least 2 processes (got {np})",
                self.collective
            )));
        }
        for &b in &self.sizes_bytes {
            self.collective.check_size(b, np).map_err(usage)?;
        }
        Ok(())
    }

    /// Longest the ranks may run once started: three budgets plus two
    /// minutes, as an MPI sweep (the least trials of a slow size can
    /// outlast any budget).
    pub fn run_allowance(&self) -> Duration {
        3 * Duration::from_millis(self.budget_ms) + Duration::from_secs(120)
    }
}

/// What rank 0 brings back from a collective run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CollectiveOutput {
    /// Every size measured, in order.
    pub points: Vec<CollectivePoint>,
    /// The run was interrupted (Ctrl-C) before its last size.
    pub interrupted: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_sizes_are_powers_of_two_the_operation_takes() {
        let a = Collective::Allreduce.default_sizes();
        assert_eq!((a[0], *a.last().unwrap(), a.len()), (8, 1 << 20, 18));
        assert_eq!(Collective::Bcast.default_sizes().len(), 21);
        assert_eq!(Collective::Barrier.default_sizes(), [0]);
        for c in [
            Collective::Allreduce,
            Collective::Alltoall,
            Collective::Bcast,
        ] {
            assert!(c
                .default_sizes()
                .iter()
                .all(|&b| c.check_size(b, 2).is_ok()));
        }
    }

    #[test]
    fn sizes_an_operation_cannot_take_are_named() {
        let e = Collective::Allreduce.check_size(12, 2).unwrap_err();
        assert!(e.contains("multiple of 8"), "{e}");
        assert!(Collective::Barrier.check_size(8, 2).is_err());
        assert!(Collective::Bcast.check_size(0, 2).is_err());
        assert!(Collective::Alltoall.check_size(MAX_BYTES, 64).is_err());
        let job = CollectiveJob {
            collective: Collective::Bcast,
            sizes_bytes: vec![1],
            budget_ms: 1000,
            precision: 0.02,
            timeout_ms: 1000,
        };
        assert!(job.check_process_count(1).is_err());
        assert!(job.check_process_count(2).is_ok());
    }
}
