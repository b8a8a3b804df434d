//! The lossy-link rules on synthetic cells.

use super::*;
use crate::result::matrix::{CellNet, MatrixCell, SlowNode};
use crate::sweep::engine::test_point;

/// A cell of `bits_per_s` whose sender retransmitted `retrans` of 10,000
/// segments.
fn cell(from: usize, to: usize, bits_per_s: f64, retrans: u64) -> CellFigures {
    cell_with_dsacks(from, to, bits_per_s, retrans, 0)
}

/// [`cell`] with `dsacks` of its retransmissions reported as duplicates.
fn cell_with_dsacks(
    from: usize,
    to: usize,
    bits_per_s: f64,
    retrans: u64,
    dsacks: u64,
) -> CellFigures {
    let bytes = 1u64 << 22;
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
        net: Some(CellNet {
            out_segs: 10_000,
            retrans_segs: retrans,
            dsack_segs: dsacks,
            interface_drops: 0,
            cpu_busy_share: None,
        }),
        remeasure: false,
        intra_node: false,
        cut: false,
    })
}

/// Every directed cell among `n` nodes; `lossy` pairs lose 2%, slowly.
fn matrix(n: usize, lossy: &[(usize, usize)]) -> Vec<CellFigures> {
    let mut cells = Vec::new();
    for a in 0..n {
        for b in (0..n).filter(|&b| b != a) {
            let bad = lossy.contains(&(a.min(b), a.max(b)));
            let (bw, retrans) = if bad { (30e6, 200) } else { (95e6, 1) };
            cells.push(cell(a, b, bw, retrans));
        }
    }
    cells
}

#[test]
fn one_lossy_link_is_named_with_its_share() {
    let found = lossy_links(6, &matrix(6, &[(2, 5)]));
    assert_eq!(found.len(), 1, "{found:?}");
    let l = &found[0];
    assert_eq!((l.a, l.b, l.retrans_segs, l.out_segs), (2, 5, 400, 20_000));
    assert!((l.retrans_share - 0.02).abs() < 1e-12);
    assert!(l.others_share < 0.001);
}

#[test]
fn retransmissions_the_receiver_had_received_are_not_losses() {
    // A busy host: 0.9% retransmitted on (0, 2), every one D-SACKed.
    let mut cells = matrix(4, &[(1, 3)]);
    for c in cells
        .iter_mut()
        .filter(|c| (c.from.min(c.to), c.from.max(c.to)) == (0, 2))
    {
        *c = cell_with_dsacks(c.from, c.to, 95e6, 90, 90);
    }
    let found = lossy_links(4, &cells);
    let named: Vec<(usize, usize)> = found.iter().map(|l| (l.a, l.b)).collect();
    assert_eq!(named, [(1, 3)], "{found:?}");
    // A lossy link's own spurious ones are counted apart from its share.
    let mut cells = matrix(4, &[]);
    for c in cells
        .iter_mut()
        .filter(|c| (c.from.min(c.to), c.from.max(c.to)) == (1, 3))
    {
        *c = cell_with_dsacks(c.from, c.to, 30e6, 300, 100);
    }
    let l = &lossy_links(4, &cells)[0];
    assert_eq!((l.retrans_segs, l.spurious_segs), (600, 200));
    assert!((l.retrans_share - 0.02).abs() < 1e-12, "{l:?}");
}

#[test]
fn a_node_losing_on_every_link_names_no_link() {
    let all_of_1: Vec<(usize, usize)> = [0, 2, 3].iter().map(|&k| (k.min(1), k.max(1))).collect();
    assert!(lossy_links(4, &matrix(4, &all_of_1)).is_empty());
}

#[test]
fn a_few_retransmissions_or_no_counters_name_nothing() {
    // 0.1% of short cells: under both the share and the count.
    let mut cells = matrix(4, &[]);
    for c in cells.iter_mut().filter(|c| (c.from, c.to) == (0, 1)) {
        *c = cell(0, 1, 95e6, 10);
    }
    assert!(lossy_links(4, &cells).is_empty());
    let bare: Vec<CellFigures> = matrix(4, &[(0, 1)])
        .into_iter()
        .map(|mut c| {
            c.load = None;
            c
        })
        .collect();
    assert!(lossy_links(4, &bare).is_empty());
}

#[test]
fn a_slow_node_blamed_for_its_lossy_link_is_cleared() {
    let cells = matrix(6, &[(2, 5)]);
    let blamed = |node| SlowNode {
        cause: None,
        node,
        metric: "bandwidth".into(),
        value: 30e6,
        median: 95e6,
        share_outlying: 0.8,
    };
    let mut a = MatrixAnalysis {
        slow_nodes: vec![blamed(2), blamed(0)],
        ..MatrixAnalysis::default()
    };
    apply(&mut a, 6, &cells);
    assert_eq!(a.lossy_links.len(), 1);
    // node3 (2) is normal but for the lossy link; node1 (0) has no lossy
    // link: its verdict is not this rule's to judge.
    let kept: Vec<usize> = a.slow_nodes.iter().map(|s| s.node).collect();
    assert_eq!(kept, [0]);
}
