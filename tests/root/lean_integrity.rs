//! `--integrity all` over the frame transports (issue 34): every timed
//! message is stamped and checked, in every mode, between two lab nodes;
//! and frames corrupted on their way in (the test hook `WULF_FRAME_FAULT`
//! flips the first payload byte of every data frame an end receives from
//! the 200th on: after the integrity pass, inside the timed blocks) fail
//! the sweep with the message and offset named, where plain `--integrity` (three messages
//! per size, before timing) lets it through.
//!
//! Lab tests skip with a printed reason when not root (WULF_REQUIRE_LAB=1
//! turns the skip into a failure).

use crate::common;

use common::labs_possible;
use common::lean::{frame_sweep, serial, text};

#[test]
fn every_timed_message_is_checked_in_every_mode() {
    let _s = serial();
    if !labs_possible() {
        return;
    }
    for (transport, mode, wait) in [
        ("raw", "pingpong", "block"),
        ("raw", "stream", "block"),
        ("raw", "bidir", "spin"),
        ("xdp", "pingpong", "block"),
    ] {
        let v = frame_sweep(
            transport,
            "ge",
            &[
                "--integrity",
                "all",
                "--mode",
                mode,
                "--wait",
                wait,
                "--sizes",
                "1,1485,64Ki",
                "--budget",
                "300ms",
            ],
        );
        assert_eq!(v["options"]["integrity"], true, "{transport} {mode}: {v}");
        assert_eq!(
            v["options"]["integrity_all"], true,
            "{transport} {mode}: {v}"
        );
    }
}

/// `wulf sweep raw --lab ge` at 1 KiB with the fault hook and `integrity`.
fn corrupted_sweep(integrity: &[&str]) -> std::process::Output {
    let mut args = vec![
        "sweep",
        "raw",
        "--lab",
        "ge",
        "--quiet",
        "--json",
        "-",
        "--timeout",
        "10s",
        "--sizes",
        "1Ki",
        "--budget",
        "300ms",
    ];
    args.extend_from_slice(integrity);
    common::wulf(&args)
        .env("WULF_FRAME_FAULT", "flip-payload:200")
        .output()
        .unwrap()
}

#[test]
fn a_corrupted_frame_is_caught_only_when_every_message_is_checked() {
    let _s = serial();
    if !labs_possible() {
        return;
    }
    let out = corrupted_sweep(&["--integrity", "all"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{}", text(&out));
    assert!(
        err.contains("integrity check failed") && err.contains("1024-byte timed message"),
        "{}",
        text(&out)
    );
    assert!(err.contains("byte offset 0"), "{}", text(&out));
    // The same fault with only the pass before timing: nobody looks at
    // the corrupted message (what `all` is for).
    let out = corrupted_sweep(&["--integrity"]);
    assert!(out.status.success(), "{}", text(&out));
}

/// A server counts the patterns of checked blocks (`--integrity all`: one
/// message-sized pattern per direction) against its `--max-memory` with
/// the two buffer pools: 1 MiB messages need 2 x (1 MiB + a page) of
/// pools and 2 MiB of patterns, so 3 MiB is refused and 5 MiB granted
/// (the patterns were once left out and 3 MiB granted). Over loopback tcp.
#[test]
fn the_checked_patterns_count_against_a_servers_memory_limit() {
    let sweep = |server: &common::Server| {
        common::run(&[
            "sweep",
            "tcp",
            "--peer",
            &server.addr(),
            "--sizes",
            "1Mi",
            "--integrity",
            "all",
            "--budget",
            "100ms",
            "--timeout",
            "5s",
            "--quiet",
        ])
    };
    let tight = common::Server::start(&["--max-memory", "3Mi"]);
    let out = sweep(&tight);
    assert!(
        !out.status.success(),
        "granted within 3 MiB: {}",
        text(&out)
    );
    assert!(text(&out).contains("--max-memory"), "{}", text(&out));
    drop(tight);
    let roomy = common::Server::start(&["--max-memory", "5Mi"]);
    let out = sweep(&roomy);
    assert!(out.status.success(), "refused within 5 MiB: {}", text(&out));
}
