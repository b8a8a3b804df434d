//! The frame transports' sessions with a `wulf serve` (issue 34): a
//! client killed in the middle of a raw or xdp sweep frees the server at
//! once (its data waits watch the session's abort handle, as tcp's
//! sockets do), not after the client's whole `--timeout`; a raw and an xdp
//! session share one interface (the XDP program takes only its own
//! channel's frames); and every raw and xdp result carries the protocol's
//! frame counters, with resends under a lossy switch.
//!
//! Lab tests skip with a printed reason when not root (WULF_REQUIRE_LAB=1
//! turns the skip into a failure). Every lab is removed by a guard.

use crate::common;

use std::io::{BufRead, BufReader};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use common::lean::{
    frame_sweep, serial, serve_in, serve_in_with, signal_once_busy, sweep_from_node1,
    sweep_in_node1, text,
};
use common::{labs_possible, wulf, wulf_bin};
use nix::sys::signal::Signal;

/// A second `wulf serve` in node2 of `lab`, on `port`.
fn serve_on_port(lab: &str, port: &str) -> Child {
    let mut server = wulf(&[
        "lab",
        "exec",
        "--name",
        lab,
        "node2",
        "--",
        wulf_bin(),
        "serve",
        "--announce",
        "--allow-lean",
        "--port",
        port,
    ])
    .stdout(Stdio::piped())
    .stderr(Stdio::null())
    .spawn()
    .unwrap();
    let mut line = String::new();
    BufReader::new(server.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line.trim(), format!("WULF-LISTENING {port}"));
    server
}

