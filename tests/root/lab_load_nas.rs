//! `--load network` for NAS ranks spread over lab nodes (issue 30, item
//! 3): the load runs between the two nodes that hold the ranks (sender in
//! node1, a sink in node2), so it crosses their lab link. Checked against
//! the kernel's own counters of the link, read inside each node's
//! namespace, which wulf does not write.

use crate::common::{self, labs_possible, run, serial, LabGuard};

use super::lab::{name, ok};

use std::process::Command;

/// A counter of `node`'s eth0 (`tx_bytes`, `rx_bytes`), read inside its
/// namespace.
fn eth0(lab: &str, node: &str, counter: &str) -> u64 {
    let out = Command::new("ip")
        .args(["netns", "exec", &format!("wlab-{lab}-{node}")])
        .arg("cat")
        .arg(format!("/sys/class/net/eth0/statistics/{counter}"))
        .output()
        .unwrap();
    ok(&out).trim().parse().unwrap()
}

/// The network load of a result, its `path` and the bytes it sent.
fn network_load(r: &serde_json::Value) -> (String, f64) {
    let loads = r["conditions"]["loads"].as_array().expect("no loads");
    let net = loads.iter().find(|l| l["kind"] == "network").unwrap();
    let sent = net["bytes_per_s"].as_f64().unwrap() * net["ran_s"].as_f64().unwrap();
    (net["path"].as_str().unwrap().to_string(), sent)
}

