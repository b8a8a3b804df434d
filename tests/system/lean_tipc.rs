//! The `tipc` transport. Where the kernel has TIPC: every mode with
//! `--integrity` on this machine (TIPC needs no bearer between two
//! processes of one node). Where it lacks TIPC (this project's CI kernel):
//! a sweep is refused with "kernel built without TIPC" and `wulf run`
//! skips it without failing.

use crate::common;

use common::{run, stderr};

fn tipc_present() -> bool {
    // SAFETY: plain socket(2) probe; the descriptor is closed at once.
    let fd = unsafe { libc::socket(libc::AF_TIPC, libc::SOCK_STREAM, 0) };
    if fd >= 0 {
        // SAFETY: fd is ours.
        unsafe { libc::close(fd) };
        return true;
    }
    false
}

#[test]
fn tipc_runs_where_present_and_is_reported_unavailable_elsewhere() {
    if tipc_present() {
        for mode in ["pingpong", "stream", "bidir"] {
            let o = run(&[
                "sweep",
                "tipc",
                "--mode",
                mode,
                "--integrity",
                "--sizes",
                "1,64Ki",
                "--budget",
                "300ms",
                "--quiet",
                "--json",
                "-",
            ]);
            assert!(o.status.success(), "{}", stderr(&o));
            let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
            assert_eq!(v["complete"], true);
            assert_eq!(v["options"]["integrity"], true);
        }
        return;
    }
    eprintln!("TIPC is absent here: checking that it is reported so");
    let o = run(&["sweep", "tipc", "--quiet"]);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("unavailable here: kernel built without TIPC"),
        "{}",
        stderr(&o)
    );
    let dir = tempfile::tempdir().unwrap();
    let o = run(&[
        "run",
        "--only",
        "tipc,unix",
        "--no-npb",
        "--quick",
        "--quiet",
        "--out",
        dir.path().to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("skipping tipc: kernel built without TIPC"),
        "{}",
        stderr(&o)
    );
}
