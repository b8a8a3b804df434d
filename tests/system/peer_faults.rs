//! Client/server over real sockets, and every fault the foundation issue
//! lists: bad options, unreachable peers, other versions, peers that die,
//! busy servers, garbage, ports in use, Ctrl-C.

use crate::common;
use common::*;

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};

#[test]
fn sweep_against_a_server() {
    let server = Server::start(&[]);
    let dir = tempdir();
    let out = file(&dir, "r.json");
    for transport in ["tcp", "unix"] {
        let mut args = vec![
            "sweep",
            transport,
            "--peer",
            &*Box::leak(server.addr().into_boxed_str()),
            "--sizes",
            "1,4Ki",
            "--integrity",
            "--json",
            out.to_str().unwrap(),
        ];
        args.extend_from_slice(QUICK);
        let o = run(&args);
        assert!(o.status.success(), "{}", stderr(&o));
        let r = json(&out);
        assert_eq!(r["complete"], true);
        assert_eq!(r["options"]["peer"], server.addr());
        assert!(r["peer_host"]["hostname"].is_string());
    }
}

#[test]
fn invalid_options_exit_2() {
    for args in [
        vec!["sweep", "tcp", "--sizes", "12X"],
        vec!["sweep", "tcp", "--budget", "soon"],
        vec!["sweep", "tcp", "--precision", "3"],
        vec!["sweep", "tcp", "--mode", "sideways"],
        vec!["sweep", "carrier-pigeon", "--sizes", "1"],
        vec!["sweep", "tcp", "--cpus", "0,999"],
        vec!["frobnicate"],
    ] {
        let o = run(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(!stderr(&o).is_empty());
        assert!(!stderr(&o).contains("panicked"));
    }
}

#[test]
fn unreachable_peer_fails_within_the_timeout() {
    // A port that was free a moment ago: connection refused.
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let t = Instant::now();
    let o = run(&[
        "sweep",
        "tcp",
        "--peer",
        &format!("127.0.0.1:{port}"),
        "--timeout",
        "2s",
        "--quiet",
    ]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(&format!("127.0.0.1:{port}")),
        "{}",
        stderr(&o)
    );
    assert!(t.elapsed() < Duration::from_secs(5));
    // A peer that accepts but never speaks: the handshake times out.
    let silent = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = silent.local_addr().unwrap().to_string();
    let t = Instant::now();
    let o = run(&[
        "sweep",
        "tcp",
        "--peer",
        &addr,
        "--timeout",
        "1s",
        "--quiet",
    ]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(t.elapsed() < Duration::from_secs(4));
}

#[test]
fn peer_of_another_version_is_named() {
    let fake = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = fake.local_addr().unwrap().to_string();
    let h = std::thread::spawn(move || {
        let (mut s, _) = fake.accept().unwrap();
        s.write_all(b"{\"magic\":\"wulf\",\"tool_version\":\"0.0.1-old\",\"protocol\":0}\n")
            .unwrap();
        std::thread::sleep(Duration::from_millis(500));
    });
    let o = run(&["sweep", "tcp", "--peer", &addr, "--quiet"]);
    assert_eq!(o.status.code(), Some(3));
    let e = stderr(&o);
    assert!(
        e.contains("0.0.1-old") && e.contains(env!("CARGO_PKG_VERSION")),
        "{e}"
    );
    h.join().unwrap();

    // And the server tells an old client both versions.
    let server = Server::start(&[]);
    let s = TcpStream::connect(server.addr()).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut r = BufReader::new(s.try_clone().unwrap());
    let mut line = String::new();
    r.read_line(&mut line).unwrap();
    (&s).write_all(b"{\"magic\":\"wulf\",\"tool_version\":\"0.0.1-old\",\"protocol\":0}\n")
        .unwrap();
    line.clear();
    r.read_line(&mut line).unwrap();
    assert!(
        line.contains("0.0.1-old") && line.contains(env!("CARGO_PKG_VERSION")),
        "{line}"
    );
}

#[test]
fn server_survives_garbage_and_disconnects() {
    let mut server = Server::start(&[]);
    for garbage in [
        &b"GET / HTTP/1.0\r\n\r\n"[..],
        b"\x00\x01\x02\xff\xfe\n",
        b"{\"magic\":\"wulf\"",
        b"",
    ] {
        let mut s = TcpStream::connect(server.addr()).unwrap();
        let _ = s.write_all(garbage);
        drop(s);
    }
    // A valid client with an oversize request is refused, not obeyed.
    let dir = tempdir();
    // The server may still be closing the last garbage connection (it
    // serves one client at a time and says so): retry while it is busy.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let o = loop {
        let o = run(&[
            "sweep",
            "tcp",
            "--peer",
            &server.addr(),
            "--sizes",
            "2Gi",
            "--quiet",
        ]);
        if !stderr(&o).contains("busy") || std::time::Instant::now() > deadline {
            break o;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(stderr(&o).contains("max-size"), "{}", stderr(&o));
    std::thread::sleep(Duration::from_millis(200));
    assert!(server.alive());
    let out = file(&dir, "r.json");
    let mut args = vec!["sweep", "tcp", "--sizes", "1,2"];
    let a = server.addr();
    args.extend_from_slice(&["--peer", &a, "--json", out.to_str().unwrap()]);
    args.extend_from_slice(QUICK);
    let o = run(&args);
    assert!(o.status.success(), "{}", stderr(&o));
}

#[test]
fn busy_server_says_so() {
    let server = Server::start(&[]);
    let a = server.addr();
    let mut first = wulf(&[
        "sweep", "tcp", "--peer", &a, "--budget", "4s", "--sizes", "1:64Ki", "--quiet",
    ])
    .spawn()
    .unwrap();
    std::thread::sleep(Duration::from_millis(700));
    let o = run(&["sweep", "tcp", "--peer", &a, "--sizes", "1", "--quiet"]);
    assert_eq!(o.status.code(), Some(3));
    assert!(stderr(&o).contains("busy"), "{}", stderr(&o));
    assert!(first.wait().unwrap().success());
}

#[test]
fn peer_killed_mid_sweep_leaves_an_incomplete_result() {
    let mut server = Server::start(&[]);
    let dir = tempdir();
    let out = file(&dir, "r.json");
    let a = server.addr();
    let client = wulf(&[
        "sweep",
        "tcp",
        "--peer",
        &a,
        "--budget",
        "30s",
        "--sizes",
        "1:1Mi",
        "--timeout",
        "3s",
        "--quiet",
        "--json",
        out.to_str().unwrap(),
    ])
    .stdout(std::process::Stdio::null())
    .stderr(std::process::Stdio::piped())
    .spawn()
    .unwrap();
    // Kill the server once it has echoed for 2 s of CPU (a busy-polling
    // server spends a point's whole time, about 0.4 s here, on CPU, so
    // several points exist by then): before the first
    // point the client measures its physical limits in-process, which on a
    // loaded machine can take seconds, so a fixed sleep may kill the
    // server before any point exists. The server uses CPU only to answer
    // timed blocks.
    wait_for_cpu_ticks(server.child.id(), 200, Duration::from_secs(60));
    server.child.kill().unwrap();
    let t = Instant::now();
    let o = client.wait_with_output().unwrap();
    assert!(t.elapsed() < Duration::from_secs(8));
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let r = json(&out);
    assert_eq!(r["complete"], false);
    assert!(r["incomplete_reason"].as_str().unwrap().len() > 5);
    assert!(
        !r["points"].as_array().unwrap().is_empty(),
        "points measured before the failure are kept"
    );
    wulf::result::read_result(&out).unwrap();
}

#[test]
fn ctrl_c_saves_what_was_measured() {
    let dir = tempdir();
    let out = file(&dir, "r.json");
    let client = wulf(&[
        "sweep",
        "unix",
        "--budget",
        "20s",
        "--quiet",
        "--json",
        out.to_str().unwrap(),
    ])
    .stdout(std::process::Stdio::null())
    .stderr(std::process::Stdio::piped())
    .spawn()
    .unwrap();
    // Interrupt once the local peer (the client's child) has answered timed
    // blocks for a while: before the first point the client measures its
    // physical limits, which a loaded machine can stretch to seconds.
    let t = Instant::now();
    let peer = loop {
        if let Some(&p) = children_of(client.id()).first() {
            break p;
        }
        assert!(
            t.elapsed() < Duration::from_secs(30),
            "no local peer started"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    wait_for_cpu_ticks(peer as u32, 200, Duration::from_secs(60));
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(client.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let o = client.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(130), "{}", stderr(&o));
    let r = json(&out);
    assert_eq!(r["complete"], false);
    let n = r["points"].as_array().unwrap().len();
    assert!(n > 0 && n < 124, "{n}");
}

#[test]
fn port_in_use_is_a_clear_error() {
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    let o = run(&["serve", "--bind", "127.0.0.1", "--port", &port]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("in use"), "{}", stderr(&o));
}

#[test]
fn unwritable_result_path_is_an_error_not_a_panic() {
    let mut args = vec![
        "sweep",
        "unix",
        "--sizes",
        "1",
        "--json",
        "/proc/wulf-cannot-write/r.json",
    ];
    args.extend_from_slice(QUICK);
    let o = run(&args);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("cannot"), "{}", stderr(&o));
    assert!(!stderr(&o).contains("panicked"));
}
