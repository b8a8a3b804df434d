use super::floor::default_one_run_floor;
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

/// `r` carrying a recorded one-run floor of `f` in every band, from five
/// repetitions.
fn recorded(r: &SweepResult, f: f64) -> SweepResult {
    let mut r = r.clone();
    let bands = SIZE_BANDS
        .iter()
        .map(|&(band, lo, hi)| BandSpread {
            band: band.into(),
            min_bytes: lo,
            max_bytes: hi,
            sizes: 1,
            log_sd: 0.05,
            df: 4,
            one_run_floor_fraction: f,
        })
        .collect();
    r.run_to_run = Some(RunToRun {
        repetitions: 5,
        repetition: 1,
        bands,
    });
    r
}

#[test]
fn identical_runs_change_nothing() {
    let a = fixture();
    let c = compare(std::slice::from_ref(&a), std::slice::from_ref(&a), &opts());
    assert_eq!(c.sizes, a.points.len());
    assert!(c.single_runs());
    // The fixture goes up to 256 KiB: four bands.
    assert_eq!(c.bands.len(), 4);
    for b in &c.bands {
        assert_eq!(b.interval.ratio, 1.0, "{}", b.name);
        assert_eq!(b.verdict, Verdict::Same);
        assert_eq!(b.floor.source, FloorSource::Default);
        let want = default_one_run_floor("tcp", b.name);
        assert!((b.floor.fraction - want).abs() < 1e-12);
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
    let c = compare(std::slice::from_ref(&a), &[slow], &opts());
    for b in &c.bands {
        assert!((b.interval.ratio - 1.2).abs() < 1e-9, "{}", b.name);
        assert!(b.interval.low > 1.0, "the trials alone see it: {b:?}");
        assert!(b.floor.fraction > 0.2);
        assert_eq!(b.verdict, Verdict::Same, "{}", b.name);
    }
    let double = scaled(&a, 2.0);
    let c = compare(
        std::slice::from_ref(&a),
        std::slice::from_ref(&double),
        &opts(),
    );
    let floors: Vec<f64> = c.bands.iter().map(|b| b.floor.fraction).collect();
    for b in &c.bands {
        let beyond = 2.0 > 1.0 + b.floor.fraction;
        let want = if beyond {
            Verdict::AFaster
        } else {
            Verdict::Same
        };
        assert_eq!(b.verdict, want, "{} floor {}", b.name, b.floor.fraction);
    }
    assert!(
        c.bands.iter().any(|b| b.verdict == Verdict::AFaster),
        "{floors:?}"
    );
    assert!(!c.regressions(50.0).is_empty());
    assert!(
        c.regressions(150.0).is_empty(),
        "{:?}",
        c.regressions(150.0)
    );
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
    let c = compare(std::slice::from_ref(&a), &[scaled(&a, 1.2)], &given);
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

/// Three runs a side, 1% apart within a side and 20% between: the
/// machine's default floor (not lowered by more runs) still hides it; with a
/// recorded one-run floor of 2% the runs' own spread and the minimum
/// decide, and every band is slower, by exactly the geometric means' ratio.
#[test]
fn several_runs_per_side_use_their_spread_and_the_machines() {
    let a = recorded(&fixture(), 0.02);
    let side = |f: [f64; 3]| f.map(|x| scaled(&a, x)).to_vec();
    let (sa, sb) = (side([1.0, 1.01, 0.99]), side([1.2, 1.21, 1.19]));
    let ratio = (1.2f64 * 1.21 * 1.19 / (1.01 * 0.99)).cbrt();
    let c = compare(&sa, &sb, &opts());
    assert!(!c.single_runs());
    assert_eq!((c.runs_a, c.runs_b), (3, 3));
    for b in &c.bands {
        assert!((b.interval.ratio - ratio).abs() < 1e-9, "{}", b.name);
        assert!(b.interval.low > 1.0);
        assert_eq!(b.floor.source, FloorSource::Minimum);
        assert!((b.floor.fraction - MIN_FLOOR_FRACTION).abs() < 1e-12);
    }
    assert_eq!(verdicts(&c), vec![Verdict::AFaster; 4]);
    let strip = |v: Vec<SweepResult>| -> Vec<SweepResult> {
        v.into_iter()
            .map(|mut r| {
                r.run_to_run = None;
                r
            })
            .collect()
    };
    let c = compare(&strip(sa), &strip(sb), &opts());
    for b in &c.bands {
        assert_eq!(b.floor.source, FloorSource::Default);
        let want = default_one_run_floor("tcp", b.name);
        assert!((b.floor.fraction - want).abs() < 1e-12);
    }
    assert_eq!(verdicts(&c), vec![Verdict::Same; 4]);
    // Runs 40% apart on one side: an 8% change is within their noise.
    let c = compare(&side([1.0, 1.4, 1.4])[..2], &[scaled(&a, 1.3)], &opts());
    let s = 1.4f64.ln() / 2f64.sqrt();
    let want = (t_975(1) * s * 1.5f64.sqrt()).exp() - 1.0;
    for b in &c.bands {
        assert!((b.interval.ratio - 1.3 / 1.4f64.sqrt()).abs() < 1e-9);
        assert!(matches!(b.floor.source, FloorSource::Runs { df: 1, .. }));
        assert!(
            (b.floor.fraction - want).abs() < 1e-9,
            "{}",
            b.floor.fraction
        );
    }
    assert_eq!(verdicts(&c), vec![Verdict::Same; 4]);
}

#[test]
fn a_recorded_floor_replaces_the_default_for_single_runs() {
    let a = recorded(&fixture(), 0.2);
    let c = compare(std::slice::from_ref(&a), &[scaled(&a, 1.3)], &opts());
    for b in &c.bands {
        assert_eq!(b.floor.source, FloorSource::Recorded { repetitions: 5 });
        assert!((b.floor.fraction - 0.2).abs() < 1e-12);
        assert_eq!(b.verdict, Verdict::AFaster);
    }
    let c = compare(std::slice::from_ref(&a), &[scaled(&a, 1.15)], &opts());
    assert_eq!(verdicts(&c), vec![Verdict::Same; 4]);
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
    let c = compare(std::slice::from_ref(&a), &[b], &opts());
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
