//! `--load network` with `--peer`: the load streams into a sink session
//! on the peer's `wulf serve` (issue 30), only where the server allows
//! loads; without a peer it stays on loopback.

use crate::common::*;

use std::time::Duration;

/// The sink receives what the client wrote, a server without
/// `--allow-load` refuses naming the flag, and no peer means loopback.
#[test]
fn a_network_load_with_peer_streams_into_the_peers_sink() {
    let _g = serial();
    let mut server = Server::start(&["--allow-load"]);
    let addr = server.addr();
    let dir = tempdir();
    let out = file(&dir, "r.json");
    let mut args = vec!["sweep", "tcp", "--peer", &addr, "--sizes", "1Ki"];
    args.extend_from_slice(&["--load", "network:200M", "--json", out.to_str().unwrap()]);
    args.extend_from_slice(QUICK);
    let o = run(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    let r = wulf::result::read_result(&out).unwrap();
    let loads = r.conditions.unwrap().loads;
    let net = loads.iter().find(|l| l.kind == "network").expect("network");
    let port = addr.rsplit_once(':').unwrap().0;
    let path = net.path.as_deref().unwrap();
    assert!(path.starts_with(&format!("to peer {port}:")), "{path}");
    let sent = net.bytes_per_s.unwrap() * net.ran_s;
    assert!(sent > 1e6, "sent {sent} bytes");
    assert!(server.alive());

    // The sink itself: what a client writes, the server reads, and says
    // so when the client closes the stream.
    let ask = wulf::peer::protocol::SinkAsk {
        rate_bits_per_s: None,
        seconds: 30,
    };
    let sink = wulf::peer::sink::open(addr.parse().unwrap(), None, ask, Duration::from_secs(5))
        .expect("the server opens a sink");
    let mut stream = sink.stream;
    std::io::Write::write_all(&mut stream, &vec![7u8; 3 << 20]).unwrap();
    stream.shutdown(std::net::Shutdown::Write).unwrap();
    let mut control = sink.control;
    match control.recv::<wulf::peer::protocol::Reply>().unwrap() {
        wulf::peer::protocol::Reply::SinkDone { bytes } => assert_eq!(bytes, 3 << 20),
        other => panic!("{other:?}"),
    }
    assert!(server.alive());
    drop(server);

    // A server that does not allow loads refuses, saying why.
    let mut closed = Server::start(&[]);
    let addr = closed.addr();
    let o = run(&[
        "sweep", "tcp", "--peer", &addr, "--sizes", "1", "--load", "network", "--quiet",
        "--budget", "300ms",
    ]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(stderr(&o).contains("--allow-load"), "{}", stderr(&o));
    assert!(closed.alive());

    // Without --peer the stream stays on loopback, and says so.
    let out = file(&dir, "l.json");
    let mut args = vec!["sweep", "tcp", "--sizes", "1Ki", "--load", "network:100M"];
    args.extend_from_slice(&["--json", out.to_str().unwrap()]);
    args.extend_from_slice(QUICK);
    let o = run(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    let r = wulf::result::read_result(&out).unwrap();
    let path = r.conditions.unwrap().loads[0].path.clone().unwrap();
    assert!(path.starts_with("loopback"), "{path}");
}
