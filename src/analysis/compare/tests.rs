use super::spread::band_spreads;
use super::*;
use crate::result::{BandSpread, RunToRun};
use crate::stats::hier_bootstrap::t_975;

/// The fixture as a clean run: no point noisy, a quiet machine.
pub(super) fn fixture() -> SweepResult {
    let mut r = noisy_fixture();
    r.points.iter_mut().for_each(|p| p.noisy = false);
    r.host.load_before = [0.1; 3];
    r.host.load_after = Some([0.1; 3]);
    r
}

/// The fixture as it was measured: 62 of its 93 sizes noisy, the load
/// (2.7) above the machine's 2 CPUs.
pub(super) fn noisy_fixture() -> SweepResult {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/tcp-pingpong.json"
    );
    crate::result::read_result(std::path::Path::new(path)).unwrap()
}

/// The result with every time multiplied by `factor`.
pub(super) fn scaled(r: &SweepResult, factor: f64) -> SweepResult {
    let mut r = r.clone();
    for p in &mut r.points {
        p.trials_ns.iter_mut().for_each(|t| *t *= factor);
        for t in [
            &mut p.median_ns,
            &mut p.min_ns,
            &mut p.mean_ns,
            &mut p.stddev_ns,
            &mut p.p90_ns,
            &mut p.p99_ns,
            &mut p.ci_low_ns,
            &mut p.ci_high_ns,
        ] {
            *t *= factor;
        }
        p.bits_per_s /= factor;
    }
    r
}

pub(super) fn opts() -> CompareOptions {
    CompareOptions {
        resamples: 500,
        ..CompareOptions::default()
    }
}

