//! Tests of the `cma` transport (kept apart so cma.rs holds the transport).

use super::super::wait::WaitMode;
use super::*;
use std::net::{IpAddr, Ipv4Addr};

fn opts(wait: WaitMode) -> ChannelOptions {
    ChannelOptions::local_for_tests(wait)
}

#[test]
fn in_one_process_when_available() {
    if let Err(why) = Cma.availability() {
        eprintln!("skipped: cma unavailable: {why}");
        return;
    }
    let ip = IpAddr::V4(Ipv4Addr::LOCALHOST);
    let mut o = opts(WaitMode::Yield);
    o.timeout_ms = 1000;
    let l = Cma.listen(&o, ip).unwrap();
    let d = l.describe();
    let server = std::thread::spawn(move || {
        let mut c = l.accept(Duration::from_secs(5)).unwrap();
        let mut b = vec![0u8; 300_000];
        c.endpoint.recv(&mut b).unwrap();
        c.endpoint.send(&b).unwrap();
        let mut e = [0u8; 3];
        c.endpoint.exchange(b"srv", &mut e).unwrap();
        assert_eq!(&e, b"cli");
        let mut wrong = [0u8; 2];
        assert!(c.endpoint.recv(&mut wrong).is_err());
    });
    let mut c = Cma.connect(&d, &o, ip).unwrap();
    let msg: Vec<u8> = (0..300_000).map(|i| (i % 253) as u8).collect();
    c.endpoint.send(&msg).unwrap();
    let mut back = vec![0u8; 300_000];
    c.endpoint.recv(&mut back).unwrap();
    assert!(back == msg);
    let mut e = [0u8; 3];
    c.endpoint.exchange(b"cli", &mut e).unwrap();
    assert_eq!(&e, b"srv");
    // Offer 3 bytes where the peer expects 2: it refuses; we time out.
    let _ = c.endpoint.send(b"abc");
    server.join().unwrap();
}
