//! The drift term of one run per side ([`super`]).

use super::super::{compare, CompareOptions, FloorSource, Verdict};
use super::*;
use crate::result::{Confirmation, RemeasuredPoint};

/// The fixture as a clean run: no point noisy, a quiet machine.
fn clean() -> SweepResult {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/tcp-pingpong.json"
    );
    let mut r = crate::result::read_result(std::path::Path::new(path)).unwrap();
    r.points.iter_mut().for_each(|p| p.noisy = false);
    r.host.load_before = [0.1; 3];
    r.host.load_after = Some([0.1; 3]);
    // Tight trials, as a quiet shm run's: each trial's distance from its
    // median shrunk tenfold in log terms.
    for p in &mut r.points {
        let m = p.median_ns;
        p.trials_ns
            .iter_mut()
            .for_each(|t| *t = m * (*t / m).powf(0.1));
    }
    r
}

/// `r` with every time times `factor`, and a confirmation pass that
/// measured the sizes `lo ..= hi` again `drift` times slower (in log
/// terms) than its first pass.
fn with_pass(r: &SweepResult, factor: f64, lo: u64, hi: u64, drift: f64) -> SweepResult {
    let mut r = r.clone();
    for p in &mut r.points {
        p.trials_ns.iter_mut().for_each(|t| *t *= factor);
        p.median_ns *= factor;
        p.ci_low_ns *= factor;
        p.ci_high_ns *= factor;
        p.bits_per_s /= factor;
    }
    let points = r
        .points
        .iter()
        .filter(|p| p.bytes >= lo && p.bytes <= hi)
        .map(|p| {
            let m = p.median_ns * drift.exp();
            RemeasuredPoint {
                bytes: p.bytes,
                trials: 6,
                median_ns: m,
                ci_low_ns: m * 0.99,
                ci_high_ns: m * 1.01,
                noisy: false,
                slow_trials: 0,
            }
        })
        .collect();
    r.confirmation = Some(Confirmation {
        budget_s: 0.2,
        wall_s: 0.2,
        points,
        events: Vec::new(),
    });
    r
}

const BAND: (u64, u64) = ((64 << 10) + 1, 1 << 20);

fn band_verdict(a: &SweepResult, b: &SweepResult) -> (Verdict, FloorSource) {
    let opts = CompareOptions {
        resamples: 500,
        ..CompareOptions::default()
    };
    let c = compare(std::slice::from_ref(a), std::slice::from_ref(b), &opts);
    let band = c.bands.iter().find(|x| x.name == "64 KiB - 1 MiB").unwrap();
    (band.verdict, band.floor.source)
}

/// A/A on shm, quiet machine: run B 7.3% slower as a whole, its trials
/// tight. The trials cannot see it; the drifts the runs showed between
/// their passes (+6.4% and +1.3% in the band) are counted, and the least
/// band of one run against one keeps it from being claimed either way.
#[test]
fn a_whole_run_shift_within_the_runs_drift_is_no_change_claimed() {
    let base = clean();
    let (lo, hi) = BAND;
    let a = with_pass(&base, 1.0, lo, hi, 0.013);
    let b = with_pass(&base, 1.073, lo, hi, 0.064);
    assert!(run_drift(&b, lo, hi).is_some());
    let (v, src) = band_verdict(&a, &b);
    assert!(
        matches!(src, FloorSource::Drift { .. } | FloorSource::OneRun),
        "{src:?}"
    );
    assert!(!matches!(v, Verdict::AFaster | Verdict::BFaster), "{v:?}");
    // Without confirmation passes only the one-run band stands.
    let (mut a0, mut b0) = (a.clone(), b.clone());
    a0.confirmation = None;
    b0.confirmation = None;
    let (v0, src0) = band_verdict(&a0, &b0);
    assert_eq!(src0, FloorSource::OneRun);
    assert!(!matches!(v0, Verdict::AFaster | Verdict::BFaster), "{v0:?}");
}

/// A halved link (twice the time) stays detected beside a small drift,
/// and the drift of other bands' sizes does not count in this one (a lab
/// link's small messages drift by 0.2 - 0.8 in log terms).
#[test]
fn a_large_change_stays_detected_and_other_bands_drift_does_not_count() {
    let base = clean();
    let (lo, hi) = BAND;
    let a = with_pass(&base, 1.0, lo, hi, 0.01);
    let b = with_pass(&base, 2.0, lo, hi, -0.01);
    assert_eq!(band_verdict(&a, &b).0, Verdict::AFaster);
    let a = with_pass(&base, 1.0, 0, 4096, 0.8);
    let b = with_pass(&base, 2.0, 0, 4096, -0.5);
    assert_eq!(run_drift(&a, lo, hi), None);
    let (v, src) = band_verdict(&a, &b);
    assert_eq!(v, Verdict::AFaster);
    assert!(!matches!(src, FloorSource::Drift { .. }));
}

/// The drift is the median of the band's sizes (one burst does not set
/// it) and the runs' root mean square.
#[test]
fn the_drift_is_robust_and_pooled_over_the_runs() {
    let base = clean();
    let (lo, hi) = BAND;
    let mut a = with_pass(&base, 1.0, lo, hi, 0.05);
    let c = a.confirmation.as_mut().unwrap();
    c.points[0].median_ns *= 10.0;
    assert!((run_drift(&a, lo, hi).unwrap() - 0.05).abs() < 1e-9);
    let b = with_pass(&base, 1.0, lo, hi, -0.05 * 7f64.sqrt());
    let s = band_drift([&a, &b].into_iter(), lo, hi).unwrap();
    assert!((s - 0.1).abs() < 1e-9, "{s}");
    assert_eq!(band_drift([&base].into_iter(), lo, hi), None);
}
