//! The measuring side's view of a peer: handshake, set-up, and one request
//! per block.

use std::net::{SocketAddr, ToSocketAddrs};
use std::time::Duration;

use anyhow::{Context, Result};

use super::auth::{random_hex, Secret};
use super::protocol::{BlockKind, ControlChannel, Hello, Reply, Request, Setup, SinkAsk, MAGIC};
use super::session::{CLIENT_ROLE, SERVER_ROLE};
use crate::error::peer;
use crate::result::Mode;
use crate::sys::Host;
use crate::transport::{Connected, Transport};

/// A connected, set-up peer.
pub struct PeerSession {
    ch: ControlChannel,
    /// The peer's control address.
    pub addr: SocketAddr,
    /// The peer's machine.
    pub host: Host,
    /// Settings on the peer's end of the data channel.
    pub settings: serde_json::Map<String, serde_json::Value>,
    /// Warnings from the peer's set-up.
    pub warnings: Vec<String>,
    /// CPU the peer pinned to.
    pub cpu: Option<usize>,
    /// Whether both ends proved the shared secret to each other.
    pub authenticated: bool,
    /// Whether the peer runs a background load (`--load-peer`).
    loads: bool,
}

/// What the peer reported for one block.
#[derive(Debug, Clone, Copy)]
pub struct PeerBlock {
    /// Peer user CPU ns.
    pub user_ns: u64,
    /// Peer system CPU ns.
    pub sys_ns: u64,
    /// Peer's own timing of the block, ns.
    pub elapsed_ns: u64,
    /// How long the peer's thread waited for a CPU in the block, ns
    /// (None: its kernel does not keep it).
    pub run_delay_ns: Option<u64>,
    /// How long the transport's helper processes on the peer's end were
    /// on a CPU in the block, ns (None: it has none).
    pub helper_cpu_ns: Option<u64>,
}

/// Resolve `HOST[:PORT]` (IPv6 literals in brackets) to a socket address.
pub fn resolve(peer_spec: &str, default_port: u16, ipv6: bool) -> Result<SocketAddr> {
    let with_port = if let Ok(ip) = peer_spec.parse::<std::net::IpAddr>() {
        // A bare address; an IPv6 one contains colons but no port.
        std::net::SocketAddr::new(ip, default_port).to_string()
    } else if peer_spec
        .rsplit_once(':')
        .is_some_and(|(_, p)| p.parse::<u16>().is_ok())
    {
        peer_spec.to_string()
    } else {
        format!("{peer_spec}:{default_port}")
    };
    let addrs: Vec<SocketAddr> = with_port
        .to_socket_addrs()
        .map_err(|e| peer(format!("cannot resolve peer '{peer_spec}': {e}")))?
        .collect();
    addrs
        .iter()
        .find(|a| a.is_ipv6() == ipv6)
        .or(addrs.first())
        .copied()
        .ok_or_else(|| peer(format!("peer '{peer_spec}' has no address")))
}

impl PeerSession {
    /// Connect, shake hands and set up the data channel; returns the session
    /// and this end of the data channel.
    pub fn open(
        addr: SocketAddr,
        transport: &dyn Transport,
        setup: &Setup,
        timeout: Duration,
        secret: Option<&Secret>,
    ) -> Result<(PeerSession, Connected)> {
        let (mut ch, authenticated) = greet(addr, timeout, secret, None)?;
        send(&mut ch, addr, &Request::Setup(setup.clone()))?;
        let (description, host) = match ch.recv::<Reply>().map_err(as_peer)? {
            Reply::Listening { description, host } => (description, host),
            other => return Err(unexpected(addr, other)),
        };
        let connected = transport
            .connect(&description, &setup.channel, addr.ip())
            .map_err(|e| peer(format!("{e:#}")))?;
        // Before it says Ready the peer maps and touches its message pools
        // (gigabytes with --nocache on a large last-level cache): that
        // wait gets an allowance for the memory, not just the timeout.
        ch.stream()
            .set_read_timeout(Some(timeout + pool_setup_allowance(setup)))?;
        let ready = ch.recv::<Reply>().map_err(as_peer);
        ch.stream().set_read_timeout(Some(timeout))?;
        let (settings, warnings, cpu) = match ready? {
            Reply::Ready {
                settings,
                warnings,
                cpu,
            } => (settings, warnings, cpu),
            other => return Err(unexpected(addr, other)),
        };
        Ok((
            PeerSession {
                ch,
                addr,
                host,
                settings,
                warnings,
                cpu,
                authenticated,
                loads: setup.loads.is_some(),
            },
            connected,
        ))
    }

