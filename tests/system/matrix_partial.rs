//! A matrix that fewer than two agents join (src/cluster/admission.rs):
//! what is known is saved (who joined, who did not and why), marked
//! incomplete, with a clear error and exit 3.

use crate::common::{stderr, tempdir, wulf};

use std::time::{Duration, Instant};

/// Rank 0 of 3 of a PMI launch whose other ranks never start: it waits
/// its full bound for them (not a second: no launch of its own ended),
/// then saves the partial result and exits 3.
#[test]
fn one_agent_of_three_saves_a_partial_result_and_exits_3() {
    let dir = tempdir();
    let json = dir.path().join("m.json");
    let mut c = wulf(&[
        "matrix",
        "--timeout",
        "2s",
        "--quiet",
        "--json",
        json.to_str().unwrap(),
    ]);
    for (k, _) in std::env::vars() {
        if k.starts_with("SLURM_") || k.starts_with("OMPI_") || k.starts_with("PMI") {
            c.env_remove(k);
        }
    }
    let start = Instant::now();
    let out = c
        .current_dir(dir.path())
        .env("PMI_RANK", "0")
        .env("PMI_SIZE", "3")
        .output()
        .unwrap();
    let took = start.elapsed();
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("only 1 of 3 agents joined"),
        "{}",
        stderr(&out)
    );
    // At least 10 s (the least wait for agents), and bounded.
    assert!(
        took >= Duration::from_secs(9) && took < Duration::from_secs(40),
        "{took:?}"
    );
    let r = wulf::result::matrix::read_matrix_result(&json).unwrap();
    assert!(!r.complete);
    assert!(
        r.incomplete_reason
            .as_deref()
            .is_some_and(|w| w.contains("only 1 of 3 agents joined")),
        "{:?}",
        r.incomplete_reason
    );
    assert_eq!(r.nodes.len(), 3);
    let joined: Vec<&str> = r
        .nodes
        .iter()
        .filter(|n| n.error.is_none())
        .map(|n| n.name.as_str())
        .collect();
    assert_eq!(joined.len(), 1, "{:?}", r.nodes);
    assert!(
        r.nodes[0].host.is_some(),
        "the one that joined, with its fingerprint"
    );
    for n in &r.nodes[1..] {
        let e = n.error.as_deref().unwrap();
        assert!(e.contains("did not join within"), "{e}");
        assert!(e.contains("of the 3 tasks"), "{e}");
    }
    assert!(r.cells.is_empty());
}
