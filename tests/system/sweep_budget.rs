//! A sweep keeps its `--budget`: `wulf sweep shm --budget 5s` once took
//! 8.0 s and tcp 8.8 s (setup, the limits, the floor measured again and
//! the close came on top of the budget, and the confirmation pass took
//! 2.6 s against its 0.5 s share).
//!
//! No speed is asserted (a noisy 2-vCPU machine): the wall-time bounds are
//! generous, so only a gross overrun (a pass that ignores its share, a
//! phase left out of the budget at a large budget, a hang) fails. The
//! tight check is on the pass's own record, which does not depend on how
//! loaded the machine is: its budget never above its 10% share and its
//! wall time within that budget and one round's slack (on a loaded 2-vCPU
//! VM at load 5-7, the points' least work, 124 sizes of eight blocks, and
//! the limits' curves overrun their shares by seconds: see the budget
//! section of docs/methodology.md).

use std::time::{Duration, Instant};

use crate::common;

use common::{json, serial, stderr, tempdir, wulf};

/// Run a tcp sweep of `budget_s` over the default sizes; its wall time
/// and result.
fn sweep(budget_s: u64) -> (Duration, serde_json::Value) {
    let dir = tempdir();
    let out = dir.path().join("s.json");
    let began = Instant::now();
    let o = wulf(&[
        "sweep",
        "tcp",
        "--budget",
        &format!("{budget_s}s"),
        "--quiet",
        "--json",
        out.to_str().unwrap(),
    ])
    .output()
    .unwrap();
    let took = began.elapsed();
    assert!(o.status.success(), "{}", stderr(&o));
    (took, json(&out))
}

/// The pass's record: a budget within its share of `budget_s`, a wall time
/// within that budget and a round's slack.
fn pass_within_its_share(r: &serde_json::Value, budget_s: f64) {
    let c = &r["confirmation"];
    let pass_budget_s = c["budget_s"].as_f64().expect("a pass record");
    let wall_s = c["wall_s"].as_f64().unwrap();
    assert!(pass_budget_s <= 0.1 * budget_s + 1e-9, "{c}");
    assert!(
        wall_s <= pass_budget_s * 1.5 + 0.3,
        "pass {wall_s} s of {pass_budget_s} s"
    );
}

/// `--budget 2s` ends in under 2 s x 3 + 5 s in any build (the debug build
/// took 7.2 s at load 5.4; the regression took 4.5x at this budget).
#[test]
fn a_short_sweep_never_overruns_grossly() {
    let _g = serial();
    let (took, r) = sweep(2);
    assert!(took < Duration::from_secs(11), "{took:?}");
    pass_within_its_share(&r, 2.0);
}

/// `--budget 10s` ends within 1.5x + 5 s in an optimised build (10.8-12.1 s
/// measured at load 5.5 with the ci profile); skipped in the debug build,
/// whose slower limits would make the bound a statement about the build.
#[test]
fn a_long_sweep_keeps_its_budget_in_an_optimised_build() {
    if cfg!(debug_assertions) {
        eprintln!("skipped: the debug build (run with --profile ci)");
        return;
    }
    let _g = serial();
    let (took, r) = sweep(10);
    assert!(took < Duration::from_secs(20), "{took:?}");
    pass_within_its_share(&r, 10.0);
}
