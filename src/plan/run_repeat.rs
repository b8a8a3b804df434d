//! `wulf run --repeat N`: the sweeps made N times in turn, each
//! repetition's results in `NAME-MODE-rK.json`, and the run-to-run spread of
//! every transport recorded in each of its files (`run_to_run`), so that a
//! later `wulf compare` of single runs knows how far two runs of the same
//! configuration differ here. Repetitions interleave (all transports once,
//! then again) so that each transport's runs are spread over the whole run,
//! as runs made apart in time are.

use std::path::Path;

use anyhow::Result;

use crate::analysis::compare::spread::band_spreads;
use crate::result::{write_result, RunToRun, SweepResult};

/// The file name of `result` in repetition `rep` of `reps`, marking the
/// result as that repetition when there are several.
pub fn file_name(result: &mut SweepResult, rep: u32, reps: u32) -> String {
    if reps > 1 {
        result.run_to_run = Some(RunToRun {
            repetitions: reps,
            repetition: rep,
            bands: Vec::new(),
        });
    }
    name(result, rep, reps)
}

fn name(result: &SweepResult, rep: u32, reps: u32) -> String {
    match reps {
        0 | 1 => format!("{}-{}.json", result.transport, result.mode),
        _ => format!("{}-{}-r{rep}.json", result.transport, result.mode),
    }
}

/// With several repetitions: record each transport's spread over its
/// repetitions in its files (rewritten in `dir`) and print the floors they
/// give; returns the results to summarise (the first repetition's).
pub fn record_spreads(
    dir: &Path,
    mut results: Vec<SweepResult>,
    reps: u32,
) -> Result<Vec<SweepResult>> {
    if reps < 2 {
        return Ok(results);
    }
    let mut keys: Vec<(String, crate::result::Mode)> = Vec::new();
    for r in &results {
        if !keys.contains(&(r.transport.clone(), r.mode)) {
            keys.push((r.transport.clone(), r.mode));
        }
    }
    let mut lines = Vec::new();
    for (transport, mode) in keys {
        let same = |r: &SweepResult| r.transport == transport && r.mode == mode;
        let group: Vec<SweepResult> = results.iter().filter(|r| same(r)).cloned().collect();
        let bands = band_spreads(&group);
        let floors: Vec<String> = bands
            .iter()
            .map(|b| format!("{} +-{:.0}%", b.band, 100.0 * b.one_run_floor_fraction))
            .collect();
        lines.push(format!(
            "  {transport} {mode} ({} runs): {}",
            group.len(),
            if floors.is_empty() {
                "unknown (fewer than two complete runs)".into()
            } else {
                floors.join(", ")
            }
        ));
        for r in results.iter_mut().filter(|r| same(r)) {
            let Some(rr) = r.run_to_run.as_mut() else {
                continue;
            };
            rr.repetitions = group.len() as u32;
            rr.bands = bands.clone();
            let rep = rr.repetition;
            write_result(&dir.join(name(r, rep, reps)), r)?;
        }
    }
    println!(
        "run-to-run noise floor of one run against one (recorded in each result as run_to_run):"
    );
    for l in lines {
        println!("{l}");
    }
    results.retain(|r| r.run_to_run.as_ref().is_none_or(|rr| rr.repetition == 1));
    Ok(results)
}
