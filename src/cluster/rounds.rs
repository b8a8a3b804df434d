//! The measuring part of a matrix, once the agents have joined: the steps
//! in their seeded order ([`schedule::order`]), each within its share of
//! the budget ([`super::budget`]), the pairs streamed again alone where
//! the pattern asks, then the suspicious cells re-measured
//! ([`super::remeasure`]) with what is left of the budget.

use std::time::{Duration, Instant};

use super::budget::Keeper;
use super::cells::CellFile;
use super::coordinator::{measure_group, MatrixPlan, Member};
use super::protocol::CellParts;
use super::schedule;
use crate::result::matrix::{CellFigures, MatrixCell, MatrixNode, Pattern};

/// Steps after which host-bound rounds are no longer looked for while
/// they run (two rounds' both directions).
const RING_CHECK_STEPS: usize = 4;

/// What the rounds did.
pub(super) struct Rounds {
    /// The figures of every cell measured or tried.
    pub cells: Vec<CellFigures>,
    /// A node was lost or a cell failed for a node's sake.
    pub trouble: bool,
    /// Ctrl-C.
    pub interrupted: bool,
    /// The cell file's error, when it failed.
    pub write_error: Option<String>,
    /// What the budget could not keep, for the result's warnings.
    pub warnings: Vec<String>,
}

/// Run the `steps` steps of the plan among `n` nodes (none when fewer
/// than two joined), every cell to `cell_file`; `on_progress` hears of each
/// finished round (done, of `rounds`).
#[allow(clippy::too_many_arguments)]
pub(super) fn run(
    plan: &MatrixPlan,
    n: usize,
    steps: usize,
    rounds: usize,
    cell_file: &mut CellFile,
    members: &mut [Member],
    nodes: &mut [MatrixNode],
    on_progress: &mut dyn FnMut(Progress),
) -> Rounds {
    let started = Instant::now();
    let pairs = plan.pattern == Pattern::Pairs;
    let mut keeper = Keeper::new(plan.budget, pairs);
    let mut out = Rounds {
        cells: Vec::new(),
        trouble: false,
        interrupted: false,
        write_error: None,
        warnings: Vec::new(),
    };
    let order = if steps == 0 {
        Vec::new()
    } else {
        schedule::order(plan.pattern, n, plan.seed)
    };
    let mut slots_left: usize = match steps {
        0 => 0,
        _ => slot_count(plan, n),
    };
    let (mut given_sum, mut given_count) = (Duration::ZERO, 0u32);
    let mut done_steps = 0;
    let mut ring_kept = false;
    // Said once, as soon as the first slots show it.
    let mut overrun_said = false;
    'steps: for &st in &order {
        let mut directed = schedule::step(plan.pattern, n, st);
        let round = schedule::round_of(plan.pattern, st);
        let groups: Vec<Vec<(usize, usize)>> = if plan.serial {
            // Pairs one at a time: in an order of the seed's too.
            schedule::shuffle(&mut directed, plan.seed ^ st as u64);
            directed.iter().map(|&p| vec![p]).collect()
        } else {
            vec![directed]
        };
        for group in groups {
            if crate::sweep::interrupted() {
                out.interrupted = true;
                break 'steps;
            }
            // Multipair is osu_mbw_mr: the small-message rate too.
            let parts = CellParts {
                rate: plan.pattern == Pattern::Multipair,
                ..CellParts::default()
            };
            let calls = 1 + if plan.alone { group.len() as u32 } else { 0 };
            let slot = keeper.slot(started.elapsed(), slots_left, calls);
            slots_left = slots_left.saturating_sub(1);
            // With the pairs alone after the step, each half of the slot.
            let budget = if plan.alone { slot / 2 } else { slot };
            given_sum += budget;
            given_count += 1;
            let began = Instant::now();
            let mut measured = measure_group(plan, budget, round, &group, parts, members, nodes);
            if plan.alone && !measured.lost {
                // Right after the step, while conditions are the same.
                measured.lost =
                    measure_alone(plan, budget, round, &mut measured.cells, members, nodes);
            }
            keeper.record(slot, began.elapsed(), calls);
            if !overrun_said {
                let least = keeper.least_rounds(started.elapsed(), slots_left, calls);
                if keeper.will_overrun(least) {
                    overrun_said = true;
                    let line = overrun_line(plan, least, keeper.overhead());
                    on_progress(Progress::WillOverrun(line.clone()));
                    out.warnings.push(line);
                }
            }
            out.trouble |= measured.lost;
            let before = out.cells.len();
            for cell in measured.cells {
                if let Err(e) = cell_file.push(&cell) {
                    out.write_error = Some(format!("{e:#}"));
                }
                // The cell is on disk; its figures are all the analysis
                // and the terminal need.
                out.cells.push(CellFigures::from(&cell));
            }
            if out.write_error.is_some() {
                break 'steps;
            }
            // Host-bound rounds are judged from a ring of cells measured
            // alone after them: keep its time back as soon as it shows,
            // looked for in the first rounds only (the check is linear in
            // the cells so far; a 1,000-node matrix must not pay it at
            // every step).
            if pairs
                && !ring_kept
                && done_steps < RING_CHECK_STEPS
                && out.cells.len() > before
                && crate::analysis::matrix_host::host_bound(nodes, &out.cells).is_some()
            {
                keeper.reserve_alone(n);
                ring_kept = true;
            }
        }
        done_steps += 1;
        if !pairs || done_steps % 2 == 0 {
            on_progress(Progress::Round {
                done: if pairs { done_steps / 2 } else { done_steps },
                of: rounds,
            });
        }
    }
    if pairs && !out.interrupted && out.write_error.is_none() && steps > 0 {
        let cell = given_sum.checked_div(given_count).unwrap_or_default();
        let again = super::remeasure::remeasure(
            plan,
            (&keeper, started, cell),
            rounds,
            &mut out.cells,
            cell_file,
            members,
            nodes,
        );
        out.trouble |= again.lost;
        out.write_error = again.write_error;
        out.interrupted = crate::sweep::interrupted();
        if again.skipped > 0 {
            out.warnings.push(format!(
                "{} suspicious cells were not measured again: the budget was spent \
                 (they are left unconfirmed and nothing is named from them)",
                again.skipped
            ));
        }
    }
    out.warnings
        .extend(budget_warnings(plan.budget, started.elapsed(), &keeper));
    out
}

