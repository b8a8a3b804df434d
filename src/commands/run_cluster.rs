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
//! 4. NAS MG across the nodes over tcp and each MPI (`wulf npb`'s plan).
//!
//! A part that fails is named and the others still run; what was measured
//! is saved.

use std::path::Path;
use std::time::Duration;

use anyhow::Result;

use crate::cli::{MatrixArgs, PatternArg, RunArgs};
use crate::cluster::nodes::Spread;
use crate::npb::{Class, Kernel};
use crate::result::matrix::{read_matrix_result, MatrixResult};
use crate::result::{write_atomically, write_json, write_result, NpbResult, SweepResult};
use crate::units::{format_bits_per_s, format_ns};

/// Shares of the budget: the matrix, each pair sweep, multi-pair.
const MATRIX_SHARE: f64 = 0.4;
const PAIR_SHARE: f64 = 0.2;
const MULTIPAIR_SHARE: f64 = 0.2;

/// Sizes of the pair sweeps of a `--quick` run without `--sizes`.
const QUICK_SIZES: &str = "1:1Mi";

/// Run `wulf run` over the nodes of `spread`, saving under `dir`.
pub fn execute(args: &RunArgs, spread: &Spread, budget: Duration, dir: &Path) -> Result<()> {
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
        "{} nodes by {}: matrix, pair sweeps, multi-pair, NAS MG",
        names.len(),
        spread.launch
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
    let matrix = run_matrix(&m, &matrix_path, &mut failures, &mut stop, "matrix");
    // The matrix set the lab's nodes for itself: the rest spreads over ours.
    crate::transport::cluster::set(Some(spread.cluster.clone()));
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
    let mut matrices: Vec<MatrixResult> = matrix.into_iter().collect();
    if stop.is_none() && names.len() >= 4 {
        let path = dir.join("multipair.json");
        let mut mp = matrix_args(args, spread, &names, budget.mul_f64(MULTIPAIR_SHARE), &path);
        mp.pattern = PatternArg::Multipair;
        matrices.extend(run_matrix(
            &mp,
            &path,
            &mut failures,
            &mut stop,
            "multi-pair",
        ));
        crate::transport::cluster::set(Some(spread.cluster.clone()));
    } else if names.len() < 4 {
        say("multi-pair needs 4 nodes or more: skipped");
    }
    // 4. NAS MG across the nodes.
    let mut npb: Vec<NpbResult> = Vec::new();
    if stop.is_none() && !args.no_npb {
        match run_mg(args, spread, dir) {
            Ok((r, interrupted)) => {
                if r.runs.iter().any(|x| x.error.is_some()) {
                    failures.push("npb mg".into());
                }
                npb.push(r);
                stop = interrupted;
            }
            Err(e) => {
                eprintln!("wulf: npb mg failed: {e:#}");
                failures.push("npb mg".into());
            }
        }
    }
    let summary = summary(&matrices, &sweeps, &sweep_pairs, &npb);
    print!("{summary}");
    write_atomically(&dir.join("summary.txt"), summary.as_bytes())?;
    if let Some(path) = &args.openmetrics {
        let text = crate::report::openmetrics::to_openmetrics(&sweeps, &matrices);
        write_atomically(path, text.as_bytes())?;
    }
    let report = dir.join("report.html");
    write_atomically(
        &report,
        crate::report::html::to_html_full(&sweeps, &npb, &[], &matrices)?.as_bytes(),
    )?;
    println!("results: {}", dir.display());
    println!("report:  {}", report.display());
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
/// task of many by srun or an MPI launcher (and given none), the
/// allocation's nodes reached by srun for rank 0 and None for the other
/// tasks, which have nothing to do (rank 0 starts what runs on their
/// nodes).
pub fn node_options(args: &RunArgs) -> Result<Option<crate::cli::NodesArgs>> {
    if args.nodes.given() || args.in_lab || args.lab.is_some() {
        return Ok(Some(args.nodes.clone()));
    }
    let Some(task) = crate::cluster::launched::task() else {
        return Ok(Some(args.nodes.clone()));
    };
    if task.rank != 0 {
        return Ok(None);
    }
    let list = std::env::var("SLURM_JOB_NODELIST").map_err(|_| {
        crate::error::usage(format!(
            "wulf run under {} (task 0 of {}): give the nodes with --hosts or --hostfile",
            task.launcher, task.size
        ))
    })?;
    let mut nodes = args.nodes.clone();
    nodes.hosts = Some(list);
    nodes.launch = Some("slurm".into());
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
    let in_lab = spread.launch.starts_with("lab");
    MatrixArgs {
        hosts: Some(names.join(",")),
        hostfile: None,
        launch: Some(spread.launch.clone()),
        lab: None,
        nodes: names.len(),
        via: "tcp".into(),
        latency_size: 8,
        bandwidth_size: 4 << 20,
        serial: false,
        pattern: PatternArg::Pairs,
        budget,
        timeout: args.measure.timeout,
        remote_wulf: args.nodes.remote_wulf.clone(),
        rsh: args.nodes.rsh.clone(),
        json: Some(json.to_path_buf()),
        csv: None,
        // `wulf run --openmetrics` writes the matrices with the sweeps.
        openmetrics: None,
        quiet: args.measure.quiet,
        in_lab,
    }
}

/// Run a matrix; its result when it saved one (also a partial one).
fn run_matrix(
    m: &MatrixArgs,
    path: &Path,
    failures: &mut Vec<String>,
    stop: &mut Option<anyhow::Error>,
    what: &str,
) -> Option<MatrixResult> {
    if let Err(e) = super::matrix::execute(m) {
        eprintln!("wulf: the {what} failed: {e:#}");
        if is_interrupt(&e) {
            *stop = Some(e);
        } else {
            failures.push(what.to_string());
        }
    }
    read_matrix_result(path).ok()
}

/// The slowest directed cell by bandwidth, and the one nearest the
/// median (another pair when there is one): `(label, from, to)`.
fn chosen_pairs(m: &MatrixResult) -> Vec<(&'static str, usize, usize)> {
    let mut cells: Vec<(f64, usize, usize)> = m
        .cells
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
    args: &RunArgs,
    spread: &Spread,
    dir: &Path,
) -> Result<(NpbResult, Option<anyhow::Error>)> {
    let slots = spread.cluster.hosts.len();
    let most = 1usize << (usize::BITS - 1 - slots.leading_zeros());
    let via: Vec<String> = super::npb::available_transports()
        .into_iter()
        .filter(|n| {
            crate::transport::find(n)
                .is_some_and(|t| !t.local_only() && !t.duplicate_across_hosts())
        })
        .filter(|n| args.only.as_ref().is_none_or(|o| o.iter().any(|x| x == n)))
        .collect();
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
    };
    let (result, stop) = super::npb::run_plan(&plan)?;
    write_json(&dir.join(format!("npb-mg-{class}.json")), &result)?;
    Ok((result, stop))
}

