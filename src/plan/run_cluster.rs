//! `wulf run --hosts ...`: the main job on a cluster. A thin orchestration
//! of what exists, in one results directory with one summary and one
//! report:
//!
//! 1. the all-pairs matrix over tcp (`wulf matrix`: the nodes'
//!    fingerprints and their differences, slow nodes and links);
//! 2. a full sweep between the slowest pair and a typical one (`wulf
//!    serve` and `wulf sweep --peer` on those nodes, [`crate::cluster::pair`]);
//! 3. multi-pair load (the matrix's `multipair` pattern), with 4 nodes
//!    or more;
//! 4. the matrix over each MPI's ranks (one per node, started by the
//!    library's own launcher; not for simulated `local` nodes);
//! 5. allreduce across the nodes over tcp and each MPI (`wulf
//!    collective`), on the largest power of two of ranks the slots allow;
//! 6. NAS MG across the nodes over tcp and each MPI (`wulf npb`'s plan).
//!
//! A part that fails is named and the others still run; what was measured
//! is saved.

use std::path::Path;
use std::time::Duration;

use anyhow::Result;

use crate::cli::{MatrixArgs, PatternArg, RunArgs};
use crate::cluster::nodes::Spread;
use crate::launch::RunContext;
use crate::npb::{Class, Kernel};
use crate::result::collective::CollectiveResult;
use crate::result::matrix::{read_matrix_figures, MatrixFigures};
use crate::result::{write_atomically, write_json, write_result, NpbResult, SweepResult};

/// Shares of the budget: the tcp matrix, each pair sweep, multi-pair,
/// each MPI's matrix, each backend's allreduce sweep.
const MATRIX_SHARE: f64 = 0.3;
const PAIR_SHARE: f64 = 0.15;
const MULTIPAIR_SHARE: f64 = 0.15;
const MPI_MATRIX_SHARE: f64 = 0.1;
const ALLREDUCE_SHARE: f64 = 0.05;

/// Allreduce sizes: of a `--quick` run, of another.
const ALLREDUCE_QUICK_SIZES: &str = "8,1Ki,64Ki";
const ALLREDUCE_SIZES: &str = "8:1Mi";

/// Sizes of the pair sweeps of a `--quick` run without `--sizes`.
const QUICK_SIZES: &str = "1:1Mi";

