//! What a collective run does, below `wulf collective`: the operation's
//! job (sizes and process count checked before anything starts), the
//! default backends, and each backend run in turn on a group of ranks
//! into one `collective` result. `wulf run --hosts` measures its
//! collective through [`measure_across`].

use std::time::{Instant, SystemTime};

use anyhow::Result;

use super::npb::{available, group_transports};
use crate::cli::{CollectiveArgs, OperationArg};
use crate::collective::{Collective, CollectiveJob};
use crate::error::{exit_code_of, usage, WulfError};
use crate::launch::group::run_task;
use crate::launch::RunContext;
use crate::npb::{RankTask, TaskOutput};
use crate::result::collective::{
    CollectiveResult, CollectiveRun, COLLECTIVE_KIND, COLLECTIVE_SCHEMA_VERSION,
};
use crate::result::NpbNodes;
use crate::sys::{cpu_count, Host};
use crate::transport::Transport;

impl From<OperationArg> for Collective {
    fn from(a: OperationArg) -> Self {
        match a {
            OperationArg::Allreduce => Collective::Allreduce,
            OperationArg::Alltoall => Collective::Alltoall,
            OperationArg::Bcast => Collective::Bcast,
            OperationArg::Barrier => Collective::Barrier,
        }
    }
}

/// The ranks' job for `args`, refused when its sizes or process count
/// cannot run.
pub fn job_of(args: &CollectiveArgs) -> Result<CollectiveJob> {
    let collective = Collective::from(args.operation);
    let job = CollectiveJob {
        collective,
        sizes_bytes: sizes_of(collective, args.sizes.as_ref().map(|s| s.0.as_slice()))?,
        budget_ms: args.budget.as_millis() as u64,
        precision: args.precision,
        timeout_ms: args.timeout.as_millis() as u64,
    };
    job.check_process_count(args.np)?;
    Ok(job)
}

/// `wulf collective` across nodes another command has set up (`wulf run
/// --hosts`): the operation of `args` over each backend of `via`, the
/// ranks placed on `nodes`. The result, and Ctrl-C's error when it came.
pub fn measure_across(
    ctx: &RunContext,
    args: &CollectiveArgs,
    via: &[String],
    nodes: NpbNodes,
) -> Result<(CollectiveResult, Option<anyhow::Error>)> {
    let job = job_of(args)?;
    let transports = group_transports(ctx, via, "a collective", true)?;
    let (result, stop, _) = run_all(ctx, args, &job, &transports, Some(nodes))?;
    Ok((result, stop))
}

/// The sizes to measure: `--sizes`, or the operation's defaults.
fn sizes_of(collective: Collective, given: Option<&[u64]>) -> Result<Vec<u64>> {
    match (collective, given) {
        (Collective::Barrier, Some(_)) => Err(usage("barrier moves no data: it takes no --sizes")),
        (_, Some(sizes)) => Ok(sizes.to_vec()),
        (_, None) => Ok(collective.default_sizes()),
    }
}

/// Every MPI available here on its default path (the libraries' own
/// algorithms), then shm (wulf's plain ones, over its fastest channel), or
/// tcp when the ranks are spread over nodes (shm cannot cross them).
pub fn default_backends(ctx: &RunContext) -> Vec<String> {
    let mut via: Vec<String> = available(ctx)
        .into_iter()
        .filter(|t| t.starts_both_ends() && !t.forced_variant())
        .map(|t| t.name().to_string())
        .collect();
    via.push(if ctx.spread() { "tcp" } else { "shm" }.into());
    via
}