/// Whether a result says its network load stayed on loopback.
fn says_loopback(r: &serde_json::Value) -> bool {
    r["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .any(|w| w.as_str().unwrap().contains("not across the measured path"))
}

/// NAS CG class S on node1 and node2 of a named lab, unloaded then with
/// `--load network:50M`: the load's path is the lab link node1 -> node2,
/// and node1's eth0 sent (node2's received) at least what the load says
/// it sent on top of what the unloaded run's ranks sent. On loopback the
/// links would carry the ranks' traffic alone.
#[test]
fn a_nas_runs_network_load_crosses_the_link_between_its_ranks_nodes() {
    let _serial = serial();
    if !labs_possible() {
        return;
    }
    let lab = name("nasload");
    let _g = LabGuard(lab.clone());
    ok(&run(&["lab", "up", "--name", &lab, "--link", "ge"]));
    let dir = common::tempdir();
    let launch = format!("lab:{lab}");
    let cg = |json: &std::path::Path, load: bool| {
        let mut args = vec!["npb", "cg", "--class", "S", "--np", "2", "--via", "tcp"];
        args.extend_from_slice(&["--launch", &launch, "--hosts", "node1,node2"]);
        // Three repetitions: one class S run of an optimised build lasts
        // about 0.1 s, in which 50 Mbit/s sends only 0.6 MB.
        args.extend_from_slice(&["--repetitions", "3", "--json", json.to_str().unwrap()]);
        if load {
            args.extend_from_slice(&["--load", "network:50M"]);
        }
        let counters = || {
            [
                eth0(&lab, "node1", "tx_bytes"),
                eth0(&lab, "node2", "rx_bytes"),
            ]
        };
        let before = counters();
        ok(&run(&args));
        let after = counters();
        (
            common::json(json),
            [(after[0] - before[0]) as f64, (after[1] - before[1]) as f64],
        )
    };
    let (_, plain) = cg(&common::file(&dir, "plain.json"), false);
    let (r, loaded) = cg(&common::file(&dir, "loaded.json"), true);
    let (path, sent) = network_load(&r);
    eprintln!(
        "CG S over the lab: load {sent:.0} B sent along {path:?}; node1 eth0 tx {:.0} B \
         (unloaded run {:.0} B), node2 eth0 rx {:.0} B (unloaded {:.0} B)",
        loaded[0], plain[0], loaded[1], plain[1]
    );
    assert!(path.starts_with("lab link node1 -> node2 (to "), "{path}");
    assert!(!says_loopback(&r), "{}", r["warnings"]);
    // The load ran long enough to stand out beside the ranks' own traffic.
    assert!(sent > 1e6, "the load sent only {sent} B");
    // What the load added to the link's counters: the ranks' exchanges
    // are fixed (CG), so the increase over the unloaded run is the load.
    for (what, crossed, ranks_only) in [
        ("node1 eth0 tx", loaded[0], plain[0]),
        ("node2 eth0 rx", loaded[1], plain[1]),
    ] {
        assert!(
            crossed - ranks_only >= 0.8 * sent,
            "{what}: {crossed} B loaded against {ranks_only} B unloaded, for a load of {sent} B"
        );
    }
    for (what, crossed, ranks_only) in [
        ("node1 eth0 tx", loaded[0], plain[0]),
        ("node2 eth0 rx", loaded[1], plain[1]),
    ] {
        assert!(
            crossed >= sent,
            "{what}: {crossed} B, less than the load's {sent} B: the load did not cross the link"
        );
        // The ranks' own traffic is the same with and without the load
        // (CG's exchanges are fixed); allow it to vary by half.
        assert!(
            crossed >= sent + 0.5 * ranks_only,
            "{what}: {crossed} B for a load of {sent} B and ranks sending {ranks_only} B unloaded"
        );
    }
}

/// `wulf npb ep --lab ge --load network`: the load's path is the link
/// between the two nodes `--lab` spreads the ranks over, and the result
/// no longer says it stayed on loopback; a run on this machine alone
/// (where loopback is the ranks' path) says nothing of the kind either.
#[test]
fn a_nas_run_with_lab_loads_the_lab_link_and_says_no_loopback() {
    let _serial = serial();
    if !labs_possible() {
        return;
    }
    let dir = common::tempdir();
    let npb = |json: &std::path::Path, lab: bool| {
        let mut args = vec!["npb", "ep", "--class", "S", "--np", "2", "--via", "tcp"];
        if lab {
            args.extend_from_slice(&["--lab", "ge"]);
        }
        args.extend_from_slice(&["--repetitions", "1", "--load", "network:50M"]);
        args.extend_from_slice(&["--json", json.to_str().unwrap()]);
        ok(&run(&args));
        common::json(json)
    };
    let spread = npb(&common::file(&dir, "lab.json"), true);
    let (path, sent) = network_load(&spread);
    assert!(
        path.starts_with("lab link node1 -> node2 (to 198.18."),
        "{path}"
    );
    assert!(sent > 0.0, "the load sent nothing");
    assert!(!says_loopback(&spread), "{}", spread["warnings"]);
    let here = npb(&common::file(&dir, "here.json"), false);
    let (path, _) = network_load(&here);
    assert!(path.starts_with("loopback"), "{path}");
    assert!(!says_loopback(&here), "{}", here["warnings"]);
}

/// An MPI sweep over a lab (`wulf sweep mpi:openmpi --lab ge`) spreads
/// its two ranks over node1 and node2 and takes no peer: its network load
/// runs between them too, across their link.
#[test]
fn an_mpi_sweeps_network_load_crosses_the_lab_link() {
    let _serial = serial();
    if !labs_possible() || !common::have("openmpi") {
        return;
    }
    let dir = common::tempdir();
    let json = common::file(&dir, "mpi.json");
    ok(&run(&[
        "sweep",
        "mpi:openmpi",
        "--lab",
        "ge",
        "--sizes",
        "1Ki",
        "--budget",
        "1s",
        "--load",
        "network:50M",
        "--json",
        json.to_str().unwrap(),
    ]));
    let r = common::json(&json);
    let (path, sent) = network_load(&r);
    assert!(
        path.starts_with("lab link node1 -> node2 (to 198.18."),
        "{path}"
    );
    assert!(sent > 0.0, "the load sent nothing");
    assert!(!says_loopback(&r), "{}", r["warnings"]);
}