/// Run `wulf run` over the nodes of `spread`, saving under `dir`; `ctx`
/// holds the command's transport options.
pub fn execute(
    ctx: &RunContext,
    args: &RunArgs,
    spread: &Spread,
    budget: Duration,
    dir: &Path,
) -> Result<()> {
    let ctx = &RunContext {
        cluster: Some(spread.cluster.clone()),
        ..ctx.clone()
    };
    let names: Vec<String> = spread.nodes.iter().map(|(n, _)| n.clone()).collect();
    if names.len() < 2 {
        return Err(crate::error::usage(format!(
            "wulf run across nodes needs at least 2 nodes, got {}",
            names.len()
        )));
    }
    let quiet = args.measure.quiet;
    let timeout = args.measure.timeout;
    let mut failures: Vec<String> = Vec::new();
    let mut stop = None;
    let say = |s: &str| {
        if !quiet {
            eprintln!("wulf run: {s}");
        }
    };
    say(&format!(
        "{} nodes by {}: matrix, pair sweeps, multi-pair, MPI matrices, allreduce, NAS MG",
        names.len(),
        spread.launch_name
    ));
    // 1. The matrix.
    let matrix_path = dir.join("matrix.json");
    let m = matrix_args(
        args,
        spread,
        &names,
        budget.mul_f64(MATRIX_SHARE),
        &matrix_path,
    );
    let matrix = run_matrix(ctx, &m, &matrix_path, &mut failures, &mut stop, "matrix");
    // 2. Full sweeps between the slowest and a typical pair.
    let mut sweeps: Vec<SweepResult> = Vec::new();
    let mut sweep_pairs: Vec<String> = Vec::new();
    if let (Some(m), None) = (&matrix, &stop) {
        for (label, from, to) in chosen_pairs(m) {
            let (a, b) = (&m.nodes[from].name, &m.nodes[to].name);
            say(&format!("full tcp sweep, {label} pair: {a} -> {b}"));
            let (Some(i), Some(j)) = (first_slot(spread, a), first_slot(spread, b)) else {
                continue;
            };
            let share = budget.mul_f64(PAIR_SHARE);
            // A quick run stops at 1 MiB: on a slow link the fewest trials
            // of the largest sizes alone outlast a quick budget.
            let sizes = args
                .measure
                .sizes
                .clone()
                .or_else(|| args.quick.then(|| QUICK_SIZES.to_string()));
            let pair = crate::cluster::pair::sweep_between;
            match pair(&spread.cluster, (i, j), sizes.as_deref(), share, timeout) {
                Ok(r) => {
                    write_result(&dir.join(format!("sweep-tcp-{a}-{b}.json")), &r)?;
                    sweeps.push(r);
                    sweep_pairs.push(format!("{label} pair {a} -> {b}"));
                }
                Err(e) => {
                    eprintln!("wulf: the sweep {a} -> {b} failed: {e:#}");
                    if is_interrupt(&e) {
                        stop = Some(e);
                        break;
                    }
                    failures.push(format!("sweep {a} -> {b}"));
                }
            }
        }
    }
    // 3. Multi-pair load.
    let mut matrices: Vec<MatrixFigures> = matrix.into_iter().collect();
    if stop.is_none() && names.len() >= 4 {
        let path = dir.join("multipair.json");
        let mut mp = matrix_args(args, spread, &names, budget.mul_f64(MULTIPAIR_SHARE), &path);
        mp.pattern = PatternArg::Multipair;
        matrices.extend(run_matrix(
            ctx,
            &mp,
            &path,
            &mut failures,
            &mut stop,
            "multi-pair",
        ));
    } else if names.len() < 4 {
        say("multi-pair needs 4 nodes or more: skipped");
    }
    // 4. The matrix over each MPI's ranks, by the library's own launcher
    // (which cannot reach simulated nodes).
    let mpis: Vec<String> = backends(ctx, args)
        .into_iter()
        .filter(|n| ctx.find(n).is_some_and(|t| t.starts_both_ends()))
        .collect();
    for mpi in mpis.iter().filter(|_| spread.launcher.mpi_can_reach()) {
        if stop.is_some() {
            break;
        }
        say(&format!("matrix over {mpi}"));
        let path = dir.join(format!("matrix-{}.json", file_safe(mpi)));
        let mut mm = matrix_args(
            args,
            spread,
            &names,
            budget.mul_f64(MPI_MATRIX_SHARE),
            &path,
        );
        mm.via = mpi.clone();
        if !mm.in_lab {
            // The MPI's launcher starts the ranks.
            mm.launch = None;
        }
        let what = format!("matrix over {mpi}");
        // Out of a lab, its own launcher (the MPI's) starts the agents.
        let mctx = match mm.launch {
            Some(_) => ctx.clone(),
            None => RunContext::default(),
        };
        matrices.extend(run_matrix(
            &mctx,
            &mm,
            &path,
            &mut failures,
            &mut stop,
            &what,
        ));
    }
    // 5. Allreduce across the nodes.
    let mut collectives = Vec::new();
    if stop.is_none() {
        say("allreduce across the nodes");
        let ran = run_allreduce(ctx, args, spread, budget, dir);
        let failed = |r: &CollectiveResult| r.runs.iter().any(|x| x.error.is_some());
        collectives.extend(ranks_part(
            "allreduce",
            ran,
            failed,
            &mut failures,
            &mut stop,
        ));
    }
    // 6. NAS MG across the nodes.
    let mut npb: Vec<NpbResult> = Vec::new();
    if stop.is_none() && !args.no_npb {
        let ran = run_mg(ctx, args, spread, dir);
        let failed = |r: &NpbResult| r.runs.iter().any(|x| x.error.is_some());
        npb.extend(ranks_part("npb mg", ran, failed, &mut failures, &mut stop));
    }
    let summary =
        super::run_cluster_summary::summary(&matrices, &sweeps, &sweep_pairs, &collectives, &npb);
    print!("{summary}");
    write_atomically(&dir.join("summary.txt"), summary.as_bytes())?;
    if let Some(path) = &args.openmetrics {
        let text = crate::report::format::openmetrics::to_openmetrics(&sweeps, &matrices);
        write_atomically(path, text.as_bytes())?;
    }
    let report = dir.join("report.html");
    write_atomically(
        &report,
        crate::report::html::to_html(&crate::report::ReportInput {
            sweeps: &sweeps,
            npb: &npb,
            studies: &[],
            matrices: &matrices,
            collectives: &collectives,
            ..Default::default()
        })?
        .as_bytes(),
    )?;
    println!("results: {}", dir.display());
    println!("report:  {}", report.display());
    // Last, the few sentences the report opens with: the answer.
    print!("{}", crate::report::html::answer_screen(&sweeps));
    if let Some(e) = stop {
        return Err(e);
    }
    if !failures.is_empty() {
        return Err(crate::error::peer(format!(
            "some parts failed: {}",
            failures.join(", ")
        )));
    }
    Ok(())
}

