//! A lab node on a link a fifth slower than its peers' (issue 35 item 3):
//! named with its fingerprint difference as the cause, and no other node;
//! on gigabit links that this machine's CPUs cannot fill, the matrix says
//! it is host-bound and judges the nodes only from cells measured alone.

use crate::common;

use std::path::Path;

use common::{labs_possible, serial, stderr, tempdir, wulf};
use wulf::result::matrix::{read_matrix_result, MatrixResult};

fn lab_matrix(spec: &str, budget: &str, json: &Path) -> MatrixResult {
    let out = wulf(&[
        "matrix",
        "--lab",
        spec,
        "--nodes",
        "4",
        "--budget",
        budget,
        "--bandwidth-size",
        "1Mi",
        "--quiet",
        "--json",
        json.to_str().unwrap(),
    ])
    .output()
    .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    read_matrix_result(json).unwrap()
}

/// The names of the nodes named slow, by any metric.
fn slow(r: &MatrixResult) -> Vec<String> {
    let mut names: Vec<String> = r
        .analysis
        .slow_nodes
        .iter()
        .map(|s| r.nodes[s.node].name.clone())
        .collect();
    names.dedup();
    names
}

#[test]
fn a_node_a_fifth_slower_is_named_with_its_cause_and_no_other() {
    let _s = serial();
    if !labs_possible() {
        return;
    }
    let dir = tempdir();
    let r = lab_matrix("300mbit,node3=240mbit", "6s", &dir.path().join("m.json"));
    assert_eq!(slow(&r), ["node3"], "{:?}", r.analysis);
    let s = &r.analysis.slow_nodes[0];
    assert_eq!(s.metric, "bandwidth");
    let cause = s.cause.as_deref().expect("the fingerprint names the cause");
    assert!(
        cause.contains("shaped_rate_bits_per_s 240000000"),
        "{cause}"
    );
    if let Some(h) = &r.analysis.host_bound {
        assert!(h.alone_cells > 0, "judged from cells alone: {h:?}");
    }
    // Every cell says how busy its host was.
    assert!(r
        .cells
        .iter()
        .filter(|c| c.error.is_none())
        .all(|c| c.net.and_then(|n| n.cpu_busy_share).is_some()));
}

/// 800 Mbit/s among gigabit nodes: named with its cause when this machine
/// can fill the links; else host-bound, judged from cells alone, and said
/// to be out of sight when even they fall short. Never another node.
#[test]
#[ignore = "on a 2-vCPU host gigabit cells sit at the host's limit and the verdict varies from run to run (two of three clean-clone runs failed it); run by hand: ./scripts/test root matrix_host -- --ignored"]
fn gigabit_links_on_a_small_host_are_host_bound_or_the_slower_node_is_named() {
    let _s = serial();
    if !labs_possible() {
        return;
    }
    let dir = tempdir();
    let r = lab_matrix("ge,node3=800mbit", "8s", &dir.path().join("m.json"));
    let named = slow(&r);
    assert!(named.is_empty() || named == ["node3"], "{:?}", r.analysis);
    // Host-bound and judged from cells alone: where even those stay near
    // the host's limit (0.86 of the links in one CI run, node3's 800
    // Mbit/s not reached by anyone), the slower link is out of sight and
    // naming nobody is right; naming another node never is.
    let out_of_sight = r
        .analysis
        .host_bound
        .as_ref()
        .is_some_and(|h| h.alone_cells > 0);
    assert!(
        named == ["node3"] || out_of_sight,
        "neither named nor said to be out of sight: {:?}",
        r.analysis
    );
    eprintln!(
        "ge,node3=800mbit: slow {named:?}, host-bound {:?}",
        r.analysis.host_bound
    );
}
