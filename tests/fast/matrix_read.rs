//! Reading matrix files: a large one streaming (each cell's trials
//! dropped as it is parsed), and as reports read every matrix, as the
//! cells' figures only; the same schema checks either way.

use crate::common;

use common::tempdir;

/// The matrix of a 4-node lab with node3 on an fe link, as `wulf matrix`
/// wrote it.
fn lab_fixture() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/matrix/lab-fe-node3.json")
}

/// `fixture` as JSON, to be made wrong in one place.
fn fixture_value(fixture: &std::path::Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(fixture).unwrap()).unwrap()
}

/// A matrix file too large to read whole is parsed cell by cell without
/// its trials: the same cells and figures, the same schema checks.
#[test]
fn a_large_matrix_file_is_read_streaming_without_trials() {
    use wulf::result::matrix::{read_matrix_result, read_matrix_result_within};
    let fixture = lab_fixture();
    let whole = read_matrix_result(&fixture).unwrap();
    // Every file counts as large here.
    let lean = read_matrix_result_within(&fixture, 0).unwrap();
    assert_eq!(lean.cells.len(), whole.cells.len());
    for (a, b) in lean.cells.iter().zip(&whole.cells) {
        assert_eq!(
            (a.from, a.to, a.latency_ns(), a.bits_per_s()),
            (b.from, b.to, b.latency_ns(), b.bits_per_s())
        );
        let (la, lb) = (a.latency.as_ref().unwrap(), b.latency.as_ref().unwrap());
        assert_eq!((la.ci_low_ns, la.trials), (lb.ci_low_ns, lb.trials));
        assert!(la.trials_ns.is_empty() && !lb.trials_ns.is_empty());
    }
    assert_eq!(lean.analysis, whole.analysis);
    assert!(lean
        .warnings
        .iter()
        .any(|w| w.contains("without the cells' trials")));
    // The same checks as a whole read: unknown fields, kind, version.
    let dir = tempdir();
    let bad = dir.path().join("bad.json");
    let mut v = fixture_value(&fixture);
    v["cells"][3]["latency"]["surprise"] = 1.into();
    std::fs::write(&bad, v.to_string()).unwrap();
    let e = read_matrix_result_within(&bad, 0).unwrap_err();
    assert!(
        format!("{e:#}").contains("surprise") && format!("{e:#}").contains("cells[3]"),
        "{e:#}"
    );
    v["cells"][3]["latency"]
        .as_object_mut()
        .unwrap()
        .remove("surprise");
    v["schema_version"] = 99.into();
    std::fs::write(&bad, v.to_string()).unwrap();
    let e = read_matrix_result_within(&bad, 0).unwrap_err();
    assert!(format!("{e:#}").contains("schema version 99"), "{e:#}");
    v["schema_version"] = 2.into();
    v["kind"] = "sweep".into();
    std::fs::write(&bad, v.to_string()).unwrap();
    assert!(read_matrix_result_within(&bad, 0).is_err());
    // Trials are dropped only while a large file is read.
    assert!(!read_matrix_result(&fixture).unwrap().cells[0]
        .latency
        .as_ref()
        .unwrap()
        .trials_ns
        .is_empty());
}