/// The node options of `wulf run`: as given; or, when started as one
/// task of many by srun or an MPI launcher (and given none), the batch
/// job's nodes reached by its launcher (a Slurm allocation's, by srun)
/// for rank 0 and None for the other
/// tasks, which have nothing to do (rank 0 starts what runs on their
/// nodes).
pub fn node_options(args: &RunArgs) -> Result<Option<crate::cli::NodesArgs>> {
    if args.nodes.given() || args.in_lab || args.lab.is_some() {
        return Ok(Some(args.nodes.clone()));
    }
    let Some(task) = crate::launch::launched::task() else {
        return Ok(Some(args.nodes.clone()));
    };
    if task.rank != 0 {
        return Ok(None);
    }
    let (list, launch) = crate::cluster::launchers::allocation().ok_or_else(|| {
        crate::error::usage(format!(
            "wulf run under {} (task 0 of {}): give the nodes with --hosts or --hostfile",
            task.launcher, task.size
        ))
    })?;
    let mut nodes = args.nodes.clone();
    nodes.hosts = Some(list);
    nodes.launch = Some(launch.into());
    Ok(Some(nodes))
}

fn is_interrupt(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        matches!(
            c.downcast_ref::<crate::error::WulfError>(),
            Some(crate::error::WulfError::Interrupted)
        )
    })
}

/// The index of the first slot of node `name` in the spread's hosts.
fn first_slot(spread: &Spread, name: &str) -> Option<usize> {
    spread.cluster.hosts.iter().position(|h| h.name == name)
}

/// `wulf matrix` over the same nodes, reached the same way.
fn matrix_args(
    args: &RunArgs,
    spread: &Spread,
    names: &[String],
    budget: Duration,
    json: &Path,
) -> MatrixArgs {
    let in_lab = spread.launcher.in_lab();
    MatrixArgs {
        hosts: Some(names.join(",")),
        hostfile: None,
        launch: Some(spread.launch_name.clone()),
        lab: None,
        nodes: names.len(),
        via: "tcp".into(),
        latency_size: 8,
        bandwidth_size: None,
        serial: false,
        pattern: PatternArg::Pairs,
        no_alone: false,
        budget,
        seed: None,
        timeout: args.measure.timeout,
        remote_wulf: args.nodes.remote_wulf.clone(),
        rsh: args.nodes.rsh.clone(),
        json: Some(json.to_path_buf()),
        csv: None,
        // `wulf run --openmetrics` writes the matrices with the sweeps.
        openmetrics: None,
        quiet: args.measure.quiet,
        in_lab,
        ppn: 1,
    }
}

/// Run a matrix with `ctx`'s launcher (None: the one `m` names); its
/// result when it saved one (also a partial one).
fn run_matrix(
    ctx: &RunContext,
    m: &MatrixArgs,
    path: &Path,
    failures: &mut Vec<String>,
    stop: &mut Option<anyhow::Error>,
    what: &str,
) -> Option<MatrixFigures> {
    // The nodes' launcher, parsed once for the whole run.
    if let Err(e) = super::matrix::execute_with(m, ctx.launcher.clone()) {
        eprintln!("wulf: the {what} failed: {e:#}");
        if is_interrupt(&e) {
            *stop = Some(e);
        } else {
            failures.push(what.to_string());
        }
    }
    read_matrix_figures(path).ok()
}

/// The slowest directed cell by bandwidth, and the one nearest the
/// median (another pair when there is one): `(label, from, to)`.
fn chosen_pairs(m: &MatrixFigures) -> Vec<(&'static str, usize, usize)> {
    let mut cells: Vec<(f64, usize, usize)> = m
        .figures
        .iter()
        .filter_map(|c| Some((c.bits_per_s()?, c.from, c.to)))
        .collect();
    cells.sort_by(|a, b| a.0.total_cmp(&b.0));
    let Some(&(_, sf, st)) = cells.first() else {
        return Vec::new();
    };
    let mut out = vec![("slowest", sf, st)];
    let same = |f: usize, t: usize| (f, t) == (sf, st) || (f, t) == (st, sf);
    let median = cells[cells.len() / 2].0;
    if let Some(&(_, f, t)) = cells
        .iter()
        .filter(|c| !same(c.1, c.2))
        .min_by(|a, b| (a.0 - median).abs().total_cmp(&(b.0 - median).abs()))
    {
        out.push(("typical", f, t));
    }
    out
}

