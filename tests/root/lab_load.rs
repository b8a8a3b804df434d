//! `--load network` across a lab: with a peer, the load's stream crosses
//! the link being measured (issue 30), checked against the node's own
//! interface counters.

use crate::common::{labs_possible, run, serial, wulf, wulf_bin, LabGuard};

use super::lab::{name, ok};

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Bytes node `node`'s eth0 has sent, read inside its namespace.
fn tx_bytes(lab: &str, node: &str) -> u64 {
    let out = Command::new("ip")
        .args(["netns", "exec", &format!("wlab-{lab}-{node}")])
        .args(["cat", "/sys/class/net/eth0/statistics/tx_bytes"])
        .output()
        .unwrap();
    ok(&out).trim().parse().unwrap()
}

/// `--load network` with `--peer` across a lab: the stream goes from
/// node1 to node2's `wulf serve`, so node1's eth0 sends at least what the
/// load says it sent (on loopback it would send none of it).
#[test]
fn a_network_load_crosses_the_lab_link_to_the_peer() {
    let _serial = serial();
    if !labs_possible() {
        return;
    }
    let lab = name("netload");
    let _g = LabGuard(lab.clone());
    ok(&run(&["lab", "up", "--name", &lab, "--link", "ge"]));
    let js = ok(&run(&["lab", "status", "--name", &lab, "--json"]));
    let v: serde_json::Value = serde_json::from_str(&js).unwrap();
    let node2 = v[0]["nodes"][1]["address"].as_str().unwrap();
    let node2 = node2.split('/').next().unwrap().to_string();
    let peer = format!("{node2}:19137");
    let mut serve = wulf(&[
        "lab",
        "exec",
        "--name",
        &lab,
        "node2",
        "--",
        wulf_bin(),
        "serve",
        "--bind",
        &node2,
        "--port",
        "19137",
        "--allow-load",
    ])
    .stdout(Stdio::null())
    .stderr(Stdio::null())
    .spawn()
    .unwrap();
    let sweep = |extra: &[&str]| {
        let mut args = vec!["lab", "exec", "--name", &lab, "node1", "--"];
        args.extend_from_slice(&[wulf_bin(), "sweep", "tcp", "--peer", &peer, "--sizes", "1"]);
        // Ping-pong of 1 byte: the sweep's own traffic stays small beside
        // the load's.
        args.extend_from_slice(&["--mode", "pingpong"]);
        args.extend_from_slice(&["--budget", "1s", "--quiet", "--json", "-"]);
        args.extend_from_slice(extra);
        wulf(&args).output().unwrap()
    };
    // The server may still be starting: retry the unloaded sweep briefly.
    let t0 = Instant::now();
    while !sweep(&[]).status.success() {
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "wulf serve in node2 never answered"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let before = tx_bytes(&lab, "node1");
    ok(&sweep(&[]));
    let unloaded = (tx_bytes(&lab, "node1") - before) as f64;
    let before = tx_bytes(&lab, "node1");
    let out = sweep(&["--load", "network:200M"]);
    let after = tx_bytes(&lab, "node1");
    let _ = serve.kill();
    let _ = serve.wait();
    let r: serde_json::Value = serde_json::from_str(&ok(&out)).unwrap();
    let net = &r["conditions"]["loads"][0];
    assert_eq!(net["kind"], "network");
    let path = net["path"].as_str().unwrap();
    assert!(path.starts_with(&format!("to peer {node2}:")), "{path}");
    let sent = net["bytes_per_s"].as_f64().unwrap() * net["ran_s"].as_f64().unwrap();
    assert!(sent > 1e6, "the load sent {sent} bytes");
    let crossed = (after - before) as f64;
    eprintln!(
        "network load: {sent:.0} B sent, node1 eth0 tx {crossed:.0} B (unloaded sweep: {unloaded:.0} B)"
    );
    // On loopback the load would add nothing to eth0: what crossed would be
    // about the sweep's own traffic, which is far below what the load sent.
    assert!(
        sent > 2.0 * unloaded,
        "sent {sent}, the sweep alone {unloaded}"
    );
    assert!(
        crossed >= sent,
        "node1's eth0 sent {crossed} B, less than the load's {sent} B: the load did not cross the link"
    );
}

// NAS runs across lab nodes: tests/root/lab_load_nas.rs.
