//! The cold core-to-core limit (issue 29): `c2c --nocache` copies lines
//! that are in neither core's cache, and a `--nocache` sweep's "of c2c"
//! efficiency is against it.

use crate::common::{file, json, run, stderr, tempdir};

fn sweep(args: &[&str]) -> serde_json::Value {
    let dir = tempdir();
    let out = file(&dir, "r.json");
    let mut all = vec!["sweep"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--budget", "1s", "--quiet", "--json", out.to_str().unwrap()]);
    let o = run(&all);
    assert!(o.status.success(), "wulf {all:?} failed: {}", stderr(&o));
    wulf::result::read_result(&out).expect("result parses with the typed schema");
    json(&out)
}

#[test]
fn c2c_measures_cold_buffers_with_nocache() {
    for t in ["c2c", "c2c-2copy"] {
        let r = sweep(&[t, "--nocache", "--sizes", "65536,1Mi"]);
        let buffers = r["options"]["transport"]["buffers"]
            .as_str()
            .unwrap_or_default();
        assert!(
            buffers.starts_with("cold"),
            "{t}: {}",
            r["options"]["transport"]
        );
        assert_eq!(r["options"]["nocache"], true);
        for p in r["points"].as_array().unwrap() {
            assert!(p["bits_per_s"].as_f64().unwrap() > 0.0, "{p}");
        }
    }
    let warm = sweep(&["c2c", "--sizes", "65536"]);
    let buffers = warm["options"]["transport"]["buffers"]
        .as_str()
        .unwrap_or_default();
    assert!(
        buffers.starts_with("warm"),
        "{}",
        warm["options"]["transport"]
    );
}

#[test]
fn a_nocache_sweep_is_measured_against_the_cold_limit() {
    let r = sweep(&["shm", "--nocache", "--sizes", "65536"]);
    let p = &r["points"][0];
    let l = &p["limits"];
    assert!(l["memcpy_bits_per_s"].as_f64().is_some(), "{l}");
    // Before issue 29 a cold sweep had no core-to-core limit at all.
    let Some(c2c) = l["c2c_bits_per_s"].as_f64() else {
        // A limit dropped under load is named in a warning.
        assert!(
            r["warnings"].to_string().contains("no c2c limit there"),
            "no c2c limit and no warning: {l} {}",
            r["warnings"]
        );
        eprintln!("the cold c2c limit was dropped under load");
        return;
    };
    let s = &r["summary"];
    let f = s["peak_c2c_fraction"].as_f64().unwrap();
    assert!((f - s["peak_bits_per_s"].as_f64().unwrap() / c2c).abs() < 1e-9 * f);
    assert!(r["definitions"]["efficiency"]
        .as_str()
        .unwrap()
        .contains("c2c --nocache"));
}
