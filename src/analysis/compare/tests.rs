use super::floor::{default_spread, DEFAULT_DF};
use super::spread::band_spreads;
use super::*;
use crate::result::{BandSpread, RunToRun};
use crate::stats::hier_bootstrap::t_975;

fn fixture() -> SweepResult {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/tcp-pingpong.json"
    );
    crate::result::read_result(std::path::Path::new(path)).unwrap()
}

/// The result with every time multiplied by `factor`.
fn scaled(r: &SweepResult, factor: f64) -> SweepResult {
    let mut r = r.clone();
    for p in &mut r.points {
        p.trials_ns.iter_mut().for_each(|t| *t *= factor);
        p.median_ns *= factor;
        p.bits_per_s /= factor;
    }
    r
}

fn opts() -> CompareOptions {
    CompareOptions {
        resamples: 500,
        ..CompareOptions::default()
    }
}

fn verdicts(c: &Comparison) -> Vec<Verdict> {
    c.bands.iter().map(|b| b.verdict).collect()
}

/// The default floor of one tcp run against one, by the rule.
fn default_floor(band: &str) -> f64 {
    let (s, df) = default_spread("tcp", band);
    assert_eq!(df, DEFAULT_DF);
    ((t_975(df) * s * 2f64.sqrt()).exp() - 1.0).max(MIN_FLOOR_FRACTION)
}

#[test]
fn identical_runs_change_nothing() {
    let a = fixture();
    let c = compare(&[a.clone()], &[a.clone()], &opts());
    assert_eq!(c.sizes, a.points.len());
    assert!(c.single_runs());
    // The fixture goes up to 256 KiB: four bands.
    assert_eq!(c.bands.len(), 4);
    for b in &c.bands {
        assert_eq!(b.interval.ratio, 1.0, "{}", b.name);
        assert_eq!(b.verdict, Verdict::Same);
        assert!(matches!(b.floor.source, FloorSource::Default { .. }));
        assert!((b.floor.fraction - default_floor(b.name)).abs() < 1e-12);
    }
    assert_eq!(c.changes(), 0);
    assert!(c.regressions(0.0).is_empty());
    assert_eq!(c.only_in_a + c.only_in_b, 0);
}

/// One run per side: the trials say a 20% slowdown is real, but the
/// default floor of tcp is wider, so no verdict; a doubling is beyond it.
#[test]
fn one_run_per_side_needs_a_change_beyond_the_floor() {
    let a = fixture();
    let slow = scaled(&a, 1.2);
    let c = compare(&[a.clone()], &[slow], &opts());
    for b in &c.bands {
        assert!((b.interval.ratio - 1.2).abs() < 1e-9, "{}", b.name);
        assert!(b.interval.low > 1.0, "the trials alone see it: {b:?}");
        assert!(b.floor.fraction > 0.2);
        assert_eq!(b.verdict, Verdict::Same, "{}", b.name);
    }
    let double = scaled(&a, 2.0);
    let c = compare(&[a.clone()], &[double.clone()], &opts());
    let floors: Vec<f64> = c.bands.iter().map(|b| b.floor.fraction).collect();
    for b in &c.bands {
        let beyond = 2.0 > 1.0 + b.floor.fraction;
        let want = if beyond { Verdict::AFaster } else { Verdict::Same };
        assert_eq!(b.verdict, want, "{} floor {}", b.name, b.floor.fraction);
    }
    assert!(c.bands.iter().any(|b| b.verdict == Verdict::AFaster), "{floors:?}");
    assert!(!c.regressions(50.0).is_empty());
    assert!(c.regressions(150.0).is_empty(), "{:?}", c.regressions(150.0));
    // The other way round B is faster, which is no regression.
    let c = compare(&[double], &[a], &opts());
    assert!(c.bands.iter().any(|b| b.verdict == Verdict::BFaster));
    assert!(c.regressions(0.0).is_empty());
}

#[test]
fn a_given_floor_replaces_the_estimate() {
    let a = fixture();
    let given = CompareOptions {
        noise_floor: Some(0.1),
        ..opts()
    };
    let c = compare(&[a.clone()], &[scaled(&a, 1.2)], &given);
    for b in &c.bands {
        assert_eq!(b.floor.source, FloorSource::Given);
        assert_eq!(b.floor.fraction, 0.1);
        assert_eq!(b.verdict, Verdict::AFaster, "{}", b.name);
    }
    let lat = &c.figures[0];
    assert_eq!((lat.name, lat.tested_at_bytes), ("latency", Some(1)));
    assert!((lat.interval.unwrap().ratio - 1.2).abs() < 1e-9);
    assert!(!c.regressions(10.0).is_empty());
    assert!(c.regressions(25.0).is_empty());
}

