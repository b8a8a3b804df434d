//! Tests of the recommendation logic on synthetic runs.

use super::*;
use crate::sys::TcpSysctls;
use crate::tune::bands::all_comparisons;
use crate::tune::bands::tests::run;
use crate::tune::plan::plan;
use crate::tune::summary::EndSettings;

const SIZES: [u64; 8] = [1, 64, 512, 4096, 32768, 262144, 1 << 20, 4 << 20];

fn host(name: &str) -> HostSysctls {
    HostSysctls {
        host: name.into(),
        sysctls: TcpSysctls {
            core_rmem_max_bytes: Some(212992),
            core_wmem_max_bytes: Some(212992),
            tcp_rmem_bytes: Some([4096, 131072, 6291456]),
            tcp_wmem_bytes: Some([4096, 16384, 4194304]),
            timestamps: Some(1),
            window_scaling: Some(true),
            sack: Some(true),
            ..TcpSysctls::default()
        },
    }
}

fn topics(recs: &[Recommendation], t: Topic) -> Vec<&Recommendation> {
    recs.iter().filter(|r| r.topic == t).collect()
}

#[test]
fn bdp_arithmetic_by_hand() {
    // 10 Gbit/s = 1.25e9 B/s; 100 us = 1e-4 s; 1.25e9 * 1e-4 = 125000 B.
    assert!((bdp_bytes(10e9, 100_000.0) - 125_000.0).abs() < 1e-6);
    // 1 Gbit/s over a 62 us round trip (León Carri et al. 2004's driver-update latency):
    // 1.25e8 B/s * 6.2e-5 s = 7750 B.
    assert!((bdp_bytes(1e9, 62_000.0) - 7_750.0).abs() < 1e-6);
}

#[test]
fn bdp_uses_the_highest_peak_and_the_least_small_message_round_trip() {
    let configs = plan(&[], &[]);
    // Hockney model: one-way time = latency + bits / peak.
    let model =
        |lat_s: f64, peak: f64| move |b: u64| b as f64 * 8.0 / (lat_s + b as f64 * 8.0 / peak);
    let runs = vec![
        run(&configs[0], &SIZES, 1.0, model(25e-6, 10e9)),
        run(&configs[6], &SIZES, 1.0, model(30e-6, 20e9)),
    ];
    let b = bandwidth_delay(&runs).unwrap();
    // The baseline has the lower latency: 25 us + 8 bit / 10 Gbit/s.
    assert_eq!(b.round_trip_config, "default");
    assert_eq!(b.round_trip_bytes, 1);
    assert!(
        (b.round_trip_ns - 2.0 * 25_000.8).abs() < 1e-6,
        "{}",
        b.round_trip_ns
    );
    assert_eq!(b.peak_config, "buffers 4 MiB");
    let expected_peak = model(30e-6, 20e9)(4 << 20);
    assert!((b.peak_bits_per_s - expected_peak).abs() < 1.0);
    assert!((b.bdp_bytes - expected_peak / 8.0 * b.round_trip_ns * 1e-9).abs() < 1e-6);
    // A noisy first point does not inflate the round trip: the least
    // time up to 64 bytes counts (64 B: 25 us + 512 bit / 10 Gbit/s).
    let mut noisy = runs.clone();
    noisy[0].points[0].median_ns *= 5.0;
    noisy[1].points[0].median_ns *= 5.0;
    let b = bandwidth_delay(&noisy).unwrap();
    assert_eq!(b.round_trip_bytes, 64);
    assert!(
        (b.round_trip_ns - 2.0 * 25_051.2).abs() < 1e-6,
        "{}",
        b.round_trip_ns
    );
    assert!(bandwidth_delay(&[]).is_none());
}

#[test]
fn clamped_request_gives_sysctl_advice_on_the_clamping_host() {
    let configs = plan(&[], &[]);
    let mut big = run(&configs[6], &SIZES, 1.0, |_| 10e9);
    // The peer (host b) granted only 2 x its rmem_max of 212992.
    big.summary.server = EndSettings {
        host: "b".into(),
        rcvbuf_requested_bytes: Some(4 << 20),
        rcvbuf_granted_bytes: Some(425984),
        sndbuf_requested_bytes: Some(4 << 20),
        sndbuf_granted_bytes: Some(8 << 20),
        ..EndSettings::default()
    };
    let runs = vec![run(&configs[0], &SIZES, 1.0, |_| 10e9), big];
    let cs = all_comparisons(&runs);
    let recs = recommend(&runs, &cs, None, &[host("a"), host("b")]);
    let sys = topics(&recs, Topic::Sysctl);
    assert_eq!(sys.len(), 1, "{sys:?}");
    assert_eq!(sys[0].host.as_deref(), Some("b"));
    assert_eq!(sys[0].commands, vec!["sysctl -w net.core.rmem_max=4194304"]);
    assert!(sys[0].advice.contains("now 212992"), "{}", sys[0].advice);
    assert_eq!(recs[0].topic, Topic::Sysctl, "kernel limits come first");
}