pub(super) fn verdicts(c: &Comparison) -> Vec<Verdict> {
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

/// The result with each size's trials spread apart: alternately times
/// `low` and `high`, the median kept.
pub(super) fn spread_trials(r: &SweepResult, low: f64, high: f64) -> SweepResult {
    let mut r = r.clone();
    for p in &mut r.points {
        for (k, t) in p.trials_ns.iter_mut().enumerate() {
            *t *= if k % 2 == 0 { low } else { high };
        }
    }
    r
}

#[test]
fn identical_runs_change_nothing_and_the_band_comes_from_their_trials() {
    let a = fixture();
    let c = compare(std::slice::from_ref(&a), std::slice::from_ref(&a), &opts());
    assert_eq!(c.sizes, a.points.len());
    assert!(c.single_runs());
    // The fixture goes up to 256 KiB: four bands.
    assert_eq!(c.bands.len(), 4);
    for b in &c.bands {
        assert_eq!(b.interval.ratio, 1.0, "{}", b.name);
        match b.floor.source {
            FloorSource::Trials { log_sd } => {
                let want = (floor::TRIALS_SPAN * log_sd).exp_m1();
                assert!((b.floor.fraction - want).abs() < 1e-12);
            }
            FloorSource::Minimum => assert_eq!(b.floor.fraction, MIN_FLOOR_FRACTION),
            other => panic!("{}: {other:?}", b.name),
        }
        assert_ne!(b.verdict, Verdict::AFaster);
        assert_ne!(b.verdict, Verdict::BFaster);
    }
    assert_eq!(c.changes(), 0);
    assert!(c.regressions(0.0).is_empty());
    assert_eq!(c.only_in_a + c.only_in_b, 0);
}

/// One run per side: a doubling (a halved link) is shown in every band; a
/// 20% change is shown or inconclusive, never "no change" (it is beyond
/// the 10% margin).
#[test]
fn one_clean_run_per_side_shows_a_halved_link() {
    let a = fixture();
    let double = scaled(&a, 2.0);
    let c = compare(
        std::slice::from_ref(&a),
        std::slice::from_ref(&double),
        &opts(),
    );
    assert_eq!(verdicts(&c), vec![Verdict::AFaster; 4], "{:?}", c.bands);
    assert!(!c.regressions(50.0).is_empty());
    assert!(
        c.regressions(150.0).is_empty(),
        "{:?}",
        c.regressions(150.0)
    );
    let c = compare(std::slice::from_ref(&a), &[scaled(&a, 1.2)], &opts());
    for b in &c.bands {
        assert!((b.interval.ratio - 1.2).abs() < 1e-9, "{}", b.name);
        assert_ne!(b.verdict, Verdict::Same, "{}", b.name);
        let shown = b.interval.low > 1.0 + b.floor.fraction;
        assert_eq!(b.verdict == Verdict::AFaster, shown, "{b:?}");
    }
    // The other way round B is faster, which is no regression.
    let c = compare(&[double], &[a], &opts());
    assert_eq!(verdicts(&c), vec![Verdict::BFaster; 4]);
    assert!(c.regressions(0.0).is_empty());
}

/// Runs whose trials spread wide (a busy machine) never give a change
/// their trials cannot carry: a 30% shift is inconclusive, and the gate
/// can neither pass nor fail it.
#[test]
fn noisy_single_runs_are_inconclusive_not_a_change() {
    let a = spread_trials(&fixture(), 0.6, 1.6);
    let b = scaled(&a, 1.3);
    let c = compare(std::slice::from_ref(&a), std::slice::from_ref(&b), &opts());
    for band in &c.bands {
        assert!(matches!(band.floor.source, FloorSource::Trials { .. }));
        assert!(band.floor.fraction > 0.5, "{band:?}");
        assert_eq!(band.verdict, Verdict::Inconclusive, "{}", band.name);
    }
    assert!(c.regressions(10.0).is_empty());
    assert!(!c.undecided(10.0).is_empty());
}

/// Single runs made on a busy machine, or mostly noisy, have no usable
/// band (a whole run shifts together there): every verdict inconclusive,
/// even for a doubling, and the gate undecided; a given floor or several
/// runs per side still decide.
#[test]
fn unclean_single_runs_are_never_judged() {
    let a = noisy_fixture();
    let c = compare(std::slice::from_ref(&a), &[scaled(&a, 2.0)], &opts());
    for b in &c.bands {
        assert_eq!(b.floor.source, FloorSource::Unclean, "{}", b.name);
        assert_eq!(b.verdict, Verdict::Inconclusive, "{}", b.name);
    }
    assert!(c.regressions(10.0).is_empty());
    assert_eq!(c.undecided(10.0).len(), 6, "{:?}", c.undecided(10.0));
    // Busy alone (no point noisy) is enough.
    let mut busy = fixture();
    busy.host.load_after = Some([2.0, 1.0, 1.0]);
    let c = compare(std::slice::from_ref(&busy), &[scaled(&busy, 2.0)], &opts());
    assert!(c
        .bands
        .iter()
        .all(|b| b.floor.source == FloorSource::Unclean));
    let given = CompareOptions {
        noise_floor: Some(0.1),
        ..opts()
    };
    let c = compare(std::slice::from_ref(&a), &[scaled(&a, 2.0)], &given);
    assert_eq!(verdicts(&c), vec![Verdict::AFaster; 4]);
    let side = |f: [f64; 3]| f.map(|x| scaled(&a, x)).to_vec();
    let c = compare(&side([1.0, 1.01, 0.99]), &side([2.0, 2.02, 1.98]), &opts());
    assert_eq!(verdicts(&c), vec![Verdict::AFaster; 4]);
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

/// Three runs a side, 1% apart within a side and 20% between: their own
/// spread sets the band (a recorded floor does not widen it), and every
/// band is slower, by exactly the geometric means' ratio. Runs 40% apart
/// on one side leave a 30% change inconclusive.
#[test]
fn several_runs_per_side_use_their_own_spread() {
    let a = recorded(&fixture(), 5.0);
    let side = |f: [f64; 3]| f.map(|x| scaled(&a, x)).to_vec();
    let (sa, sb) = (side([1.0, 1.01, 0.99]), side([1.2, 1.21, 1.19]));
    let ratio = (1.2f64 * 1.21 * 1.19 / (1.01 * 0.99)).cbrt();
    let c = compare(&sa, &sb, &opts());
    assert!(!c.single_runs());
    assert_eq!((c.runs_a, c.runs_b), (3, 3));
    for b in &c.bands {
        assert!((b.interval.ratio - ratio).abs() < 1e-9, "{}", b.name);
        assert!(b.interval.low > 1.0);
        assert!(b.floor.fraction < 0.05, "{b:?}");
    }
    assert_eq!(verdicts(&c), vec![Verdict::AFaster; 4]);
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
    assert_eq!(verdicts(&c), vec![Verdict::Inconclusive; 4]);
}

#[test]
fn a_recorded_floor_sets_the_band_of_single_runs() {
    let a = recorded(&fixture(), 0.2);
    let c = compare(std::slice::from_ref(&a), &[scaled(&a, 1.3)], &opts());
    for b in &c.bands {
        assert_eq!(b.floor.source, FloorSource::Recorded { repetitions: 5 });
        assert!((b.floor.fraction - 0.2).abs() < 1e-12);
        assert_eq!(b.verdict, Verdict::AFaster);
    }
    let c = compare(std::slice::from_ref(&a), &[scaled(&a, 1.15)], &opts());
    assert_eq!(verdicts(&c), vec![Verdict::Inconclusive; 4]);
}

/// The peak row reads both sides at one size, where it is tested: where
/// the two together are fastest, the same whichever side is A (A's own
/// peak picked where A's run happened to be fast); its change and its
/// interval are both of the rate.
#[test]
fn the_peak_compares_like_with_like_in_either_order() {
    let a = fixture();
    let rate =
        |p: &crate::result::Point| a.mode.bytes_per_op(p.bytes) as f64 * 8.0 / (p.median_ns * 1e-9);
    let peak_at = (0..a.points.len())
        .max_by(|&i, &j| rate(&a.points[i]).total_cmp(&rate(&a.points[j])))
        .unwrap();
    // A's size beside its peak gets 1% faster than its peak: A's own
    // peak moves there, but not the two sides' together.
    let moved = if peak_at > 0 { peak_at - 1 } else { 1 };
    let b = a.clone();
    let mut fast = a.clone();
    let p = &mut fast.points[moved];
    let factor = rate(&a.points[peak_at]) / rate(p) * 1.01;
    p.trials_ns.iter_mut().for_each(|t| *t /= factor);
    p.median_ns /= factor;
    let one = |x: &SweepResult| std::slice::from_ref(x).to_vec();
    let ab = compare(&one(&fast), &one(&b), &opts());
    let ba = compare(&one(&b), &one(&fast), &opts());
    let peak = |c: &Comparison| c.figures.iter().find(|f| f.name == "peak").unwrap().clone();
    let (p_ab, p_ba) = (peak(&ab), peak(&ba));
    assert_eq!(p_ab.tested_at_bytes, Some(a.points[peak_at].bytes));
    assert_eq!(p_ab.tested_at_bytes, p_ba.tested_at_bytes);
    assert_eq!((p_ab.a, p_ab.b), (p_ba.b, p_ba.a));
    assert!((p_ab.b.unwrap() / rate(&b.points[peak_at]) - 1.0).abs() < 1e-9);
    assert!(p_ab.change.unwrap().abs() < 1e-9, "{p_ab:?}");
    // A halved link: the rate falls, and so does its interval.
    let c = compare(&one(&a), &[scaled(&a, 2.0)], &opts());
    let p = peak(&c);
    let own = p.own_interval().unwrap();
    assert!((own.ratio - 1.0 - p.change.unwrap()).abs() < 1e-9, "{p:?}");
    assert!(
        own.low <= own.ratio && own.ratio <= own.high && own.high < 1.0,
        "{p:?}"
    );
    assert!(p.interval.unwrap().low > 1.0, "the time's interval rises");
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
fn three_verdicts_from_the_interval_the_band_and_the_margin() {
    let f = Floor {
        fraction: 0.25,
        source: FloorSource::Given,
    };
    assert!(!f.exceeded_by(1.25) && f.exceeded_by(1.26));
    assert!(!f.exceeded_by(0.8) && f.exceeded_by(0.79));
    assert_eq!(f.band_text(), "-20.0% .. +25.0%");
    let i = |ratio, low, high| RatioInterval { ratio, low, high };
    let m = DEFAULT_MARGIN;
    // The whole interval beyond the band: shown.
    assert_eq!(Verdict::of(&i(1.5, 1.3, 1.7), &f, m), Verdict::AFaster);
    assert_eq!(Verdict::of(&i(0.5, 0.4, 0.7), &f, m), Verdict::BFaster);
    // Beyond the band but the interval reaches into it: inconclusive.
    assert_eq!(Verdict::of(&i(1.5, 1.1, 1.9), &f, m), Verdict::Inconclusive);
    // Tight around 1 but the band is wider than the margin: inconclusive.
    assert_eq!(
        Verdict::of(&i(1.0, 0.99, 1.01), &f, m),
        Verdict::Inconclusive
    );
    // Tight, a narrow band: equivalence shown.
    let narrow = Floor {
        fraction: 0.05,
        source: FloorSource::Given,
    };
    assert_eq!(Verdict::of(&i(1.0, 0.99, 1.01), &narrow, m), Verdict::Same);
    assert_eq!(
        Verdict::of(&i(1.0, 0.99, 1.06), &narrow, m),
        Verdict::Inconclusive
    );
    assert!((Verdict::worst_ratio(&i(1.0, 0.99, 1.06), &narrow) - 1.113).abs() < 1e-9);
}
