//! The `xdp` transport (AF_XDP sockets with wulf's own reliable
//! protocol) between two nodes of a real lab: every mode with
//! `--integrity` (native attach at MTU 1500, the generic hook at MTU 9000,
//! where veth cannot run a single-buffer program natively); every message
//! intact through a switch that drops 5% of all frames; a peer killed
//! mid-sweep leaves a partial result; no XDP program stays attached or
//! loaded after a run, whether it ended normally, by SIGINT of the
//! measuring side or by SIGKILL of the server; and where xdp cannot run
//! it says why: no capability, a local sweep, an interface that does not
//! exist, `wulf run` without a peer across a link.
//!
//! Lab tests skip with a printed reason when not root (CI runs as root;
//! WULF_REQUIRE_LAB=1 turns the skip into a failure). Every lab is
//! removed by `--lab` itself or by a guard, also when a test fails.

use crate::common;

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::lean::{
    a_killed_peer_leaves_a_partial_result, every_message_arrives_through_a_lossy_switch,
    every_mode_at_mtu_1500, frame_sweep, refusals_are_clear, serial, signal_once_busy, text,
    LONG_SWEEP,
};
use common::{labs_possible, wulf_bin};
use nix::sys::signal::Signal;

/// The settings the measuring end recorded, and the server's.
fn settings(v: &serde_json::Value) -> (&serde_json::Value, &serde_json::Value) {
    let s = &v["options"]["transport"];
    (s, &s["server"])
}

#[test]
fn every_mode_with_integrity_across_two_nodes() {
    let _s = serial();
    if !labs_possible() {
        return;
    }
    for v in every_mode_at_mtu_1500("xdp") {
        let (client, server) = settings(&v);
        for s in [client, server] {
            // veth runs XDP in its driver at MTU 1500, never zero-copy.
            assert_eq!(s["xdp_attach"], "native", "{v}");
            assert_eq!(s["xdp_mode"], "copy", "{v}");
        }
    }
    // MTU 9000: one UMEM page holds at most 3826 bytes of frame, and veth
    // refuses a single-buffer program natively, so the generic hook runs it.
    let v = frame_sweep(
        "xdp",
        "ge,mtu=9000",
        &[
            "--integrity",
            "--sizes",
            "1,3810,3811,1Mi",
            "--budget",
            "400ms",
        ],
    );
    let (client, server) = settings(&v);
    for s in [client, server] {
        assert_eq!(s["mtu_bytes"], 3826, "{v}");
        assert_eq!(s["xdp_attach"], "skb", "{v}");
    }
}

#[test]
fn every_message_arrives_intact_through_a_lossy_switch() {
    let _s = serial();
    if !labs_possible() || !common::in_path("nft") {
        if std::env::var_os("WULF_REQUIRE_LAB").is_some() {
            panic!("loss needs nftables (scripts/install-test-deps installs it)");
        }
        return;
    }
    every_message_arrives_through_a_lossy_switch("xdp");
}

#[test]
fn a_peer_killed_mid_sweep_leaves_a_partial_result() {
    let _s = serial();
    if !labs_possible() {
        return;
    }
    a_killed_peer_leaves_a_partial_result("xdp");
}

/// What of wulf's XDP is still there: interfaces of the lab's nodes with
/// a program attached (`ip -d link` shows `prog/xdp`), and wulf programs
/// still loaded anywhere (`bpftool prog`, when `bpftool` is installed).
fn leftovers(lab: &str) -> Vec<String> {
    let mut found = Vec::new();
    for node in ["node1", "node2"] {
        let ns = format!("wlab-{lab}-{node}");
        let out = Command::new("ip")
            .args(["-n", &ns, "-d", "link", "show", "eth0"])
            .output()
            .unwrap();
        let t = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(out.status.success(), "{}", text(&out));
        if t.contains("prog/xdp") {
            found.push(format!("{node}: {t}"));
        }
    }
    if common::in_path("bpftool") {
        let out = Command::new("bpftool")
            .args(["prog", "show"])
            .output()
            .unwrap();
        let t = String::from_utf8_lossy(&out.stdout);
        found.extend(
            t.lines()
                .filter(|l| l.contains("name wulf_xdp"))
                .map(|l| format!("loaded: {l}")),
        );
    }
    found
}

