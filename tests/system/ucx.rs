//! The `ucx` transports (UCX's UCP tag matching, libucp loaded at run
//! time) on this machine: each selection sweeps every mode with its bytes
//! checked, and records the lanes UCX chose, which must be of the
//! transports the selection allows (a result says which path it took, not
//! which one was asked for). Skips with a line where UCX is missing,
//! unless WULF_REQUIRE_UCX=1 (CI), where it fails.

use crate::common;

/// The lanes a result's end recorded.
fn lanes(settings: &serde_json::Value) -> Vec<String> {
    settings["ucx_lanes"]
        .as_array()
        .expect("ucx_lanes recorded")
        .iter()
        .map(|l| l.as_str().unwrap().to_string())
        .collect()
}

#[test]
fn every_ucx_selection_sweeps_every_mode_checked_over_the_lanes_it_allows() {
    if !common::have_ucx() {
        return;
    }
    let _serial = common::serial();
    // (transport, the transports its lanes may use)
    for (t, allowed) in [
        ("ucx(tcp)", &["tcp"][..]),
        ("ucx(shm)", &["posix", "sysv", "cma"][..]),
        ("ucx(posix)", &["posix"][..]),
        ("ucx", &["posix", "sysv", "cma", "tcp", "self"][..]),
    ] {
        for mode in ["pingpong", "stream", "bidir"] {
            // A point at each size: the budget is a deadline (issue 43),
            // and 1 s left 1 MiB out of a bidir sweep at load 4.
            let r = common::sweep_every_size(
                &[
                    "sweep",
                    t,
                    "--mode",
                    mode,
                    "--sizes",
                    "1,4Ki,1Mi",
                    "--integrity",
                    "--no-perturb",
                    "--timeout",
                    "10s",
                ],
                3.0,
            );
            assert_eq!(r["transport"], t);
            assert_eq!(r["options"]["integrity"], true);
            let points = r["points"].as_array().unwrap();
            assert_eq!(points.len(), 3, "{t} {mode}");
            assert!(points
                .iter()
                .all(|p| p["median_ns"].as_f64().unwrap() > 0.0));
            let settings = &r["options"]["transport"];
            assert!(settings["ucx_version"].as_str().unwrap().starts_with("1."));
            // UCX's protocol switches, as causes for the analysis: every
            // selection here has an eager-to-rendezvous switch.
            let switches = settings["thresholds"]
                .as_array()
                .expect("thresholds recorded");
            assert!(
                switches
                    .iter()
                    .any(|x| x["what"].as_str().unwrap().contains("rndv")),
                "{t}: {switches:?}"
            );
            for end in [settings, &settings["server"]] {
                let used = lanes(end);
                assert!(!used.is_empty(), "{t}: no lanes recorded");
                for lane in &used {
                    let tl = lane.split('/').next().unwrap();
                    assert!(
                        allowed.contains(&tl),
                        "{t}: lane {lane} outside {allowed:?}"
                    );
                }
            }
        }
    }
}

#[test]
fn a_ucx_selection_this_ucx_cannot_make_fails_with_ucx_s_reason() {
    if !common::have_ucx() {
        return;
    }
    // The environment is read for UCX's own choice: a selection naming no
    // transport that exists must fail with UCX's words, promptly.
    let err = common::sweep_failing_with_env("ucx", "UCX_TLS", "nosuchtransport");
    assert!(err.contains("UCX"), "{err}");
}
