//! Tests of the wake-up remedies' configurations and advice, on
//! synthetic runs.

use super::*;
use crate::tune::bands::all_comparisons;
use crate::tune::bands::tests::run;

const SIZES: [u64; 6] = [8, 64, 512, 4096, 65536, 1 << 20];

/// The baseline and the three remedies; `remedy_ns(remedy, bytes)` is
/// each remedy's one-way time, the baseline's `blocked(bytes)`.
fn runs(
    blocked: impl Fn(u64) -> f64,
    remedy_ns: impl Fn(WakeRemedy, u64) -> f64,
) -> Vec<ConfigRun> {
    let rate = |ns: f64, b: u64| b as f64 * 8.0 / (ns * 1e-9);
    let mut out = vec![run(&TuneConfig::baseline(), &SIZES, 1.0, |b| {
        rate(blocked(b), b)
    })];
    for c in wake_configs() {
        let r = c.wake.unwrap();
        out.push(run(&c, &SIZES, 1.0, |b| rate(remedy_ns(r, b), b)));
    }
    out
}

#[test]
fn each_remedy_is_one_configuration_changing_nothing_else() {
    let cs = wake_configs();
    assert_eq!(cs.len(), 3);
    for c in &cs {
        assert_eq!(c.factor, Factor::WakeUp);
        let plain = TuneConfig {
            label: c.label.clone(),
            factor: c.factor,
            wake: None,
            ..c.clone()
        };
        assert_eq!(
            plain,
            TuneConfig {
                label: c.label.clone(),
                factor: Factor::WakeUp,
                ..TuneConfig::baseline()
            }
        );
    }
    let busy = WakeRemedy::BusyPoll.site_commands();
    assert_eq!(
        busy,
        [
            "sysctl -w net.core.busy_read=50",
            "sysctl -w net.core.busy_poll=50"
        ]
    );
}

#[test]
fn a_costly_wake_up_is_measured_and_its_remedies_named() {
    // Idle VM: 60 us blocked, 10 us spinning, busy polling 12 us, cpuidle
    // off 30 us, at small sizes; large ones the same.
    let small = |b: u64| b < 65536;
    let rs = runs(
        |b| if small(b) { 60e3 } else { 1e6 },
        |r, b| match (r, small(b)) {
            (_, false) => 1e6,
            (WakeRemedy::Spin, _) => 10e3,
            (WakeRemedy::BusyPoll, _) => 12e3,
            (WakeRemedy::CpuidleOff, _) => 30e3,
        },
    );
    let cost = wake_cost(&rs).unwrap();
    let near = |a: f64, b: f64| (a - b).abs() <= 1e-9 * b;
    assert_eq!(cost.bytes, 8);
    assert!(
        near(cost.blocked_ns, 60e3) && near(cost.spinning_ns, 10e3),
        "{cost:?}"
    );
    let advice = wake_advice(&rs, &all_comparisons(&rs));
    assert_eq!(advice.len(), 3);
    assert!(advice.iter().all(|a| a.topic == Topic::WakeUp));
    for said in [
        "waking a blocked end (its CPU, where it had halted) cost 50.0 us",
        "faster beyond the noise",
    ] {
        assert!(advice[0].advice.contains(said), "{}", advice[0].advice);
    }
    assert!(advice[1]
        .advice
        .contains("busy_read 50 us made small messages faster"));
    assert_eq!(advice[1].commands.len(), 2);
    assert!(advice[2]
        .advice
        .contains("cpuidle off made small messages faster"));
}

#[test]
fn a_busy_machine_wakes_nothing_and_no_remedy_is_advised() {
    let rs = runs(|_| 10e3, |_, _| 10.1e3);
    let advice = wake_advice(&rs, &all_comparisons(&rs));
    assert_eq!(advice.len(), 3);
    for a in &advice {
        assert!(a.advice.contains("within the noise"), "{}", a.advice);
        assert!(a.commands.is_empty(), "{:?}", a.commands);
    }
    // Spinning ends slower than blocking ones claim no negative cost.
    assert!(
        advice[0].advice.contains("no wake-up was paid"),
        "{}",
        advice[0].advice
    );
    assert!(!advice[0].advice.contains("cost -"), "{}", advice[0].advice);
}

#[test]
fn without_the_spinning_configuration_no_cost_is_claimed() {
    let mut rs = runs(|_| 60e3, |_, _| 10e3);
    rs.retain(|r| r.summary.config.wake != Some(WakeRemedy::Spin));
    assert!(wake_cost(&rs).is_none());
    let advice = wake_advice(&rs, &all_comparisons(&rs));
    assert_eq!(advice.len(), 2);
    assert!(advice.iter().all(|a| !a.advice.contains("wake-up cost")));
}
