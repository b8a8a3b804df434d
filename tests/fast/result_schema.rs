//! The result file is a public interface: it round-trips, and anything it
//! does not define is rejected.

use std::path::Path;

use wulf::result::{read_result, write_result, SweepResult};

const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/tcp-pingpong.json"
);

fn fixture_value() -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(FIXTURE).unwrap()).unwrap()
}

fn parse(v: &serde_json::Value) -> Result<SweepResult, serde_json::Error> {
    serde_json::from_value(v.clone())
}

#[test]
fn round_trip_is_lossless() {
    let r = read_result(Path::new(FIXTURE)).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("again.json");
    write_result(&out, &r).unwrap();
    assert_eq!(read_result(&out).unwrap(), r);
    // No temporary files are left beside the result.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
}

#[test]
fn required_fields_have_the_documented_names() {
    let v = fixture_value();
    for key in [
        "schema_version",
        "tool_version",
        "complete",
        "command_line",
        "started_at",
        "host",
        "transport",
        "mode",
        "options",
        "placement",
        "points",
        "summary",
    ] {
        assert!(v.get(key).is_some(), "missing {key}");
    }
    let p = &v["points"][0];
    for key in [
        "bytes",
        "trials_ns",
        "min_ns",
        "median_ns",
        "mean_ns",
        "ci_low_ns",
        "ci_high_ns",
        "p99_ns",
        "bits_per_s",
        "repeats",
        "noisy",
        "cpu_client",
        "cpu_server",
    ] {
        assert!(p.get(key).is_some(), "point misses {key}");
    }
    for key in ["latency_ns", "peak_bits_per_s", "peak_bytes"] {
        assert!(v["summary"].get(key).is_some(), "summary misses {key}");
    }
    for key in [
        "hostname",
        "cpu_model",
        "kernel",
        "load_before",
        "load_after",
    ] {
        assert!(v["host"].get(key).is_some(), "host misses {key}");
    }
}

#[test]
fn unknown_fields_are_rejected_at_every_level() {
    let base = fixture_value();
    assert!(parse(&base).is_ok());
    let mut top = base.clone();
    top["surprise"] = 1.into();
    assert!(parse(&top).is_err());
    let mut point = base.clone();
    point["points"][0]["surprise"] = 1.into();
    assert!(parse(&point).is_err());
    let mut summary = base.clone();
    summary["summary"]["surprise"] = 1.into();
    assert!(parse(&summary).is_err());
    let mut host = base.clone();
    host["host"]["surprise"] = 1.into();
    assert!(parse(&host).is_err());
    let mut cpu = base.clone();
    cpu["points"][0]["cpu_client"]["surprise"] = 1.into();
    assert!(parse(&cpu).is_err());
}

#[test]
fn the_confirmation_block_is_optional_and_strict() {
    let base = fixture_value();
    let mut with = base.clone();
    with["confirmation"] = serde_json::json!({
        "budget_s": 0.2,
        "wall_s": 0.18,
        "points": [{"bytes": 4096, "trials": 12, "median_ns": 5000.0,
                    "ci_low_ns": 4900.0, "ci_high_ns": 5100.0, "noisy": false}],
        "events": [{"kind": "dropout", "from_bytes": 4096, "to_bytes": 4096, "confirmed": true},
                   {"kind": "dropout", "from_bytes": 2045, "to_bytes": 8189, "confirmed": false,
                    "edges": [{"bytes": 2045, "direction": "slower", "confirmed": false},
                              {"bytes": 8192, "direction": "faster", "confirmed": true}]}]
    });
    let r = parse(&with).unwrap();
    let c = r.confirmation.as_ref().unwrap();
    assert_eq!((c.points.len(), c.events[0].confirmed), (1, true));
    // `edges` is optional (older files) and read where present.
    assert!(c.events[0].edges.is_empty());
    let held: Vec<(u64, &str)> = c.events[1]
        .edges
        .iter()
        .filter(|e| e.confirmed)
        .map(|e| (e.bytes, e.direction.as_str()))
        .collect();
    assert_eq!(held, [(8192, "faster")]);
    assert!(parse(&base).unwrap().confirmation.is_none());
    for path in [
        &["confirmation"][..],
        &["confirmation", "points", "0"],
        &["confirmation", "events", "0"],
        &["confirmation", "events", "1", "edges", "1"],
    ] {
        let mut bad = with.clone();
        let mut v = &mut bad;
        for key in path {
            v = match key.parse::<usize>() {
                Ok(i) => &mut v[i],
                Err(_) => &mut v[*key],
            };
        }
        v["surprise"] = 1.into();
        assert!(parse(&bad).is_err(), "{path:?}");
    }
}

