//! `wulf run`, the main job: every transport this machine has, measured in
//! turn, saved under `wulf-results/<timestamp>/`, summarised side by side.

use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use anyhow::Result;

use crate::cli::RunArgs;
use crate::error::WulfError;
use crate::lab::between::Across;
use crate::launch::mpi::run_sweep;
use crate::launch::RunContext;
use crate::npb::{Class, Kernel};
use crate::report;
use crate::result::{write_atomically, write_json, write_result, NpbResult, SweepResult};

/// Total sweep budget of a default run, shared among the transports found
/// (MPI start-up and the NAS kernel come on top): about a minute in all.
pub const DEFAULT_BUDGET: Duration = Duration::from_secs(50);

/// Run `wulf run`.
pub fn execute(args: &RunArgs) -> Result<()> {
    let mut ctx = crate::plan::context_for(&args.measure);
    if let Some(lab) = &args.lab {
        // In node1: tcp against a `wulf serve` in node2; MPI ranks and NAS
        // MG ranks one per node.
        let across = Across {
            nodes: 2,
            serve: Some(false),
            spread: true,
        };
        return crate::plan::lab_relay(crate::lab::between::run_in_node1(lab, across)?);
    }
    crate::plan::spread_in_lab(&mut ctx, args.in_lab)?;
    let budget = args.budget.unwrap_or(if args.quick {
        DEFAULT_BUDGET / 4
    } else if args.thorough {
        DEFAULT_BUDGET * 4
    } else {
        DEFAULT_BUDGET
    });
    // Started on every node by srun or mpirun: rank 0 runs the job.
    let Some(nodes) = crate::plan::run_cluster::node_options(args)? else {
        return Ok(());
    };
    match crate::plan::nodes::prepare(
        &mut ctx,
        &nodes,
        args.only.as_deref(),
        args.in_lab,
        args.measure.timeout,
    )? {
        crate::plan::nodes::Nodes::Relayed(code) => return crate::plan::lab_relay(code),
        crate::plan::nodes::Nodes::Here(Some(spread)) => {
            let dir = results_dir(&args.out);
            return crate::plan::run_cluster::execute(&ctx, args, &spread, budget, &dir);
        }
        crate::plan::nodes::Nodes::Here(None) => {}
    }
    let mut measure = args.measure.clone();
    measure.tails |= args.thorough;
    measure.precision = Some(measure.precision.unwrap_or(match args.thorough {
        true => crate::measure::policy::SWEEP_PRECISION,
        false => crate::measure::policy::OVERVIEW_PRECISION,
    }));
    // --thorough: the whole CPU cost too (the kernel's accounting, its
    // background measured here, before any peer starts, while the machine
    // is as idle as it gets).
    let whole = match args.thorough {
        true => Some(crate::plan::conditions::Prepared::whole_cost()?),
        false => None,
    };
    let dir = results_dir(&args.out);
    let mut results: Vec<SweepResult> = Vec::new();
    // With --repeat, every repetition's results, in order.
    let mut failures = Vec::new();
    let mut stop: Option<anyhow::Error> = None;
    let mut chosen = Vec::new();
    let mut local = Vec::new();
    for t in ctx.registry() {
        let name = t.name();
        if args
            .only
            .as_ref()
            .is_some_and(|o| !o.iter().any(|n| n == name))
        {
            continue;
        }
        // A layer's row (an MPI over UCX) only when named.
        if args.only.is_none() && !t.measured_by_default() {
            continue;
        }
        // Between lab nodes only what crosses the network is measured,
        // each path once.
        if ctx.spread() && t.local_only() {
            local.push(name);
            continue;
        }
        if ctx.spread() && t.duplicate_across_hosts() {
            continue;
        }
        if t.needs_link() && args.peer.is_none() {
            eprintln!("wulf: skipping {name}: needs a peer across an Ethernet link (--peer HOST or --lab)");
            continue;
        }
        match t.availability() {
            Ok(()) => chosen.push(t),
            Err(why) => eprintln!("wulf: skipping {name}: {why}"),
        }
    }
    if let Some(note) = crate::plan::local_only_note(&local) {
        eprintln!("{note}");
    }
    // The total budget is shared in proportion to each transport's weight
    // (baselines are quick references and weigh less).
    let weights: f64 = chosen.iter().map(|t| t.run_budget_fraction()).sum();
    let measured: Vec<&'static str> = chosen.iter().map(|t| t.name()).collect();
    let reps = args.repeat.max(1);
    'reps: for rep in 1..=reps {
        // The budget is a deadline for each repetition: a transport that
        // overran its share (set-up, a busy machine) shortens the shares
        // of those after it, never below a fifth of their own.
        let rep_deadline = std::time::Instant::now() + budget;
        let mut weights_left = weights;
        for t in &chosen {
            let name = t.name();
            let w = t.run_budget_fraction();
            let left = rep_deadline.saturating_duration_since(std::time::Instant::now());
            let own = budget.mul_f64(w / weights.max(1e-9));
            let share = left
                .mul_f64(w / weights_left.max(1e-9))
                .min(own)
                .max(own / 5);
            weights_left -= w;
            // In a lab, transports that start both ends place them on the
            // nodes; the others measure against the server in node2.
            let peer = args.peer.clone().filter(|_| !t.starts_both_ends());
            let mut spec =
                crate::plan::sweep_spec(&ctx, &measure, name, t.default_mode(), share, peer)?;
            spec.whole = whole.as_ref().and_then(|w| w.whole.clone());
            // A blocking sweep's smallest size probed with spinning ends.
            spec.wake_probe = true;
            let mut bar = crate::plan::SizesBar::new(&spec, measure.quiet, name);
            let outcome = run_sweep(&ctx, &spec, &mut bar);
            bar.finish();
            match outcome {
                Err(e) => {
                    eprintln!("wulf: {name} failed: {e:#}");
                    failures.push(name);
                }
                Ok(o) => {
                    let mut result = o.result;
                    if let Some(w) = &whole {
                        let (c, warning) = w.conditions(None, Vec::new(), None);
                        result.conditions = Some(c);
                        result.warnings.extend(warning);
                    }
                    let path = dir.join(crate::plan::run_repeat::file_name(&mut result, rep, reps));
                    write_result(&path, &result)?;
                    results.push(result);
                    if let Some(e) = o.error {
                        let interrupted = e
                            .downcast_ref::<WulfError>()
                            .is_some_and(|w| matches!(w, WulfError::Interrupted));
                        eprintln!("wulf: {name} stopped early: {e:#}");
                        if interrupted {
                            stop = Some(e);
                            break 'reps;
                        }
                        failures.push(name);
                    }
                }
            }
        }
    }
    let results = crate::plan::run_repeat::record_spreads(&dir, results, reps)?;
    // The applications' view: the NAS kernels over the same transports.
    let mut npb_results = Vec::new();
    if stop.is_none() && !args.no_npb {
        for kernel in NPB_KERNELS {
            match run_npb(&ctx, args, &dir, &measured, kernel, whole.as_ref()) {
                Ok((r, interrupted)) => {
                    if r.runs.iter().any(|x| x.error.is_some()) {
                        failures.push(npb_label(kernel));
                    }
                    npb_results.push(r);
                    stop = interrupted;
                }
                Err(e) => {
                    eprintln!("wulf: npb {kernel} failed: {e:#}");
                    failures.push(npb_label(kernel));
                }
            }
            if stop.is_some() {
                break;
            }
        }
    }
    if !results.is_empty() {
        write_atomically(
            &dir.join("points.csv"),
            &report::format::csv::to_csv(&results)?,
        )?;
        if let Some(path) = &args.openmetrics {
            let text = report::format::openmetrics::to_openmetrics(&results, &[]);
            write_atomically(path, text.as_bytes())?;
        }
        println!("{}", report::format::table::comparison_table(&results));
        let names: Vec<String> = results.iter().map(|r| r.transport.clone()).collect();
        for (who, w) in report::summary::grouped_warnings(&results, &names) {
            match who {
                Some(name) => println!("  {name} warning: {w}"),
                None => println!("  warning: {w}"),
            }
        }
        for r in &npb_results {
            println!("{}", report::format::npb_table::npb_tables(r));
        }
        println!("results: {}", dir.display());
        // The report beside the results: what a user opens first.
        let report_path = dir.join("report.html");
        write_atomically(
            &report_path,
            report::html::to_html(&report::ReportInput {
                sweeps: &results,
                npb: &npb_results,
                ..Default::default()
            })?
            .as_bytes(),
        )?;
        println!("report:  {}", report_path.display());
        // Last, the few sentences the report opens with: the answer.
        print!("{}", report::html::answer_screen(&results));
    }
    if let Some(e) = stop {
        return Err(e);
    }
    if !failures.is_empty() {
        anyhow::bail!("some transports failed: {}", failures.join(", "));
    }
    if results.is_empty() {
        anyhow::bail!("no transport could be measured");
    }
    Ok(())
}

