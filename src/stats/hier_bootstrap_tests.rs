use super::*;

fn opts(seed: u64) -> BootstrapOptions {
    BootstrapOptions {
        seed,
        ..BootstrapOptions::default()
    }
}

#[test]
fn run_figure_is_the_geometric_mean_of_medians() {
    let (a, b) = ([3.0, 1.0, 2.0], [4.0]);
    let run: Run = vec![&a, &b];
    // Medians 2 and 4: sqrt(8).
    assert!((run_figure(&run).unwrap() - 8f64.sqrt()).abs() < 1e-12);
    assert_eq!(run_figure(&[]), None);
    assert_eq!(run_figure(&[&[][..]]), None);
    assert_eq!(run_figure(&[&[0.0][..]]), None);
    let (x, y) = ([2.0], [8.0]);
    let runs = vec![vec![&x[..]], vec![&y[..]]];
    assert!((group_figure(&runs).unwrap() - 4.0).abs() < 1e-12);
}

#[test]
fn constant_runs_give_an_exact_ratio_and_a_point_interval() {
    let a = [10.0; 7];
    let b = [12.0; 5];
    let ra: Vec<Run> = vec![vec![&a[..]]; 3];
    let rb: Vec<Run> = vec![vec![&b[..]]; 2];
    let r = hierarchical_ratio(&ra, &rb, &opts(1)).unwrap();
    assert!((r.ratio - 1.2).abs() < 1e-12);
    assert!((r.low - 1.2).abs() < 1e-12 && (r.high - 1.2).abs() < 1e-12);
}

/// Two runs of A at 1 and 4, one run of B at 2, trials constant within a
/// run: resampling A's runs gives geometric means 1, 2, 4 with
/// probabilities 1/4, 1/2, 1/4, so the ratio is 2, 1 or 0.5, and the 95%
/// interval is exactly [0.5, 2] while the estimate is 1.
#[test]
fn the_interval_follows_the_between_run_variation_exactly() {
    let (one, two, mid) = ([1.0; 9], [4.0; 9], [2.0; 9]);
    let a: Vec<Run> = vec![vec![&one[..]], vec![&two[..]]];
    let b: Vec<Run> = vec![vec![&mid[..]]];
    for seed in [1, 2, 3] {
        let r = hierarchical_ratio(&a, &b, &opts(seed)).unwrap();
        assert!((r.ratio - 1.0).abs() < 1e-12);
        assert!((r.low - 0.5).abs() < 1e-12, "seed {seed}: {r:?}");
        assert!((r.high - 2.0).abs() < 1e-12, "seed {seed}: {r:?}");
    }
}

#[test]
fn the_same_seed_gives_the_same_interval() {
    let mut rng = fastrand::Rng::with_seed(7);
    let trials: Vec<Vec<f64>> = (0..6)
        .map(|_| (0..20).map(|_| 100.0 + rng.f64() * 10.0).collect())
        .collect();
    let runs: Vec<Run> = trials
        .chunks(2)
        .map(|c| c.iter().map(|t| &t[..]).collect())
        .collect();
    let (a, b) = runs.split_at(1);
    let x = hierarchical_ratio(a, b, &opts(42)).unwrap();
    assert_eq!(x, hierarchical_ratio(a, b, &opts(42)).unwrap());
    assert_ne!(x, hierarchical_ratio(a, b, &opts(43)).unwrap());
    assert!(x.low <= x.ratio && x.ratio <= x.high);
}

/// A/A groups of ten runs whose run figures vary 10% (log sd) while trials
/// vary 1%: the interval contains 1 in at least 85% of 100 simulated
/// comparisons (the percentile bootstrap under-covers a little with ten
/// runs), where the trials alone would reject almost always.
#[test]
fn a_a_intervals_mostly_contain_one() {
    let mut rng = fastrand::Rng::with_seed(2013);
    let mut normal = move || {
        // Box-Muller.
        let (u, v) = (rng.f64().max(1e-12), rng.f64());
        (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
    };
    let quick = BootstrapOptions {
        resamples: 400,
        ..opts(5)
    };
    let mut covered = 0;
    for _ in 0..100 {
        let mut side = || -> Vec<Vec<f64>> {
            (0..10)
                .map(|_| {
                    let level = 100.0 * (0.1 * normal()).exp();
                    (0..5).map(|_| level * (0.01 * normal()).exp()).collect()
                })
                .collect()
        };
        let (ta, tb) = (side(), side());
        let a: Vec<Run> = ta.iter().map(|t| vec![&t[..]]).collect();
        let b: Vec<Run> = tb.iter().map(|t| vec![&t[..]]).collect();
        let r = hierarchical_ratio(&a, &b, &quick).unwrap();
        covered += usize::from(r.low <= 1.0 && 1.0 <= r.high);
    }
    assert!(covered >= 85, "{covered} of 100");
}

#[test]
fn mismatched_or_empty_groups_have_no_ratio() {
    let x = [1.0];
    let one: Vec<Run> = vec![vec![&x[..]]];
    let two: Vec<Run> = vec![vec![&x[..], &x[..]]];
    assert!(hierarchical_ratio(&one, &two, &opts(1)).is_none());
    assert!(hierarchical_ratio(&one, &[], &opts(1)).is_none());
    assert!(hierarchical_ratio(&[], &one, &opts(1)).is_none());
}

#[test]
fn spreads_and_bounds() {
    let (s, df) = log_spread(&[1.0, std::f64::consts::E]).unwrap();
    assert!((s - 0.5f64.sqrt()).abs() < 1e-12);
    assert_eq!(df, 1);
    assert!(log_spread(&[1.0]).is_none());
    assert!(log_spread(&[1.0, 0.0]).is_none());
    let (s, df) = pooled_spread(&[(0.1, 1), (0.2, 3)]).unwrap();
    assert!((s - ((0.01 + 0.12) / 4.0f64).sqrt()).abs() < 1e-12);
    assert_eq!(df, 4);
    assert!(pooled_spread(&[]).is_none());
    // s = 0.1 from 3 runs, one run per side: exp(4.303 * 0.1 * sqrt 2).
    let b = noise_bound(0.1, 2, 1, 1);
    assert!((b - (4.302_653 * 0.1 * 2f64.sqrt()).exp()).abs() < 1e-9);
    // More runs per side, a tighter bound.
    assert!(noise_bound(0.1, 2, 5, 5) < b);
    assert!(noise_bound(0.1, 0, 1, 1).is_infinite());
}

#[test]
fn t_quantiles_match_the_tables() {
    assert!((t_975(1) - 12.706).abs() < 1e-3);
    assert!((t_975(10) - 2.228).abs() < 1e-3);
    assert!((t_975(30) - 2.042).abs() < 1e-3);
    // A&S 26.10: 40 -> 2.021, 60 -> 2.000, 120 -> 1.980.
    assert!((t_975(40) - 2.021).abs() < 1e-3, "{}", t_975(40));
    assert!((t_975(60) - 2.000).abs() < 1e-3, "{}", t_975(60));
    assert!((t_975(120) - 1.980).abs() < 1e-3, "{}", t_975(120));
    assert!((t_975(1_000_000) - 1.96).abs() < 1e-3);
}