#[test]
fn other_schema_versions_are_refused_with_a_message() {
    let mut v = fixture_value();
    v["schema_version"] = 99.into();
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("future.json");
    std::fs::write(&p, serde_json::to_vec(&v).unwrap()).unwrap();
    let e = read_result(&p).unwrap_err().to_string();
    assert!(e.contains("99") && e.contains("versions 1 to 5"), "{e}");
    std::fs::write(&p, b"{\"not\": \"wulf\"}").unwrap();
    assert!(read_result(&p)
        .unwrap_err()
        .to_string()
        .contains("not a wulf result"));
}

#[test]
fn summary_is_derived_from_points() {
    let r = read_result(Path::new(FIXTURE)).unwrap();
    assert_eq!(wulf::result::Summary::from_points(&r.points), r.summary);
    let peak = r.points.iter().map(|p| p.bits_per_s).fold(0.0, f64::max);
    assert_eq!(r.summary.peak_bits_per_s, Some(peak));
    for p in &r.points {
        assert!(
            (p.bits_per_s - p.bytes as f64 * 8.0 / (p.median_ns * 1e-9)).abs() / p.bits_per_s
                < 1e-9
        );
    }
}

#[test]
fn efficiency_fields_are_optional_derived_and_strict() {
    // Files without them (the fixture) read; files with them round-trip.
    let mut v = fixture_value();
    for p in v["points"].as_array_mut().unwrap() {
        p["limits"] = serde_json::json!({
            "memcpy_bits_per_s": 4e11,
            "floor_ns": 50.0,
            "c2c_bits_per_s": 2e11,
            "c2c_two_copy_bits_per_s": 1e11
        });
    }
    let mut r = parse(&v).unwrap();
    r.summary = wulf::result::Summary::from_points(&r.points);
    let first = &r.points[0];
    assert_eq!(
        r.summary.latency_floor_multiple,
        Some(first.median_ns / 50.0)
    );
    assert_eq!(
        r.summary.peak_memcpy_fraction,
        Some(r.summary.peak_bits_per_s.unwrap() / 4e11)
    );
    assert_eq!(
        r.summary.peak_c2c_fraction,
        Some(r.summary.peak_bits_per_s.unwrap() / 2e11)
    );
    r.summary.plateaus.push(wulf::result::Plateau {
        level: "L1".into(),
        cache_bytes: Some(32 << 10),
        min_bytes: 1024,
        max_bytes: 16 << 10,
        points: 5,
        median_bits_per_s: 1e12,
    });
    r.definitions.efficiency = Some(wulf::result::Definitions::efficiency_text());
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("eff.json");
    write_result(&out, &r).unwrap();
    assert_eq!(read_result(&out).unwrap(), r);

    let written: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let mut bad = written.clone();
    bad["points"][0]["limits"]["surprise"] = 1.into();
    assert!(parse(&bad).is_err());
    let mut bad = written.clone();
    bad["summary"]["plateaus"][0]["surprise"] = 1.into();
    assert!(parse(&bad).is_err());
    // A file without limits has no efficiency figures at all.
    let plain = read_result(Path::new(FIXTURE)).unwrap();
    assert_eq!(plain.summary.latency_floor_multiple, None);
    let text = serde_json::to_string(&plain).unwrap();
    assert!(!text.contains("limits") && !text.contains("plateaus"));
}

