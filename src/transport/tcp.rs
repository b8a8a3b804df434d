//! TCP over IPv4 or IPv6: the transport every study starts with.
//!
//! The data connection goes to the same address as the control connection,
//! on an ephemeral port the peer chooses, so no fixed port has to be free.
//! Socket buffers are requested before listen/connect (window scaling is
//! fixed at the handshake) and TCP_NODELAY is on unless `--no-nodelay`.
//! A requested MSS (TCP_MAXSEG) is also set before listen/connect: it is
//! announced in the SYN, and accepted sockets inherit it from the listener.

use std::io::{Read, Write};
use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use serde_json::{json, Value};
use socket2::{Domain, Protocol, SockAddr, Socket, Type};

use super::sockopt::{buffer_settings, request_buffers};
use super::stream_socket::StreamEndpoint;
use super::{ChannelOptions, Connected, Listener, Transport};

/// The TCP transport.
pub struct Tcp;

impl Transport for Tcp {
    fn name(&self) -> &'static str {
        "tcp"
    }

    fn layering(&self, path: super::LayersPath) -> Option<super::Layering> {
        (path != super::LayersPath::SharedMemory).then_some(super::Layering::Bottom)
    }

    fn about(&self) -> &'static str {
        "TCP stream sockets (IPv4, or IPv6 with --ipv6)"
    }

    fn availability(&self) -> Result<(), String> {
        Socket::new(Domain::IPV4, Type::STREAM, Some(Protocol::TCP))
            .map(|_| ())
            .map_err(|e| format!("cannot create a TCP socket: {e}"))
    }

    fn local_only(&self) -> bool {
        false
    }

    fn claims_nic(&self) -> bool {
        false
    }

    fn listen(&self, opts: &ChannelOptions, bind_ip: IpAddr) -> Result<Box<dyn Listener>> {
        let addr = SocketAddr::new(bind_ip, 0);
        let socket = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
        let warnings = request_buffers(&socket, opts)?;
        request_mss(&socket, opts)?;
        socket
            .bind(&addr.into())
            .with_context(|| format!("cannot bind a data socket on {bind_ip}"))?;
        socket.listen(1)?;
        let port = socket
            .local_addr()?
            .as_socket()
            .map(|a| a.port())
            .context("data socket has no port")?;
        Ok(Box::new(TcpListener {
            socket,
            port,
            token: data_token()?,
            peer: None,
            opts: opts.clone(),
            warnings,
        }))
    }

    fn connect(
        &self,
        description: &Value,
        opts: &ChannelOptions,
        peer_ip: IpAddr,
    ) -> Result<Connected> {
        let port = description
            .get("port")
            .and_then(Value::as_u64)
            .and_then(|p| u16::try_from(p).ok())
            .context("the peer sent no data port")?;
        let addr = SocketAddr::new(peer_ip, port);
        let socket = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
        let warnings = request_buffers(&socket, opts)?;
        request_mss(&socket, opts)?;
        socket
            .connect_timeout(&SockAddr::from(addr), opts.timeout())
            .with_context(|| format!("cannot open the data connection to {addr}"))?;
        // The first bytes prove the connection belongs to this test (the
        // token came over the authenticated control connection).
        let token = description
            .get("token")
            .and_then(Value::as_str)
            .and_then(crate::sys::random::from_hex::<TOKEN_BYTES>)
            .context("the peer sent no data token")?;
        (&socket)
            .write_all(&token)
            .with_context(|| format!("cannot send the data token to {addr}"))?;
        finish(socket, opts, warnings)
    }
}

/// Bytes of the per-test token that opens a data connection.
const TOKEN_BYTES: usize = 16;

/// How long an accepted connection may take to send its token.
const TOKEN_WAIT: Duration = Duration::from_secs(2);

/// A fresh random token from the kernel.
fn data_token() -> Result<[u8; TOKEN_BYTES]> {
    crate::sys::random::random_bytes().context("cannot read /dev/urandom for the data token")
}

/// Whether two addresses are one host's.
fn same_host(a: IpAddr, b: IpAddr) -> bool {
    crate::sys::path::plain_ip(a) == crate::sys::path::plain_ip(b)
}

