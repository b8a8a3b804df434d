//! wulf's own connections, marked so that the link lab can tell them from
//! the traffic it measures.
//!
//! The lab's random loss (`--lab loss=P`) is there to study the transport
//! under test. wulf's control connections (a sweep's peer session, a
//! matrix's coordinator and agents, a group's ranks) cross the same
//! emulated switch, and TCP resends a lost segment after its initial
//! timeout of 1 s, 3 s once a SYN was lost (RFC 6298, 5.7), doubling each
//! time: at 5% loss a live peer's answer now and then came later than a
//! 10 s `--timeout` (a raw sweep through a lossy switch failed about 1 run
//! in 100, "no answer on the control connection", and the slow runs'
//! set-up took 4-6 s against 0.5 s). So every control socket carries DSCP
//! CS6 ("network control", RFC 4594) and the lab's loss rule lets CS6
//! through untouched ([`CONTROL_DSCP`]); the measured traffic (a tcp
//! transport's data connection, frames, loads) is never marked.
//!
//! Marking is best effort: where the stack refuses it nothing else
//! changes, and outside a lab the mark only says what the traffic is.

use std::io;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::Duration;

use socket2::{Domain, Protocol, SockRef, Socket, Type};

/// The DSCP of wulf's control connections: CS6, network control.
pub const CONTROL_DSCP: u8 = 48;

/// The IPv4 TOS / IPv6 traffic class byte: the DSCP in its upper six bits.
const CONTROL_TRAFFIC_CLASS: u32 = (CONTROL_DSCP as u32) << 2;

/// Mark `socket` as a control connection's (`v6`: an IPv6 socket).
fn mark(socket: &SockRef<'_>, v6: bool) {
    let _ = if v6 {
        socket.set_tclass_v6(CONTROL_TRAFFIC_CLASS)
    } else {
        socket.set_tos(CONTROL_TRAFFIC_CLASS)
    };
}

/// Listen for control connections on `addr`: the connections it accepts
/// inherit the mark, and so does its answer to their SYN.
pub fn bind(addr: SocketAddr) -> io::Result<TcpListener> {
    let listener = TcpListener::bind(addr)?;
    mark(&SockRef::from(&listener), addr.is_ipv6());
    Ok(listener)
}

/// Open a control connection to `addr` within `timeout`, marked from its
/// SYN on.
pub fn connect(addr: SocketAddr, timeout: Duration) -> io::Result<TcpStream> {
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    mark(&SockRef::from(&socket), addr.is_ipv6());
    socket.connect_timeout(&addr.into(), timeout)?;
    Ok(socket.into())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Both ends of a control connection carry the mark: the connecting
    /// socket and the one its listener accepted.
    #[test]
    fn both_ends_of_a_control_connection_are_marked() {
        let listener = bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let client = connect(listener.local_addr().unwrap(), Duration::from_secs(5)).unwrap();
        let (server, _) = listener.accept().unwrap();
        for s in [&client, &server] {
            assert_eq!(SockRef::from(s).tos().unwrap(), CONTROL_TRAFFIC_CLASS);
        }
        let plain = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        assert_eq!(SockRef::from(&plain).tos().unwrap(), 0);
    }
}
