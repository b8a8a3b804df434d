//! End-to-end tests of the analysis on synthetic curves with known answers:
//! clean Hockney curves where nothing may be flagged, and the anomalies of
//! the seed studies (socket-buffer drop, MSS dip, protocol switch-over,
//! driver drop-outs, a cache regime change). No test asserts a measured
//! speed: every curve is made up.

use super::synth::{hockney, measure, netpipe_sizes, Curve};
use super::*;
use proptest::prelude::*;

const MIB8: u64 = 8 << 20;

fn run(c: &Curve, hints: &CauseHints) -> Analysis {
    analyse_curve(&c.bytes, &c.median_ns, &c.ci_low_ns, &c.ci_high_ns, hints)
}

fn rel_err(got: f64, want: f64) -> f64 {
    (got - want).abs() / want.abs()
}

#[test]
fn clean_curves_flag_nothing() {
    // (alpha ns, beta bit/s, noise): Gigabit Ethernet of Farrell and Ong 2003, a
    // loopback-like path, an InfiniBand-like path, and one without noise.
    let cases = [
        (60_000.0, 330e6, 0.02),
        (7_000.0, 40e9, 0.01),
        (1_500.0, 100e9, 0.02),
        (20_000.0, 1e9, 0.0),
    ];
    for (seed, &(alpha, beta, noise)) in cases.iter().enumerate() {
        let c = measure(
            &netpipe_sizes(MIB8),
            hockney(alpha, beta),
            noise,
            25,
            seed as u64 + 1,
        );
        let a = run(&c, &CauseHints::default());
        assert!(a.dropouts.is_empty(), "{alpha} {beta}: {:?}", a.dropouts);
        assert!(a.switchovers.is_empty(), "{alpha} {beta}: {:?}", a.segments);
        assert_eq!(a.segments.len(), 1);
        let s = &a.segments[0];
        assert_eq!((s.from_bytes, s.to_bytes), (1, MIB8));
        assert!(rel_err(s.alpha_ns, alpha) < 0.01, "alpha {}", s.alpha_ns);
        assert!(rel_err(s.beta_bits_per_s.unwrap(), beta) < 0.01);
    }
}

#[test]
fn known_figures_of_a_single_hockney_line() {
    // alpha 11.5 us, beta 10 Gbit/s = 1.25 B/ns: n_1/2 = alpha beta = 14375 B.
    // Half the peak is first reached at 16381 (12291 is 46%, 16381 53%), and
    // 4 n_1/2 = 57500 B falls between 49155 and 65533.
    let c = measure(&netpipe_sizes(MIB8), hockney(11_500.0, 10e9), 0.01, 25, 7);
    let a = run(&c, &CauseHints::default());
    assert_eq!(a.points, c.bytes.len());
    assert!(rel_err(a.latency_ns.unwrap(), 11_500.8) < 0.01);
    // The top sizes differ by less than the noise; the peak is among them.
    assert!(a.peak_bytes.unwrap() >= 1 << 21);
    assert!(rel_err(a.peak_bits_per_s.unwrap(), 10e9) < 0.02);
    assert_eq!(a.n_half_bytes, Some(16381));
    assert_eq!(a.saturation_bytes, Some(65533));
}

#[test]
fn socket_buffer_drop_between_32_and_64_kb() {
    // Farrell and Ong 2003, kernel 2.0.35: throughput falls by 80% for 32-64 KB blocks
    // because of a 32 KB socket buffer.
    let base = hockney(100_000.0, 330e6);
    let law = |b: u64| base(b) * if b > 32768 && b < 65536 { 5.0 } else { 1.0 };
    let c = measure(&netpipe_sizes(MIB8), law, 0.01, 25, 11);
    let hints = CauseHints {
        sndbuf_granted_bytes: Some(32768),
        ..CauseHints::default()
    };
    let a = run(&c, &hints);
    assert_eq!(a.dropouts.len(), 1, "{:?}", a.dropouts);
    let d = &a.dropouts[0];
    assert_eq!((d.from_bytes, d.to_bytes, d.points), (32771, 65533, 5));
    assert!(
        (d.depth_fraction - 0.8).abs() < 0.03,
        "{}",
        d.depth_fraction
    );
    let cause = d.likely_cause.as_deref().unwrap();
    assert!(cause.contains("socket buffer granted (32768 B)"), "{cause}");
    // The dip is not a regime: one line still describes the curve.
    assert!(a.switchovers.is_empty(), "{:?}", a.segments);
    assert!(rel_err(a.segments[0].beta_bits_per_s.unwrap(), 330e6) < 0.01);
    // Without hints the drop-out is still found, with no cause to name.
    let bare = run(&c, &CauseHints::default());
    assert_eq!(bare.dropouts.len(), 1);
    assert_eq!(bare.dropouts[0].likely_cause, None);
}

