//! `wulf npb cg|ep|is|mg`: a NAS kernel over each transport and process
//! count, printed as the published studies' tables and saved as an NPB result.

use std::io::Write;
use std::time::{Duration, Instant, SystemTime};

use anyhow::Result;

use crate::cli::{NpbArgs, NpbRankArgs};
use crate::error::{exit_code_of, usage, with_exit_code, WulfError};
use crate::lab::between::Across;
use crate::launch::group::run_group;
use crate::launch::RunContext;
use crate::npb::{Class, Kernel, RankJob};
use crate::report::format::npb_table::npb_tables;
use crate::result::{
    fill_speedups, write_json, NpbResult, NpbRun, RankPlacement, NPB_KIND, NPB_SCHEMA_VERSION,
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

/// Run `wulf npb`.
pub fn execute(args: &NpbArgs) -> Result<()> {
    let (kernels, a) = args.kernel.parts();
    let r = &a.ranks;
    let mut ctx = RunContext::with_transports(super::mpi_options(
        &r.mpi,
        &r.mpi_arg,
        crate::transport::mpi::DEFAULT_WINDOW,
    ));
    if let Some(lab) = &r.lab {
        // Unknown names fail here, before a lab is built for nothing.
        for name in a.via.iter().flatten() {
            ctx.find_or_usage(name)?;
        }
        let across = Across {
            nodes: a.np.iter().copied().max().unwrap_or(1),
            serve: None,
            spread: true,
        };
        return super::lab_relay(crate::lab::between::run_in_node1(lab, across)?);
    }
    super::spread_in_lab(&mut ctx, r.in_lab)?;
    let spread =
        match super::nodes::prepare(&mut ctx, &a.nodes, a.via.as_deref(), r.in_lab, a.timeout)? {
            super::nodes::Nodes::Relayed(code) => return super::lab_relay(code),
            super::nodes::Nodes::Here(s) => s,
        };
    let several = kernels.len() > 1;
    let to_stdout = a.json.as_deref() == Some(std::path::Path::new("-"));
    if several && to_stdout {
        return Err(usage(
            "wulf npb all writes one file per kernel: give --json a file name, not '-'",
        ));
    }
    // Calibrated before any rank starts; the loads run for every kernel.
    let prepared = super::conditions::Prepared::from_args(&a.conditions)?;
    let specs = if prepared.both {
        &[][..]
    } else {
        &prepared.loads[..]
    };
    // Ranks spread over lab nodes: the network load crosses their links.
    let most = a.np.iter().copied().max().unwrap_or(1);
    let target = super::npb_load::lab_network_target(&ctx, most, specs, a.timeout)?;
    let loads =
        crate::load::Loads::start_with(specs, &super::conditions::npb_placement(&a.np), target)?;
    // The loads' own busy time joins the background the whole cost
    // subtracts: measured now, with them running.
    let whole = match &prepared.whole {
        Some(w) if !prepared.both && !prepared.loads.is_empty() => Some(w.with_loads_running()?),
        w => w.clone(),
    };
    let mut plans = Vec::new();
    let mut results = Vec::new();
    let mut failed = Vec::new();
    let mut failed_code = None;
    // Kernels `all` ran at no count, and why: the final table keeps a row
    // for each, so a reader sees them left out rather than missing.
    let mut skipped: Vec<(String, String)> = Vec::new();
    for kernel in kernels {
        let nprocs = counts_for(kernel, a.class, &a.np, several)?;
        if nprocs.is_empty() {
            // Within `all` only: the other kernels still run (EP takes
            // any count where CG, IS and MG need powers of two).
            eprintln!("wulf: {kernel}: skipped: it can use none of the process counts given");
            skipped.push((kernel.to_string(), why_no_count(kernel, a.class, &a.np)));
            continue;
        }
        let plan = NpbPlan {
            kernel,
            class: a.class,
            nprocs,
            via: match (&a.via, ctx.mpi_only()) {
                (Some(v), _) => v.clone(),
                // `--launch mpi:NAME`: that MPI's ranks, by its launcher.
                (None, Some(m)) => vec![m.to_string()],
                (None, None) => available_transports(&ctx),
            },
            repetitions: a.repetitions as usize,
            timeout: a.timeout,
            wait: a.wait.map(Into::into),
            progress: true,
            nodes: spread.as_deref().map(super::nodes::npb_nodes),
            whole: whole.clone(),
        };
        if prepared.both {
            plans.push(plan);
            continue;
        }
        let (mut result, stop, code) = run_plan_coded(&ctx, &plan)?;
        if prepared.any() {
            let (c, warning) = prepared.conditions(None, loads.records(), whole.as_ref());
            result.conditions = Some(c);
            result.warnings.extend(warning);
            result.warnings.extend(loads.warnings().iter().cloned());
            let spans = ctx.spread() || plan.nodes.is_some();
            result
                .warnings
                .extend(crate::load::network_path_note(&loads.records(), spans));
        }
        let mut tables = npb_tables(&result);
        tables.push_str(&crate::report::conditions::npb_whole_text(&result).unwrap_or_default());
        if to_stdout {
            eprint!("{tables}");
        } else {
            print!("{tables}");
            std::io::stdout().flush()?;
        }
        if let Some(path) = &a.json {
            let path = if several {
                path_for_kernel(path, kernel)
            } else {
                path.clone()
            };
            write_json(&path, &result)?;
        }
        if let Some(e) = stop {
            return Err(e);
        }
        failed_code = failed_code.or(code);
        failed.extend(
            result
                .runs
                .iter()
                .filter(|r| r.error.is_some())
                .map(|r| format!("{kernel} {} np={}", r.via, r.nprocs)),
        );
        results.push(result);
    }
    if plans.is_empty() && results.is_empty() {
        return Err(usage(
            "no NPB kernel can use the process counts given (EP takes any count; CG, IS and MG powers of two)",
        ));
    }
    if prepared.both {
        return super::loaded::npb(&ctx, plans, &prepared, a.json.as_deref());
    }
    if several {
        print!(
            "\n{}",
            crate::report::format::npb_table::kernels_table_skipping(&results, &skipped)
        );
    }
    let loads_text = crate::load::Loads::describe(&loads.stop());
    if to_stdout {
        eprint!("{loads_text}");
    } else {
        print!("{loads_text}");
    }
    if !failed.is_empty() {
        // The code of the first failure: 3 when a rank died or went silent
        // (as the exit codes promise), 1 for a failed verification.
        return Err(with_exit_code(
            failed_code.unwrap_or(1),
            format!("some runs failed: {}", failed.join(", ")),
        ));
    }
    Ok(())
}

/// The process counts of `nps` that `kernel` can use. Alone, a kernel
/// refuses the others (usage error); within `all`, it skips them, saying
/// so, and may be left with none.
fn counts_for(kernel: Kernel, class: Class, nps: &[usize], skip: bool) -> Result<Vec<usize>> {
    let mut usable = Vec::new();
    for &np in nps {
        match kernel.check_process_count(class, np) {
            Ok(()) => usable.push(np),
            Err(e) if skip => eprintln!("wulf: {kernel}: skipping np={np}: {e:#}"),
            Err(e) => return Err(e),
        }
    }
    if usable.is_empty() && !skip {
        return Err(usage(format!(
            "NPB {kernel} can use none of the process counts given"
        )));
    }
    Ok(usable)
}

/// Why `kernel` can use none of `nps`: its refusal of the largest.
fn why_no_count(kernel: Kernel, class: Class, nps: &[usize]) -> String {
    nps.iter()
        .rev()
        .find_map(|&np| kernel.check_process_count(class, np).err())
        .map(|e| format!("{e:#}"))
        .unwrap_or_else(|| "no process count given".to_string())
}

/// `dir/r.json` becomes `dir/r-cg.json` for CG.
fn path_for_kernel(path: &std::path::Path, kernel: Kernel) -> std::path::PathBuf {
    let stem = path.file_stem().unwrap_or_default().to_string_lossy();
    let name = match path.extension() {
        Some(ext) => format!("{stem}-{kernel}.{}", ext.to_string_lossy()),
        None => format!("{stem}-{kernel}"),
    };
    path.with_file_name(name)
}

/// Run a rank process (`wulf npb-rank`, started by [`run_group`]).
pub fn execute_rank(args: &NpbRankArgs) -> Result<()> {
    crate::launch::group::run_rank_process(args.control, args.rank)
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
pub(super) fn group_transports(
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
fn run_plan_coded(
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
pub(super) fn placement(
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
