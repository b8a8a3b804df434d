//! Re-measures confirm or withdraw findings.

use super::*;
use crate::analysis::matrix::analyse;
use crate::result::matrix::{MatrixCell, MatrixNode};
use crate::sweep::engine::test_point;

fn cell(from: usize, to: usize, bits_per_s: f64, remeasure: bool) -> CellFigures {
    let bytes = 1u64 << 22;
    // A little spread, as real cells have.
    let bits_per_s = bits_per_s * (1.0 + 0.01 * ((from * 7 + to * 3) % 5) as f64);
    CellFigures::from(&MatrixCell {
        from,
        to,
        round: 0,
        latency: Some(test_point(8, 40e3)),
        bandwidth: Some(test_point(bytes, bytes as f64 * 8.0 / bits_per_s * 1e9)),
        rate: None,
        alone_bandwidth: None,
        error: None,
        measure_s: 1.0,
        net: None,
        remeasure,
        intra_node: false,
        cut: false,
    })
}

fn nodes(n: usize) -> Vec<MatrixNode> {
    (0..n)
        .map(|i| MatrixNode {
            name: format!("node{}", i + 1),
            address: None,
            host: None,
            error: None,
            machine: None,
        })
        .collect()
}

/// Six nodes, every cell at 900 Mbit/s but node1 -> node2 at 300.
fn rounds() -> Vec<CellFigures> {
    let mut cells = Vec::new();
    for a in 0..6 {
        for b in (0..6).filter(|&b| b != a) {
            let bw = if (a, b) == (0, 1) { 300e6 } else { 900e6 };
            cells.push(cell(a, b, bw, false));
        }
    }
    cells
}

#[test]
fn a_slow_cell_is_a_candidate_and_named_only_when_confirmed() {
    let cells = rounds();
    let a = analyse(&nodes(6), &cells);
    assert!(candidates(&a).contains(&(0, 1)), "{a:?}");
    // The re-measure is normal: a noisy cell, withdrawn.
    let mut noisy = cells.clone();
    noisy.extend(candidates(&a).iter().map(|&(f, t)| cell(f, t, 900e6, true)));
    let b = analyse(&nodes(6), &noisy);
    assert!(b.outlier_cells.is_empty(), "{b:?}");
    assert!(b.asymmetric_pairs.is_empty(), "{b:?}");
    assert!(b.unconfirmed >= 1);
    // The re-measure is slow again: the link is named.
    let mut bad = cells.clone();
    bad.extend(candidates(&a).iter().map(|&(f, t)| {
        let bw = if (f, t) == (0, 1) { 300e6 } else { 900e6 };
        cell(f, t, bw, true)
    }));
    let c = analyse(&nodes(6), &bad);
    assert!(
        c.outlier_cells
            .iter()
            .any(|o| (o.from, o.to, o.metric.as_str()) == (0, 1, "bandwidth")),
        "{c:?}"
    );
    // The split leaves the rounds' figures as they were.
    assert_eq!(split(&bad).0.len(), cells.len());
    assert_eq!(c.bandwidth, a.bandwidth);
}

/// Issue 44: a run whose re-measures ran out of budget named healthy
/// links from the very cells its warning said nothing is named from.
#[test]
fn a_run_names_nothing_from_a_cell_it_could_not_measure_again() {
    use crate::analysis::matrix::{analyse_with, Confirmation};
    let cells = rounds();
    let found = analyse(&nodes(6), &cells);
    assert!(!found.outlier_cells.is_empty(), "{found:?}");
    let run = analyse_with(&nodes(6), &cells, Confirmation::Required);
    assert!(run.outlier_cells.is_empty(), "{run:?}");
    assert!(run.asymmetric_pairs.is_empty(), "{run:?}");
    assert!(run.unconfirmed >= 1, "{run:?}");
    // Confirmed by its re-measure, the same cell is named in a run.
    let mut again = cells.clone();
    again.extend(candidates(&found).iter().map(|&(f, t)| {
        let bw = if (f, t) == (0, 1) { 300e6 } else { 900e6 };
        cell(f, t, bw, true)
    }));
    let run = analyse_with(&nodes(6), &again, Confirmation::Required);
    assert!(
        run.outlier_cells.iter().any(|o| (o.from, o.to) == (0, 1)),
        "{run:?}"
    );
}

/// Issue 44: where confirmation is required, a re-measure that has no
/// figure of the metric (its part failed) or one of a trial or two (cut
/// at its deadline) confirms nothing, for a slow link and for an
/// asymmetric pair alike; the same re-measures in a file that did not
/// require them leave the findings as they were found.
#[test]
fn a_re_measure_without_a_full_figure_confirms_nothing_in_a_run() {
    use crate::analysis::matrix::{analyse_with, Confirmation};
    let cells = rounds();
    let found = analyse(&nodes(6), &cells);
    assert!(
        found.outlier_cells.iter().any(|o| (o.from, o.to) == (0, 1)),
        "{found:?}"
    );
    assert!(!found.asymmetric_pairs.is_empty(), "{found:?}");
    // Every re-measure as slow as the rounds found it, but (0, 1)'s
    // bandwidth part cut after one trial, and (1, 0)'s failed.
    let again = |cells: &[CellFigures]| {
        let mut all = cells.to_vec();
        for (f, t) in candidates(&found) {
            let bw = if (f, t) == (0, 1) { 300e6 } else { 900e6 };
            let mut c = cell(f, t, bw, true);
            match (f, t) {
                (0, 1) => c.bandwidth.as_mut().unwrap().trials = 1,
                (1, 0) => c.bandwidth = None,
                _ => {}
            }
            all.push(c);
        }
        all
    };
    let run = analyse_with(&nodes(6), &again(&cells), Confirmation::Required);
    assert!(run.outlier_cells.is_empty(), "{run:?}");
    assert!(run.asymmetric_pairs.is_empty(), "{run:?}");
    assert!(run.unconfirmed >= 2, "{run:?}");
    // The one-trial re-measure still confirms where re-measures are
    // optional, and the pair with a failed direction stands as found.
    let file = analyse_with(&nodes(6), &again(&cells), Confirmation::WhenRemeasured);
    assert!(
        file.outlier_cells.iter().any(|o| (o.from, o.to) == (0, 1)),
        "{file:?}"
    );
    assert!(!file.asymmetric_pairs.is_empty(), "{file:?}");
}