#[test]
fn path_fingerprint_fields_are_optional_and_strict() {
    // The fixture predates them and reads (checked by every test above);
    // a file with them round-trips.
    let mut v = fixture_value();
    v["host"]["boot_id"] = "6d1f0c8e-2b44-4e0a-9f55-0c1d2e3f4a5b".into();
    v["host"]["path_crosses_interface"] = true.into();
    v["host"]["interfaces"] = serde_json::json!([{
        "name": "veth1",
        "is_virtual": true,
        "mtu_bytes": 1500,
        "speed_mbit_per_s": 10000,
        "qdisc": "htb",
        "shaped_rate_bits_per_s": 100_000_000u64
    }]);
    v["peer_host"]["boot_id"] = v["host"]["boot_id"].clone();
    let mut r = parse(&v).unwrap();
    let iface = r.host.interfaces[0].clone();
    assert_eq!(iface.effective_speed_mbit_per_s(), Some(100.0));
    r.link = wulf::result::LinkEfficiency::for_path(
        Some(&iface),
        None,
        r.mode,
        wulf::sys::IpVersion::V4,
        true,
        r.summary.peak_bits_per_s,
    );
    assert_eq!(
        wulf::sys::recorded_same_machine(&r.host, r.peer_host.as_ref().unwrap()),
        Some(false),
        "same kernel, but across an interface"
    );
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("shaped.json");
    write_result(&out, &r).unwrap();
    assert_eq!(read_result(&out).unwrap(), r);

    let written: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(written["link"]["end"], "client");
    assert_eq!(written["link"]["shaper"], "htb");
    assert_eq!(written["link"]["limit"]["link_speed_mbit_per_s"], 100.0);
    for bad_at in [
        &["link"][..],
        &["host", "interfaces", "0"][..],
        &["host"][..],
    ] {
        let mut bad = written.clone();
        let mut at = &mut bad;
        for k in bad_at {
            at = match k.parse::<usize>() {
                Ok(i) => &mut at[i],
                Err(_) => &mut at[*k],
            };
        }
        at["surprise"] = 1.into();
        assert!(parse(&bad).is_err(), "surprise accepted in {bad_at:?}");
    }
}

#[test]
fn run_to_run_is_optional_and_strict() {
    // The fixture predates it and reads (every test above); with it, a
    // file round-trips and unknown fields are refused at both levels.
    let mut v = fixture_value();
    v["run_to_run"] = serde_json::json!({
        "repetitions": 3,
        "repetition": 2,
        "bands": [{
            "band": "<= 64 B",
            "min_bytes": 0,
            "max_bytes": 64,
            "sizes": 21,
            "log_sd": 0.05,
            "df": 2,
            "one_run_floor_fraction": 0.355
        }]
    });
    let r = parse(&v).unwrap();
    let rr = r.run_to_run.as_ref().unwrap();
    assert_eq!((rr.repetitions, rr.repetition, rr.bands[0].df), (3, 2, 2));
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("rep.json");
    write_result(&out, &r).unwrap();
    assert_eq!(read_result(&out).unwrap(), r);
    let mut bad = v.clone();
    bad["run_to_run"]["surprise"] = 1.into();
    assert!(parse(&bad).is_err());
    let mut bad = v.clone();
    bad["run_to_run"]["bands"][0]["surprise"] = 1.into();
    assert!(parse(&bad).is_err());
    let mut bad = v;
    bad["run_to_run"]["bands"][0]
        .as_object_mut()
        .unwrap()
        .remove("log_sd");
    assert!(parse(&bad).is_err(), "a missing field is refused too");
}

