//! Wake-ups (issue 44): a blocking sweep of 3 s or more says whether its
//! blocking waits measured a CPU's wake-up, its smallest size swept again
//! with spinning ends (`wake_up`), and warns exactly when the figures it
//! recorded meet the rule (blocked more than twice spinning and 5 us
//! more). The machine may be idle (a wake-up) or busy (none): the test
//! checks the record's consistency, never which. Holds `common::serial()`:
//! the figures are compared with each other.

use crate::common;
use common::*;

/// The rule of `sweep::wake`, written again: the test checks the binary
/// against the documented figures (docs/results-schema.md, `wake_up`).
fn meets_the_rule(blocked_ns: f64, spinning_ns: f64) -> bool {
    blocked_ns > 2.0 * spinning_ns && blocked_ns - spinning_ns >= 5_000.0
}

const WARNING: &str = "blocking waits measured a CPU's wake-up";

/// `wulf sweep` of `transport` at 8 B and 1 KiB with `extra`, 3 s: the
/// least budget that runs the probe.
fn sweep(transport: &str, extra: &[&str]) -> serde_json::Value {
    let dir = tempdir();
    let out = file(&dir, "r.json");
    let mut args = vec!["sweep", transport, "--sizes", "8,1Ki"];
    args.extend_from_slice(&every_size("3s"));
    args.extend_from_slice(extra);
    args.extend_from_slice(&["--json", out.to_str().unwrap()]);
    let o = run(&args);
    assert!(o.status.success(), "wulf {args:?}: {}", stderr(&o));
    wulf::result::read_result(&out).expect("the typed reader accepts it");
    json(&out)
}

/// The warnings of `r` that speak of a wake-up.
fn wake_warnings(r: &serde_json::Value) -> Vec<String> {
    r["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|w| w.as_str())
        .filter(|w| w.contains(WARNING))
        .map(String::from)
        .collect()
}

/// Checks the record of a blocking sweep `r` against its own figures.
fn assert_consistent(r: &serde_json::Value) {
    let w = &r["wake_up"];
    assert!(w.is_object(), "a blocking sweep of 3 s has no wake_up: {r}");
    let first = &r["points"][0];
    assert_eq!(w["bytes"], first["bytes"], "{w}");
    let blocked = w["blocked_ns"].as_f64().unwrap();
    let spinning = w["spinning_ns"].as_f64().unwrap();
    assert_eq!(blocked, first["median_ns"].as_f64().unwrap(), "{w}");
    assert!(spinning > 0.0 && spinning.is_finite(), "{w}");
    let dominated = meets_the_rule(blocked, spinning);
    assert_eq!(w["dominated"], dominated, "{w}");
    let warnings = wake_warnings(r);
    if dominated {
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(warnings[0].contains("--wait spin"), "{warnings:?}");
        let us = |ns: f64| format!("{:.1} us", ns / 1e3);
        assert!(warnings[0].contains(&us(blocked)), "{warnings:?} {w}");
        assert!(warnings[0].contains(&us(spinning)), "{warnings:?} {w}");
    } else {
        assert!(warnings.is_empty(), "no wake-up, but: {warnings:?} {w}");
    }
    eprintln!(
        "{}: {blocked:.0} ns blocked, {spinning:.0} ns spinning, dominated {dominated} (load {:?})",
        r["transport"], r["host"]["load_after"]
    );
}

#[test]
fn a_blocking_socket_sweep_says_whether_it_measured_a_wake_up() {
    let _serial = serial();
    assert_consistent(&sweep("tcp", &[]));
}

#[test]
fn shm_told_to_block_says_so_and_spinning_ends_are_not_probed() {
    let _serial = serial();
    assert_consistent(&sweep("shm", &["--wait", "block"]));
    let spinning = sweep("unix", &["--wait", "spin"]);
    assert!(spinning.get("wake_up").is_none(), "{}", spinning["wake_up"]);
    assert!(wake_warnings(&spinning).is_empty());
}