fn killed_client_frees_the_server(transport: &str) {
    let lab = format!("kc{}", std::process::id());
    let _g = common::lab_up(&lab, 2);
    let (mut server, port) = serve_in(&lab, "node2");
    let peer = format!("node2:{port}");
    // A client whose data timeout (30 s) the server would otherwise wait out.
    let args = [
        "--sizes",
        "1:1Mi",
        "--budget",
        "60s",
        "--wait",
        "block",
        "--timeout",
        "30s",
    ];
    let mut client = sweep_in_node1(&lab, transport, &peer, &args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let node1 = format!("wlab-{lab}-node1");
    assert!(
        signal_once_busy(&node1, 50, Signal::SIGKILL),
        "the {transport} client never got going"
    );
    let _ = client.wait();
    let killed = Instant::now();
    // The next client is served as soon as the server noticed (a client
    // arriving while the session ends waits for it or is told it is busy:
    // retried, bounded).
    let mut last = None;
    while killed.elapsed() < Duration::from_secs(40) {
        let out = sweep_from_node1(&lab, transport, &port);
        if out.status.success() {
            last = None;
            break;
        }
        last = Some(text(&out));
        std::thread::sleep(Duration::from_millis(200));
    }
    let freed_after = killed.elapsed();
    let _ = server.kill();
    let _ = server.wait();
    assert!(last.is_none(), "never served again: {last:?}");
    assert!(
        freed_after < Duration::from_secs(8),
        "the server held the killed {transport} client's session for {freed_after:?} (its timeout is 30 s)"
    );
}

#[test]
fn a_killed_raw_client_frees_the_server_at_once() {
    let _s = serial();
    if !labs_possible() {
        return;
    }
    killed_client_frees_the_server("raw");
}

#[test]
fn a_killed_xdp_client_frees_the_server_at_once() {
    let _s = serial();
    if !labs_possible() {
        return;
    }
    killed_client_frees_the_server("xdp");
}

/// A server started without `--allow-lean` refuses raw and xdp to a
/// client on another host (node1 of a lab: remote as far as it can tell)
/// with the flag named, and still serves it tcp (issue 45 item 11).
#[test]
fn frame_transports_are_refused_to_remote_clients_without_allow_lean() {
    let _s = serial();
    if !labs_possible() {
        return;
    }
    let lab = format!("nolean{}", std::process::id());
    let _g = common::lab_up(&lab, 2);
    let (mut server, port) = serve_in_with(&lab, "node2", &[]);
    for transport in ["raw", "xdp"] {
        let out = sweep_from_node1(&lab, transport, &port);
        assert_eq!(out.status.code(), Some(3), "{transport}: {}", text(&out));
        assert!(
            text(&out).contains("only with --allow-lean"),
            "{transport}: {}",
            text(&out)
        );
    }
    let out = sweep_from_node1(&lab, "tcp", &port);
    assert!(out.status.success(), "tcp: {}", text(&out));
    let _ = server.kill();
    let _ = server.wait();
}

#[test]
fn a_raw_session_runs_beside_an_xdp_session_on_the_same_interfaces() {
    let _s = serial();
    if !labs_possible() {
        return;
    }
    let lab = format!("sh{}", std::process::id());
    let _g = common::lab_up(&lab, 2);
    let (mut xdp_server, port) = serve_in(&lab, "node2");
    let mut raw_server = serve_on_port(&lab, "9238");
    let peer = format!("node2:{port}");
    let args = [
        "--sizes",
        "8,1Ki",
        "--budget",
        "8s",
        "--timeout",
        "10s",
        "--json",
        "-",
    ];
    let xdp = sweep_in_node1(&lab, "xdp", &peer, &args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Once the xdp session runs (its programs attached on both nodes'
    // interfaces), a raw sweep over the same interfaces.
    let node1 = format!("wlab-{lab}-node1");
    let mut raw = None;
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(60) {
        let busy = common::lean::pids_in(&node1)
            .into_iter()
            .filter_map(common::lean::cpu_ticks)
            .sum::<u64>()
            > 20;
        if busy {
            raw = Some(sweep_from_node1(&lab, "raw", "9238"));
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let xdp = xdp.wait_with_output().unwrap();
    for s in [&mut xdp_server, &mut raw_server] {
        let _ = s.kill();
        let _ = s.wait();
    }
    let raw = raw.expect("the xdp sweep never got going");
    assert!(xdp.status.success(), "xdp: {}", text(&xdp));
    assert!(raw.status.success(), "raw beside xdp: {}", text(&raw));
    let v: serde_json::Value = serde_json::from_slice(&raw.stdout).unwrap();
    assert_eq!(v["complete"], true, "{v}");
}

#[test]
fn every_frame_result_counts_its_frames_and_resends_under_loss() {
    let _s = serial();
    if !labs_possible() || !common::in_path("nft") {
        if std::env::var_os("WULF_REQUIRE_LAB").is_some() {
            panic!("loss needs nftables (scripts/install-test-deps installs it)");
        }
        return;
    }
    for transport in ["raw", "xdp"] {
        let clean = frame_sweep(transport, "ge", &["--sizes", "8,64Ki", "--budget", "200ms"]);
        let c = &clean["options"]["transport"]["frame_counters"];
        for key in [
            "data_frames",
            "resent_frames",
            "ack_frames",
            "timeouts",
            "held_frames",
        ] {
            assert!(c[key].is_u64(), "{transport}: {key} missing: {c}");
        }
        assert!(c["data_frames"].as_u64().unwrap() > 0, "{c}");
        assert!(
            c["resent_frames"].as_u64() <= c["data_frames"].as_u64(),
            "{c}"
        );
        assert!(
            c["srtt_ns"].as_u64().is_some_and(|n| n > 0),
            "a round trip measured: {c}"
        );
        let lossy = frame_sweep(
            transport,
            "ge,loss=3",
            &["--mode", "stream", "--sizes", "256Ki", "--budget", "300ms"],
        );
        let c = &lossy["options"]["transport"]["frame_counters"];
        let resent = c["resent_frames"].as_u64().unwrap();
        let data = c["data_frames"].as_u64().unwrap();
        assert!(
            resent > 0 && resent < data,
            "{transport} under 3% loss: {c}"
        );
        // Only the missing frames go again: about the share lost, far from
        // a window per loss (go-back-N resent about 10 frames per loss).
        assert!(resent * 5 < data, "{transport} resent too much: {c}");
    }
}
