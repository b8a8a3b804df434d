//! The `raw` transport (AF_PACKET frames with wulf's own reliable
//! protocol) between two nodes of a real lab: every mode with
//! `--integrity`, at MTU 1500 and 9000; every message intact through a
//! switch that drops 5% of all frames; a peer killed mid-sweep leaves a
//! partial result; one `wulf serve` accepts a second sweep started right
//! after the first ended; and the cases where raw cannot run are clear errors,
//! not hangs: no CAP_NET_RAW, a local sweep (loopback has no Ethernet
//! addresses), an interface that does not exist, and `wulf run` without a
//! peer across a link skips it.
//!
//! Lab tests skip with a printed reason when not root (CI runs as root;
//! WULF_REQUIRE_LAB=1 turns the skip into a failure). Every temporary lab
//! is removed by `--lab` itself, and by a guard if the test fails.

use crate::common;

use std::process::Command;

use common::labs_possible;
use common::lean::{
    a_killed_peer_leaves_a_partial_result, a_second_sweep_right_after_the_first_is_accepted,
    every_message_arrives_through_a_lossy_switch, every_mode_at_mtu_1500, frame_sweep,
    refusals_are_clear, serial, text,
};

/// `wulf sweep raw --lab SPEC --json - ARGS...`: the checked result.
fn raw_sweep(spec: &str, args: &[&str]) -> serde_json::Value {
    frame_sweep("raw", spec, args)
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
    every_mode_at_mtu_1500("raw");
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
    every_message_arrives_through_a_lossy_switch("raw");
}

#[test]
fn a_peer_killed_mid_sweep_leaves_a_partial_result() {
    let _s = serial();
    if !labs_possible() {
        return;
    }
    a_killed_peer_leaves_a_partial_result("raw");
}

#[test]
fn a_second_sweep_right_after_the_first_is_accepted_by_the_same_server() {
    let _s = serial();
    if !labs_possible() || !common::in_path("nft") {
        if std::env::var_os("WULF_REQUIRE_LAB").is_some() {
            panic!(
                "losing acknowledgements needs nftables (scripts/install-test-deps installs it)"
            );
        }
        return;
    }
    a_second_sweep_right_after_the_first_is_accepted("raw");
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

    // A local sweep, a missing interface, `wulf run` without a link.
    refusals_are_clear("raw");
}