#[test]
fn mss_dip_near_3_kb() {
    // Farrell and Ong 2003: a 20-30 Mbit/s dip near 3 KB with a 1500 B MTU; sizes just
    // past 2 x 1448 B take 12% longer.
    let base = hockney(60_000.0, 330e6);
    let law = |b: u64| {
        base(b)
            * if (2897..=3200).contains(&b) {
                1.12
            } else {
                1.0
            }
    };
    let c = measure(&netpipe_sizes(MIB8), law, 0.01, 25, 13);
    let hints = CauseHints {
        mtu_bytes: Some(1500),
        mss_bytes: Some(1448),
        ..CauseHints::default()
    };
    let a = run(&c, &hints);
    assert_eq!(a.dropouts.len(), 1, "{:?}", a.dropouts);
    let d = &a.dropouts[0];
    assert_eq!((d.from_bytes, d.to_bytes), (3069, 3075));
    assert!((d.depth_fraction - (1.0 - 1.0 / 1.12)).abs() < 0.02);
    assert!(d
        .likely_cause
        .as_deref()
        .unwrap()
        .starts_with("2 x MSS = 2896 B"));
    assert!(a.switchovers.is_empty());
}

#[test]
fn protocol_switch_at_the_eager_limit() {
    // Farrell and Ong 2003, LAM with a 128 KB short/long switch: from 128 KB on a
    // handshake adds 200 us, amortised as messages grow.
    let eager = hockney(60_000.0, 500e6);
    let law = |b: u64| eager(b) + if b >= 131072 { 200_000.0 } else { 0.0 };
    let c = measure(&netpipe_sizes(MIB8), law, 0.01, 25, 17);
    let hints = CauseHints {
        eager_limit_bytes: Some(131072),
        ..CauseHints::default()
    };
    let a = run(&c, &hints);
    assert_eq!(a.switchovers, vec![131072], "{:?}", a.segments);
    assert!(rel_err(a.segments[0].alpha_ns, 60_000.0) < 0.02);
    assert!(rel_err(a.segments[1].alpha_ns, 260_000.0) < 0.05);
    for s in &a.segments {
        assert!(rel_err(s.beta_bits_per_s.unwrap(), 500e6) < 0.02);
    }
    // A lasting change, not a drop-out; blamed on the limit.
    assert!(a.dropouts.is_empty(), "{:?}", a.dropouts);
    assert_eq!(a.segments[0].likely_cause, None);
    let cause = a.segments[1].likely_cause.as_deref().unwrap();
    assert!(cause.starts_with("eager limit 131072 B"), "{cause}");
}

#[test]
fn faster_protocol_for_large_messages_is_a_switchover() {
    // A zero-copy path from 64 KiB on: 20 us less per message and 1.5 x
    // the bandwidth. Time falls at the switch; nothing may look like a dip.
    let copy = hockney(30_000.0, 20e9);
    let zero_copy = hockney(10_000.0, 30e9);
    let law = |b: u64| if b >= 65536 { zero_copy(b) } else { copy(b) };
    let c = measure(&netpipe_sizes(MIB8), law, 0.01, 25, 43);
    let a = run(&c, &CauseHints::default());
    assert!(a.dropouts.is_empty(), "{:?}", a.dropouts);
    assert_eq!(a.switchovers, vec![65536], "{:?}", a.segments);
    assert!(rel_err(a.segments[1].beta_bits_per_s.unwrap(), 30e9) < 0.02);
}

#[test]
fn bandwidth_change_is_a_switchover_not_a_dropout() {
    // Out of cache from 1 MiB: the slope doubles, the curve stays continuous.
    let law = |b: u64| {
        let n = b as f64;
        let knee = (1u64 << 20) as f64;
        5_400.0
            + if n <= knee {
                n / 5.0
            } else {
                knee / 5.0 + (n - knee) / 2.5
            }
    };
    let c = measure(&netpipe_sizes(MIB8), law, 0.01, 25, 19);
    let a = run(&c, &CauseHints::default());
    assert!(a.dropouts.is_empty(), "{:?}", a.dropouts);
    assert_eq!(a.switchovers.len(), 1, "{:?}", a.segments);
    let at = a.switchovers[0];
    assert!((786_432..=1_572_864).contains(&at), "{at}");
    // Saturation is judged on each regime's own line: 4 alpha beta = 108 KB,
    // between 98307 and 131069.
    assert_eq!(a.saturation_bytes, Some(131069));
}