struct TcpListener {
    socket: Socket,
    port: u16,
    /// What the data connection must send first.
    token: [u8; TOKEN_BYTES],
    /// The only address a data connection is accepted from, if set.
    peer: Option<IpAddr>,
    opts: ChannelOptions,
    warnings: Vec<String>,
}

impl Listener for TcpListener {
    fn describe(&self) -> Value {
        json!({ "port": self.port, "token": crate::sys::random::hex(&self.token) })
    }

    /// Accept the data connection of this test: from the expected peer
    /// and opening with the token. Anything else (an outsider who found
    /// the port first once got the server to measure against it) is
    /// closed, and the wait goes on until the deadline.
    fn accept(self: Box<Self>, timeout: Duration) -> Result<Connected> {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                anyhow::bail!(
                    "the other side did not open the data connection within {}",
                    humantime::format_duration(timeout)
                );
            }
            let (socket, from) = super::unix::accept_within(&self.socket, left)?;
            let from_ip = from.as_socket().map(|a| a.ip());
            if let (Some(want), Some(got)) = (self.peer, from_ip) {
                if !same_host(want, got) {
                    continue;
                }
            }
            let wait = left.min(TOKEN_WAIT).max(Duration::from_millis(1));
            socket.set_read_timeout(Some(wait))?;
            let mut got = [0u8; TOKEN_BYTES];
            if (&socket).read_exact(&mut got).is_err() || got != self.token {
                continue;
            }
            socket.set_read_timeout(None)?;
            return finish(socket, &self.opts, self.warnings);
        }
    }

    fn expect_peer(&mut self, ip: IpAddr) {
        self.peer = Some(ip);
    }

    fn abort_handle(&self) -> Option<super::AbortHandle> {
        super::AbortHandle::of(&self.socket).ok()
    }
}

/// Set TCP_MAXSEG when `opts` asks for an MSS.
fn request_mss(socket: &Socket, opts: &ChannelOptions) -> Result<()> {
    if let Some(mss) = opts.mss_bytes {
        let value = u32::try_from(mss).unwrap_or(u32::MAX);
        socket.set_mss(value).with_context(|| {
            format!("cannot set TCP_MAXSEG to {mss} bytes (Linux accepts 88 to 65535)")
        })?;
    }
    Ok(())
}

/// Whether this kernel lets a program set TCP_MAXSEG to `mss_bytes` on a
/// fresh socket of the given family, with the reason when it does not.
pub fn mss_settable(mss_bytes: u64, ipv6: bool) -> Result<(), String> {
    let domain = if ipv6 { Domain::IPV6 } else { Domain::IPV4 };
    let socket = Socket::new(domain, Type::STREAM, Some(Protocol::TCP))
        .map_err(|e| format!("cannot create a TCP socket: {e}"))?;
    let value = u32::try_from(mss_bytes).map_err(|_| "MSS too large".to_string())?;
    socket
        .set_mss(value)
        .map_err(|e| format!("TCP_MAXSEG {mss_bytes} refused: {e}"))
}

/// Common tail of both ends: options that apply after connection, and the
/// settings record.
fn finish(socket: Socket, opts: &ChannelOptions, warnings: Vec<String>) -> Result<Connected> {
    socket.set_nodelay(opts.nodelay)?;
    let mut settings = buffer_settings(&socket, opts);
    settings.insert("nodelay".into(), json!(opts.nodelay));
    settings.insert(
        "family".into(),
        json!(if socket.local_addr()?.is_ipv6() {
            "ipv6"
        } else {
            "ipv4"
        }),
    );
    // mss_bytes is what the connection uses (granted), which excludes TCP
    // options such as the 12-byte timestamps from the requested value.
    settings.insert("mss_requested_bytes".into(), json!(opts.mss_bytes));
    settings.insert("mss_bytes".into(), json!(socket.mss().ok()));
    settings.insert("busy_poll".into(), json!(opts.busy_poll));
    // The kernel copies each message into and out of socket buffers: a
    // message outgrowing a cache level costs more per byte from there.
    settings.insert(crate::result::COPIES_KEY.into(), json!(true));
    let endpoint = StreamEndpoint::new(socket, opts.timeout(), opts.busy_poll)?;
    Ok(Connected {
        endpoint: Box::new(endpoint),
        settings,
        warnings,
    })
}
