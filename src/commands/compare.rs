//! `wulf compare`: results against a baseline, one or several runs per
//! side, as terminal or Markdown tables (and an HTML page), with an exit
//! code for regression gates.

use std::path::PathBuf;

use anyhow::Result;

use crate::analysis::compare::{compare, CompareOptions};
use crate::cli::CompareArgs;
use crate::error::{usage, WulfError};
use crate::plan::results::{read_results, stop_if_interrupted};
use crate::report::compare::{render, Style};
use crate::report::html::compare::{to_html, Section};
use crate::report::summary::labels;
use crate::result::{write_atomically, SweepResult};

/// Run `wulf compare`.
pub fn execute(args: &CompareArgs) -> Result<()> {
    let style = if args.markdown {
        Style::Markdown
    } else {
        Style::Text
    };
    let opts = CompareOptions {
        level: args.level,
        noise_floor: args.noise_floor.map(|p| p / 100.0),
        margin: args.margin / 100.0,
        stop: crate::exec::interrupted,
        ..CompareOptions::default()
    };
    let mut failures = Vec::new();
    let mut undecided = Vec::new();
    let mut sections = Vec::new();
    for (i, (a_paths, b_paths)) in pairs(args)?.into_iter().enumerate() {
        if i > 0 {
            println!();
        }
        let (a, b) = (side(&a_paths), side(&b_paths));
        stop_if_interrupted()?;
        let (a, b) = (a?, b?);
        let c = compare(&a, &b, &opts);
        stop_if_interrupted()?;
        let (a_name, b_name) = (name(&a, &a_paths), name(&b, &b_paths));
        print!("{}", render(&c, &a_name, &b_name, style));
        if let Some(pct) = args.fail_if_slower {
            let reasons = c.regressions(pct);
            if !reasons.is_empty() {
                failures.push(format!("{b_name}: {}", reasons.join("; ")));
            }
            let open = c.undecided(pct);
            if !open.is_empty() {
                undecided.push(format!("{b_name}: {}", open.join("; ")));
            }
        }
        sections.push(Section {
            a_name,
            b_name,
            comparison: c,
        });
    }
    if let Some(path) = &args.html {
        write_atomically(path, to_html(&sections).as_bytes())?;
        eprintln!("comparison: {}", path.display());
    }
    match (args.fail_if_slower, failures.is_empty(), undecided.is_empty()) {
        (Some(pct), false, _) => Err(WulfError::Regression(format!(
            "slower than the baseline by more than {pct}%, beyond the interval and the run-to-run band: {}",
            failures.join(" | ")
        ))
        .into()),
        (Some(pct), true, false) => Err(WulfError::Inconclusive(format!(
            "no slowdown shown, but one beyond {pct}% cannot be excluded (too noisy; rerun with more runs \
             per side, e.g. `wulf run --repeat 3`): {}",
            undecided.join(" | ")
        ))
        .into()),
        _ => Ok(()),
    }
}

/// The comparisons asked for: A's runs and B's runs for each.
fn pairs(args: &CompareArgs) -> Result<Vec<(Vec<PathBuf>, Vec<PathBuf>)>> {
    if !args.a.is_empty() {
        return Ok(vec![(args.a.clone(), args.b.clone())]);
    }
    if !args.after.is_empty() {
        if args.files.is_empty() {
            return Err(usage("give A's runs before `--` and B's after it"));
        }
        return Ok(vec![(args.files.clone(), args.after.clone())]);
    }
    match args.files.split_first() {
        Some((a, rest)) if !rest.is_empty() => Ok(rest
            .iter()
            .map(|b| (vec![a.clone()], vec![b.clone()]))
            .collect()),
        _ => Err(usage(
            "give a baseline and at least one result to compare with it \
             (A.json B.json), or several runs per side (A1.json A2.json -- B1.json B2.json)",
        )),
    }
}

/// Read one side's runs; several must be of one transport and mode.
fn side(paths: &[PathBuf]) -> Result<Vec<SweepResult>> {
    let runs = read_results(paths)?;
    if let Some(first) = runs.first() {
        for (r, p) in runs.iter().zip(paths).skip(1) {
            if (r.transport.as_str(), r.mode) != (first.transport.as_str(), first.mode) {
                return Err(usage(format!(
                    "{} is {} {}, but {} is {} {}: the runs of one side must be of the same transport and mode",
                    p.display(),
                    r.transport,
                    r.mode,
                    paths[0].display(),
                    first.transport,
                    first.mode
                )));
            }
        }
    }
    Ok(runs)
}

/// "tcp pingpong (a.json)", or "3 runs of tcp pingpong (a1.json, ...)".
fn name(runs: &[SweepResult], paths: &[PathBuf]) -> String {
    let label = labels(&runs[..1]).remove(0);
    let files: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
    match runs.len() {
        1 => format!("{label} ({})", files[0]),
        n => format!("{n} runs of {label} ({})", files.join(", ")),
    }
}