/// The NAS kernels `wulf run` ends with, MG first (as before the others
/// existed), and the verified runs of each per combination: MG keeps its
/// three; the others, added later, take fewer so that they add at most
/// about 30 s to a run (EP, pure computation, one; CG and IS two).
const NPB_KERNELS: [Kernel; 4] = [Kernel::Mg, Kernel::Cg, Kernel::Ep, Kernel::Is];

/// How a failed kernel is named among the failed transports.
fn npb_label(kernel: Kernel) -> &'static str {
    match kernel {
        Kernel::Cg => "npb cg",
        Kernel::Ep => "npb ep",
        Kernel::Is => "npb is",
        Kernel::Mg => "npb mg",
        Kernel::Lu => "npb lu",
        Kernel::Sp => "npb sp",
        Kernel::Ft => "npb ft",
        Kernel::Bt => "npb bt",
    }
}

fn npb_repetitions(kernel: Kernel) -> usize {
    match kernel {
        Kernel::Mg => 3,
        Kernel::Cg | Kernel::Is => 2,
        Kernel::Ep | Kernel::Lu | Kernel::Sp | Kernel::Ft | Kernel::Bt => 1,
    }
}

/// NAS `kernel` class S (W with --thorough) on 1 and 2 processes over
/// every transport that links processes and was not left out by --only
/// (in a lab: of those `measured`, one process per node); saved as
/// `npb-KERNEL-CLASS.json`. Returns the result and the interruption, if
/// any.
fn run_npb(
    ctx: &RunContext,
    args: &RunArgs,
    dir: &std::path::Path,
    measured: &[&'static str],
    kernel: Kernel,
    whole: Option<&crate::plan::conditions::Prepared>,
) -> Result<(NpbResult, Option<anyhow::Error>)> {
    let via: Vec<String> = crate::plan::npb::available_transports(ctx)
        .into_iter()
        .filter(|n| args.only.as_ref().is_none_or(|o| o.iter().any(|x| x == n)))
        // In a lab, the paths the sweeps measured (left-out ones noted).
        .filter(|n| !ctx.spread() || measured.iter().any(|m| m == n))
        .collect();
    let plan = crate::plan::npb::NpbPlan {
        kernel,
        class: if args.thorough { Class::W } else { Class::S },
        nprocs: vec![1, 2],
        via,
        repetitions: npb_repetitions(kernel),
        timeout: args.measure.timeout,
        wait: args.measure.wait.map(Into::into),
        progress: !args.measure.quiet,
        nodes: None,
        whole: whole.and_then(|w| w.whole.clone()),
    };
    let (mut result, stop) = crate::plan::npb::run_plan(ctx, &plan)?;
    if let Some(w) = whole {
        let (c, warning) = w.conditions(None, Vec::new(), None);
        result.conditions = Some(c);
        result.warnings.extend(warning);
    }
    let path = dir.join(format!("npb-{kernel}-{}.json", plan.class));
    write_json(&path, &result)?;
    Ok((result, stop))
}

fn results_dir(out: &std::path::Path) -> PathBuf {
    let stamp = humantime::format_rfc3339_seconds(SystemTime::now())
        .to_string()
        .replace(':', "-");
    out.join(stamp.trim_end_matches('Z'))
}
