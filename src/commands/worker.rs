//! `wulf worker JOB` (hidden): one process of a job that a transport's own
//! launcher started, such as an MPI rank (see [`crate::launch::mpi`]).

use crate::cli::WorkerArgs;

/// Run the worker.
pub fn execute(args: &WorkerArgs) -> anyhow::Result<()> {
    crate::launch::mpi::run_worker(&args.job)
}