/// Runs every backend in turn. Ctrl-C stops the list (the error comes
/// back beside the result); a failed backend is recorded and the others
/// go on, and the first failure's exit code comes back.
pub fn run_all(
    ctx: &RunContext,
    args: &CollectiveArgs,
    job: &CollectiveJob,
    transports: &[Box<dyn Transport>],
    nodes: Option<NpbNodes>,
) -> Result<(CollectiveResult, Option<anyhow::Error>, Option<i32>)> {
    let cluster = ctx.cluster.clone();
    let started = Instant::now();
    let started_at = humantime::format_rfc3339_seconds(SystemTime::now()).to_string();
    let cpus = cpu_count();
    let mut warnings = Vec::new();
    if args.np > cpus {
        warnings.push(format!(
            "{} processes on {cpus} CPUs: ranks share CPUs, so the times measure the sharing as much as the collective",
            args.np
        ));
    }
    let task = RankTask::Collective(job.clone());
    let (mut runs, mut stop, mut first_code) = (Vec::new(), None, None);
    for t in transports {
        let channel = crate::plan::group_channel(
            args.np,
            args.wait.map(Into::into),
            args.timeout,
            ctx.spread(),
        );
        // Ranks a transport starts itself are its library's job: they
        // run the library's own collective (an MPI's), not wulf's plain one.
        let mpi_backend = t.starts_both_ends();
        let mut run = CollectiveRun {
            via: t.name().to_string(),
            algorithm: if mpi_backend {
                job.collective.mpi_call().to_string()
            } else {
                job.collective.plain_algorithm().to_string()
            },
            wait: (!mpi_backend).then_some(channel.wait),
            error: None,
            points: Vec::new(),
            mpi: None,
            placement: None,
        };
        let ran = Instant::now();
        match run_task(ctx, t.as_ref(), args.np, &task, &channel) {
            Ok(done) => {
                run.mpi = done.mpi;
                if nodes.is_some() {
                    run.placement = cluster
                        .as_ref()
                        .map(|c| super::npb::placement(c, args.np, &done.hostnames));
                }
                match done.output {
                    TaskOutput::Collective(out) => {
                        run.points = out.points;
                        if out.interrupted {
                            run.error = Some(format!(
                                "interrupted after {} of {} sizes",
                                run.points.len(),
                                job.sizes_bytes.len()
                            ));
                            stop = Some(WulfError::Interrupted.into());
                        }
                    }
                    TaskOutput::Npb(_) => run.error = Some("the ranks ran another task".into()),
                }
            }
            Err(e) => {
                let interrupted = e
                    .chain()
                    .any(|c| matches!(c.downcast_ref::<WulfError>(), Some(WulfError::Interrupted)));
                run.error = Some(format!("{e:#}"));
                if interrupted {
                    stop = Some(e);
                } else {
                    first_code.get_or_insert(exit_code_of(&e));
                }
            }
        }
        eprintln!(
            "wulf: {} over {} ({} ranks): {} in {:.1} s",
            job.collective,
            t.name(),
            args.np,
            match &run.error {
                Some(e) => format!("FAILED: {e}"),
                None => format!("{} sizes", run.points.len()),
            },
            ran.elapsed().as_secs_f64()
        );
        runs.push(run);
        if stop.is_some() {
            break;
        }
    }
    let failed = runs.iter().filter(|r| r.error.is_some()).count();
    let incomplete_reason = match (&stop, failed) {
        (Some(e), _) => Some(format!("{e:#}")),
        (None, 0) => None,
        (None, n) => Some(format!("{n} backend(s) failed")),
    };
    let result = CollectiveResult {
        kind: COLLECTIVE_KIND.to_string(),
        schema_version: COLLECTIVE_SCHEMA_VERSION,
        tool_version: env!("CARGO_PKG_VERSION").to_string(),
        complete: incomplete_reason.is_none(),
        incomplete_reason,
        command_line: std::env::args().collect(),
        started_at,
        wall_s: started.elapsed().as_secs_f64(),
        host: Host::probe(),
        collective: job.collective.name().to_string(),
        nprocs: args.np,
        budget_s: args.budget.as_secs_f64(),
        precision: args.precision,
        runs,
        warnings,
        // Spread: one rank per node; else every rank in this node, if any.
        // Several ranks per node of a list: `nodes` says where.
        lab: match &nodes {
            Some(n) if n.hosts.iter().any(|h| h.slots > 1) => None,
            _ => crate::lab::group_placement(if ctx.spread() { args.np } else { 1 }),
        },
        nodes,
    };
    Ok((result, stop, first_code))
}