#[test]
fn reports_read_a_matrix_as_figures_whole_or_streaming() {
    use wulf::result::matrix::{
        figures_of, read_matrix_figures, read_matrix_figures_within, read_matrix_result,
    };
    let fixture = lab_fixture();
    let whole = read_matrix_result(&fixture).unwrap();
    let expected = figures_of(&whole.cells);
    assert!(!expected.is_empty());
    // Read whole, then turned into figures.
    let small = read_matrix_figures(&fixture).unwrap();
    // Every file counts as large here: each cell becomes figures as parsed.
    let large = read_matrix_figures_within(&fixture, 0).unwrap();
    for m in [&small, &large] {
        assert_eq!(m.figures, expected);
        assert!(m.result.cells.is_empty());
        assert_eq!(m.analysis, whole.analysis);
        assert_eq!(m.nodes, whole.nodes);
    }
    assert!(large
        .warnings
        .iter()
        .any(|w| w.contains("without the cells' trials")));
    // A bad file after a good one: refused, and no figures of either are
    // left for the next read.
    let dir = tempdir();
    let bad = dir.path().join("bad.json");
    let mut v = fixture_value(&fixture);
    v["cells"][5]["surprise"] = 1.into();
    std::fs::write(&bad, v.to_string()).unwrap();
    let e = read_matrix_figures_within(&bad, 0).unwrap_err();
    assert!(format!("{e:#}").contains("surprise"), "{e:#}");
    let again = read_matrix_figures_within(&fixture, 0).unwrap();
    assert_eq!(again.figures, expected);
}

/// Crafted node indices (once a panic of `wulf report`) and impossible
/// figures are refused with the field named, whole or streaming, and
/// `wulf report` says so instead of drawing.
#[test]
fn crafted_indices_and_impossible_figures_are_refused() {
    use wulf::result::matrix::{read_matrix_result, read_matrix_result_within};
    let fixture = lab_fixture();
    let dir = tempdir();
    let bad = dir.path().join("bad.json");
    type Spoil = Box<dyn Fn(&mut serde_json::Value)>;
    let cases: Vec<(&str, Spoil)> = vec![
        (
            "cells[2].from",
            Box::new(|v| v["cells"][2]["from"] = 99.into()),
        ),
        ("cells[0].to", Box::new(|v| v["cells"][0]["to"] = 4.into())),
        // A short node list: the cells name nodes it lacks.
        (
            "but the file lists 2 nodes",
            Box::new(|v| {
                v["nodes"].as_array_mut().unwrap().truncate(2);
            }),
        ),
        (
            "cells[1].latency.median_ns",
            Box::new(|v| v["cells"][1]["latency"]["median_ns"] = (-5.0).into()),
        ),
        (
            "cells[1].bandwidth.bits_per_s",
            Box::new(|v| v["cells"][1]["bandwidth"]["bits_per_s"] = 1e308.into()),
        ),
        (
            "analysis.slow_nodes",
            Box::new(|v| v["analysis"]["slow_nodes"][0]["node"] = 7.into()),
        ),
        // Issue 45, item 10: medians of -1e308 and a cell of a node with
        // itself once passed.
        (
            "analysis.latency.median is negative",
            Box::new(|v| v["analysis"]["latency"]["median"] = (-1e308).into()),
        ),
        (
            "analysis.node_summary[1].bits_per_s is negative",
            Box::new(|v| v["analysis"]["node_summary"][1]["bits_per_s"] = (-1e308).into()),
        ),
        (
            "analysis.outlier_cells[0].median",
            Box::new(|v| v["analysis"]["outlier_cells"][0]["median"] = f64::MAX.into()),
        ),
        (
            "cells[0] measures node 0 against itself",
            Box::new(|v| v["cells"][0]["to"] = 0.into()),
        ),
    ];
    for (want, spoil) in cases {
        let mut v = fixture_value(&fixture);
        spoil(&mut v);
        std::fs::write(&bad, v.to_string()).unwrap();
        for e in [
            read_matrix_result(&bad).unwrap_err(),
            read_matrix_result_within(&bad, 0).unwrap_err(),
        ] {
            let text = format!("{e:#}");
            assert!(text.contains(want), "{want}: {text}");
        }
        let o = std::process::Command::new(env!("CARGO_BIN_EXE_wulf"))
            .args(["report", bad.to_str().unwrap(), "-o"])
            .arg(dir.path().join("r.html"))
            .output()
            .unwrap();
        assert_ne!(o.status.code(), Some(101), "{want}: report panicked");
        assert!(!o.status.success(), "{want}: a report was drawn");
    }
}