/// Wait (at most 15 s: the kernel frees a closed link's program after a
/// grace period) until nothing of wulf's XDP is left; the leftovers if
/// something stays.
fn assert_nothing_stays(lab: &str, after: &str) {
    let t = Instant::now();
    loop {
        let left = leftovers(lab);
        if left.is_empty() {
            return;
        }
        assert!(
            t.elapsed() < Duration::from_secs(15),
            "after {after}, still there: {left:#?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// `wulf sweep xdp --peer node2` run inside node1 of lab `lab`.
fn client(lab: &str, args: &[&str]) -> Child {
    common::lean::sweep_in_node1(lab, "xdp", "node2", args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

#[test]
fn no_xdp_program_outlives_a_run() {
    let _s = serial();
    if !labs_possible() {
        return;
    }
    if !common::in_path("bpftool") && std::env::var_os("WULF_REQUIRE_LAB").is_some() {
        panic!("this test needs bpftool (scripts/install-test-deps installs it)");
    }
    let lab = format!("xdp{}", std::process::id());
    let _g = common::lab_up(&lab, 2);
    let (mut server, _port) = common::lean::serve_in(&lab, "node2");

    // A run that ends normally: the server lives on, its channel is gone.
    let out = client(
        &lab,
        &["--sizes", "1,64Ki", "--budget", "300ms", "--timeout", "5s"],
    )
    .wait_with_output()
    .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    assert_nothing_stays(&lab, "a normal run");

    // SIGINT (Ctrl-C) of the measuring side in the middle of a sweep.
    let c = client(&lab, LONG_SWEEP);
    let node1 = format!("wlab-{lab}-node1");
    assert!(
        signal_once_busy(&node1, 50, Signal::SIGINT),
        "never started"
    );
    let out = c.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", text(&out));
    assert_nothing_stays(&lab, "SIGINT of the measuring side");

    // SIGKILL of the server: its program goes with its descriptors, and
    // the measuring side gives up after its timeout and detaches too.
    let mut c = client(&lab, LONG_SWEEP);
    // Under way once the data channel is up: XDP attached on the server's
    // side (a condition, not CPU time: a blocked or starved side uses
    // little of it); then kill the server.
    let node2 = format!("wlab-{lab}-node2");
    let t = Instant::now();
    while !leftovers(&lab).iter().any(|l| l.starts_with("node2")) {
        let ended = c.try_wait().unwrap().is_some();
        if t.elapsed() > Duration::from_secs(60) || ended {
            let _ = c.kill();
            let out = c.wait_with_output().unwrap();
            // The server ends the interrupted client's session only once
            // it notices (its --timeout): until then it turns others away.
            if ended && text(&out).contains("busy with another client") {
                assert!(t.elapsed() < Duration::from_secs(60), "{}", text(&out));
                std::thread::sleep(Duration::from_millis(300));
                c = client(&lab, LONG_SWEEP);
                continue;
            }
            panic!("the channel never came up: {}", text(&out));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(300));
    for p in common::lean::pids_in(&node2) {
        let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(p as i32), Signal::SIGKILL);
    }
    let t = Instant::now();
    let out = c.wait_with_output().unwrap();
    assert!(t.elapsed() < Duration::from_secs(30), "hung after the kill");
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    assert_nothing_stays(&lab, "SIGKILL of the server");
    let _ = server.kill();
    let _ = server.wait();
}

#[test]
fn where_xdp_cannot_run_it_says_why() {
    let _s = serial();
    if !labs_possible() {
        return;
    }
    // Without the capabilities (dropped from the bounding set, so root
    // loses them across exec): the socket needs CAP_NET_RAW, the map and
    // program CAP_NET_ADMIN (or CAP_SYS_ADMIN).
    for drop in ["-net_raw", "-net_admin,-sys_admin,-bpf"] {
        let out = Command::new("setpriv")
            .args([
                "--bounding-set",
                drop,
                "--",
                wulf_bin(),
                "sweep",
                "xdp",
                "--quiet",
            ])
            .output()
            .unwrap();
        assert!(!out.status.success());
        assert!(
            text(&out).contains("needs CAP_NET_ADMIN"),
            "{drop}: {}",
            text(&out)
        );
    }

    // A local sweep, a missing interface, `wulf run` without a link.
    refusals_are_clear("xdp");
}
