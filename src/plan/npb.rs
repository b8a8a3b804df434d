//! What a NAS run does, below `wulf npb`: a plan ([`NpbPlan`]: one kernel
//! and class over transports and process counts) run combination by
//! combination on groups of ranks, and the transports a group may use.
//! `wulf npb`, `wulf run`, `wulf run --hosts` and the loaded-vs-unloaded
//! pairs (`plan::loaded`) all run their kernels through [`run_plan`].

use std::time::{Duration, Instant, SystemTime};

use anyhow::Result;

use crate::error::{exit_code_of, usage, WulfError};
use crate::launch::group::run_group;
use crate::launch::RunContext;
use crate::npb::{Class, Kernel, RankJob};
use crate::result::{
    fill_speedups, NpbResult, NpbRun, RankPlacement, NPB_KIND, NPB_SCHEMA_VERSION,
};
use crate::sys::{cpu_count, Host};
use crate::transport::{self, WaitMode};

/// What to run: one kernel and class over transports and process counts.
#[derive(Debug, Clone)]
pub struct NpbPlan {
    /// The kernel.
    pub kernel: Kernel,
    /// The problem class.
    pub class: Class,
    /// Process counts.
    pub nprocs: Vec<usize>,
    /// Transport names.
    pub via: Vec<String>,
    /// Verified runs per combination.
    pub repetitions: usize,
    /// Bound of every wait for another rank.
    pub timeout: Duration,
    /// `--wait`, if given.
    pub wait: Option<WaitMode>,
    /// Print a line per run on stderr.
    pub progress: bool,
    /// The node list the ranks are placed on (`--hosts`), if any; the
    /// hosts themselves are the run context's cluster.
    pub nodes: Option<crate::result::NpbNodes>,
    /// The whole-CPU-cost setup each run is measured with (`--cost whole`
    /// or `soak`); None: not asked for.
    pub whole: Option<crate::load::whole::WholeSetup>,
}

/// Every transport here that can link processes.
pub fn available_transports(ctx: &RunContext) -> Vec<String> {
    available(ctx)
        .iter()
        .map(|t| t.name().to_string())
        .collect()
}

/// The transports of [`available_transports`] themselves.
pub fn available(ctx: &RunContext) -> Vec<Box<dyn transport::Transport>> {
    ctx.registry()
        .into_iter()
        // Ranks wulf starts share hosts, and raw frames cannot join two
        // processes of one host; layer rows only when named.
        .filter(|t| t.links_processes() && !t.needs_link() && t.measured_by_default())
        .filter(|t| t.availability().is_ok())
        // One that links a process to few others (PVM) only when named.
        .filter(|t| t.links_per_process().is_none())
        .collect()
}

/// The transports of `via` that can link the processes of `what` (a
/// baseline cannot: usage error); in a lab, those that cannot cross nodes
/// are left out, with a note when `note`.
pub fn group_transports(
    ctx: &RunContext,
    via: &[String],
    what: &str,
    note: bool,
) -> Result<Vec<Box<dyn transport::Transport>>> {
    let mut transports = Vec::new();
    let mut skipped = Vec::new();
    for name in via {
        let t = ctx.find_or_usage(name)?;
        if !t.links_processes() {
            return Err(usage(format!(
                "{name} cannot link the processes of {what} (an in-process baseline)"
            )));
        }
        if ctx.spread() && t.local_only() {
            skipped.push(t.name());
        } else {
            transports.push(t);
        }
    }
    if let Some(text) = super::local_only_note(&skipped) {
        if note {
            eprintln!("{text}");
        }
    }
    if transports.is_empty() && !skipped.is_empty() {
        return Err(usage(
            "--lab: none of the transports crosses a network (give --via tcp or an MPI)",
        ));
    }
    Ok(transports)
}

/// Runs every combination of `plan`. Failed combinations are recorded
/// with their error and the others go on; Ctrl-C stops the plan, and the
/// result (marked incomplete) comes back with the interruption.
pub fn run_plan(ctx: &RunContext, plan: &NpbPlan) -> Result<(NpbResult, Option<anyhow::Error>)> {
    run_plan_coded(ctx, plan).map(|(result, stop, _)| (result, stop))
}