#[test]
fn driver_dropouts_are_each_found() {
    // Farrell and Ong 2003's ACEnic: many severe drop-outs from the driver's defaults.
    let base = hockney(100_000.0, 350e6);
    let hit = |b: u64| matches!(b, 1533 | 6141 | 6144 | 6147 | 98307 | 786429);
    let law = |b: u64| base(b) * if hit(b) { 3.0 } else { 1.0 };
    let c = measure(&netpipe_sizes(MIB8), law, 0.01, 25, 23);
    let a = run(&c, &CauseHints::default());
    let found: Vec<(u64, u64)> = a
        .dropouts
        .iter()
        .map(|d| (d.from_bytes, d.to_bytes))
        .collect();
    assert_eq!(
        found,
        vec![(1533, 1533), (6141, 6147), (98307, 98307), (786429, 786429)]
    );
    for d in &a.dropouts {
        assert!((d.depth_fraction - 2.0 / 3.0).abs() < 0.03, "{d:?}");
    }
    // Aligned buffers and nothing else recorded: no known threshold, even
    // for the sizes just off a page multiple.
    assert!(a.dropouts.iter().all(|d| d.likely_cause.is_none()));
    assert!(a.switchovers.is_empty(), "{:?}", a.segments);
}

#[test]
fn trials_decide_whether_a_dip_is_real() {
    // The same 10% dip at 12 KiB beside an 80% one at 192 KiB. With 25
    // trials of 1% noise both are established; with 6 trials of 20% noise
    // (the interval is then min..max) only the 80% one is.
    let base = hockney(20_000.0, 1e9);
    let law = |b: u64| {
        base(b)
            * if b == 12288 {
                1.10
            } else if b == 196608 {
                5.0
            } else {
                1.0
            }
    };
    let found = |noise, trials| {
        let c = measure(&netpipe_sizes(MIB8), law, noise, trials, 29);
        let a = run(&c, &CauseHints::default());
        assert!(a.switchovers.is_empty(), "{:?}", a.segments);
        a.dropouts
            .iter()
            .map(|d| d.from_bytes)
            .collect::<Vec<u64>>()
    };
    assert_eq!(found(0.01, 25), vec![12288, 196608]);
    assert_eq!(found(0.20, 6), vec![196608]);
}

#[test]
fn latency_bound_sweep_has_no_saturation_point() {
    let sizes: Vec<u64> = netpipe_sizes(256);
    let c = measure(&sizes, hockney(50_000.0, 10e9), 0.01, 25, 31);
    let a = run(&c, &CauseHints::default());
    assert_eq!(a.saturation_bytes, None);
    assert!(a.dropouts.is_empty() && a.switchovers.is_empty());
}

#[test]
fn degenerate_inputs() {
    let none = analyse_curve(&[], &[], &[], &[], &CauseHints::default());
    assert_eq!(none.points, 0);
    assert_eq!(
        (none.latency_ns, none.peak_bytes, none.n_half_bytes),
        (None, None, None)
    );
    assert!(none.segments.is_empty() && none.dropouts.is_empty());

    let one = analyse_curve(
        &[64],
        &[1000.0],
        &[990.0],
        &[1010.0],
        &CauseHints::default(),
    );
    assert_eq!((one.latency_ns, one.peak_bytes), (Some(1000.0), Some(64)));
    assert!(one.segments.is_empty());

    // Unsorted, with a duplicate size, a NaN median and missing intervals.
    let a = analyse_curve(
        &[4096, 1, 4096, 64, 512],
        &[5000.0, 1000.0, 9999.0, f64::NAN, 2000.0],
        &[4900.0, 990.0],
        &[],
        &CauseHints::default(),
    );
    assert_eq!(a.points, 3);
    assert_eq!(a.latency_ns, Some(1000.0));
    assert_eq!(a.peak_bytes, Some(4096));
    assert_eq!(a.segments.len(), 1);
    assert_eq!(
        (a.segments[0].from_bytes, a.segments[0].to_bytes),
        (1, 4096)
    );
}