#[test]
fn sizes_left_out_is_optional_and_strict() {
    // The fixture predates it and reads; with it, a file round-trips,
    // the rate may be absent, and unknown or missing fields are refused.
    let mut v = fixture_value();
    v["sizes_left_out"] = serde_json::json!({
        "sizes_bytes": [4194301, 4194304, 8388611],
        "rate_bits_per_s": 94.9e6,
        "rate_from": "link",
        "latency_ns": 120000.0,
        "least_s": 52.1,
        "left_s": 0.4,
        "budget_hint_s": 70.0
    });
    let r = parse(&v).unwrap();
    let l = r.sizes_left_out.as_ref().unwrap();
    assert_eq!(
        (l.sizes_bytes.len(), l.rate_from.as_deref()),
        (3, Some("link"))
    );
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("left.json");
    write_result(&out, &r).unwrap();
    assert_eq!(read_result(&out).unwrap(), r);
    let mut no_rate = v.clone();
    let o = no_rate["sizes_left_out"].as_object_mut().unwrap();
    o.remove("rate_bits_per_s");
    o.remove("rate_from");
    assert!(parse(&no_rate)
        .unwrap()
        .sizes_left_out
        .unwrap()
        .rate_bits_per_s
        .is_none());
    let mut bad = v.clone();
    bad["sizes_left_out"]["surprise"] = 1.into();
    assert!(parse(&bad).is_err());
    // The reason, a cut point and the set-up time (issue 43) read and
    // round-trip; a misspelt one is refused.
    let mut why = v.clone();
    why["sizes_left_out"]["reason"] = "deadline".into();
    why["setup_s"] = 0.25.into();
    why["points"][0]["cut"] = true.into();
    let r = parse(&why).unwrap();
    assert_eq!(
        r.sizes_left_out.as_ref().unwrap().reason.as_deref(),
        Some("deadline")
    );
    assert_eq!(r.setup_s, Some(0.25));
    assert!(r.points[0].cut);
    write_result(&out, &r).unwrap();
    assert_eq!(read_result(&out).unwrap(), r);
    let mut bad = why.clone();
    bad["points"][0]["cutt"] = true.into();
    assert!(parse(&bad).is_err());
    let mut bad = why;
    bad["set_up_s"] = 1.0.into();
    assert!(parse(&bad).is_err());
    let mut bad = v;
    bad["sizes_left_out"]
        .as_object_mut()
        .unwrap()
        .remove("least_s");
    assert!(parse(&bad).is_err(), "a missing field is refused too");
}

fn fixture(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

#[test]
fn every_fixture_reads_once_as_its_kind_and_old_sweeps_have_no_kind() {
    use wulf::result::{read_any, AnyResult};
    for (name, kind) in [
        ("tcp-pingpong.json", "sweep"),
        ("unix-pingpong.json", "sweep"),
        ("memcpy-stream.json", "sweep"),
        ("npb-mg-S.json", "npb"),
        ("study-mtu-buffers/study.json", "study"),
        ("study-mtu-buffers/mtu1500-curve.json", "sweep"),
        ("matrix/lab-fe-node3.json", "matrix"),
    ] {
        let r = read_any(&fixture(name)).unwrap_or_else(|e| panic!("{name}: {e:#}"));
        assert_eq!(r.kind(), kind, "{name}");
        if kind == "sweep" {
            // The fixtures predate `kind`: they must keep reading without it.
            let v: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(fixture(name)).unwrap()).unwrap();
            assert!(v.get("kind").is_none(), "{name} is no longer an old file");
            let AnyResult::Sweep(s) = r else {
                unreachable!()
            };
            assert_eq!(s.kind, "sweep");
            assert_eq!(*s, read_result(&fixture(name)).unwrap());
        }
    }
}

#[test]
fn a_sweep_is_written_with_its_kind_and_reads_back() {
    let mut r = read_result(Path::new(FIXTURE)).unwrap();
    r.limit_role = Some(wulf::result::LimitRole::MemcpyBandwidth);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("v4.json");
    write_result(&out, &r).unwrap();
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(v["kind"], "sweep");
    assert_eq!(v["limit_role"], "memcpy-bandwidth");
    assert_eq!(read_result(&out).unwrap(), r);
    // `limit_role` takes only the four roles.
    let mut bad = v.clone();
    bad["limit_role"] = "fastest".into();
    assert!(parse(&bad).is_err());
}

#[test]
fn unknown_and_mistyped_kinds_are_refused_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("odd.json");
    for (kind, says) in [
        (serde_json::json!("telemetry"), "\"telemetry\""),
        (serde_json::json!(7), "7"),
    ] {
        let mut v = fixture_value();
        v["kind"] = kind;
        std::fs::write(&p, serde_json::to_vec(&v).unwrap()).unwrap();
        let e = format!("{:#}", wulf::result::read_any(&p).unwrap_err());
        assert!(e.contains(p.to_str().unwrap()), "{e}");
        assert!(e.contains(says) && e.contains("does not read"), "{e}");
        assert!(e.contains("sweep, npb, matrix, collective, study"), "{e}");
        // The sweep reader refuses it too, as a kind that is not a sweep.
        let e = read_result(&p).unwrap_err().to_string();
        assert!(e.contains("not a sweep result"), "{e}");
    }
}