/// The summary: nodes and what differs, the matrix in brief, the pair
/// sweeps, multi-pair and MG.
fn summary(
    matrices: &[MatrixResult],
    sweeps: &[SweepResult],
    sweep_pairs: &[String],
    npb: &[NpbResult],
) -> String {
    use std::fmt::Write;
    let mut s = String::from("\nwulf run across nodes: summary\n");
    let pairs = matrices
        .iter()
        .find(|m| m.pattern == crate::cluster::schedule::Pattern::Pairs);
    if let Some(m) = pairs {
        let nodes: Vec<&str> = m.nodes.iter().map(|n| n.name.as_str()).collect();
        let _ = writeln!(s, "  nodes ({}): {}", m.launch, nodes.join(", "));
        let a = &m.analysis;
        if a.fingerprint_differences.is_empty() {
            let _ = writeln!(s, "  fingerprints: alike");
        }
        for d in &a.fingerprint_differences {
            let values: Vec<String> = d
                .values
                .iter()
                .map(|v| {
                    let on: Vec<&str> = v.nodes.iter().map(|&i| nodes[i]).collect();
                    format!("{} on {}", v.value, on.join(","))
                })
                .collect();
            let _ = writeln!(
                s,
                "  fingerprints differ: {}: {}",
                d.field,
                values.join("; ")
            );
        }
        if let (Some(l), Some(b)) = (&a.latency, &a.bandwidth) {
            let _ = writeln!(
                s,
                "  matrix: latency median {} (MAD {}), bandwidth median {} (MAD {}), {} cells{}",
                format_ns(l.median),
                format_ns(l.mad),
                format_bits_per_s(b.median),
                format_bits_per_s(b.mad),
                m.cells.len(),
                if m.complete { "" } else { ", INCOMPLETE" }
            );
        }
        for n in &a.slow_nodes {
            let _ = writeln!(s, "  slow node: {} ({})", nodes[n.node], n.metric);
        }
        for c in &a.outlier_cells {
            if !c.explained_by_node {
                let _ = writeln!(
                    s,
                    "  slow link: {} -> {} ({})",
                    nodes[c.from], nodes[c.to], c.metric
                );
            }
        }
    }
    for (r, pair) in sweeps.iter().zip(sweep_pairs) {
        let a = crate::analysis::Analysis::of(r);
        let _ = writeln!(
            s,
            "  tcp sweep, {pair}: latency {}, peak {}",
            a.latency_ns.map(format_ns).unwrap_or_else(|| "-".into()),
            a.peak_bits_per_s
                .map(format_bits_per_s)
                .unwrap_or_else(|| "-".into()),
        );
    }
    for m in matrices
        .iter()
        .filter(|m| m.pattern != crate::cluster::schedule::Pattern::Pairs)
    {
        for st in &m.analysis.steps {
            let _ = writeln!(
                s,
                "  multi-pair: {} pairs, aggregate {}, slowest pair {}",
                st.pairs,
                format_bits_per_s(st.aggregate_bits_per_s),
                format_bits_per_s(st.min_bits_per_s)
            );
        }
    }
    for r in npb {
        for run in &r.runs {
            let figure = match (&run.error, run.best_mop_s) {
                (Some(e), _) => format!("FAILED: {e}"),
                (None, Some(m)) => format!("{m:.1} Mop/s"),
                _ => "-".into(),
            };
            let _ = writeln!(
                s,
                "  NAS {} class {} {} np={}: {figure}",
                r.kernel.to_uppercase(),
                r.class,
                run.via,
                run.nprocs
            );
        }
    }
    s
}