#[test]
fn analysis_serialises_with_units_in_names() {
    let c = measure(
        &netpipe_sizes(1 << 16),
        hockney(5_000.0, 10e9),
        0.01,
        25,
        37,
    );
    let a = run(&c, &CauseHints::default());
    let json = serde_json::to_string(&a).unwrap();
    for key in [
        "latency_ns",
        "peak_bits_per_s",
        "n_half_bytes",
        "saturation_bytes",
        "beta_bits_per_s",
    ] {
        assert!(json.contains(key), "{key}");
    }
    // Floats may lose their last bit in JSON; the structure must survive.
    let back: Analysis = serde_json::from_str(&json).unwrap();
    assert_eq!(
        (back.points, back.saturation_bytes),
        (a.points, a.saturation_bytes)
    );
    assert_eq!(back.segments.len(), a.segments.len());
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, failure_persistence: None, ..ProptestConfig::default() })]

    /// Any Hockney line under at most 2% bounded noise: no drop-out (the
    /// noise cannot move a bound past the 5% margin) and no switch-over.
    #[test]
    fn no_false_alarms_on_hockney_lines(
        alpha_us in 1.0f64..200.0,
        log_beta in 8.0f64..11.5,
        noise in 0.0f64..0.02,
        seed in 1u64..u64::MAX,
    ) {
        let beta = 10f64.powf(log_beta);
        let c = measure(&netpipe_sizes(MIB8), hockney(alpha_us * 1e3, beta), noise, 25, seed);
        let a = run(&c, &CauseHints::default());
        prop_assert!(a.dropouts.is_empty(), "{:?}", a.dropouts);
        prop_assert!(a.switchovers.is_empty(), "{:?}", a.segments);
        let n_half = alpha_us * 1e3 * beta / 8e9;
        // The saturation point is the first size at or past 4 n_1/2, give or
        // take the neighbouring size where noise decides.
        if let Some(s) = a.saturation_bytes {
            let s = s as f64;
            prop_assert!(s >= 4.0 * n_half * 0.8 && s <= 4.0 * n_half * 1.6, "{} vs {}", s, n_half);
        }
    }
}

/// A result holding the curve `c` (one trial per point, the curve's
/// interval as recorded), each point marked `noisy` as given.
fn result_of(
    c: &Curve,
    transport: serde_json::Map<String, serde_json::Value>,
    noisy: bool,
) -> crate::result::SweepResult {
    use crate::result::{
        CpuCost, Definitions, Mode, Options, Placement, Point, Summary as Sum, SweepResult,
    };
    let cpu = CpuCost {
        user_ns: 0,
        sys_ns: 0,
        ns_per_byte: 0.0,
        ns_per_message: 0.0,
    };
    let points: Vec<Point> = (0..c.bytes.len())
        .map(|i| Point {
            bytes: c.bytes[i],
            trials_ns: vec![c.median_ns[i]],
            repeats: 1,
            trials: 1,
            warmup_trials: 0,
            min_ns: c.ci_low_ns[i],
            median_ns: c.median_ns[i],
            mean_ns: c.median_ns[i],
            stddev_ns: 0.0,
            p90_ns: c.ci_high_ns[i],
            p99_ns: c.ci_high_ns[i],
            ci_low_ns: c.ci_low_ns[i],
            ci_high_ns: c.ci_high_ns[i],
            bits_per_s: 8e9 * c.bytes[i] as f64 / c.median_ns[i],
            noisy,
            cut: false,
            cpu_client: cpu,
            cpu_server: cpu,
            tails: None,
            limits: None,
            cpu_whole: None,
            clean_share: None,
            disturbed_trials: Vec::new(),
        })
        .collect();
    SweepResult {
        kind: crate::result::SWEEP_KIND.into(),
        link: None,
        limit_role: None,
        schema_version: crate::result::SCHEMA_VERSION,
        tool_version: "test".into(),
        complete: true,
        incomplete_reason: None,
        command_line: vec!["wulf".into()],
        started_at: "2024-01-01T00:00:00Z".into(),
        wall_s: 1.0,
        host: crate::sys::Host::probe(),
        peer_host: None,
        transport: "tcp".into(),
        mode: Mode::Pingpong,
        definitions: Definitions::for_mode(Mode::Pingpong),
        options: Options {
            budget_s: 1.0,
            precision: 0.01,
            timeout_s: 1.0,
            nocache: false,
            offset_bytes: 0,
            integrity: false,
            integrity_all: false,
            tails: false,
            peer: None,
            authenticated: None,
            wait: None,
            transport,
        },
        placement: Placement {
            client_host: "h".into(),
            client_cpu: None,
            server_host: "h".into(),
            server_cpu: None,
            lab: None,
        },
        timer_overhead_ns: 0.0,
        summary: Sum::from_points(&points),
        points,
        warnings: Vec::new(),
        mpi: None,
        confirmation: None,
        run_to_run: None,
        conditions: None,
        sizes_left_out: None,
        setup_s: None,
        wake_up: None,
    }
}

