//! `wulf matrix --ppn 2` (issue 35 item 6): two agents on every lab node,
//! as mpiGraph and LinkTest run by default. The cells between the two
//! processes of one node are marked intra-node, in the result and the
//! printed matrix, and no link finding rests on them; every process has
//! its send and receive view of bandwidth.

use crate::common;

use common::{labs_possible, serial, stderr, tempdir, wulf};
use wulf::result::matrix::{intra_node, read_matrix_result};

#[test]
fn two_processes_per_node_mark_their_intra_node_cells_and_judge_by_the_others() {
    let _s = serial();
    if !labs_possible() {
        return;
    }
    let dir = tempdir();
    let json = dir.path().join("m.json");
    let out = wulf(&[
        "matrix",
        "--lab",
        "fe",
        "--nodes",
        "3",
        "--ppn",
        "2",
        "--budget",
        "10s",
        "--bandwidth-size",
        "1Mi",
        "--json",
        json.to_str().unwrap(),
    ])
    .output()
    .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert_eq!(out.status.code(), Some(0), "{text}{}", stderr(&out));
    let r = read_matrix_result(&json).unwrap();
    assert!(r.complete, "{:?}", r.incomplete_reason);
    let names: Vec<&str> = r.nodes.iter().map(|n| n.name.as_str()).collect();
    assert_eq!(
        names,
        ["node1/0", "node1/1", "node2/0", "node2/1", "node3/0", "node3/1"]
    );
    for n in &r.nodes {
        let machine = n.machine.as_deref().expect("each process knows its host");
        assert!(n.name.starts_with(&format!("{machine}/")), "{n:?}");
        assert!(n.error.is_none(), "{n:?}");
    }
    // Each directed pair once in the rounds; the two of one node marked.
    let rounds: Vec<_> = r.cells.iter().filter(|c| !c.remeasure).collect();
    assert_eq!(rounds.len(), 30);
    for c in &rounds {
        let same = r.nodes[c.from].machine == r.nodes[c.to].machine;
        assert_eq!(c.intra_node, same, "{} -> {}", c.from, c.to);
        assert!(c.error.is_none(), "{:?}", c.error);
    }
    assert_eq!(rounds.iter().filter(|c| c.intra_node).count(), 6);
    // The spread and the findings rest on the 24 inter-node cells alone.
    let measured = rounds
        .iter()
        .filter(|c| !c.intra_node && c.bandwidth.is_some())
        .count();
    let spread = r.analysis.bandwidth.expect("bandwidth measured");
    assert_eq!(spread.cells, measured, "{spread:?}");
    let intra = |a: usize, b: usize| intra_node(&r.nodes, a, b);
    assert!(r
        .analysis
        .outlier_cells
        .iter()
        .all(|c| !intra(c.from, c.to)));
    assert!(r.analysis.asymmetric_pairs.iter().all(|p| !intra(p.a, p.b)));
    assert!(r.analysis.lossy_links.iter().all(|l| !intra(l.a, l.b)));
    // A node of a healthy lab is not slow by its links (the intra-node
    // cells, many times faster than fe, would make the others look so).
    assert!(
        r.analysis
            .slow_nodes
            .iter()
            .all(|s| s.metric != "bandwidth"),
        "{:?}",
        r.analysis.slow_nodes
    );
    // mpiGraph's send and receive views, per process.
    assert_eq!(r.analysis.node_summary.len(), 6);
    for s in &r.analysis.node_summary {
        let (sent, received) = (s.sent_bits_per_s.unwrap(), s.received_bits_per_s.unwrap());
        // Inter-node cells only: at most fe's 100 Mbit/s of payload.
        assert!(sent < 100e6 && received < 100e6, "{s:?}");
    }
    assert!(text.contains("* intra-node"), "{text}");
    assert!(text.contains("sent   received"), "{text}");
    eprintln!("{text}");
}
