//! `wulf npb cg|ep|is|mg`: a NAS kernel over each transport and process
//! count, printed as the published studies' tables and saved as an NPB result.

use std::io::Write;

use anyhow::Result;

use crate::cli::{NpbArgs, NpbRankArgs};
use crate::error::{usage, with_exit_code};
use crate::lab::between::Across;
use crate::launch::RunContext;
use crate::npb::{Class, Kernel};
use crate::plan::npb::{available_transports, run_plan_coded, NpbPlan};
use crate::report::format::npb_table::npb_tables;
use crate::result::write_json;

/// Run `wulf npb`.
pub fn execute(args: &NpbArgs) -> Result<()> {
    let (kernels, a) = args.kernel.parts();
    let r = &a.ranks;
    let mut ctx = RunContext::with_transports(crate::plan::mpi_options(
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
        return crate::plan::lab_relay(crate::lab::between::run_in_node1(lab, across)?);
    }
    crate::plan::spread_in_lab(&mut ctx, r.in_lab)?;
    let spread = match crate::plan::nodes::prepare(
        &mut ctx,
        &a.nodes,
        a.via.as_deref(),
        r.in_lab,
        a.timeout,
    )? {
        crate::plan::nodes::Nodes::Relayed(code) => return crate::plan::lab_relay(code),
        crate::plan::nodes::Nodes::Here(s) => s,
    };
    let several = kernels.len() > 1;
    let to_stdout = a.json.as_deref() == Some(std::path::Path::new("-"));
    if several && to_stdout {
        return Err(usage(
            "wulf npb all writes one file per kernel: give --json a file name, not '-'",
        ));
    }
    // Calibrated before any rank starts; the loads run for every kernel.
    let prepared = crate::plan::conditions::Prepared::from_args(&a.conditions)?;
    let specs = if prepared.both {
        &[][..]
    } else {
        &prepared.loads[..]
    };
    // Ranks spread over lab nodes: the network load crosses their links.
    let most = a.np.iter().copied().max().unwrap_or(1);
    let target = crate::plan::npb_load::lab_network_target(&ctx, most, specs, a.timeout)?;
    let loads = crate::load::Loads::start_with(
        specs,
        &crate::plan::conditions::npb_placement(&a.np),
        target,
    )?;
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
            nodes: spread.as_deref().map(crate::plan::nodes::npb_nodes),
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
        return crate::plan::loaded::npb(&ctx, plans, &prepared, a.json.as_deref());
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