#[test]
fn bdp_beyond_the_buffers_gives_sysctl_advice() {
    let configs = plan(&[], &[]);
    let runs = vec![run(&configs[0], &SIZES, 1.0, |_| 10e9)];
    // 10 Gbit/s x 10 ms (a long path) = 12.5 MB: 2 x BDP -> 32 MiB.
    let bdp = BandwidthDelay {
        peak_bits_per_s: 10e9,
        peak_config: "default".into(),
        peak_bytes: None,
        round_trip_ns: 10e6,
        round_trip_config: "default".into(),
        round_trip_bytes: 1,
        bdp_bytes: bdp_bytes(10e9, 10e6),
    };
    assert!((bdp.bdp_bytes - 12_500_000.0).abs() < 1e-3);
    let recs = recommend(&runs, &[], Some(&bdp), &[host("a")]);
    let cmds: Vec<&str> = topics(&recs, Topic::Sysctl)
        .iter()
        .flat_map(|r| r.commands.iter().map(String::as_str))
        .collect();
    assert!(
        cmds.contains(&"sysctl -w net.ipv4.tcp_rmem=\"4096 131072 33554432\""),
        "{cmds:?}"
    );
    assert!(
        cmds.contains(&"sysctl -w net.ipv4.tcp_wmem=\"4096 16384 33554432\""),
        "{cmds:?}"
    );
    assert!(
        cmds.contains(&"sysctl -w net.core.rmem_max=16777216"),
        "{cmds:?}"
    );
}

#[test]
fn nagle_slower_beyond_noise_means_disable_it() {
    let configs = plan(&[], &[]);
    let nagle = configs.iter().find(|c| !c.nodelay).unwrap();
    let runs = vec![
        run(&configs[0], &SIZES, 1.0, |_| 10e9),
        // Nagle on: half the throughput from 64 KiB on.
        run(nagle, &SIZES, 1.0, |b| if b >= 65536 { 5e9 } else { 10e9 }),
    ];
    let recs = recommend(&runs, &all_comparisons(&runs), None, &[host("a")]);
    let n = topics(&recs, Topic::Nagle);
    assert_eq!(n.len(), 1);
    assert!(n[0].advice.starts_with("Disable Nagle"), "{}", n[0].advice);
    assert!(
        n[0].advice.contains("64 KiB - 1 MiB -50%"),
        "{}",
        n[0].advice
    );
    // Within the noise: no change.
    let same = vec![
        run(&configs[0], &SIZES, 5.0, |_| 10e9),
        run(nagle, &SIZES, 5.0, |_| 10.2e9),
    ];
    let recs = recommend(&same, &all_comparisons(&same), None, &[host("a")]);
    assert!(topics(&recs, Topic::Nagle)[0]
        .advice
        .contains("no change needed"));
}

#[test]
fn buffers_recommended_only_beyond_noise() {
    let configs = plan(&[], &[]);
    let runs = vec![
        run(&configs[0], &SIZES, 1.0, |_| 10e9),
        run(&configs[1], &SIZES, 1.0, |b| {
            if b >= 65536 {
                6e9
            } else {
                10e9
            }
        }),
        run(&configs[3], &SIZES, 1.0, |b| {
            if b >= 65536 {
                12e9
            } else {
                10e9
            }
        }),
    ];
    let recs = recommend(&runs, &all_comparisons(&runs), None, &[host("a")]);
    let b = topics(&recs, Topic::SocketBuffers);
    assert!(
        b.iter().any(|r| r.advice.contains("to 262144 bytes")),
        "{b:?}"
    );
    assert!(
        b.iter().any(|r| r.advice.contains("buffers 64 KiB: ")),
        "{b:?}"
    );
    // Everything within the noise: leave them unset.
    let flat = vec![
        run(&configs[0], &SIZES, 5.0, |_| 10e9),
        run(&configs[3], &SIZES, 5.0, |_| 10.1e9),
    ];
    let recs = recommend(&flat, &all_comparisons(&flat), None, &[host("a")]);
    let b = topics(&recs, Topic::SocketBuffers);
    assert_eq!(b.len(), 1);
    assert!(b[0].advice.contains("leave SO_SNDBUF and SO_RCVBUF unset"));
}

#[test]
fn rfc1323_options_off_are_flagged_with_commands() {
    let mut h = host("a");
    h.sysctls.window_scaling = Some(false);
    h.sysctls.timestamps = Some(0);
    let bdp = BandwidthDelay {
        peak_bits_per_s: 1e9,
        peak_config: "default".into(),
        peak_bytes: None,
        round_trip_ns: 1e6,
        round_trip_config: "default".into(),
        round_trip_bytes: 1,
        bdp_bytes: bdp_bytes(1e9, 1e6),
    };
    let recs = recommend(&[], &[], Some(&bdp), &[h, host("b")]);
    let r = topics(&recs, Topic::Rfc1323);
    assert_eq!(r.len(), 1, "only the host with options off");
    assert_eq!(r[0].host.as_deref(), Some("a"));
    assert_eq!(
        r[0].commands,
        vec![
            "sysctl -w net.ipv4.tcp_window_scaling=1",
            "sysctl -w net.ipv4.tcp_timestamps=1"
        ]
    );
    // 65535 B * 8 / 1 ms = 524.28 Mbit/s.
    assert!(r[0].advice.contains("524.3 Mbit/s"), "{}", r[0].advice);
}
