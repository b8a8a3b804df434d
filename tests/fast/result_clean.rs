//! The clean blocks of a sweep's points (schema version 5, issue 44): a
//! file with them round-trips, one without them (every older version)
//! still reads, and a misspelt or impossible one is refused.

use wulf::result::{parse_result, read_result, write_result, SweepResult, SCHEMA_VERSION};

const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/tcp-pingpong.json"
);

fn fixture_value() -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(FIXTURE).unwrap()).unwrap()
}

/// Read as `wulf report` reads: parsed, then checked.
fn read(v: &serde_json::Value) -> anyhow::Result<SweepResult> {
    parse_result(&serde_json::to_string(v).unwrap(), "clean.json")
}

#[test]
fn clean_blocks_round_trip_and_older_files_read_without_them() {
    let old = fixture_value();
    assert!(old["schema_version"].as_u64().unwrap() < u64::from(SCHEMA_VERSION));
    let r = read(&old).unwrap();
    assert!(r.points.iter().all(|p| p.clean_share.is_none()));
    assert!(r.points.iter().all(|p| p.disturbed_trials.is_empty()));
    let mut v = old.clone();
    v["schema_version"] = SCHEMA_VERSION.into();
    v["points"][0]["clean_share"] = 0.75.into();
    v["points"][0]["disturbed_trials"] = serde_json::json!([0, 3]);
    let r = read(&v).unwrap();
    assert_eq!(r.points[0].clean_share, Some(0.75));
    assert_eq!(r.points[0].disturbed_trials, vec![0, 3]);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("clean.json");
    write_result(&out, &r).unwrap();
    assert_eq!(read_result(&out).unwrap(), r);
}

#[test]
fn misspelt_or_impossible_clean_blocks_are_refused() {
    let mut v = fixture_value();
    v["schema_version"] = SCHEMA_VERSION.into();
    let mut bad = v.clone();
    bad["points"][0]["clean_shares"] = 0.5.into();
    assert!(read(&bad).is_err(), "an unknown field");
    let mut bad = v.clone();
    bad["points"][0]["clean_share"] = 1.5.into();
    let e = format!("{:#}", read(&bad).unwrap_err());
    assert!(e.contains("clean_share"), "{e}");
    let trials = v["points"][0]["trials"].as_u64().unwrap();
    for list in [serde_json::json!([trials]), serde_json::json!([2, 1])] {
        let mut bad = v.clone();
        bad["points"][0]["disturbed_trials"] = list;
        let e = format!("{:#}", read(&bad).unwrap_err());
        assert!(e.contains("disturbed_trials"), "{e}");
    }
}
