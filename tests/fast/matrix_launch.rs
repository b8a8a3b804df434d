//! A matrix whose launch never brings its agents (issue 35 item 4): the
//! launcher's process group is ended within a bound and what was measured
//! is saved.
//!
//! In the fast tier, beside other tests, though it lasts some 17 s: it
//! times nothing and loads no CPU (its launches are sleeping shells, its
//! hosts never join), it only waits out the join's floor of 10 s and the
//! 5 s grace of a launch that ignores SIGTERM, which one test at a time
//! in the system tier spent alone.

use crate::common::{stderr, tempdir, wulf};

use std::process::Command;
use std::time::{Duration, Instant};

/// A launch whose agents never join and that ignores SIGTERM (a remote
/// shell that hangs, issue 35 item 4) is killed within a bound: SIGTERM
/// to its process group, SIGKILL after the grace; the hosts are named,
/// the partial result saved, exit 3, and nothing of it is left running.
#[test]
fn a_launch_that_never_joins_is_killed_within_a_bound() {
    let dir = tempdir();
    let json = dir.path().join("m.json");
    let marker = format!("wulfhang{}x", std::process::id());
    let rsh = dir.path().join("rsh");
    // `exec -a` names the sleep so that the check below finds only ours;
    // it is the shell's child, so that killing the shell alone leaves it.
    std::fs::write(
        &rsh,
        format!("#!/bin/bash\ntrap '' TERM\n(exec -a {marker} sleep 300) &\nwait\n"),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&rsh, std::fs::Permissions::from_mode(0o755)).unwrap();
    let start = Instant::now();
    let out = wulf(&[
        "matrix",
        "--launch",
        "ssh",
        "--rsh",
        rsh.to_str().unwrap(),
        "--hosts",
        "127.0.0.2,127.0.0.3",
        "--timeout",
        "3s",
        "--quiet",
        "--json",
        json.to_str().unwrap(),
    ])
    .output()
    .unwrap();
    assert!(start.elapsed() < Duration::from_secs(40), "not bounded");
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    for h in ["127.0.0.2", "127.0.0.3"] {
        assert!(
            text.contains(&format!("missing: {h}: did not join")),
            "{text}"
        );
    }
    let r = wulf::result::matrix::read_matrix_result(&json).unwrap();
    assert!(!r.complete);
    let left = Command::new("pgrep")
        .args(["-f", &marker])
        .output()
        .unwrap();
    assert!(
        left.stdout.is_empty(),
        "a launch outlived wulf: {}",
        String::from_utf8_lossy(&left.stdout)
    );
}