/// NAS MG class S (W with --thorough) across the nodes: one process
/// alone, then the largest power of two the slots allow, over tcp and
/// each MPI.
fn run_mg(
    ctx: &RunContext,
    args: &RunArgs,
    spread: &Spread,
    dir: &Path,
) -> Result<(NpbResult, Option<anyhow::Error>)> {
    let most = most_ranks(spread);
    let via = backends(ctx, args);
    let class = if args.thorough { Class::W } else { Class::S };
    let plan = super::npb::NpbPlan {
        kernel: Kernel::Mg,
        class,
        nprocs: if most > 1 { vec![1, most] } else { vec![1] },
        via,
        repetitions: 2,
        timeout: args.measure.timeout,
        wait: args.measure.wait.map(Into::into),
        progress: !args.measure.quiet,
        nodes: Some(super::nodes::npb_nodes(spread)),
        whole: None,
    };
    let (result, stop) = super::npb::run_plan(ctx, &plan)?;
    write_json(&dir.join(format!("npb-mg-{class}.json")), &result)?;
    Ok((result, stop))
}

/// The outcome of a part run on ranks (allreduce, MG): its result, if
/// any; a failed run or a part that could not run is named in
/// `failures`, and Ctrl-C's error goes to `stop`.
fn ranks_part<T>(
    what: &str,
    ran: Result<(T, Option<anyhow::Error>)>,
    failed: impl Fn(&T) -> bool,
    failures: &mut Vec<String>,
    stop: &mut Option<anyhow::Error>,
) -> Option<T> {
    match ran {
        Ok((r, interrupted)) => {
            if failed(&r) {
                failures.push(what.into());
            }
            *stop = interrupted;
            Some(r)
        }
        Err(e) => {
            eprintln!("wulf: {what} failed: {e:#}");
            failures.push(what.into());
            None
        }
    }
}

/// The backends that cross nodes (tcp and each MPI's default path), as
/// `--only` narrows them.
fn backends(ctx: &RunContext, args: &RunArgs) -> Vec<String> {
    super::npb::available_transports(ctx)
        .into_iter()
        .filter(|n| {
            ctx.find(n)
                .is_some_and(|t| !t.local_only() && !t.duplicate_across_hosts())
        })
        .filter(|n| args.only.as_ref().is_none_or(|o| o.iter().any(|x| x == n)))
        .collect()
}

/// `name` for a file name: `mpi:openmpi(tcp)` as `mpi-openmpi-tcp`.
fn file_safe(name: &str) -> String {
    let s: String = name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    s.trim_matches('-').replace("--", "-")
}

/// The largest power of two of ranks the nodes' slots allow.
fn most_ranks(spread: &Spread) -> usize {
    let slots = spread.cluster.hosts.len().max(1);
    1usize << (usize::BITS - 1 - slots.leading_zeros())
}

/// Allreduce (`wulf collective allreduce`) across the nodes over each
/// backend, on [`most_ranks`] ranks, each backend's sweep within its share
/// of `budget`; saved as `collective-allreduce.json`.
fn run_allreduce(
    ctx: &RunContext,
    args: &RunArgs,
    spread: &Spread,
    budget: Duration,
    dir: &Path,
) -> Result<(CollectiveResult, Option<anyhow::Error>)> {
    use clap::Parser as _;
    let np = most_ranks(spread).max(2).to_string();
    let share = format!("{}ms", budget.mul_f64(ALLREDUCE_SHARE).as_millis().max(200));
    let timeout = format!("{}ms", args.measure.timeout.as_millis());
    let sizes = if args.quick {
        ALLREDUCE_QUICK_SIZES
    } else {
        ALLREDUCE_SIZES
    };
    // Parsed as the command line would be: the defaults stay the command's.
    let argv = [
        "wulf",
        "collective",
        "allreduce",
        "--np",
        &np,
        "--budget",
        &share,
        "--timeout",
        &timeout,
        "--sizes",
        sizes,
    ];
    let cli = crate::cli::Cli::try_parse_from(argv)?;
    let crate::cli::Command::Collective(mut c) = cli.command else {
        anyhow::bail!("not a collective command line");
    };
    c.wait = args.measure.wait;
    let via = backends(ctx, args);
    let nodes = super::nodes::npb_nodes(spread);
    let (result, stop) = super::collective::measure_across(ctx, &c, &via, nodes)?;
    write_json(&dir.join("collective-allreduce.json"), &result)?;
    Ok((result, stop))
}
