//! What a server grants and to whom: the data channel belongs to the
//! authenticated client, heavy work needs the server's own flags, and a
//! client that vanishes frees the server at once (tests of
//! `serve_hostile.rs`, kept apart to keep each file small).

use std::io::{BufRead, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use serde_json::json;

use super::common::*;
use super::{good_sweep, Raw};

/// The data connection belongs to the authenticated client: an outsider
/// who reaches the data port first (once measured against), without the
/// test's token or from another address, is closed, and the client's own
/// connection is still accepted.
#[test]
fn the_data_channel_is_bound_to_the_authenticated_client() {
    let server = Server::start(&[]);
    let addr = server.addr();
    let mut c = Raw::connect(&addr);
    assert_eq!(c.handshake()["reply"], "welcome");
    let r = c.setup("tcp", 10_000, None);
    assert_eq!(r["reply"], "listening", "{r}");
    let port = r["description"]["port"].as_u64().unwrap() as u16;
    let token = r["description"]["token"].as_str().unwrap().to_string();
    let bytes: Vec<u8> = (0..token.len() / 2)
        .map(|k| u8::from_str_radix(&token[2 * k..2 * k + 2], 16).unwrap())
        .collect();
    // An outsider on the client's address without the token.
    let mut outsider = TcpStream::connect(("127.0.0.1", port)).unwrap();
    let _ = outsider.write_all(&[0u8; 16]);
    // The right token from another address.
    let data = format!("127.0.0.1:{port}");
    let mut elsewhere = Raw::connect_from(&data, "127.0.0.7").unwrap();
    let _ = elsewhere.w.write_all(&bytes);
    c.w.set_read_timeout(Some(Duration::from_millis(800)))
        .unwrap();
    let mut line = String::new();
    assert!(
        c.r.read_line(&mut line).is_err(),
        "the server took an outsider's data connection: {line}"
    );
    assert!(
        elsewhere.closed_within(Duration::from_secs(3)),
        "another address was kept"
    );
    // The client itself, with the token.
    c.w.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut own = TcpStream::connect(("127.0.0.1", port)).unwrap();
    own.write_all(&bytes).unwrap();
    assert_eq!(c.recv()["reply"], "ready");
    drop(outsider);
}

/// What a test costs is the server's decision: without its flags, a
/// client's load and buffers beyond --max-memory are refused before
/// anything runs (an open server once ran 22 load threads and touched
/// 2.2 GB with nocache pools for anyone); with them, granted.
#[test]
fn a_client_gets_only_what_the_server_grants() {
    let setup = |c: &mut Raw, max_bytes: u64, nocache: bool, loads: Option<&str>| {
        c.send(json!({
            "cmd": "setup", "transport": "tcp",
            "channel": {"sndbuf_bytes": null, "rcvbuf_bytes": null, "nodelay": true,
                        "ipv6": false, "timeout_ms": 5000},
            "max_bytes": max_bytes, "nocache": nocache, "offset_bytes": 0, "cpu": null,
            "loads": loads
        }));
        c.recv()
    };
    let server = Server::start(&[]);
    let addr = server.addr();
    let mut c = Raw::connect(&addr);
    c.handshake();
    let r = setup(&mut c, 1024, false, Some("cpu:1"));
    assert_eq!(r["reply"], "error", "{r}");
    assert!(
        r["message"].as_str().unwrap().contains("--allow-load"),
        "{r}"
    );
    let mut c = Raw::connect(&addr);
    c.handshake();
    let r = setup(&mut c, 1 << 30, true, None);
    assert_eq!(r["reply"], "error", "{r}");
    assert!(
        r["message"].as_str().unwrap().contains("--max-memory"),
        "{r}"
    );
    drop(c);
    drop(server);

    let server = Server::start(&["--allow-load", "--max-memory", "4Gi"]);
    let mut c = Raw::connect(&server.addr());
    c.handshake();
    let r = setup(&mut c, 1024, false, Some("cpu:1"));
    assert_eq!(r["reply"], "listening", "{r}");
}

/// A client that vanishes after asking for a shared-memory channel (shm,
/// cma) frees the server at once, as for tcp: the wait on the region once
/// held the server until the data timeout (10 s here), and the soak's
/// good client then needed 50 attempts.
#[test]
fn a_vanished_shared_memory_client_frees_the_server_at_once() {
    let server = Server::start(&[]);
    let addr = server.addr();
    for transport in ["shm", "cma"] {
        let mut c = Raw::connect(&addr);
        c.handshake();
        let r = c.setup(transport, 10_000, None);
        if r["reply"] != "listening" {
            // cma needs ptrace permission between the two processes.
            assert_eq!(transport, "cma", "{r}");
            continue;
        }
        drop(c);
        let started = Instant::now();
        let o = good_sweep(&addr, &[], Duration::from_secs(3));
        assert!(o.status.success(), "{transport}: {}", stderr(&o));
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{transport}: the server was held {:?}",
            started.elapsed()
        );
    }
}
