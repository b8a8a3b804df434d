//! Refused handshakes between a coordinator and its agents end with a line
//! saying why (issue 26), as `wulf serve`'s do: the refusing side sends an
//! [`Order::Refused`], shuts its writing side (the other side reads the
//! line, then end of file) and reads and drops what still arrives for a
//! bounded time, so that closing a socket with unread input does not reset
//! the connection and destroy the line. The other side reads a refusal
//! wherever the handshake expected another message and says it.
//!
//! Refusals made in a handshake's own thread linger there
//! ([`refuse`]); those of the coordinator's accept loop (an address that
//! is not a host's, a node name not of the run, a node that joined
//! already) linger in a bounded queue the loop tends between accepts
//! ([`Lingering`]): no thread, at most [`MOST_LINGERING`] descriptors.

use std::collections::VecDeque;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Instant;

use anyhow::Result;
use serde::de::DeserializeOwned;

use super::protocol::{ControlChannel, Order};
use crate::peer::protocol::LINGER;

/// Refused connections the accept loop lingers on at once; a newer one
/// closes the oldest (which had most of its time to read the line).
pub const MOST_LINGERING: usize = 16;

/// The other side refused the handshake, and said why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefusedBy(pub String);

impl std::fmt::Display for RefusedBy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "refused: {}", self.0)
    }
}

impl std::error::Error for RefusedBy {}

/// Receive a `T` of a handshake by `deadline` (at most `max_line_bytes`),
/// or the other side's refusal as a [`RefusedBy`] error.
pub fn recv_handshake<T: DeserializeOwned>(
    ch: &mut ControlChannel,
    deadline: Instant,
    max_line_bytes: u64,
) -> Result<T> {
    let v: serde_json::Value = ch.recv_by(deadline, max_line_bytes)?;
    if v.get("order").and_then(serde_json::Value::as_str) == Some("refused") {
        if let Ok(Order::Refused { message }) = serde_json::from_value::<Order>(v.clone()) {
            return Err(anyhow::Error::new(RefusedBy(message)));
        }
    }
    let shown: String = v.to_string().chars().take(80).collect();
    serde_json::from_value(v)
        .map_err(|e| anyhow::anyhow!("not the handshake's next message ({e}): {shown}"))
}

/// Refuse the other side of `ch` with `message` and end the connection so
/// that it can read why (at most [`LINGER`] spent here).
pub fn refuse(ch: &mut ControlChannel, message: impl Into<String>) {
    let _ = ch.send(&Order::Refused {
        message: message.into(),
    });
    ch.close_after_error();
}

/// The refusal line of `message`, as sent (newline included).
pub fn line(message: &str) -> Vec<u8> {
    let mut l = serde_json::to_vec(&Order::Refused {
        message: message.to_string(),
    })
    .unwrap_or_default();
    l.push(b'\n');
    l
}

/// Refused connections of an accept loop, lingering until their peers
/// have read why (they close) or [`LINGER`] passes.
#[derive(Default)]
pub struct Lingering {
    streams: VecDeque<(TcpStream, Instant)>,
}

impl Lingering {
    /// Refuse `stream` with `message` without waiting: one non-blocking
    /// write of the line (a connection's send buffer holds it), the
    /// writing side shut, the rest left to [`Lingering::tend`].
    pub fn refuse(&mut self, stream: TcpStream, message: &str) {
        if stream.set_nonblocking(true).is_err() {
            return;
        }
        let _ = (&stream).write(&line(message));
        let _ = stream.shutdown(std::net::Shutdown::Write);
        if self.streams.len() >= MOST_LINGERING {
            self.streams.pop_front();
        }
        self.streams.push_back((stream, Instant::now() + LINGER));
    }

    /// Read and drop what arrived on each, closing those whose peer closed
    /// or whose time is up. Never blocks.
    pub fn tend(&mut self) {
        let now = Instant::now();
        let mut buf = [0u8; 4096];
        self.streams.retain(|(s, until)| {
            if now >= *until {
                return false;
            }
            // A few reads at most: a peer that keeps sending is closed
            // when its time is up, not served meanwhile.
            for _ in 0..4 {
                match (&*s).read(&mut buf) {
                    Ok(0) => return false,
                    Ok(_) => continue,
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return true,
                    Err(_) => return false,
                }
            }
            true
        });
    }

    /// Connections still lingering.
    pub fn len(&self) -> usize {
        self.streams.len()
    }

    /// Whether none is lingering.
    pub fn is_empty(&self) -> bool {
        self.streams.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;
    use std::time::Duration;

    fn pair() -> (TcpStream, TcpStream) {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (s, _) = l.accept().unwrap();
        (s, c)
    }

    #[test]
    fn a_refused_peer_reads_why_even_with_its_own_line_unread() {
        let (server, client) = pair();
        // The client already sent its hello: unread input at the server.
        (&client).write_all(b"{\"hello\":1}\n").unwrap();
        std::thread::sleep(Duration::from_millis(50));
        let mut lingering = Lingering::default();
        lingering.refuse(server, "not an address of the hosts");
        let mut ch = ControlChannel::new(client).unwrap();
        let deadline = Instant::now() + Duration::from_secs(5);
        let got: Result<Order> = recv_handshake(&mut ch, deadline, 4096);
        let e = got.unwrap_err();
        assert_eq!(
            e.downcast_ref::<RefusedBy>(),
            Some(&RefusedBy("not an address of the hosts".into())),
            "{e:#}"
        );
        drop(ch);
        // The peer closed: the next tending lets the connection go.
        let until = Instant::now() + Duration::from_secs(5);
        while !lingering.is_empty() && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(10));
            lingering.tend();
        }
        assert!(lingering.is_empty());
    }

    #[test]
    fn lingering_is_bounded_in_count_and_time() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let mut lingering = Lingering::default();
        let mut clients = Vec::new();
        for _ in 0..MOST_LINGERING + 5 {
            clients.push(TcpStream::connect(addr).unwrap());
            let (s, _) = l.accept().unwrap();
            lingering.refuse(s, "flood");
        }
        assert_eq!(lingering.len(), MOST_LINGERING);
        std::thread::sleep(LINGER + Duration::from_millis(50));
        lingering.tend();
        assert!(lingering.is_empty(), "clients that never close are let go");
    }

    #[test]
    fn refuse_in_a_thread_reaches_a_peer_that_keeps_sending() {
        let (server, client) = pair();
        let t = std::thread::spawn(move || {
            let mut ch = ControlChannel::new(server).unwrap();
            refuse(&mut ch, "wrong secret");
        });
        (&client).write_all(&[b'x'; 1000]).unwrap();
        let mut ch = ControlChannel::new(client).unwrap();
        let deadline = Instant::now() + Duration::from_secs(5);
        let e = recv_handshake::<Order>(&mut ch, deadline, 4096).unwrap_err();
        assert_eq!(e.to_string(), "refused: wrong secret");
        t.join().unwrap();
    }
}