/// `Analysis::of` on a full result: hints from the transport options and
/// both directions counted in the bidirectional mode.
#[test]
fn analysis_of_a_sweep_result() {
    use crate::result::Mode;
    let base = hockney(100_000.0, 330e6);
    let law = |b: u64| base(b) * if b > 32768 && b < 65536 { 5.0 } else { 1.0 };
    let c = measure(&netpipe_sizes(1 << 20), law, 0.01, 25, 41);
    let transport = serde_json::from_str(r#"{"sndbuf_granted_bytes": 32768}"#).unwrap();
    let mut result = result_of(&c, transport, false);
    let a = Analysis::of(&result);
    assert_eq!(a.peak_bits_per_s, result.summary.peak_bits_per_s);
    assert_eq!(a.dropouts.len(), 1);
    assert!(a.dropouts[0]
        .likely_cause
        .as_deref()
        .unwrap()
        .contains("32768"));

    result.mode = Mode::Bidir;
    let b = Analysis::of(&result);
    assert_eq!(b.peak_bits_per_s.unwrap(), 2.0 * a.peak_bits_per_s.unwrap());
    let beta = |x: &Analysis| x.segments[0].beta_bits_per_s.unwrap();
    assert!((beta(&b) - 2.0 * beta(&a)).abs() < 1e-6 * beta(&b));
    assert_eq!(b.saturation_bytes, a.saturation_bytes);
}

/// Noisy points alone never make an event: a sweep whose points are all
/// marked noisy, under this machine's noise with whole points slowed now
/// and then, reports nothing unless a confirmation pass confirmed it.
#[test]
fn a_run_of_only_noisy_points_reports_no_events() {
    use super::synth::{measure_with, Noise};
    let noise = Noise {
        shift_prob: 0.15,
        ..Noise::this_machine()
    };
    let mut candidates = 0;
    for seed in 1..=10 {
        let c = measure_with(&netpipe_sizes(MIB8), hockney(10_000.0, 20e9), noise, seed);
        let mut r = result_of(&c, serde_json::Map::new(), true);
        let a = Analysis::of(&r);
        assert!(a.dropouts.is_empty(), "{:?}", a.dropouts);
        assert!(a.switchovers.is_empty(), "{:?}", a.segments);
        // The same points marked good: the noise does make candidates.
        for p in &mut r.points {
            p.noisy = false;
        }
        let b = Analysis::of(&r);
        candidates += b.dropouts.len() + b.switchovers.len();
        assert!(b.dropouts.iter().all(|d| d.confirmed.is_none()));
    }
    assert!(candidates > 0);
}

#[test]
fn a_curve_no_line_describes_is_marked_and_its_saturation_read_off_the_curve() {
    // One trial a size, each off by up to 80%: a sweep under heavy load
    // (the residuals of 64 such sweeps were 31-70%).
    let c = measure(&netpipe_sizes(MIB8), hockney(11_500.0, 10e9), 0.8, 1, 3);
    let a = run(&c, &CauseHints::default());
    assert!(
        a.segments.iter().any(|s| s.poor_fit),
        "{:?}",
        a.segments
            .iter()
            .map(|s| s.rms_rel_residual)
            .collect::<Vec<_>>()
    );
    // Whatever the scatter, a saturation point is a size past which every
    // doubling at least nearly doubles the time: never among the
    // latency-bound sizes (4 n_1/2 = 57,500 B here).
    if let Some(s) = a.saturation_bytes {
        assert!(s >= 16_384, "{s}");
    }
    // The same line measured cleanly fits.
    let clean = measure(&netpipe_sizes(MIB8), hockney(11_500.0, 10e9), 0.01, 25, 7);
    let b = run(&clean, &CauseHints::default());
    assert!(b.segments.iter().all(|s| !s.poor_fit), "{:?}", b.segments);
}