    /// Ask the peer to run a block; the caller then runs its own side.
    pub fn start_block(
        &mut self,
        mode: Mode,
        kind: BlockKind,
        bytes: u64,
        repeats: u64,
    ) -> Result<()> {
        send(
            &mut self.ch,
            self.addr,
            &Request::Block {
                mode,
                kind,
                bytes,
                repeats,
            },
        )
    }

    /// Collect the peer's report of the block.
    pub fn finish_block(&mut self) -> Result<PeerBlock> {
        match self.ch.recv::<Reply>().map_err(as_peer)? {
            Reply::Done {
                user_ns,
                sys_ns,
                elapsed_ns,
                run_delay_ns,
                helper_cpu_ns,
            } => Ok(PeerBlock {
                user_ns,
                sys_ns,
                elapsed_ns,
                run_delay_ns,
                helper_cpu_ns,
            }),
            Reply::Error { message } => Err(anyhow::anyhow!("peer: {message}")),
            other => Err(unexpected(self.addr, other)),
        }
    }

    /// The peer's error message, if it sent one (after a failed block).
    pub fn error_message(&mut self) -> Option<String> {
        match self.ch.recv::<Reply>() {
            Ok(Reply::Error { message }) => Some(message),
            _ => None,
        }
    }

    /// End the session politely; a peer's background load
    /// (`--load-peer`) is stopped first, and what it achieved comes back
    /// (empty when it ran none).
    pub fn close(mut self) -> Result<Vec<crate::load::LoadRecord>> {
        let mut records = Vec::new();
        if self.loads {
            send(&mut self.ch, self.addr, &Request::StopLoads)?;
            match self.ch.recv::<Reply>().map_err(as_peer)? {
                Reply::Loads { loads } => records = loads,
                other => return Err(unexpected(self.addr, other)),
            }
        }
        self.ch
            .send(&Request::Bye)
            .context("cannot say goodbye to the peer")?;
        Ok(records)
    }
}

/// Connect to the peer at `addr`, exchange Hellos and authenticate
/// (asking for a sink session when `sink` is given); the control channel
/// and whether both ends proved the secret.
pub fn greet(
    addr: SocketAddr,
    timeout: Duration,
    secret: Option<&Secret>,
    sink: Option<SinkAsk>,
) -> Result<(ControlChannel, bool)> {
    let stream = crate::sys::control_mark::connect(addr, timeout).map_err(|e| {
        peer(format!(
            "cannot reach the peer at {addr} within {}: {e} (is `wulf serve` running there?)",
            humantime::format_duration(timeout)
        ))
    })?;
    stream.set_read_timeout(Some(timeout))?;
    stream.set_write_timeout(Some(timeout))?;
    let mut ch = ControlChannel::new(stream)?;
    let hello = greeting(&mut ch, addr)?;
    let ours = Hello::ours();
    if hello.magic != MAGIC {
        return Err(peer(format!("the service at {addr} is not a wulf server")));
    }
    if hello.tool_version != ours.tool_version {
        return Err(peer(format!(
                "version mismatch: the peer at {addr} runs wulf {}, this is wulf {}; run the same version on both ends",
                hello.tool_version, ours.tool_version
            )));
    }
    send(&mut ch, addr, &ours)?;
    let authenticated = authenticate(&mut ch, addr, secret, sink)?;
    Ok((ch, authenticated))
}

/// What a refusal at the door says (see [`greeting`]): the server ended
/// this connection's handshake (to admit another, or a penalty) or closed
/// it before greeting.
const REFUSED_AT_THE_DOOR: [&str; 2] = [
    "refused this connection",
    "closed the connection before greeting",
];

/// Whether `e` is a server's refusal at the door: its handshake places
/// were full (a flood of idle connections holds them), and a client that
/// tries again a moment later gets in, as `wulf serve`'s admission keeps
/// a place for a client that authenticates.
pub fn refused_at_the_door(e: &anyhow::Error) -> bool {
    let text = format!("{e:#}");
    REFUSED_AT_THE_DOOR.iter().any(|words| text.contains(words))
}

