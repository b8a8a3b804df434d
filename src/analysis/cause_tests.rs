//! The causes of issue 28 on synthetic curves: cma's page steps, steps at
//! a cache level of the machine for the transports that copy through the
//! caches, and lasting level changes told from drop-outs that come back.

use super::synth::{measure, netpipe_sizes, Curve};
use super::{analyse_curve, Analysis, CauseHints};
use crate::sys::Cache;

const MIB: u64 = 1 << 20;

/// The analysis of `law` over NetPIPE's sizes up to `max` (10 trials of
/// +-1% noise a point), with `hints`.
fn analyse(max: u64, law: impl Fn(u64) -> f64, hints: &CauseHints) -> Analysis {
    let c: Curve = measure(&netpipe_sizes(max), law, 0.01, 10, 7);
    analyse_curve(&c.bytes, &c.median_ns, &c.ci_low_ns, &c.ci_high_ns, hints)
}

/// Every event (drop-out or switch-over) as (first size, cause).
fn events(a: &Analysis) -> Vec<(u64, Option<String>)> {
    let dips = a
        .dropouts
        .iter()
        .map(|d| (d.from_bytes, d.likely_cause.clone()));
    let steps = a
        .segments
        .iter()
        .skip(1)
        .map(|s| (s.from_bytes, s.likely_cause.clone()));
    dips.chain(steps).collect()
}

/// The fingerprint of the development VM: 48 KiB L1d, 1 MiB L2 per core,
/// 32 MiB L3 shared by its 2 CPUs.
fn fingerprint() -> Vec<Cache> {
    let cache = |level, kind: &str, size_bytes, shared| Cache {
        level,
        kind: kind.into(),
        size_bytes,
        shared_by_cpus: Some(shared),
    };
    vec![
        cache(1, "Data", 48 << 10, 1),
        cache(1, "Instruction", 32 << 10, 1),
        cache(2, "Unified", MIB, 1),
        cache(3, "Unified", 32 * MIB, 2),
    ]
}

/// tcp loopback's shape: 20 us start-up, 2 B/ns, and from the L2 size on
/// 30% slower with each further doubling 10% slower again (the copies
/// spill to L3, then to memory).
fn l2_step(b: u64) -> f64 {
    let x = b as f64;
    let base = 20_000.0 + x / 2.0;
    match b > MIB {
        true => base * (1.3 + 0.1 * (x / MIB as f64).log2()),
        false => base,
    }
}

#[test]
fn a_lasting_level_change_is_a_step_not_a_dropout() {
    // The shape above was reported as a drop-out over 1-1.5 MiB (the
    // sizes after it steepen on, so no one line holds them).
    let a = analyse(8 * MIB, l2_step, &CauseHints::default());
    assert!(a.dropouts.is_empty(), "{:?}", a.dropouts);
    assert_eq!(a.switchovers, vec![1_048_579], "{:?}", a.segments);
    // A level change a few sizes before the end of the sweep.
    let late = |b: u64| (20_000.0 + b as f64 / 2.0) * if b > 6 * MIB { 1.3 } else { 1.0 };
    let a = analyse(8 * MIB, late, &CauseHints::default());
    assert!(a.dropouts.is_empty(), "{:?}", a.dropouts);
}

#[test]
fn a_dip_that_comes_back_is_a_dropout() {
    // The same 30% slowdown over 1-1.5 MiB, then back on the old line.
    let dip = |b: u64| {
        let t = 20_000.0 + b as f64 / 2.0;
        match b > MIB && b < 2 * MIB - 3 {
            true => t * 1.3,
            false => t,
        }
    };
    let a = analyse(8 * MIB, dip, &CauseHints::default());
    let found: Vec<(u64, u64)> = a
        .dropouts
        .iter()
        .map(|d| (d.from_bytes, d.to_bytes))
        .collect();
    assert_eq!(found, vec![(1_048_579, 1_572_867)], "{:?}", a.segments);
    assert!(a.switchovers.is_empty(), "{:?}", a.switchovers);
}

#[test]
fn cache_levels_name_steps_of_copying_transports_only() {
    let settings: serde_json::Map<String, serde_json::Value> =
        serde_json::from_str(r#"{"copies_through_caches": true}"#).unwrap();
    let copying = CauseHints::from_transport(&settings).with_caches(Some(&fingerprint()));
    assert_eq!(
        copying.caches.len(),
        2,
        "L2 and L3; L1 and instructions left out"
    );
    let a = analyse(8 * MIB, l2_step, &copying);
    let (at, cause) = &events(&a)[0];
    assert_eq!(*at, 1_048_579);
    let cause = cause.as_deref().unwrap();
    assert!(
        cause.starts_with("L2 cache (1048576 B, per core) outgrown"),
        "{cause}"
    );
    // The last level, by the same rule.
    let llc = copying.likely_cause(33_554_429, 33_554_435, 33_554_435, u64::MAX);
    assert!(llc
        .unwrap()
        .starts_with("L3 cache (33554432 B, last level, shared by 2 CPUs)"));
    // A transport that does not say it copies (a NIC's DMA, cma's single
    // kernel copy counted per page) gets no cache level as a cause.
    let other = CauseHints::default().with_caches(Some(&fingerprint()));
    assert!(other.caches.is_empty());
    let a = analyse(8 * MIB, l2_step, &other);
    assert_eq!(events(&a), vec![(1_048_579, None)]);
}

/// cma's stated thresholds, as `transport::cma` writes them.
fn cma_hints() -> CauseHints {
    let mut map = serde_json::Map::new();
    map.insert(
        crate::result::THRESHOLDS_KEY.into(),
        serde_json::json!([
            crate::result::threshold_entry(65536, "cma split threshold (65536 B)", false),
            crate::result::threshold_entry(4096, "cma page (4096 B)", true),
        ]),
    );
    CauseHints::from_transport(&map)
}

/// cma's shape: 700 ns, 10 B/ns, and 240 ns for each page spanned (the
/// development VM: 4096 B 1,186 ns, 4099 B 1,431 ns).
fn cma_law(b: u64) -> f64 {
    700.0 + b as f64 / 10.0 + 240.0 * b.div_ceil(4096) as f64
}

#[test]
fn cma_page_steps_are_named_after_the_page() {
    let a = analyse(64 << 10, cma_law, &cma_hints());
    let named: Vec<(u64, String)> = events(&a)
        .into_iter()
        .filter_map(|(at, c)| Some((at, c?)))
        .collect();
    // Each event that starts just past a page boundary is named after it.
    for at in [4099u64, 8195] {
        let cause = named
            .iter()
            .find(|(b, _)| *b == at)
            .map(|(_, c)| c.as_str());
        let k = at / 4096;
        assert_eq!(
            cause,
            Some(format!("cma page (4096 B) (past {k} x 4096 = {} B)", k * 4096).as_str()),
            "{named:?}"
        );
    }
    // And nothing else is.
    assert!(named.iter().all(|(b, _)| b % 4096 == 3), "{named:?}");
    // Without the stated page, the same steps have no known cause.
    let bare = analyse(64 << 10, cma_law, &CauseHints::default());
    assert!(events(&bare).iter().all(|(_, c)| c.is_none()));
}
