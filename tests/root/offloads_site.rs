//! `wulf tune tcp --offloads` as a site runs it: refused up front (exit 2)
//! without the right to change an interface, and an interface left changed
//! by a session killed outright (SIGKILL: nothing of it runs) is restored
//! by the next session from the state file the first one wrote.

use crate::common;
use common::*;

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::tune::VethPair;

const SAVED_DIR: &str = "/run/wulf/offloads";

#[test]
fn offloads_without_the_right_are_refused_up_front() {
    if !labs_possible() {
        return;
    }
    let Some(drop) = privilege_dropper() else {
        eprintln!("SKIPPED: neither setpriv nor runuser can drop privileges here");
        return;
    };
    let dir = tempdir();
    let started = Instant::now();
    let out = Command::new(drop[0])
        .args(&drop[1..])
        .arg(wulf_bin())
        .args(["tune", "tcp", "--offloads", "--peer", "127.0.0.1:1"])
        .args(["--budget", "30s", "--quiet", "--out"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let said = stderr(&out);
    assert!(
        said.contains("CAP_NET_ADMIN") && said.contains("root"),
        "{said}"
    );
    // Up front: nothing measured, not even the peer tried.
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);

    // The same as root gets past the check (and fails on the peer).
    let out = wulf(&["tune", "tcp", "--offloads", "--peer", "127.0.0.1:1"])
        .args(["--budget", "1s", "--quiet", "--timeout", "2s", "--out"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(!stderr(&out).contains("CAP_NET_ADMIN"), "{}", stderr(&out));
}

/// The command prefix that runs a program as nobody, without
/// capabilities or supplementary groups.
fn privilege_dropper() -> Option<Vec<&'static str>> {
    let works = |cmd: &[&str]| {
        Command::new(cmd[0])
            .args(&cmd[1..])
            .arg("true")
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    let setpriv = vec![
        "setpriv",
        "--reuid=65534",
        "--regid=65534",
        "--clear-groups",
    ];
    let runuser = vec!["runuser", "-u", "nobody", "--"];
    [setpriv, runuser].into_iter().find(|c| works(c))
}

/// The saved-state files that name process `pid`.
fn saved_by(pid: u32) -> Vec<PathBuf> {
    let Ok(dir) = std::fs::read_dir(SAVED_DIR) else {
        return Vec::new();
    };
    dir.flatten()
        .map(|e| e.path())
        .filter(|p| {
            std::fs::read(p)
                .ok()
                .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
                .is_some_and(|v| v["pid"] == pid && v["interface"] == "v0")
        })
        .collect()
}

#[test]
fn offloads_left_changed_by_a_killed_session_are_restored_by_the_next() {
    if !labs_possible() {
        return;
    }
    let pair = VethPair::up("offk", 8);
    let before = pair.features();
    let out = tempdir();
    let mut child = pair
        .tune(&out, "24s")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // `ip netns exec` execs wulf: the child is wulf itself.
    let pid = child.id();
    let deadline = Instant::now() + Duration::from_secs(120);
    while pair.features() == before {
        assert!(Instant::now() < deadline, "no offload was ever changed");
        assert!(child.try_wait().unwrap().is_none(), "tune ended early");
        std::thread::sleep(Duration::from_millis(20));
    }
    let saved = saved_by(pid);
    child.kill().unwrap(); // SIGKILL: no guard, no handler runs.
    child.wait().unwrap();
    assert_eq!(saved.len(), 1, "no state file of pid {pid} in {SAVED_DIR}");
    assert!(saved[0].exists(), "the killed session's state file is gone");
    assert_ne!(
        pair.features(),
        before,
        "changed while killed, as far as the test saw"
    );

    // The next session restores first, says so, and leaves no file.
    let next = tempdir();
    let o = pair.tune(&next, "3s").output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let said = stderr(&o);
    assert!(
        said.contains("restored the offloads of v0") && said.contains(&format!("pid {pid}")),
        "{said}"
    );
    assert_eq!(pair.features(), before, "not restored");
    assert!(!saved[0].exists(), "the state file outlived the restore");
    let own = saved_by(pid);
    assert!(own.is_empty(), "{own:?}");
}
