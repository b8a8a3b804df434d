//! The `raw` transport (AF_PACKET frames with wulf's own reliable
//! protocol) between two nodes of a real lab: every mode with
//! `--integrity`, at MTU 1500 and 9000; every message intact through a
//! switch that drops 5% of all frames; a peer killed mid-sweep leaves a
//! partial result; and the cases where raw cannot run are clear errors,
//! not hangs: no CAP_NET_RAW, a local sweep (loopback has no Ethernet
//! addresses), an interface that does not exist, and `wulf run` without a
//! peer across a link skips it.
//!
//! Lab tests skip with a printed reason when not root (CI runs as root;
//! WULF_REQUIRE_LAB=1 turns the skip into a failure). Every temporary lab
//! is removed by `--lab` itself, and by a guard if the test fails.

mod common;

use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::{labs_possible, wulf, LabGuard};

/// One lab test at a time (two vCPUs).
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

fn text(o: &Output) -> String {
    format!(
        "exit {:?}\nstdout: {}\nstderr: {}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// `wulf sweep raw --lab SPEC --json - ARGS...`: the checked result.
fn raw_sweep(spec: &str, args: &[&str]) -> serde_json::Value {
    let mut all = vec![
        "sweep",
        "raw",
        "--lab",
        spec,
        "--quiet",
        "--json",
        "-",
        "--timeout",
        "10s",
    ];
    all.extend_from_slice(args);
    let out = wulf(&all).output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["transport"], "raw");
    assert_eq!(v["complete"], true, "{v}");
    v
}

/// The settings the measuring end recorded.
fn settings(v: &serde_json::Value) -> &serde_json::Value {
    &v["options"]["transport"]
}

#[test]
fn every_mode_with_integrity_across_two_nodes() {
    let _s = serial();
    if !labs_possible() {
        return;
    }
    let sizes = "1,1483,1484,1485,4Ki,256Ki";
    for (mode, wait) in [
        ("pingpong", "block"),
        ("stream", "block"),
        ("bidir", "spin"),
    ] {
        let v = raw_sweep(
            "ge",
            &[
                "--mode",
                mode,
                "--wait",
                wait,
                "--integrity",
                "--sizes",
                sizes,
                "--budget",
                "400ms",
            ],
        );
        assert_eq!(v["mode"], mode);
        assert_eq!(v["options"]["integrity"], true, "{v}");
        assert_eq!(v["points"].as_array().unwrap().len(), 6, "{v}");
        let s = settings(&v);
        assert_eq!(s["interface"], "eth0", "{v}");
        assert_eq!(s["mtu_bytes"], 1500);
        // 1500 less wulf's 16-byte header: 1484 B is one frame, 1485 two.
        assert_eq!(s["frame_payload_bytes"], 1484);
        assert_eq!(s["busy_poll"], wait == "spin");
    }
    let v = raw_sweep(
        "ge,mtu=9000",
        &[
            "--integrity",
            "--sizes",
            "1,8984,8985,1Mi",
            "--budget",
            "400ms",
        ],
    );
    assert_eq!(settings(&v)["mtu_bytes"], 9000, "{v}");
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
    // 5% of all frames dropped by the switch: a 1 MiB message is 707
    // frames, so every such message loses some; the integrity pass checks
    // every byte of every message, in order.
    for mode in ["pingpong", "stream", "bidir"] {
        let v = raw_sweep(
            "ge,loss=5",
            &[
                "--mode",
                mode,
                "--integrity",
                "--sizes",
                "1,3000,1Mi",
                "--budget",
                "1s",
            ],
        );
        assert_eq!(v["options"]["integrity"], true, "{v}");
        assert_eq!(v["points"].as_array().unwrap().len(), 3, "{v}");
    }
}

/// CPU ticks (user + system) of process `pid`, if it exists.
fn cpu_ticks(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = stat.rsplit_once(')')?.1;
    let f: Vec<&str> = after.split_whitespace().collect();
    Some(f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?)
}

fn pids_in(netns: &str) -> Vec<u32> {
    let out = Command::new("ip")
        .args(["netns", "pids", netns])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect()
}

#[test]
fn a_peer_killed_mid_sweep_leaves_a_partial_result() {
    let _s = serial();
    if !labs_possible() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let child = wulf(&[
        "sweep",
        "raw",
        "--lab",
        "ge",
        "--sizes",
        "1:1Mi",
        "--budget",
        "60s",
        "--wait",
        "spin",
        "--timeout",
        "3s",
        "--quiet",
        "--json",
        json.to_str().unwrap(),
    ])
    .stdout(Stdio::null())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    let lab = format!("t{}", child.id());
    let _g = LabGuard(lab.clone());
    let node2 = format!("wlab-{lab}-node2");
    // Kill the server in node2 once it has spun for 1 s of CPU: several
    // points exist by then (a fixed sleep could come before the first).
    let started = Instant::now();
    let mut killed = false;
    while started.elapsed() < Duration::from_secs(120) {
        let pids = pids_in(&node2);
        if pids.iter().filter_map(|&p| cpu_ticks(p)).sum::<u64>() >= 100 {
            for p in pids {
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(p as i32),
                    nix::sys::signal::Signal::SIGKILL,
                );
            }
            killed = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(killed, "the server in {node2} never got going");
    let t = Instant::now();
    let out = child.wait_with_output().unwrap();
    assert!(
        t.elapsed() < Duration::from_secs(30),
        "the sweep hung after its peer died"
    );
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    let r = common::json(&json);
    assert_eq!(r["complete"], false);
    assert!(
        !r["points"].as_array().unwrap().is_empty(),
        "points before the failure are kept"
    );
    wulf::result::read_result(&json).unwrap();
}

#[test]
fn where_raw_cannot_run_it_says_why() {
    let _s = serial();
    if !labs_possible() {
        return;
    }
    // Without CAP_NET_RAW (dropped from the bounding set, so root loses it
    // across exec).
    let out = Command::new("setpriv")
        .args([
            "--bounding-set",
            "-net_raw",
            "--",
            common::wulf_bin(),
            "sweep",
            "raw",
            "--quiet",
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(text(&out).contains("needs CAP_NET_RAW"), "{}", text(&out));

    // A local sweep: loopback cannot carry Ethernet frames.
    let out = wulf(&["sweep", "raw", "--quiet", "--timeout", "5s"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        text(&out).contains("loopback cannot carry them"),
        "{}",
        text(&out)
    );

    // An interface that does not exist.
    let out = wulf(&[
        "sweep",
        "raw",
        "--lab",
        "ge",
        "--iface",
        "wulfnone0",
        "--quiet",
        "--timeout",
        "5s",
    ])
    .output()
    .unwrap();
    assert!(!out.status.success());
    assert!(
        text(&out).contains("no network interface 'wulfnone0'"),
        "{}",
        text(&out)
    );

    // `wulf run` without a peer across a link skips raw and still succeeds.
    let dir = tempfile::tempdir().unwrap();
    let out = wulf(&[
        "run",
        "--only",
        "raw,tcp",
        "--no-npb",
        "--quick",
        "--quiet",
        "--out",
        dir.path().to_str().unwrap(),
    ])
    .output()
    .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains("skipping raw: needs a peer across an Ethernet link"),
        "{}",
        text(&out)
    );
}
