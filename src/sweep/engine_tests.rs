//! The assemble stage from made-up stage products: no peer, no process.

use std::time::Instant;

use super::*;
use crate::sweep::point::test_point;

/// What a close stage might hand on: `points` measured, `error` if any.
fn closed(points: Vec<Point>, error: Option<anyhow::Error>) -> Closed {
    let host = Host::probe();
    Closed {
        peer_host: host.clone(),
        settings: Settings::new(),
        placement: Placement {
            client_host: host.hostname.clone(),
            client_cpu: Some(0),
            server_host: "peer".into(),
            server_cpu: Some(1),
            lab: None,
        },
        timer_overhead_ns: 20.0,
        measured: Measured {
            points,
            error,
            confirmation: None,
        },
        warnings: vec!["peer: a warning of the set-up".into()],
        link: None,
        limits_known: true,
        authenticated: true,
        peer_loads: Vec::new(),
        wake_up: None,
    }
}

fn start() -> Start {
    Start {
        started: Instant::now(),
        started_at: "2026-11-29T00:00:00Z".into(),
        host: Host::probe(),
    }
}

#[test]
fn a_finished_sweep_is_assembled_from_its_points_in_order() {
    let spec = SweepSpec::for_tests("tcp", vec![8, 64, 512]);
    let points = spec.sizes.iter().map(|&b| test_point(b, 1e3)).collect();
    let mut clock = SweepClock::new(Instant::now(), spec.budget);
    clock.mark("setup");
    let mut c = closed(points, None);
    let wake = WakeUp {
        bytes: 8,
        blocked_ns: 50e3,
        spinning_ns: 5e3,
        dominated: true,
    };
    c.wake_up = Some((wake, 0.25));
    let out = assemble_outcome(&spec, start(), c, &mut clock);
    let r = &out.result;
    assert!(out.error.is_none());
    assert!(r.complete && r.incomplete_reason.is_none());
    let bytes: Vec<u64> = r.points.iter().map(|p| p.bytes).collect();
    assert_eq!(bytes, [8, 64, 512]);
    assert_eq!(r.placement.server_host, "peer");
    assert_eq!(r.timer_overhead_ns, 20.0);
    assert!(r
        .warnings
        .contains(&"peer: a warning of the set-up".to_string()));
    assert!(r.definitions.efficiency.is_some(), "limits were known");
    assert_eq!(r.wake_up, Some(wake));
    // The probe's own set-up counts as set-up.
    let setup = clock.phase_s("setup").unwrap();
    assert_eq!(r.setup_s, Some(setup + 0.25));
    // A local peer proves nothing: no authentication is recorded.
    assert_eq!(r.options.authenticated, None);
    assert_eq!(clock.phases().last().map(|p| p.0), Some("assemble"));
}

#[test]
fn a_sweep_cut_short_keeps_its_points_and_says_why() {
    let mut spec = SweepSpec::for_tests("tcp", vec![8, 64, 512]);
    spec.peer = Some("peer.example:5207".into());
    let mut noisy = test_point(64, 2e3);
    noisy.noisy = true;
    let points = vec![test_point(8, 1e3), noisy];
    let mut c = closed(points, Some(anyhow::anyhow!("the peer went away")));
    c.limits_known = false;
    let mut clock = SweepClock::new(Instant::now(), spec.budget);
    let out = assemble_outcome(&spec, start(), c, &mut clock);
    let r = &out.result;
    assert!(!r.complete);
    assert!(r
        .incomplete_reason
        .as_deref()
        .unwrap()
        .contains("the peer went away"));
    assert!(
        out.error.is_some(),
        "the error comes back beside the result"
    );
    assert_eq!(r.points.len(), 2);
    assert!(r.definitions.efficiency.is_none());
    assert_eq!(r.options.authenticated, Some(true));
    assert_eq!(r.setup_s, None, "no set-up phase was marked");
    assert!(
        r.warnings
            .iter()
            .any(|w| w.contains("1 of 2 points did not reach")),
        "{:?}",
        r.warnings
    );
}
