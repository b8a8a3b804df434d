//! `wulf compare` of real runs, one per side (issue 44): an A/A pair of
//! two identical shm sweeps claims no change and never fails a 10% gate.
//! Where the runs were made on a quiet machine with most points clean,
//! the gate passes (exit 0) or, when its band is too wide to exclude a
//! 10% slowdown, is undecided (exit 5); on a busy machine (load at or
//! above its CPUs, as this shared VM often is) the band is unknown and
//! the gate undecided. No speed is asserted: what is checked is that no
//! change is claimed between two runs of one configuration.
//!
//! Holds `common::serial()`: two sweeps timed side by side with another
//! test would each be the other's noise.

use crate::common;

use common::{file, run, serial, stderr, tempdir};

#[test]
fn an_a_a_pair_of_single_runs_claims_no_change_and_never_fails_the_gate() {
    let _serial = serial();
    let dir = tempdir();
    let paths: Vec<String> = ["a.json", "b.json"]
        .iter()
        .map(|name| {
            let p = file(&dir, name);
            let o = run(&[
                "sweep",
                "shm",
                "--sizes",
                "8,64Ki",
                "--budget",
                "1s",
                "--quiet",
                "--json",
                p.to_str().unwrap(),
            ]);
            assert!(o.status.success(), "{}", stderr(&o));
            p.to_str().unwrap().to_string()
        })
        .collect();
    let o = run(&["compare", &paths[0], &paths[1], "--fail-if-slower", "10"]);
    let text = String::from_utf8_lossy(&o.stdout);
    let claims = text
        .lines()
        .filter(|l| !l.starts_with("size band") && !l.starts_with("figure"))
        .filter(|l| l.contains("A faster") || l.contains("B faster"))
        .count();
    assert_eq!(claims, 0, "an A/A pair claimed a change:\n{text}");
    match o.status.code() {
        Some(0) => {}
        Some(5) => assert!(stderr(&o).contains("cannot be excluded"), "{}", stderr(&o)),
        other => panic!("gate exit {other:?}: {}\n{text}", stderr(&o)),
    }
}