#[test]
fn the_one_reader_keeps_unknown_fields_out_and_names_them() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("r.json");
    let mut v = fixture_value();
    v["kind"] = "sweep".into();
    v["points"][1]["surprise"] = 1.into();
    std::fs::write(&p, serde_json::to_vec(&v).unwrap()).unwrap();
    let e = format!("{:#}", wulf::result::read_any(&p).unwrap_err());
    assert!(e.contains("points[1]") && e.contains("surprise"), "{e}");
    // A kind stated twice is a duplicated field, not a second opinion.
    let text = std::fs::read_to_string(FIXTURE).unwrap();
    let twice = text.replacen('{', "{\"kind\": \"sweep\", \"kind\": \"npb\",", 1);
    std::fs::write(&p, twice).unwrap();
    assert!(wulf::result::read_any(&p).is_err());
    // Another kind's document under its own kind keeps its own checks.
    let mut npb: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(fixture("npb-mg-S.json")).unwrap()).unwrap();
    npb["surprise"] = 1.into();
    std::fs::write(&p, serde_json::to_vec(&npb).unwrap()).unwrap();
    let e = format!("{:#}", wulf::result::read_any(&p).unwrap_err());
    assert!(e.contains("NPB result") && e.contains("surprise"), "{e}");
}

/// Compare the generated JSON Schema of each kind with its committed
/// snapshot under docs/schema/, or rewrite the snapshots when
/// WULF_UPDATE_SNAPSHOTS is set (as the report snapshots do): a change to
/// the on-disk format is then a reviewed diff of those files.
#[test]
fn the_json_schema_of_every_kind_matches_its_snapshot() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/schema");
    let update = std::env::var_os("WULF_UPDATE_SNAPSHOTS").is_some_and(|v| v != "0");
    let schemas = wulf::result::json_schema::schemas();
    let kinds: Vec<&str> = schemas.iter().map(|(k, _)| *k).collect();
    assert_eq!(kinds, wulf::result::KINDS);
    let mut stale = Vec::new();
    for (kind, schema) in schemas {
        let path = dir.join(format!("{kind}.schema.json"));
        let text = serde_json::to_string_pretty(&schema).unwrap() + "\n";
        if update {
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(&path, &text).unwrap();
            continue;
        }
        let expected = std::fs::read_to_string(&path).unwrap_or_else(|_| {
            panic!(
                "no snapshot {}: run with WULF_UPDATE_SNAPSHOTS=1 to create it",
                path.display()
            )
        });
        if expected != text {
            let out = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/test-artifacts/schema");
            std::fs::create_dir_all(&out).unwrap();
            std::fs::write(out.join(format!("{kind}.schema.json")), &text).unwrap();
            stale.push(kind);
        }
    }
    assert!(
        stale.is_empty(),
        "the schema of {stale:?} changed: review the diff against \
         target/test-artifacts/schema/ and rerun with WULF_UPDATE_SNAPSHOTS=1"
    );
}

#[test]
fn every_sweep_fixture_validates_against_the_schema_shape() {
    // Without a validator crate: every top-level field of a fixture is a
    // property of the schema, and every required property is present.
    let schemas = wulf::result::json_schema::schemas();
    let sweep = serde_json::to_value(&schemas[0].1).unwrap();
    let props = sweep["properties"].as_object().unwrap();
    let v = fixture_value();
    for key in v.as_object().unwrap().keys() {
        assert!(props.contains_key(key), "{key} is not in the schema");
    }
    for key in sweep["required"].as_array().unwrap() {
        assert!(v.get(key.as_str().unwrap()).is_some(), "{key} is required");
    }
    assert!(!sweep["required"]
        .as_array()
        .unwrap()
        .contains(&"kind".into()));
    assert_eq!(sweep["additionalProperties"], false);
}
