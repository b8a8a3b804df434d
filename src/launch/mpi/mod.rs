//! Starting MPI jobs: every process of an MPI transport is started by that
//! MPI's own launcher (`mpirun`, `mpiexec`), which this module drives, so
//! that the transport itself ([`crate::transport::mpi`]) only makes
//! endpoints and the sweep engine never needs to know which transport it
//! drives.
//!
//! * [`launch`]: a sweep as a two-rank job, the launcher's command line,
//!   spawning, the bounded wait, the report;
//! * [`group`]: NAS kernels and collectives on N ranks;
//! * [`spread`]: one process per host (`wulf matrix --launch mpi:NAME`),
//!   and the agent jobs of a matrix over MPI;
//! * [`bounded`]: that one-per-host job ended when rank 0 has, or never
//!   starts;
//! * [`job`]: what the launching wulf and the ranks tell each other;
//! * [`worker`]: inside the job (`wulf worker JOB`).

pub mod bounded;
pub mod group;
mod info;
pub mod job;
pub mod launch;
pub mod spread;
pub mod worker;

use anyhow::Result;

use super::RunContext;
use crate::npb::{RankTask, TaskRun};
use crate::sweep::engine::{SweepOutcome, SweepSpec};
use crate::sweep::progress::Reporter;

pub use worker::run as run_worker;

/// Run the sweep `spec` as a job of its MPI's launcher when its transport
/// is an MPI's in `ctx` (None: it is not; the engine runs it against a
/// peer).
pub fn launch_sweep(
    ctx: &RunContext,
    spec: &SweepSpec,
    progress: &mut dyn Reporter,
) -> Option<Result<SweepOutcome>> {
    let l = crate::transport::mpi::launchable(&spec.transport, &ctx.transports)?;
    Some(launch::Plan::of(&l, ctx).and_then(|plan| launch::run(&plan, spec, progress)))
}

/// Run `task` on `np` ranks as a job of the launcher of the MPI transport
/// `name` (None: it is not an MPI's; wulf starts the ranks itself).
pub fn launch_group(
    ctx: &RunContext,
    name: &str,
    np: usize,
    task: &RankTask,
) -> Option<Result<TaskRun>> {
    let l = crate::transport::mpi::launchable(name, &ctx.transports)?;
    Some(launch::Plan::of(&l, ctx).and_then(|plan| group::launch(&plan, np, task)))
}

/// A sweep wherever its transport's processes must run: as a job of an
/// MPI's own launcher, or here against a peer (the engine).
pub fn run_sweep(
    ctx: &RunContext,
    spec: &SweepSpec,
    progress: &mut dyn Reporter,
) -> Result<SweepOutcome> {
    match launch_sweep(ctx, spec, progress) {
        Some(outcome) => outcome,
        None => crate::sweep::engine::run_sweep(spec, progress),
    }
}
