//! `wulf matrix --budget` kept (issue 35 item 5): the whole measurement
//! (rounds, re-measures) within 1.2 x the budget, or a warning saying the
//! budget was too short; the rounds in the order of the recorded seed.

use crate::common;

use common::{stderr, tempdir, wulf};

#[test]
fn the_budget_is_kept_and_the_seeds_order_recorded() {
    let dir = tempdir();
    let json = dir.path().join("m.json");
    let hosts = format!("budget{}x[1-4]", std::process::id());
    let budget_s = 6.0;
    // Once in CI (2 vCPUs, right after the 64-agent matrix) two cells of
    // this run failed and the run exited 3; 46 runs under load here never
    // did. What this test checks is the budget and the order, not that no
    // cell ever fails on a starved machine: a run with failed cells is
    // shown (each cell and its error) and run once more, and the second
    // must be whole. A cause that fails cells every time still fails.
    let mut attempts = Vec::new();
    for _ in 0..2 {
        let out = wulf(&[
            "matrix",
            "--launch",
            "local",
            "--hosts",
            &hosts,
            "--bandwidth-size",
            "64Ki",
            "--budget",
            "6s",
            "--seed",
            "7",
            "--quiet",
            "--json",
            json.to_str().unwrap(),
        ])
        .output()
        .unwrap();
        if out.status.code() == Some(0) {
            break;
        }
        let failed: Vec<String> = wulf::result::matrix::read_matrix_result(&json)
            .map(|r| {
                r.cells
                    .iter()
                    .filter_map(|c| {
                        let e = c.error.as_ref()?;
                        Some(format!(
                            "{} -> {} (round {}, {:.2} s): {e}",
                            c.from, c.to, c.round, c.measure_s
                        ))
                    })
                    .collect()
            })
            .unwrap_or_default();
        let attempt = format!(
            "exit {:?}: {}; failed cells: {failed:#?}",
            out.status.code(),
            stderr(&out)
        );
        eprintln!("matrix_budget: a run failed, running once more: {attempt}");
        attempts.push(attempt);
    }
    assert!(attempts.len() < 2, "both runs failed: {attempts:#?}");
    let r = wulf::result::matrix::read_matrix_result(&json).unwrap();
    // Cells measure no memory limits or floor (nobody reads them, and
    // their spinning contended with the round's other cells).
    assert!(
        r.cells
            .iter()
            .flat_map(|c| [&c.latency, &c.bandwidth, &c.rate])
            .flatten()
            .all(|p| p.limits.is_none()),
        "a cell measured limits"
    );
    assert_eq!((r.seed, r.budget_s), (Some(7), Some(budget_s)));
    // The agents' start-up is outside the budget: wall_s - rounds_s.
    eprintln!(
        "matrix of 4, --budget 6s: measurement {:.2} s, start-up and analysis {:.2} s, warnings {:?}",
        r.rounds_s,
        r.wall_s - r.rounds_s,
        r.warnings
    );
    // A bound on the design, not on speed: within 1.2 x (plus a second
    // for the last cell's reply and the agents' goodbye), or the result
    // says the budget was too short for this machine.
    let too_short = r
        .warnings
        .iter()
        .any(|w| w.contains("more than 1.2 x --budget"));
    assert!(
        r.rounds_s <= 1.2 * budget_s + 1.0 || too_short,
        "measurement took {:.1} s for --budget {budget_s} s and says nothing: {:?}",
        r.rounds_s,
        r.warnings
    );
    // The rounds came in the seed's order, each round's two directions
    // together.
    let steps: Vec<usize> = r
        .cells
        .iter()
        .filter(|c| !c.remeasure)
        .map(|c| c.round)
        .collect();
    let mut rounds: Vec<usize> = steps.clone();
    rounds.dedup();
    let expected: Vec<usize> =
        wulf::cluster::schedule::order(wulf::result::matrix::Pattern::Pairs, 4, 7)
            .iter()
            .step_by(2)
            .map(|s| s / 2)
            .collect();
    assert_eq!(rounds, expected, "cells' rounds {steps:?}");
}

/// A budget no cell's fewest trials can keep (100 ms for 6 steps of 4 MiB
/// streams) is said while the matrix runs, on the terminal, as soon as the
/// first step shows it, and the result keeps the line (issue 43).
#[test]
fn an_overrun_the_first_step_foresees_is_said_at_once() {
    let dir = tempdir();
    let json = dir.path().join("m.json");
    let hosts = format!("short{}x[1-4]", std::process::id());
    let out = wulf(&[
        "matrix",
        "--launch",
        "local",
        "--hosts",
        &hosts,
        "--budget",
        "100ms",
        "--json",
        json.to_str().unwrap(),
    ])
    .output()
    .unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), stderr(&out));
    let r = wulf::result::matrix::read_matrix_result(&json).unwrap();
    let early = "at this machine's speed the rounds need about";
    let said = r.warnings.iter().find(|w| w.starts_with(early));
    let said = said.unwrap_or_else(|| panic!("no early warning: {:?}", r.warnings));
    assert!(
        said.contains("--budget 0.1 s") && said.contains("4 MiB"),
        "{said}"
    );
    // Printed while it ran, before the result's own lines.
    let at = text.find(early).unwrap_or_else(|| panic!("{text}"));
    assert!(text[..at].contains("wulf matrix: 4 nodes"), "{text}");
}