/// [`run_plan`], and the exit code of the first failed combination (see
/// [`crate::error::exit_code_of`]), if one failed.
pub fn run_plan_coded(
    ctx: &RunContext,
    plan: &NpbPlan,
) -> Result<(NpbResult, Option<anyhow::Error>, Option<i32>)> {
    let started = Instant::now();
    let started_at = humantime::format_rfc3339_seconds(SystemTime::now()).to_string();
    let transports = group_transports(ctx, &plan.via, "a NAS kernel", plan.progress)?;
    // Counts the kernel cannot use are refused before anything starts.
    for &np in &plan.nprocs {
        plan.kernel.check_process_count(plan.class, np)?;
    }
    let most = plan.nprocs.iter().copied().max().unwrap_or(1);
    for t in &transports {
        if let Some(n) = t.links_per_process().filter(|n| most > n + 1) {
            return Err(usage(format!(
                "{} links a process to {n} other at most: --np {} at most",
                t.name(),
                n + 1
            )));
        }
    }
    if let Some(c) = &ctx.cluster {
        c.first(most).map_err(|e| usage(format!("{e:#}")))?;
    }
    let cpus = cpu_count();
    let mut warnings = Vec::new();
    // Also in a lab and on simulated nodes: they share this machine's
    // CPUs. Real nodes have their own.
    let shared = plan.nodes.is_none() || ctx.launcher.as_ref().is_none_or(|l| l.shares_cpus());
    if most > cpus && shared {
        warnings.push(format!(
            "{most} processes on {cpus} CPUs: ranks share CPUs, so times above {cpus} processes \
             measure the sharing as much as the network"
        ));
    }
    let job = RankJob {
        kernel: plan.kernel,
        class: plan.class,
        repetitions: plan.repetitions,
        timeout_ms: plan.timeout.as_millis() as u64,
    };
    let mut runs = Vec::new();
    let mut stop = None;
    let mut first_code = None;
    'all: for t in &transports {
        for &np in &plan.nprocs {
            let channel = super::group_channel(np, plan.wait, plan.timeout, ctx.spread());
            let wait = channel.wait;
            let span = crate::load::whole::Span::start(plan.whole.as_ref());
            // Only where every rank runs here: across nodes this machine's
            // load says little of theirs.
            let local = ctx.cluster.is_none();
            let foreign = local
                .then(super::npb_foreign::ForeignProbe::start)
                .flatten();
            let outcome = run_group(ctx, t.as_ref(), np, &job, &channel);
            let foreign_cpus = foreign.and_then(super::npb_foreign::ForeignProbe::finish);
            let cpu_whole = span.map(crate::load::whole::Span::finish);
            if let Err(e) = &outcome {
                let interrupted = e
                    .chain()
                    .any(|c| matches!(c.downcast_ref::<WulfError>(), Some(WulfError::Interrupted)));
                if interrupted {
                    stop = outcome.err();
                    break 'all;
                }
            }
            let (outcome, mpi, hostnames) = match outcome {
                Ok(group) => (Ok(group.outcomes), group.mpi, group.hostnames),
                Err(e) => {
                    first_code.get_or_insert(exit_code_of(&e));
                    (Err(format!("{e:#}")), None, Vec::new())
                }
            };
            let mut run = NpbRun::new(t.name(), np, outcome);
            // A failed verification keeps the values it compared.
            run.failed_checks = run
                .error
                .as_deref()
                .map(crate::npb::outcome::failed_checks)
                .unwrap_or_default();
            run.mpi = mpi;
            if plan.nodes.is_some() {
                run.placement = ctx.cluster.as_ref().map(|c| placement(c, np, &hostnames));
            }
            run.wait = Some(wait);
            run.cpu_whole = cpu_whole;
            run.foreign_cpus = foreign_cpus;
            let what = format!("{} {} np={np}", plan.kernel, t.name());
            warnings.extend(foreign_cpus.and_then(|f| super::npb_foreign::warning(&what, f)));
            if plan.progress {
                match (&run.error, run.best_mop_s) {
                    (Some(e), _) => eprintln!(
                        "wulf: {} class {} {} np={np}: FAILED: {e}",
                        plan.kernel,
                        plan.class,
                        t.name()
                    ),
                    (None, Some(m)) => eprintln!(
                        "wulf: {} class {} {} np={np}: {m:.1} Mop/s",
                        plan.kernel,
                        plan.class,
                        t.name()
                    ),
                    _ => {}
                }
            }
            runs.push(run);
        }
    }
    fill_speedups(&mut runs);
    let result = NpbResult {
        kind: NPB_KIND.to_string(),
        schema_version: NPB_SCHEMA_VERSION,
        tool_version: env!("CARGO_PKG_VERSION").to_string(),
        complete: stop.is_none(),
        incomplete_reason: stop.as_ref().map(|e| format!("{e:#}")),
        command_line: std::env::args().collect(),
        started_at,
        wall_s: started.elapsed().as_secs_f64(),
        host: Host::probe(),
        kernel: plan.kernel.name().to_string(),
        class: plan.class,
        repetitions: plan.repetitions,
        runs,
        warnings,
        // Spread: one rank per node; else every rank in this node, if any.
        // One process per lab node (`--lab`, or a node list of one slot
        // each): the lab's links. Several per node: `nodes` says where.
        lab: match &plan.nodes {
            Some(n) if n.hosts.iter().any(|h| h.slots > 1) => None,
            _ => crate::lab::group_placement(if ctx.spread() { most } else { 1 }),
        },
        nodes: plan.nodes.clone(),
        conditions: None,
    };
    Ok((result, stop, first_code))
}

/// Where each of `np` ranks was placed on `cluster`, with the host name
/// it reported (empty when the run failed before saying).
pub fn placement(
    cluster: &transport::Cluster,
    np: usize,
    hostnames: &[String],
) -> Vec<RankPlacement> {
    cluster
        .hosts
        .iter()
        .take(np)
        .enumerate()
        .map(|(rank, h)| RankPlacement {
            rank,
            node: h.name.clone(),
            hostname: hostnames.get(rank).cloned().unwrap_or_default(),
        })
        .collect()
}
