//! Group jobs (NPB kernels, `wulf collective`): `np` ranks, started by an
//! MPI's own launcher, each running [`RankTask::run`] over an [`MpiComm`].
//!
//! The launching side ([`launch`]) reuses the sweeps' machinery: the same
//! launcher command line (base arguments such as Open MPI's
//! `--oversubscribe`, the `--mpi-arg`s, the TCP variant's arguments), the
//! same job directory, heartbeat and kill-on-hang wait, the same report
//! file, which then carries the task's output. Only the limits differ,
//! derived from [`RankTask::timeout_ms`]:
//!
//! * the ranks must all be initialised within the timeout (at least 10 s:
//!   starting MPI on a loaded machine takes seconds);
//! * an MPI call that makes no progress for the timeout ends its rank (the
//!   workers' watchdog; rank 0 first reports why), and the launcher then
//!   ends the others;
//! * rank 0's heartbeat must not go stale for the timeout plus 5 s (rank 0
//!   itself stopped or froze);
//! * the whole run must end within the task's allowance plus the timeout
//!   (NPB: half an hour per repetition, as MG of class C takes minutes; a
//!   collective: three budgets plus two minutes, as a sweep).
//!
//! Inside the job ([`rank`]) a rank that fails prints why and exits
//! non-zero without MPI_Finalize (its peers may wait in a call, and
//! finalising would wait for them): the launcher then ends the job, and
//! the error the launching side returns quotes the rank's message.

use std::time::Duration;

use anyhow::{bail, Context, Result};

use super::job::{self, GroupJob, JobKind, Report};
use super::launch::{self, Limits, Plan};
use super::worker::{empty_report, report_failure, watchdog};
use crate::comm::MpiComm;
use crate::error::{exit_code_of, usage};
use crate::npb::{RankTask, TaskRun};
use crate::sweep::progress::Quiet;
use crate::transport::mpi::ffi::Mpi;

/// Least time allowed for the ranks to start, whatever the job's timeout.
const MIN_STARTUP: Duration = Duration::from_secs(10);
/// The task's timeout, at least a millisecond (0 would fail every wait).
fn timeout_of(task: &RankTask) -> Duration {
    Duration::from_millis(task.timeout_ms().max(1))
}

/// Run `task` on `np` ranks as a job of the MPI in `plan`; rank 0's
/// output, or a clear error (see the module documentation).
pub fn launch(plan: &Plan, np: usize, task: &RankTask) -> Result<TaskRun> {
    // Checked here, not in the ranks: a bad count fails at once, without
    // starting MPI.
    if np == 0 {
        return Err(usage(format!(
            "{}: a run needs at least one rank",
            plan.name
        )));
    }
    task.check_process_count(np)
        .map_err(|e| usage(format!("{}: {e:#}", plan.name)))?;
    let dir = tempfile::Builder::new()
        .prefix("wulf-npb-mpi-")
        .tempdir()
        .context("cannot create a directory for the MPI job")?;
    let job = GroupJob {
        transport: plan.name.into(),
        adapter: plan.adapter.library.clone(),
        np,
        task: task.clone(),
        dir: dir.path().to_path_buf(),
    };
    let job_path = dir.path().join(job::JOB);
    job::write(&job_path, &JobKind::NpbGroup(job))?;
    let (argv, launcher_args) = launch::command(plan, np, &job_path)?;
    let timeout = timeout_of(task);
    let limits = Limits {
        startup: timeout.max(MIN_STARTUP),
        stale: timeout + Duration::from_secs(5),
        run: task.run_allowance() + timeout,
        // MG has no point to stop at: an interrupted run is simply ended;
        // a collective keeps the sizes it measured.
        graceful_stop: task.stops_gracefully(),
    };
    let started = std::time::Instant::now();
    let mut launcher = launch::spawn(&argv, dir.path())?;
    let waited = launch::wait(&mut launcher.child, dir.path(), &limits, &mut Quiet);
    let shown = argv.join(" ");
    let report_path = dir.path().join(job::REPORT);
    let report: Option<Report> = report_path
        .is_file()
        .then(|| job::read(&report_path).ok())
        .flatten();
    if let Some(report) = report {
        if let Some(e) = report.error() {
            // Rank 0's own account is precise; the launcher's output would
            // only repeat it.
            return Err(e.context(format!("the MPI job `{shown}` failed")));
        }
        if let Some(output) = report.output.clone() {
            // Verified results stand even if the job was slow to exit.
            let startup_s = waited
                .ready_after
                .unwrap_or_else(|| started.elapsed())
                .as_secs_f64();
            let mpi = launch::mpi_info(plan, &report, &argv, &launcher_args, startup_s);
            return Ok(TaskRun {
                output,
                hostnames: report.hostnames.clone().unwrap_or_default(),
                mpi: Some(mpi),
            });
        }
    }
    Err(waited.no_result(&shown, dir.path()))
}

/// One rank of the group job `job` (`wulf worker JOB`).
pub(super) fn rank(job: &GroupJob) -> Result<()> {
    let mpi = Mpi::init(&job.adapter).map_err(anyhow::Error::msg)?;
    let rank = mpi.rank();
    // Before the first collective: every MPI wait from here on is bounded.
    watchdog(rank, timeout_of(&job.task), job.dir.clone());
    if mpi.size() != job.np {
        let msg = format!(
            "the MPI job has {} ranks where {} were asked for (was -np/-n given in --mpi-arg?)",
            mpi.size(),
            job.np
        );
        if rank == 0 {
            report_failure(&job.dir, &mpi, Vec::new(), &msg, 2);
        }
        bail!(msg);
    }
    // Ready once every rank is: the heartbeat deadline starts then.
    mpi.barrier()
        .context("the ranks could not synchronise after MPI_Init")?;
    let mut report = empty_report(&mpi, vec![mpi.processor_name()]);
    if rank == 0 {
        std::fs::write(job.dir.join(job::READY), b"ready\n")?;
    }
    let comm = MpiComm::new(mpi, job.transport.clone());
    let ran = job.task.run(&comm);
    let mpi = comm.into_mpi();
    match ran {
        Ok(run) => {
            if rank == 0 {
                report.output = Some(run.output);
                // An NPB task's; a collective gathers none.
                report.hostnames = Some(run.hostnames).filter(|h| !h.is_empty());
                job::write(&job.dir.join(job::REPORT), &report)?;
            }
            mpi.finalize()?;
            Ok(())
        }
        Err(e) => {
            let code = exit_code_of(&e).max(1);
            if rank == 0 {
                report.error = Some(format!("rank 0: {e:#}"));
                report.exit_code = code;
                let _ = job::write(&job.dir.join(job::REPORT), &report);
            }
            eprintln!("wulf worker (rank {rank} of {}): {e:#}", job.np);
            std::process::exit(code);
        }
    }
}
