//! `wulf collective allreduce|alltoall|bcast|barrier`: one collective
//! operation swept over sizes on each backend (each MPI's own algorithm,
//! wulf's process group's plain one), printed as tables and saved as a
//! `collective` result.
//!
//! The ranks run on this machine, one per node of a lab (`--lab`), or over
//! a node list (`--hosts`, `--hostfile`, `--launch`), placed and started
//! exactly as `wulf npb --hosts` places them; the placement is recorded.
//!
//! Faults follow `wulf npb`: bad options are refused before anything
//! starts (exit 2); a backend that fails (a rank that dies or hangs, an
//! MPI that is missing) is recorded with its error and the others still
//! run, then wulf exits with that backend's code (3 for a rank); Ctrl-C
//! keeps the sizes measured so far, marked incomplete (exit 130). The
//! result file is written in every case.

use std::io::Write;

use anyhow::Result;

use crate::cli::CollectiveArgs;
use crate::error::{usage, with_exit_code};
use crate::lab::between::{run_in_node1, Across};
use crate::launch::RunContext;
use crate::plan::collective::{default_backends, job_of, run_all};
use crate::plan::npb::group_transports;
use crate::report::format::collective_table::to_text;
use crate::result::write_json;

/// Run `wulf collective`.
pub fn execute(args: &CollectiveArgs) -> Result<()> {
    let ranks = &args.ranks;
    let mut ctx = RunContext::with_transports(crate::plan::mpi_options(
        &ranks.mpi,
        &ranks.mpi_arg,
        crate::transport::mpi::DEFAULT_WINDOW,
    ));
    // Sizes and counts that cannot run are refused before anything starts.
    let job = job_of(args)?;
    if let Some(lab) = &ranks.lab {
        for name in args.via.iter().flatten() {
            ctx.find_or_usage(name)?;
        }
        let across = Across {
            nodes: args.np,
            serve: None,
            spread: true,
        };
        return crate::plan::lab_relay(run_in_node1(lab, across)?);
    }
    crate::plan::spread_in_lab(&mut ctx, ranks.in_lab)?;
    // `--hosts`/`--hostfile`/`--launch`: the ranks go over those nodes,
    // started as `wulf npb --hosts` starts them.
    let spread = match crate::plan::nodes::prepare(
        &mut ctx,
        &args.nodes,
        args.via.as_deref(),
        ranks.in_lab,
        args.timeout,
    )? {
        crate::plan::nodes::Nodes::Relayed(code) => return crate::plan::lab_relay(code),
        crate::plan::nodes::Nodes::Here(s) => s,
    };
    if let Some(c) = &ctx.cluster {
        c.first(args.np).map_err(|e| usage(format!("{e:#}")))?;
    }
    let via = match (&args.via, ctx.mpi_only()) {
        (Some(v), _) => v.clone(),
        // `--launch mpi:NAME`: that MPI's ranks, by its launcher.
        (None, Some(m)) => vec![m.to_string()],
        (None, None) => default_backends(&ctx),
    };
    let transports = group_transports(&ctx, &via, "a collective", true)?;
    let nodes = spread.as_deref().map(crate::plan::nodes::npb_nodes);
    let (result, stop, failed_code) = run_all(&ctx, args, &job, &transports, nodes)?;
    let text = to_text(&result);
    if args.json.as_deref() == Some(std::path::Path::new("-")) {
        eprint!("{text}");
    } else {
        print!("{text}");
        std::io::stdout().flush()?;
    }
    if let Some(path) = &args.json {
        write_json(path, &result)?;
    }
    if let Some(e) = stop {
        return Err(e);
    }
    let failed: Vec<&str> = result
        .runs
        .iter()
        .filter(|r| r.error.is_some())
        .map(|r| r.via.as_str())
        .collect();
    if !failed.is_empty() {
        return Err(with_exit_code(
            failed_code.unwrap_or(1),
            format!("some backends failed: {}", failed.join(", ")),
        ));
    }
    Ok(())
}
