//! Result files built from the fixtures for the report's tests: the fast
//! tier reads their HTML, the system tier opens it in a browser, so both
//! binaries share one definition of what the page must show.

/// The 4-node lab matrix (node3 on fe) with two re-measures added, one
/// failed (node2 -> node3, a round cell of 12.7 us) and one measured at
/// another bandwidth (node3 -> node1), and a host-bound verdict.
pub fn matrix_with_remeasures() -> serde_json::Value {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/matrix/lab-fe-node3.json"
    );
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    v["schema_version"] = 4.into();
    let cells = v["cells"].as_array_mut().unwrap();
    let of = |cells: &[serde_json::Value], from: u64, to: u64| {
        cells
            .iter()
            .find(|c| c["from"] == from && c["to"] == to)
            .unwrap()
            .clone()
    };
    let mut failed = of(cells, 1, 2);
    let m = failed.as_object_mut().unwrap();
    m.remove("latency");
    m.remove("bandwidth");
    m.insert("error".into(), "not measured".into());
    m.insert("remeasure".into(), true.into());
    let mut faster = of(cells, 2, 0);
    faster["bandwidth"]["bits_per_s"] = 345.1e6.into();
    faster["remeasure"] = true.into();
    cells.push(failed);
    cells.push(faster);
    v["analysis"]["host_bound"] = serde_json::json!({
        "link_share": 0.41, "cpu_busy_share": 0.97, "cells": 12, "alone_cells": 4,
        "alone_link_share": 0.93
    });
    v
}