/// Three runs a side, 1% apart within a side and 20% between: the floor
/// comes from the runs (at its 3% minimum) and every band is slower, by
/// exactly (1.2 + 1.21 + 1.19) / (1 + 1.01 + 0.99).
#[test]
fn several_runs_per_side_measure_their_own_floor() {
    let a = fixture();
    let side = |f: [f64; 3]| f.map(|x| scaled(&a, x)).to_vec();
    let c = compare(&side([1.0, 1.01, 0.99]), &side([1.2, 1.21, 1.19]), &opts());
    assert!(!c.single_runs());
    assert_eq!((c.runs_a, c.runs_b), (3, 3));
    for b in &c.bands {
        assert!((b.interval.ratio - 1.2).abs() < 1e-9, "{}", b.name);
        assert!(b.interval.low > 1.0);
        assert!(matches!(b.floor.source, FloorSource::Runs { df: 4, .. }));
        assert!(b.floor.at_minimum);
        assert_eq!(b.floor.fraction, MIN_FLOOR_FRACTION);
    }
    assert_eq!(verdicts(&c), vec![Verdict::AFaster; 4]);
    // Runs 40% apart on one side: a 8% change is within their noise.
    let c = compare(&side([1.0, 1.4, 1.4])[..2], &[scaled(&a, 1.3)], &opts());
    for b in &c.bands {
        assert!((b.interval.ratio - 1.3 / 1.2).abs() < 1e-9);
        let s = (1.4f64).ln() / 2f64.sqrt();
        let want = (t_975(1) * s * 1.5f64.sqrt()).exp() - 1.0;
        assert!((b.floor.fraction - want).abs() < 1e-9, "{}", b.floor.fraction);
    }
    assert_eq!(verdicts(&c), vec![Verdict::Same; 4]);
}

#[test]
fn a_recorded_spread_sets_the_floor_of_single_runs() {
    let mut a = fixture();
    let bands = SIZE_BANDS
        .iter()
        .map(|&(band, lo, hi)| BandSpread {
            band: band.into(),
            min_bytes: lo,
            max_bytes: hi,
            sizes: 1,
            log_sd: 0.05,
            df: 4,
            one_run_floor_fraction: 0.0,
        })
        .collect();
    a.run_to_run = Some(RunToRun {
        repetitions: 5,
        repetition: 1,
        bands,
    });
    let c = compare(&[a.clone()], &[scaled(&a, 1.3)], &opts());
    let want = (2.776 * 0.05 * 2f64.sqrt()).exp() - 1.0;
    for b in &c.bands {
        assert!(matches!(b.floor.source, FloorSource::Recorded { df: 4, .. }));
        assert!((b.floor.fraction - want).abs() < 1e-12);
        assert_eq!(b.verdict, Verdict::AFaster);
    }
}

#[test]
fn band_spreads_are_the_log_sd_of_the_band_figures() {
    let a = fixture();
    let reps = [1.0, 1.1, 1.21].map(|f| scaled(&a, f));
    let spreads = band_spreads(&reps);
    assert_eq!(spreads.len(), 4);
    let s = 1.1f64.ln();
    for b in &spreads {
        assert!((b.log_sd - s).abs() < 1e-9, "{b:?}");
        assert_eq!(b.df, 2);
        let want = (t_975(2) * s * 2f64.sqrt()).exp() - 1.0;
        assert!((b.one_run_floor_fraction - want).abs() < 1e-9);
    }
    assert!(band_spreads(&reps[..1]).is_empty());
}

#[test]
fn sizes_measured_by_one_side_only_are_counted() {
    let a = fixture();
    let mut b = a.clone();
    b.points.truncate(10);
    let c = compare(&[a.clone()], &[b], &opts());
    assert_eq!(c.sizes, 10);
    assert_eq!(c.only_in_a, a.points.len() - 10);
    assert_eq!(c.only_in_b, 0);
    assert_eq!(c.bands.len(), 1);
}

#[test]
fn the_floor_is_symmetric_and_the_verdict_needs_both_conditions() {
    let f = Floor {
        fraction: 0.25,
        source: FloorSource::Given,
        at_minimum: false,
    };
    assert!(!f.exceeded_by(1.25) && f.exceeded_by(1.26));
    assert!(!f.exceeded_by(0.8) && f.exceeded_by(0.79));
    let i = |ratio, low, high| RatioInterval { ratio, low, high };
    assert_eq!(Verdict::of(&i(1.5, 1.1, 1.9), &f), Verdict::AFaster);
    assert_eq!(Verdict::of(&i(0.5, 0.4, 0.7), &f), Verdict::BFaster);
    // Beyond the floor but the interval holds 1: no verdict.
    assert_eq!(Verdict::of(&i(1.5, 0.9, 1.9), &f), Verdict::Same);
    // The interval excludes 1 but within the floor: no verdict.
    assert_eq!(Verdict::of(&i(1.2, 1.1, 1.3), &f), Verdict::Same);
}
