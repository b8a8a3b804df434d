//! `wulf tune tcp` end to end on loopback with a small budget: the real
//! binary, real sockets, real files. No test asserts a speed.

mod common;
use common::*;

use std::path::PathBuf;

use wulf::tune::TuneSummary;

/// The one session directory `wulf tune tcp --out dir` created.
fn session_dir(out: &tempfile::TempDir) -> PathBuf {
    let dirs: Vec<PathBuf> = std::fs::read_dir(out.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(dirs.len(), 1, "{dirs:?}");
    let d = dirs[0].clone();
    let name = d.file_name().unwrap().to_string_lossy().into_owned();
    assert!(name.starts_with("tune-tcp-"), "{name}");
    d
}

/// Run `wulf tune tcp` with a budget and sizes, saving under `out`.
fn tune(
    out: &tempfile::TempDir,
    budget: &str,
    sizes: &str,
    extra: &[&str],
) -> std::process::Output {
    let mut args = vec![
        "tune",
        "tcp",
        "--budget",
        budget,
        "--sizes",
        sizes,
        "--timeout",
        "5s",
        "--quiet",
        "--out",
        out.path().to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    run(&args)
}

#[test]
fn tune_tcp_on_loopback_writes_results_summary_and_recommendations() {
    let out = tempdir();
    let o = tune(&out, "3s", "1,1Ki,64Ki,1Mi", &[]);
    assert!(o.status.success(), "wulf tune tcp failed: {}", stderr(&o));
    let text = String::from_utf8_lossy(&o.stdout);
    for section in [
        "best setting by size band",
        "bandwidth-delay product",
        "recommendations",
        "[socket buffers]",
        "[nagle]",
        "RFC 1323 on ",
        "results: ",
    ] {
        assert!(text.contains(section), "missing {section:?} in\n{text}");
    }

    let dir = session_dir(&out);
    // The summary reads back with the typed, strict schema.
    let summary: TuneSummary =
        serde_json::from_str(&std::fs::read_to_string(dir.join("tune.json")).unwrap())
            .expect("tune.json matches its schema");
    assert_eq!(summary.tune_schema_version, wulf::tune::TUNE_SCHEMA_VERSION);
    assert!(summary.complete, "{:?}", summary.warnings);
    assert_eq!(summary.sizes_bytes, vec![1, 1024, 65536, 1 << 20]);
    assert!(!summary.recommendations.is_empty());
    assert!(!summary.bands.is_empty());
    let bdp = summary
        .bandwidth_delay
        .as_ref()
        .expect("a bandwidth-delay product");
    let expected = bdp.peak_bits_per_s / 8.0 * bdp.round_trip_ns * 1e-9;
    assert!((bdp.bdp_bytes - expected).abs() <= 1e-6 * expected.max(1.0));

    // Baseline first and last, every buffer size, Nagle on.
    let labels: Vec<&str> = summary
        .configurations
        .iter()
        .map(|c| c.config.label.as_str())
        .collect();
    assert_eq!(labels.first(), Some(&"default"));
    assert_eq!(labels.last(), Some(&"default (repeat)"));
    for l in [
        "buffers 64 KiB",
        "buffers 128 KiB",
        "buffers 256 KiB",
        "buffers 512 KiB",
        "buffers 1 MiB",
        "buffers 4 MiB",
        "nagle on",
    ] {
        assert!(labels.contains(&l), "{l} missing from {labels:?}");
    }

    // Every configuration is an ordinary, complete result file with what
    // was requested and granted recorded.
    for c in &summary.configurations {
        let path = dir.join(&c.file);
        let r = wulf::result::read_result(&path).expect("an ordinary result file");
        assert!(r.complete, "{}", c.file);
        assert_eq!(r.transport, "tcp");
        assert_eq!(r.points.len(), 4);
        let t = &r.options.transport;
        assert_eq!(t["nodelay"], serde_json::json!(c.config.nodelay));
        assert_eq!(
            t["sndbuf_requested_bytes"],
            serde_json::json!(c.config.buffer_bytes)
        );
        assert_eq!(
            t["mss_requested_bytes"],
            serde_json::json!(c.config.mss_bytes)
        );
        assert!(t["sndbuf_granted_bytes"].as_u64().unwrap() > 0);
        assert!(t["server"]["rcvbuf_granted_bytes"].as_u64().unwrap() > 0);
        if let Some(req) = c.config.buffer_bytes {
            assert_eq!(c.client.sndbuf_requested_bytes, Some(req));
            assert!(c.client.sndbuf_granted_bytes.is_some());
        }
        if let Some(mss) = c.config.mss_bytes {
            // The connection's MSS never exceeds the request.
            assert!(c.client.mss_bytes.unwrap() <= mss, "{c:?}");
        }
    }
    assert!(dir.join("points.csv").is_file());
}

#[test]
fn tune_json_goes_to_stdout_with_the_table_on_stderr() {
    let out = tempdir();
    let o = tune(&out, "1s", "1,64Ki", &["--json"]);
    assert!(
        o.status.success(),
        "wulf tune tcp --json failed: {}",
        stderr(&o)
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON on stdout");
    assert!(v["recommendations"]
        .as_array()
        .is_some_and(|r| !r.is_empty()));
    assert!(stderr(&o).contains("recommendations"));
    assert!(session_dir(&out).join("tune.json").is_file());
}

#[test]
fn tune_errors_are_clear() {
    let out = tempdir();
    let o = tune(&out, "1s", "0", &[]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--sizes"), "{}", stderr(&o));
    // Nothing listens on port 1: a peer error, before anything is written.
    let o = tune(&out, "1s", "1", &["--peer", "127.0.0.1:1"]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("cannot reach the peer"),
        "{}",
        stderr(&o)
    );
}