/// The server's Hello; a server that ends the connection instead (a
/// handshake ended to admit another, or refused) is quoted, not shown as
/// an undecodable message.
fn greeting(ch: &mut ControlChannel, addr: SocketAddr) -> Result<Hello> {
    let line: serde_json::Value = ch.recv().map_err(|e| {
        if format!("{e:#}").contains("closed the control connection") {
            peer(format!("the peer at {addr} closed the connection before greeting: it does not allow this address (--allow), is overloaded, or is not wulf"))
        } else {
            peer(format!("the peer at {addr} did not greet as wulf: {e:#}"))
        }
    })?;
    if let Ok(Reply::Error { message }) = serde_json::from_value::<Reply>(line.clone()) {
        return Err(peer(format!(
            "the peer at {addr} refused this connection: {message}"
        )));
    }
    serde_json::from_value(line).map_err(|e| {
        peer(format!(
            "the peer at {addr} did not greet as wulf: not a wulf control message ({e})"
        ))
    })
}

/// The challenge-response after the Hellos (see [`super::auth`]); whether
/// both ends proved the secret.
fn authenticate(
    ch: &mut ControlChannel,
    addr: SocketAddr,
    secret: Option<&Secret>,
    sink: Option<SinkAsk>,
) -> Result<bool> {
    let server_nonce = match ch.recv::<Reply>().map_err(as_peer)? {
        Reply::Challenge { nonce, .. } => nonce,
        other => return Err(unexpected(addr, other)),
    };
    let our_nonce = random_hex()?;
    let proof = secret.map(|s| s.prove(CLIENT_ROLE, &our_nonce, &server_nonce));
    send(
        ch,
        addr,
        &Request::Auth {
            nonce: our_nonce.clone(),
            proof,
            sink,
        },
    )?;
    let server_proof = match ch.recv::<Reply>().map_err(as_peer)? {
        Reply::Welcome { proof } => proof,
        Reply::Busy => {
            return Err(peer(format!(
                "the peer at {addr} is busy with another client; try again later"
            )))
        }
        other => return Err(unexpected(addr, other)),
    };
    let Some(secret) = secret else {
        return Ok(false);
    };
    match server_proof {
        Some(p) if secret.verify(SERVER_ROLE, &server_nonce, &our_nonce, &p) => Ok(true),
        Some(_) => Err(peer(format!(
            "the server at {addr} does not know the shared secret: it is not the server you meant"
        ))),
        None => Err(peer(format!(
            "the server at {addr} runs without a shared secret, so it cannot prove it is yours; start it with --secret-file (or WULF_SECRET), or run this client without one"
        ))),
    }
}

/// Longest wait for the error line of a peer that closed the connection.
const WHY_CLOSED_WAIT: Duration = Duration::from_secs(1);

/// Send `msg` to the peer at `addr`. When it fails because the peer ended
/// the connection, what the peer said before ending it (an error line
/// saying why, waiting in the receive buffer) is the error, not the
/// broken pipe.
fn send<T: serde::Serialize>(ch: &mut ControlChannel, addr: SocketAddr, msg: &T) -> Result<()> {
    let Err(e) = ch.send(msg) else {
        return Ok(());
    };
    let before = ch.stream().read_timeout().ok().flatten();
    let _ = ch.stream().set_read_timeout(Some(WHY_CLOSED_WAIT));
    let said = ch.recv::<Reply>();
    let _ = ch.stream().set_read_timeout(before);
    match said {
        Ok(Reply::Error { message }) => Err(unexpected(addr, Reply::Error { message })),
        _ => Err(as_peer(e)),
    }
}

fn as_peer(e: anyhow::Error) -> anyhow::Error {
    peer(format!("peer failed: {e:#}"))
}

fn unexpected(addr: SocketAddr, reply: Reply) -> anyhow::Error {
    match reply {
        Reply::Error { message } => peer(format!("the peer at {addr} refused: {message}")),
        other => peer(format!(
            "the peer at {addr} answered out of turn: {other:?}"
        )),
    }
}

