//! The lab's impairments: loss made by nftables in the switch (read back
//! by status, 0 and 100 percent both labs), delay refused where netem is
//! missing, and the loss kept to the measured traffic, never wulf's own
//! control connections. Split from `lab.rs` (600 lines at most a file).

use crate::common;

use common::{labs_possible, run, serial, wulf, LabGuard};

use super::lab::{assert_gone, name, ok};

/// Loss is made by nftables in the switch and read back by status; delay
/// needs netem, which this kernel may lack: then a clear exit 2, nothing made.
#[test]
fn impairments_are_real_or_refused() {
    let _serial = serial();
    if !labs_possible() {
        return;
    }
    let (loss, text) = ping_through_loss("loss", "50", "40");
    assert_eq!(loss, 50.0);
    // Each echo crosses the switch twice: 75% of them are lost on average;
    // all 40 getting through has a probability of 1e-24.
    assert!(!text.contains(" 0% packet loss"), "{text}");

    let lab = name("delay");
    let _g = LabGuard(lab.clone());
    let out = run(&["lab", "up", "--name", &lab, "--delay", "1ms"]);
    if !out.status.success() {
        assert_eq!(out.status.code(), Some(2));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("unavailable on this kernel"), "{err}");
        assert_gone(&lab);
    }
}

/// A lab whose switch loses `loss` percent of frames: the loss `lab
/// status` reads back and what `count` pings from node1 to node2 said;
/// the lab is removed, and checked gone, before it returns.
fn ping_through_loss(test: &str, loss: &str, count: &str) -> (serde_json::Value, String) {
    let lab = name(test);
    let _g = LabGuard(lab.clone());
    ok(&run(&["lab", "up", "--name", &lab, "--loss", loss]));
    let js = ok(&run(&["lab", "status", "--name", &lab, "--json"]));
    let v: serde_json::Value = serde_json::from_str(&js).unwrap();
    let out = wulf(&[
        "lab", "exec", "--name", &lab, "node1", "--", "ping", "-c", count, "-i", "0.01", "-W", "1",
        "-q", "node2",
    ])
    .output()
    .unwrap();
    ok(&run(&["lab", "down", "--name", &lab]));
    assert_gone(&lab);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    (v[0]["loss_percent"].clone(), text)
}

/// The ends of the documented range of `--loss` (0 to 100): 100 once
/// failed with nft's "Value 10000 exceeds valid range 0-9999". A total
/// loss is read back as 100 and lets no echo through; 0 lets all through.
#[test]
fn a_total_loss_and_no_loss_are_both_labs() {
    let _serial = serial();
    if !labs_possible() {
        return;
    }
    let (loss, text) = ping_through_loss("loss100", "100", "5");
    assert_eq!(loss, 100.0);
    assert!(text.contains(" 100% packet loss"), "{text}");
    let (loss, text) = ping_through_loss("loss0", "0", "5");
    assert_eq!(loss, 0.0);
    assert!(text.contains(" 0% packet loss"), "{text}");
}

/// The lab's loss is for the measured traffic: with every frame lost, a
/// raw sweep still reaches its peer over wulf's own control connection
/// (DSCP CS6, with address resolution spared too) and fails where the
/// measured frames are lost, the frame handshake, with that said. Before
/// the control connection was spared, at 5% loss its TCP resend timeouts
/// (1-3 s, doubling) now and then outlasted a 10 s `--timeout`.
#[test]
fn a_total_loss_spares_the_control_connection() {
    let _serial = serial();
    if !labs_possible() || !common::in_path("nft") {
        return;
    }
    let out = wulf(&[
        "sweep",
        "raw",
        "--lab",
        "ge,loss=100",
        "--sizes",
        "8",
        "--budget",
        "200ms",
        "--timeout",
        "3s",
        "--quiet",
    ])
    .output()
    .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("frame handshake") || err.contains("frames never arrived"),
        "{err}"
    );
    assert!(!err.contains("cannot reach the peer"), "{err}");
    assert!(!err.contains("did not greet"), "{err}");
}
