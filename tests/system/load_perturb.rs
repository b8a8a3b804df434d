//! `--cost soak` measures what the soakers change (issue 30, item 2):
//! interleaved pairs of short sweeps without and with them, recorded per
//! size in `conditions.soak_perturbation`, and a warning naming every size
//! changed beyond the noise. `--cost whole` (the kernel's accounting) runs
//! no soakers and records no perturbation.

use crate::common::*;

fn sweep(cost: &str) -> wulf::result::SweepResult {
    let dir = tempdir();
    let out = file(&dir, "r.json");
    let o = run(&[
        "sweep",
        "tcp",
        "--sizes",
        "64,64Ki",
        // The probe's six sweeps get a sixth each, and each must keep both
        // sizes in two pairs of three: the budget is a deadline (issue
        // 43), and 0.2 s sweeps lost 64 KiB on a loaded machine.
        "--budget",
        "3s",
        "--no-perturb",
        "--quiet",
        "--cost",
        cost,
        "--json",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    wulf::result::read_result(&out).unwrap()
}

#[test]
fn the_soakers_perturbation_is_measured_recorded_and_warned_of() {
    let _g = serial();
    let r = sweep("soak");
    let p = r
        .conditions
        .as_ref()
        .and_then(|c| c.soak_perturbation.clone())
        .expect("the perturbation is recorded with --cost soak");
    assert_eq!(p.pairs, wulf::load::perturb::PAIRS);
    assert!(p.budget_ms >= 100.0, "{p:?}");
    let sizes: Vec<u64> = p.points.iter().map(|x| x.bytes).collect();
    assert_eq!(sizes, [64, 65536]);
    for x in &p.points {
        let l = x.latency.expect("latency change");
        let g = x.getrusage.expect("getrusage change");
        for c in [l, g] {
            assert!(c.low <= c.change && c.change <= c.high, "{x:?}");
        }
        assert_eq!(
            x.beyond_noise,
            l.beyond_noise() || g.beyond_noise(),
            "{x:?}"
        );
    }
    // The warning names exactly the sizes beyond the noise.
    let warning = r
        .warnings
        .iter()
        .find(|w| w.contains("the soakers changed what they measure"));
    assert_eq!(
        warning.is_some(),
        p.points.iter().any(|x| x.beyond_noise),
        "{:?} {p:?}",
        r.warnings
    );
    if let Some(w) = warning {
        for x in &p.points {
            let named = w.contains(&format!("{}:", wulf::units::format_bytes(x.bytes)));
            assert_eq!(named, x.beyond_noise, "{w}");
        }
    }
    eprintln!("perturbation: {p:?}");
}

#[test]
fn the_kernels_accounting_runs_no_soakers_and_records_no_perturbation() {
    let _g = serial();
    let r = sweep("whole");
    let c = r.conditions.expect("conditions");
    assert!(c.soak_perturbation.is_none() && c.soaker.is_none());
}