/// Largest last-level cache the peer's `--nocache` pools are allowed for
/// when the client cannot know the peer's (each pool spans twice it).
const NOCACHE_LLC_ALLOWANCE_BYTES: u64 = 1 << 30;
/// Slowest rate at which a loaded machine is assumed to fault in and fill
/// fresh memory (measured here: about 100 MB/s with the load average
/// above 10; an idle machine does 1-2 GB/s).
const POOL_TOUCH_BYTES_PER_S: u64 = 100_000_000;

/// Extra time the peer gets to set up its two message pools for `setup`
/// before it must answer Ready.
pub fn pool_setup_allowance(setup: &Setup) -> Duration {
    let per_pool = setup.max_bytes
        + if setup.nocache {
            2 * NOCACHE_LLC_ALLOWANCE_BYTES
        } else {
            0
        };
    Duration::from_secs_f64((2 * per_pool) as f64 / POOL_TOUCH_BYTES_PER_S as f64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::ChannelOptions;
    use std::net::TcpStream;

    fn setup(max_bytes: u64, nocache: bool) -> Setup {
        Setup {
            transport: "tcp".into(),
            channel: ChannelOptions::local_for_tests(crate::transport::wait::WaitMode::Spin),
            max_bytes,
            nocache,
            offset_bytes: 0,
            cpu: None,
            loads: None,
        }
    }

    /// A peer that said why and closed (with a reset, as a close with
    /// unread input makes): the client's failed send reports what it said,
    /// not a broken pipe.
    #[test]
    fn a_send_to_a_peer_that_closed_reports_its_error_line() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let server = std::thread::spawn(move || {
            let (mut s, _) = l.accept().unwrap();
            std::io::Write::write_all(
                &mut s,
                b"{\"reply\":\"error\",\"message\":\"no, thanks\"}\n",
            )
            .unwrap();
            // Wait for the client's first line, then close with it unread.
            let mut one = [0u8; 1];
            let _ = std::io::Read::read(&mut s, &mut one);
        });
        let stream = TcpStream::connect(addr).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        let mut ch = ControlChannel::new(stream).unwrap();
        let mut got = Ok(());
        for _ in 0..200 {
            got = send(&mut ch, addr, &Request::Bye);
            if got.is_err() {
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        server.join().unwrap();
        let e = format!("{:#}", got.unwrap_err());
        assert!(e.contains("refused: no, thanks"), "{e}");
    }

    /// Issue 45, item 8: an ended handshake's reason was shown as "not a
    /// wulf control message" with the raw JSON.
    #[test]
    fn a_server_that_ends_the_handshake_is_quoted() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let server = std::thread::spawn(move || {
            let (mut s, _) = l.accept().unwrap();
            let line = format!(
                "{{\"reply\":\"error\",\"message\":\"{}\"}}\n",
                crate::peer::admission::ENDED_FOR_A_NEWER
            );
            std::io::Write::write_all(&mut s, line.as_bytes()).unwrap();
        });
        let Err(e) = greet(addr, Duration::from_secs(5), None, None) else {
            panic!("greeted by a server that refused");
        };
        server.join().unwrap();
        let e = format!("{e:#}");
        assert!(
            e.contains("refused this connection: too many connections in their handshake"),
            "{e}"
        );
        assert!(!e.contains("not a wulf control message"), "{e}");
    }

    #[test]
    fn pool_setup_allowance_grows_with_the_memory_touched() {
        let small = pool_setup_allowance(&setup(8 << 20, false));
        assert!(small < Duration::from_secs(1), "{small:?}");
        let nocache = pool_setup_allowance(&setup(8 << 20, true));
        assert!(nocache > Duration::from_secs(30), "{nocache:?}");
        assert!(nocache < Duration::from_secs(60), "{nocache:?}");
    }

    #[test]
    fn peer_addresses() {
        assert_eq!(
            resolve("127.0.0.1", 9, false).unwrap().to_string(),
            "127.0.0.1:9"
        );
        assert_eq!(
            resolve("127.0.0.1:77", 9, false).unwrap().to_string(),
            "127.0.0.1:77"
        );
        assert_eq!(resolve("::1", 9, true).unwrap().to_string(), "[::1]:9");
        assert_eq!(resolve("[::1]:8", 9, true).unwrap().to_string(), "[::1]:8");
        assert!(resolve("no.such.host.invalid", 9, false).is_err());
    }
}
