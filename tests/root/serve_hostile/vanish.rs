//! A client killed in the middle of a shared-memory test (shm, cma): the
//! server's session ends at once and the next client is served, not after
//! the data channel's timeout (issue 26 said shm and cma sessions held the
//! server until then; a test of `serve_hostile.rs`, kept apart to keep
//! each file small).

use std::process::Stdio;
use std::time::{Duration, Instant};

use super::common::*;
use super::good_sweep;

#[test]
fn a_shared_memory_client_killed_mid_test_frees_the_server_at_once() {
    let server = Server::start(&[]);
    let addr = server.addr();
    for transport in ["shm", "cma"] {
        // A long sweep with a long data timeout: only the server's own
        // watch on its client can end the session early. A precision no
        // point can reach keeps the sweep going for its whole budget (a
        // quiet point met the default 2% and ended the client in under
        // 1.5 s, before the kill, in one CI run).
        let mut client = wulf(&[
            "sweep",
            transport,
            "--peer",
            &addr,
            "--sizes",
            "1Ki",
            "--budget",
            "60s",
            "--precision",
            "0.0001",
            "--timeout",
            "30s",
            "--quiet",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
        std::thread::sleep(Duration::from_millis(1500));
        if let Some(status) = client.try_wait().unwrap() {
            // cma needs ptrace permission between the two processes.
            let out = client.wait_with_output().unwrap();
            assert_eq!(transport, "cma", "{status}: {}", stderr(&out));
            continue;
        }
        client.kill().unwrap();
        let _ = client.wait();
        let started = Instant::now();
        let o = good_sweep(&addr, &[], Duration::from_secs(10));
        assert!(o.status.success(), "{transport}: {}", stderr(&o));
        eprintln!(
            "{transport}: the next sweep ended {:.2} s after the kill",
            started.elapsed().as_secs_f64()
        );
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{transport}: the server was held {:?}",
            started.elapsed()
        );
    }
}
