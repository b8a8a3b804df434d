//! `wulf sweep`: one transport, one mode, printed as a table and saved as
//! JSON / CSV on request (also when the sweep is cut short).

use std::io::Write;
use std::path::Path;

use anyhow::Result;

use crate::cli::SweepArgs;
use crate::lab::between::Across;
use crate::report;
use crate::result::{write_atomically, write_result, SweepResult};

/// Run `wulf sweep`.
pub fn execute(args: &SweepArgs) -> Result<()> {
    let mut ctx = crate::plan::context_for(&args.measure);
    if let Some(lab) = &args.lab {
        let t = ctx.find_or_usage(&args.transport)?;
        if t.local_only() {
            return Err(crate::error::usage(format!(
                "--lab: {} does not cross a network; measure tcp or an MPI between lab nodes",
                args.transport
            )));
        }
        // A transport that starts both ends places them on node1 and node2
        // itself; the others measure against a `wulf serve` in node2.
        let code = if t.starts_both_ends() {
            let across = Across {
                nodes: 2,
                serve: None,
                spread: true,
            };
            crate::lab::between::run_in_node1(lab, across)?
        } else {
            crate::lab::between::run_against_peer_node(lab, true)?
        };
        return crate::plan::lab_relay(code);
    }
    crate::plan::spread_in_lab(&mut ctx, args.in_lab)?;
    let mut spec = crate::plan::sweep_spec(
        &ctx,
        &args.measure,
        &args.transport,
        args.mode
            .map(Into::into)
            .unwrap_or_else(|| crate::plan::default_mode(&ctx, &args.transport)),
        args.budget,
        args.peer.clone(),
    )?;
    // A blocking sweep's smallest size probed with spinning ends (issue 44).
    spec.wake_probe = true;
    // Calibrated before any peer starts (the machine must be idle).
    let mut prepared = crate::plan::conditions::Prepared::from_args(&args.conditions)?;
    prepared.load_peer = args.load_peer;
    if prepared.both {
        return crate::plan::loaded::sweep(&ctx, args, &spec, &prepared);
    }
    let outcome = crate::plan::loaded::measure_sweep(
        &ctx,
        &spec,
        &prepared,
        None,
        &prepared.loads,
        args.measure.quiet,
    )?;
    let mut table = report::format::table::sweep_table(&outcome.result);
    table.push_str(&crate::plan::loaded::conditions_text(&outcome.result));
    let json_to_stdout = args.json.as_deref() == Some(Path::new("-"));
    if json_to_stdout {
        eprint!("{table}");
    } else {
        print!("{table}");
        std::io::stdout().flush()?;
    }
    save(args, &outcome.result)?;
    if let (Some(setup_s), false) = (outcome.result.setup_s, args.measure.quiet) {
        // The set-up allowance a budget is kept against (issue 43).
        eprintln!(
            "wulf: set-up {setup_s:.2} s (peer start, handshake); the sweep took {:.2} s of a {:.2} s budget",
            outcome.result.wall_s,
            spec.budget.as_secs_f64()
        );
    }
    match outcome.error {
        None => Ok(()),
        Some(e) => {
            if args.json.is_some() || args.csv.is_some() || args.openmetrics.is_some() {
                eprintln!(
                    "wulf: sweep stopped early; the {} points measured are saved, marked incomplete",
                    outcome.result.points.len()
                );
            }
            Err(e)
        }
    }
}

fn save(args: &SweepArgs, result: &SweepResult) -> Result<()> {
    if let Some(path) = &args.json {
        write_result(path, result)?;
    }
    if let Some(path) = &args.csv {
        write_atomically(
            path,
            &report::format::csv::to_csv(std::slice::from_ref(result))?,
        )?;
    }
    if let Some(path) = &args.openmetrics {
        let text = report::format::openmetrics::to_openmetrics(std::slice::from_ref(result), &[]);
        write_atomically(path, text.as_bytes())?;
    }
    Ok(())
}
