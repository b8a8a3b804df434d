//! After the rounds of a `pairs` matrix: every suspicious cell (a slow
//! link, either direction of an asymmetric pair) measured again alone,
//! so that a finding is named only when its re-measure confirms it
//! ([`crate::analysis::matrix_confirm`]). A noisy cell, or a whole round
//! under a load spike, then costs a re-measure, not a false finding.
//! When the rounds were host-bound ([`crate::analysis::matrix_host`]),
//! the ring of cells k -> k+1 is measured alone instead, and the nodes
//! are judged from it.

use std::time::{Duration, Instant};

use super::budget::Keeper;

use super::cells::CellFile;
use super::coordinator::{measure_group, MatrixPlan, Member};
use super::protocol::CellParts;
use crate::analysis::matrix::analyse;
use crate::analysis::matrix_confirm::candidates;
use crate::analysis::matrix_host::ring;
use crate::result::matrix::{CellFigures, MatrixNode};

/// At most this many cells per node are measured again: a matrix whose
/// every cell looks suspicious has a cause re-measuring will not find,
/// and the budget is kept within a few cells' time.
const MOST_PER_NODE: usize = 1;

/// What re-measuring did: whether a node was lost, and why it stopped
/// when the cell file could not be written.
pub(super) struct Again {
    /// A node was lost.
    pub lost: bool,
    /// The cell file's error, when it failed.
    pub write_error: Option<String>,
    /// Suspicious cells left unmeasured: the budget was spent.
    pub skipped: usize,
}

/// Measure the suspicious cells of `cells` again alone, one after the
/// other, as round `round`, as many as fit in what is left of the budget
/// (`keeper`'s, counted from `started`), each with at most `cell` (a
/// round's cell budget); each goes to `cell_file` and `cells` marked as a
/// re-measure.
pub(super) fn remeasure(
    plan: &MatrixPlan,
    (keeper, started, cell): (&Keeper, Instant, Duration),
    round: usize,
    cells: &mut Vec<CellFigures>,
    cell_file: &mut CellFile,
    members: &mut [Member],
    nodes: &mut [MatrixNode],
) -> Again {
    let mut again = Again {
        lost: false,
        write_error: None,
        skipped: 0,
    };
    let found = analyse(nodes, cells);
    // A lossy link's cells have their cause named already, and measuring
    // them again would take the longest.
    let lossy = |f: usize, t: usize| {
        found
            .lossy_links
            .iter()
            .any(|l| (l.a, l.b) == (f.min(t), f.max(t)))
    };
    // Host-bound rounds: every node judged from cells alone, the ring
    // (its stream only: the verdict is on bandwidth), each cell within
    // what is left, at least the floor.
    let host_bound = found.host_bound.is_some();
    let (suspects, parts, fit, budget) = if host_bound {
        // With several processes per host (`--ppn`, a host's in a row),
        // each to the process one host further: k -> k+1 would pair a
        // host's own processes, which measure no link.
        let n = nodes.len();
        let per_host = nodes
            .iter()
            .take_while(|x| x.machine.is_some() && x.machine == nodes[0].machine)
            .count();
        let ring = if per_host > 1 && per_host < n {
            (0..n).map(|k| (k, (k + per_host) % n)).collect()
        } else {
            ring(n)
        };
        let each = keeper.share_each(started.elapsed(), ring.len());
        (ring.clone(), CellParts::BANDWIDTH_ONLY, ring.len(), each)
    } else {
        let suspects: Vec<(usize, usize)> = candidates(&found)
            .into_iter()
            .filter(|&(f, t)| !lossy(f, t))
            .take(MOST_PER_NODE * nodes.len().max(2))
            .collect();
        // In the candidates' order (slow links, then asymmetric pairs):
        // the budget leaves out the last.
        let (fit, each) = keeper.remeasures(started.elapsed(), suspects.len(), cell);
        (suspects, CellParts::default(), fit, each)
    };
    again.skipped = suspects.len() - fit;
    for (from, to) in suspects.into_iter().take(fit) {
        if crate::sweep::interrupted() {
            break;
        }
        let measured = measure_group(plan, budget, round, &[(from, to)], parts, members, nodes);
        again.lost |= measured.lost;
        for mut cell in measured.cells {
            cell.remeasure = true;
            if let Err(e) = cell_file.push(&cell) {
                again.write_error = Some(format!("{e:#}"));
                return again;
            }
            cells.push(CellFigures::from(&cell));
        }
    }
    again
}
