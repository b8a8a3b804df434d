//! Every line the server cannot take is answered with an error line that
//! the client can read, then the connection ends (tests of
//! `serve_hostile.rs`, kept apart to keep each file small). Lines the
//! server could not decode once closed the connection without a word, and
//! an error line sent just before a close could be lost to the reset that
//! closing with unread input makes.

use std::io::{BufRead, Write};
use std::time::Duration;

use serde_json::{json, Value};

use super::common::*;
use super::{good_sweep, Raw};

/// The next line from the server, if one arrives: an error line or None.
fn error_line(c: &mut Raw) -> Option<Value> {
    let mut line = String::new();
    c.r.read_line(&mut line).ok()?;
    serde_json::from_str(&line).ok()
}

/// The message of the error line `got`, or a panic naming `what`.
fn message(got: Option<Value>, what: &str) -> String {
    let v = got.unwrap_or_else(|| panic!("{what}: no error line before the close"));
    assert_eq!(v["reply"], "error", "{what}: {v}");
    v["message"].as_str().unwrap_or_default().to_string()
}

#[test]
fn lines_the_server_cannot_take_are_answered_before_the_close() {
    let server = Server::start(&[]);
    let addr = server.addr();
    // Garbage instead of the Hello, with more garbage after it (unread
    // input at the server when it closes), many times over: the error
    // line arrives every time.
    for round in 0..20 {
        let mut c = Raw::connect(&addr);
        c.recv();
        let mut junk = b"this is not json\n".to_vec();
        junk.extend(std::iter::repeat_n(b'j', 4 << 10));
        let _ = c.w.write_all(&junk);
        let m = message(error_line(&mut c), &format!("garbage, round {round}"));
        assert!(m.contains("not a wulf control message"), "{m}");
        assert!(c.closed_within(Duration::from_secs(5)));
    }
    // Out of turn: a goodbye instead of the authentication.
    let mut c = Raw::connect(&addr);
    let hello = c.recv();
    c.send(hello);
    assert_eq!(c.recv()["reply"], "challenge");
    c.send(json!({"cmd": "bye"}));
    let m = message(error_line(&mut c), "out of turn");
    assert!(m.contains("expected the client's authentication"), "{m}");
    assert!(c.closed_within(Duration::from_secs(5)));
    // A line longer than any request.
    let mut c = Raw::connect(&addr);
    c.recv();
    let _ = c.w.write_all(&vec![b'x'; 64 << 10]);
    let m = message(error_line(&mut c), "a long line");
    assert!(m.contains("longer than 16384 bytes"), "{m}");
    assert!(c.closed_within(Duration::from_secs(5)));
    // Unknown fields in a set-up.
    let mut c = Raw::connect(&addr);
    assert_eq!(c.handshake()["reply"], "welcome");
    c.send(json!({"cmd": "setup", "evil": 1}));
    let m = message(error_line(&mut c), "unknown fields");
    assert!(m.contains("not a wulf control message"), "{m}");
    assert!(c.closed_within(Duration::from_secs(5)));
    // The server serves the next client.
    let o = good_sweep(&addr, &[], Duration::from_secs(3));
    assert!(o.status.success(), "{}", stderr(&o));
}
