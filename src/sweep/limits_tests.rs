//! Tests of the parent module.

use super::*;

/// A deadline no test reaches.
fn far() -> Instant {
    Instant::now() + std::time::Duration::from_secs(3600)
}

#[test]
fn limits_at_a_size() {
    let mut l = Limits::default();
    assert_eq!(l.at(8), None);
    l.floor_ns = Some(50.0);
    l.memcpy_bits_per_s.insert(8, 1e9);
    assert_eq!(
        l.at(8),
        Some(PointLimits {
            memcpy_bits_per_s: Some(1e9),
            floor_ns: Some(50.0),
            ..Default::default()
        })
    );
    assert_eq!(l.at(9).unwrap().memcpy_bits_per_s, None);
}

#[test]
fn slow_modes_are_named() {
    let point = |bytes: u64, ns: f64| {
        let mut p = crate::sweep::point::test_point(bytes, ns);
        // A two-copy hand-off of 1 ns per 8 bits.
        p.limits = Some(PointLimits {
            c2c_two_copy_bits_per_s: Some(8e9),
            ..Default::default()
        });
        p
    };
    // At 1 B/ns the hand-off takes `bytes` ns.
    let fine = [point(8, 500.0), point(64 << 10, 3.0 * 65536.0)];
    assert_eq!(slow_mode_warning(Mode::Pingpong, &fine), None);
    let slow = [
        point(8, 500.0),
        point(64 << 10, 3.0 * 65536.0),
        point(1 << 20, 5.0 * 1048576.0),
    ];
    let w = slow_mode_warning(Mode::Pingpong, &slow).unwrap();
    assert!(
        w.contains("1 of 2 sizes") && w.contains("1 MiB (5.0x)"),
        "{w}"
    );
    // A bidir rate counts both directions: the same rate is half per
    // direction, so 3x becomes 6x.
    let w = slow_mode_warning(Mode::Bidir, &fine).unwrap();
    assert!(w.contains("64 KiB (6.0x)"), "{w}");
    let mut no_limit = slow.clone();
    no_limit[2].limits = None;
    assert_eq!(slow_mode_warning(Mode::Pingpong, &no_limit), None);
}

#[test]
fn a_slow_size_costs_the_rest_their_limit() {
    let sizes = [8, 64, 1024, 4096];
    // A budget whose allowed overrun lies above the floor.
    const B: u64 = 4 * OVERRUN_FLOOR_NS;
    // Every size keeps to its share: all are measured, each share an
    // even split of what is left.
    let mut shares = Vec::new();
    let all = curve_within(&sizes, (B, far()), |b, share| {
        shares.push(share);
        Ok((b as f64, share))
    })
    .unwrap();
    assert_eq!(all.rates.len(), 4);
    assert!(all.dropped.is_empty());
    assert_eq!(shares, [B / 4; 4]);
    assert_eq!(all.dropped_warning("c2c", B), None);
    // Twice the budget in all: within the allowed overrun, all kept.
    let over = curve_within(&sizes, (B, far()), |b, share| Ok((b as f64, 2 * share))).unwrap();
    assert!(over.dropped.is_empty());
    // The second size takes 30 times its share: the last two go.
    let slow = curve_within(&sizes, (B, far()), |b, share| {
        Ok((b as f64, if b == 64 { 30 * share } else { share }))
    })
    .unwrap();
    assert_eq!(slow.rates, [(8, 8.0), (64, 64.0)]);
    assert_eq!(slow.dropped, [1024, 4096]);
    let w = slow.dropped_warning("c2c", B).unwrap();
    assert!(w.contains("c2c limit") && w.contains("1 KiB, 4 KiB"), "{w}");
    // A small share may still take the floor's time.
    let small = curve_within(&sizes, (10, far()), |b, _| {
        Ok((b as f64, OVERRUN_FLOOR_NS / 2))
    })
    .unwrap();
    assert_eq!(small.dropped, [1024, 4096]);
    // Errors pass through.
    assert!(curve_within(&sizes, (B, far()), |_, _| anyhow::bail!("interrupted")).is_err());
    // The limits' deadline passed: the sizes left go, and the warning
    // names the deadline, not an overrun of the curve's own share.
    let now = Instant::now();
    let late = curve_within(&sizes, (B, now), |b, share| Ok((b as f64, share))).unwrap();
    assert!(late.rates.is_empty() && late.at_deadline);
    assert_eq!(late.dropped, sizes);
    let w = late.dropped_warning("memcpy", B).unwrap();
    assert!(w.contains("deadline (25% of the budget)"), "{w}");
    assert!(!w.contains("took more than"), "{w}");
}

/// A perturbed size between two measured ones takes their log-log
/// interpolation; one outside, or between two more than
/// [`BRACKET_RATIO`] apart, has no value (it is measured).
#[test]
fn a_size_between_two_measured_ones_is_interpolated_in_log_log() {
    let mut curve: HashMap<(u8, u64), f64> = HashMap::new();
    curve.insert((0, 32), 1e9);
    curve.insert((0, 48), 4e9);
    curve.insert((0, 1024), 8e9);
    curve.insert((1, 40), 7e9);
    assert_eq!(value_at(&curve, 0, 32), Some(1e9));
    // Between 32 and 48 B, on the straight line in log-log.
    let t = (40f64.ln() - 32f64.ln()) / (48f64.ln() - 32f64.ln());
    let want = (1e9f64.ln() + t * (4e9f64.ln() - 1e9f64.ln())).exp();
    let got = value_at(&curve, 0, 40).unwrap();
    assert!((got / want - 1.0).abs() < 1e-12, "{got} {want}");
    assert!(got > 1e9 && got < 4e9);
    // Another key's 40 B is not this key's.
    assert_eq!(value_at(&curve, 1, 40), Some(7e9));
    // 48 .. 1024 is too wide a bracket; beyond the ends there is none.
    assert_eq!(value_at(&curve, 0, 100), None);
    assert_eq!(value_at(&curve, 0, 29), None);
    assert_eq!(value_at(&curve, 0, 2048), None);
}

#[test]
fn a_long_list_of_sizes_reads_as_a_count_and_a_range() {
    assert_eq!(sizes_named(&[1, 2, 3]), "1 B, 2 B, 3 B");
    let many: Vec<u64> = (1..=124).collect();
    assert_eq!(sizes_named(&many), "124 sizes (1 B..124 B)");
}