/// What a matrix tells its user while it runs.
#[derive(Debug, Clone, PartialEq)]
pub enum Progress {
    /// A round ended: `done` of `of`.
    Round {
        /// Rounds done.
        done: usize,
        /// Rounds in all.
        of: usize,
    },
    /// The first slots show that the rounds cannot keep `--budget`: the
    /// line says how long they will take and what would keep it.
    WillOverrun(String),
}

/// The early warning of a matrix whose cells' least work does not fit
/// its budget: said as soon as it shows, not after the overrun.
/// The slots the budget is shared among for `n` nodes: a step, or each
/// of its pairs with `--serial`.
pub(super) fn slot_count(plan: &MatrixPlan, n: usize) -> usize {
    (0..schedule::steps(plan.pattern, n))
        .map(|st| match plan.serial {
            true => schedule::step(plan.pattern, n, st).len(),
            false => 1,
        })
        .sum()
}

fn overrun_line(plan: &MatrixPlan, least: Duration, overhead: Duration) -> String {
    format!(
        "at this machine's speed the rounds need about {:.1} s, more than 1.2 x --budget \
         {:.1} s: each cell's sweep takes {:.2} s beyond its share (set-up and its fewest \
         trials of the {} stream); a larger --budget, a smaller --bandwidth-size or fewer \
         nodes would keep it",
        least.as_secs_f64(),
        plan.budget.as_secs_f64(),
        overhead.as_secs_f64(),
        crate::units::format_bytes(plan.bandwidth_bytes),
    )
}

/// What the result says when the budget could not be kept, or was kept
/// by cutting cells short.
fn budget_warnings(budget: Duration, took: Duration, keeper: &Keeper) -> Vec<String> {
    let overhead = keeper.overhead().as_secs_f64();
    let (took_s, budget_s) = (took.as_secs_f64(), budget.as_secs_f64());
    if took > budget.mul_f64(1.2) {
        let why = if keeper.floored > 0 {
            format!(
                "--budget is too short for this matrix: {} steps got only the least a cell \
                 is given ({} ms), each sweep costing about {overhead:.2} s beyond its budget",
                keeper.floored,
                super::budget::CELL_FLOOR.as_millis()
            )
        } else {
            "cells ran past their budget (a lossy link or a slow node)".to_string()
        };
        return vec![format!(
            "the measurement took {took_s:.1} s, more than 1.2 x --budget {budget_s:.1} s: {why}"
        )];
    }
    if keeper.squeezed > 0 {
        return vec![format!(
            "{} steps were cut to less than half their share of the budget to keep it \
             (each sweep costs about {overhead:.2} s beyond its budget): their cells have \
             fewer trials",
            keeper.squeezed
        )];
    }
    Vec::new()
}

/// Measure the stream of each of `cells` (measured at once) again alone,
/// one after the other, within `budget` in all; its point goes to the
/// cell's `alone_bandwidth`. Whether a node was lost.
fn measure_alone(
    plan: &MatrixPlan,
    budget: Duration,
    round: usize,
    cells: &mut [MatrixCell],
    members: &mut [Member],
    nodes: &mut [MatrixNode],
) -> bool {
    let each = budget / cells.len().max(1) as u32;
    let mut lost = false;
    for cell in cells.iter_mut().filter(|c| c.error.is_none()) {
        // Ctrl-C: the step's cells are kept; the pairs left go without.
        if crate::sweep::interrupted() {
            break;
        }
        let pair = [(cell.from, cell.to)];
        let alone = measure_group(
            plan,
            each,
            round,
            &pair,
            CellParts::BANDWIDTH_ONLY,
            members,
            nodes,
        );
        lost |= alone.lost;
        let Some(a) = alone.cells.into_iter().next() else {
            continue;
        };
        match a.error {
            Some(e) => cell.error = Some(format!("alone: {e}")),
            None => cell.alone_bandwidth = a.bandwidth,
        }
    }
    lost
}
