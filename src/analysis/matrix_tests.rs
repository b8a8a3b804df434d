//! Exact tests of the matrix rules on synthetic cells.

use super::*;
use crate::result::matrix::MatrixCell;
use crate::sweep::engine::test_point;

const BW_BYTES: u64 = 1 << 22;

/// A cell with a latency (ns) and a bandwidth (bits/s).
fn cell(from: usize, to: usize, latency_ns: f64, bits_per_s: f64) -> MatrixCell {
    let one_way_ns = BW_BYTES as f64 * 8.0 / bits_per_s * 1e9;
    MatrixCell {
        from,
        to,
        round: 0,
        latency: Some(test_point(8, latency_ns)),
        bandwidth: Some(test_point(BW_BYTES, one_way_ns)),
        rate: None,
        alone_bandwidth: None,
        error: None,
        measure_s: 0.0,
        net: None,
        remeasure: false,
        intra_node: false,
        cut: false,
    }
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

/// Every directed cell among `n` nodes, with `f` giving (latency, bits/s).
fn all_cells(n: usize, f: impl Fn(usize, usize) -> (f64, f64)) -> Vec<CellFigures> {
    let mut cells = Vec::new();
    for a in 0..n {
        for b in 0..n {
            if a != b {
                let (l, bw) = f(a, b);
                // A little spread, as real cells have.
                let jitter = 1.0 + 0.01 * ((a * 7 + b * 3) % 5) as f64;
                cells.push(CellFigures::from(&cell(a, b, l * jitter, bw / jitter)));
            }
        }
    }
    cells
}

#[test]
fn a_node_on_a_slower_link_is_named_not_its_links() {
    // node3 (index 2) on fe among ge nodes: half of a 4-node matrix.
    let slow = |a: usize, b: usize| {
        if a == 2 || b == 2 {
            (60e3, 95e6)
        } else {
            (40e3, 900e6)
        }
    };
    let a = analyse(&nodes(4), &all_cells(4, slow));
    let named: Vec<(usize, &str)> = a
        .slow_nodes
        .iter()
        .map(|s| (s.node, s.metric.as_str()))
        .collect();
    assert_eq!(named, [(2, "latency"), (2, "bandwidth")]);
    assert!(a.outlier_cells.iter().all(|c| c.explained_by_node), "{a:?}");
    assert!(a.asymmetric_pairs.is_empty());
}

#[test]
fn one_bad_link_is_a_link_not_a_node() {
    let bad = |a: usize, b: usize| {
        if (a, b) == (1, 4) {
            (40e3, 300e6)
        } else {
            (40e3, 900e6)
        }
    };
    let a = analyse(&nodes(6), &all_cells(6, bad));
    assert!(a.slow_nodes.is_empty(), "{:?}", a.slow_nodes);
    assert_eq!(a.outlier_cells.len(), 1, "{:?}", a.outlier_cells);
    let c = &a.outlier_cells[0];
    assert_eq!((c.from, c.to, c.metric.as_str()), (1, 4, "bandwidth"));
    assert!(!c.explained_by_node);
    // 1→4 is slow, 4→1 is not: an asymmetric pair.
    assert_eq!(a.asymmetric_pairs.len(), 1);
    assert_eq!((a.asymmetric_pairs[0].a, a.asymmetric_pairs[0].b), (1, 4));
}

#[test]
fn a_slow_node_among_many_is_named_against_all_cells() {
    // Past EXACT_REFERENCE_NODES the reference is every cell: node 57 on
    // fe among 199 ge nodes is still named, and its links are explained
    // by it; one slow single link elsewhere stays a link.
    let n = EXACT_REFERENCE_NODES + 72;
    let cells = all_cells(n, |a, b| match (a, b) {
        (57, _) | (_, 57) => (60e3, 95e6),
        (3, 9) => (40e3, 300e6),
        _ => (40e3, 900e6),
    });
    let a = analyse(&nodes(n), &cells);
    let slow: Vec<(usize, &str)> = a
        .slow_nodes
        .iter()
        .map(|s| (s.node, s.metric.as_str()))
        .collect();
    assert_eq!(slow, [(57, "latency"), (57, "bandwidth")]);
    let links: Vec<(usize, usize)> = a
        .outlier_cells
        .iter()
        .filter(|c| !c.explained_by_node)
        .map(|c| (c.from, c.to))
        .collect();
    assert_eq!(links, [(3, 9)]);
    assert_eq!(a.node_summary.len(), n);
    assert_eq!(a.node_summary[57].bits_per_s.map(|b| b < 100e6), Some(true));
    assert_eq!(a.bandwidth.unwrap().cells, n * (n - 1));
}

#[test]
fn a_uniform_matrix_has_no_findings() {
    let a = analyse(&nodes(8), &all_cells(8, |_, _| (40e3, 900e6)));
    assert!(a.slow_nodes.is_empty() && a.outlier_cells.is_empty());
    assert!(a.asymmetric_pairs.is_empty());
    assert_eq!(a.node_summary.len(), 8);
    assert_eq!(a.latency.unwrap().cells, 56);
}

#[test]
fn differing_fingerprint_fields_name_their_nodes() {
    let mut ns = nodes(3);
    for (i, n) in ns.iter_mut().enumerate() {
        let mut h = crate::sys::Host::probe();
        h.hostname = n.name.clone();
        h.interfaces = vec![crate::sys::Interface {
            name: "eth0".into(),
            mtu_bytes: Some(if i == 1 { 1500 } else { 9000 }),
            ..Default::default()
        }];
        n.host = Some(h);
    }
    let d = fingerprint_differences(&ns);
    assert_eq!(d.len(), 1, "{d:?}");
    assert_eq!(d[0].field, "interfaces[0].mtu_bytes");
    assert_eq!(d[0].values[0].value, "9000");
    assert_eq!(d[0].values[0].nodes, [0, 2]);
    assert_eq!(d[0].values[1].nodes, [1]);
}

/// Not a test: how long the analysis of a 1,000-node matrix takes, and
/// what its figures weigh (`bench/matrix.sh` runs it; no speed asserted).
#[test]
#[ignore]
fn analysis_of_a_thousand_nodes() {
    let n = 1000;
    let cells = all_cells(n, |a, b| match (a, b) {
        (417, _) | (_, 417) => (60e3, 95e6),
        _ => (40e3, 900e6),
    });
    let started = std::time::Instant::now();
    let a = analyse(&nodes(n), &cells);
    let took = started.elapsed();
    assert_eq!(
        a.slow_nodes.iter().map(|s| s.node).collect::<Vec<_>>(),
        [417, 417]
    );
    println!(
        "analysis of {n} nodes ({} cells): {:.2} s; figures {} bytes a cell, {:.0} MB in all",
        cells.len(),
        took.as_secs_f64(),
        std::mem::size_of::<CellFigures>(),
        (cells.len() * std::mem::size_of::<CellFigures>()) as f64 / 1e6
    );
}
