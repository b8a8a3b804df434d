//! `wulf serve`: waits for clients and runs one test at a time.
//!
//! The accept loop never blocks on a client: each connection gets its own
//! thread, and a connection that arrives while a test runs is told `busy`
//! and closed. A client that disconnects, stalls (every read has a timeout)
//! or sends garbage ends only its own session. Message sizes are checked
//! against `--max-size` before anything is allocated.

use std::io::Write;
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context, Result};

use super::protocol::{ControlChannel, Hello, Reply, Request, Setup, MAGIC};
use crate::sweep::loops::{server_block, Pools};
use crate::sys::{pin_current_thread, Host};
use crate::transport;

/// Longest wait for a client's next control message.
const CONTROL_TIMEOUT: Duration = Duration::from_secs(30);

/// Settings of `wulf serve`.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// Address to listen on.
    pub bind: IpAddr,
    /// Control port (0: any free port).
    pub port: u16,
    /// Largest message a client may ask for, bytes.
    pub max_bytes: u64,
    /// Serve one session, then exit (the local peer of a sweep).
    pub once: bool,
    /// Print `WULF-LISTENING <port>` on stdout once listening.
    pub announce: bool,
}

/// Run the server until killed (or after one session with `once`).
pub fn serve(opts: &ServeOptions) -> Result<()> {
    let addr = SocketAddr::new(opts.bind, opts.port);
    let listener = TcpListener::bind(addr).map_err(|e| {
        if e.kind() == std::io::ErrorKind::AddrInUse {
            crate::error::usage(format!(
                "port {} on {} is in use (another wulf serve?); choose another with --port",
                opts.port, opts.bind
            ))
        } else {
            anyhow::Error::new(e).context(format!("cannot listen on {addr}"))
        }
    })?;
    let port = listener.local_addr()?.port();
    if opts.announce {
        println!("WULF-LISTENING {port}");
        std::io::stdout().flush()?;
    } else {
        eprintln!(
            "wulf {} serving on {}:{port} (max message {} B); Ctrl-C to stop",
            env!("CARGO_PKG_VERSION"),
            opts.bind,
            opts.max_bytes
        );
    }
    let busy = Arc::new(AtomicBool::new(false));
    for conn in listener.incoming() {
        let stream = match conn {
            Ok(s) => s,
            Err(e) => {
                eprintln!("wulf serve: accept failed: {e}");
                continue;
            }
        };
        let who = stream
            .peer_addr()
            .map(|a| a.to_string())
            .unwrap_or_else(|_| "?".into());
        if opts.once {
            return session(stream, opts.max_bytes)
                .with_context(|| format!("session with {who} failed"));
        }
        if busy.swap(true, Ordering::AcqRel) {
            std::thread::spawn(move || refuse_busy(stream));
            continue;
        }
        let busy = Arc::clone(&busy);
        let max_bytes = opts.max_bytes;
        std::thread::spawn(move || {
            if let Err(e) = session(stream, max_bytes) {
                eprintln!("wulf serve: session with {who} ended: {e:#}");
            }
            busy.store(false, Ordering::Release);
        });
    }
    Ok(())
}

fn refuse_busy(stream: TcpStream) {
    let _ = stream.set_write_timeout(Some(Duration::from_secs(2)));
    let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
    if let Ok(mut ch) = ControlChannel::new(stream) {
        // Read the client's Hello first: closing with unread data would
        // reset the connection and the client might never see "busy".
        let _ = ch.send(&Hello::ours());
        let _ = ch.recv::<Hello>();
        let _ = ch.send(&Reply::Busy);
    }
}

/// One client's test, start to end, on an accepted control connection
/// (also the peer side of a job a transport launched itself).
pub fn session(stream: TcpStream, max_bytes: u64) -> Result<()> {
    stream.set_read_timeout(Some(CONTROL_TIMEOUT))?;
    stream.set_write_timeout(Some(CONTROL_TIMEOUT))?;
    let local_ip = stream.local_addr()?.ip();
    let client_ip = stream.peer_addr()?.ip();
    let mut ch = ControlChannel::new(stream)?;
    ch.send(&Hello::ours())?;
    let hello: Hello = ch.recv()?;
    let ours = Hello::ours();
    if hello.magic != MAGIC || hello.tool_version != ours.tool_version {
        let message = format!(
            "version mismatch: the client runs wulf {}, this server runs wulf {}",
            hello.tool_version, ours.tool_version
        );
        ch.send(&Reply::Error {
            message: message.clone(),
        })?;
        bail!(message);
    }
    ch.send(&Reply::Welcome)?;
    let setup = match ch.recv::<Request>()? {
        Request::Setup(s) => s,
        other => bail!("expected a setup, got {other:?}"),
    };
    match run_test(&mut ch, &setup, max_bytes, local_ip, client_ip) {
        Ok(()) => Ok(()),
        Err(e) => {
            let _ = ch.send(&Reply::Error {
                message: format!("{e:#}"),
            });
            Err(e)
        }
    }
}

fn run_test(
    ch: &mut ControlChannel,
    setup: &Setup,
    max_bytes: u64,
    local_ip: IpAddr,
    client_ip: IpAddr,
) -> Result<()> {
    if setup.max_bytes > max_bytes {
        bail!(
            "messages of {} bytes exceed this server's --max-size of {max_bytes} bytes",
            setup.max_bytes
        );
    }
    let transport = transport::find(&setup.transport).with_context(|| {
        format!(
            "this server does not know the transport '{}'",
            setup.transport
        )
    })?;
    if let Err(why) = transport.availability() {
        bail!(
            "transport {} is unavailable on the server: {why}",
            setup.transport
        );
    }
    let cpu = setup.cpu.filter(|&c| pin_current_thread(c).is_ok());
    let listener = transport.listen(&setup.channel, local_ip)?;
    ch.send(&Reply::Listening {
        description: listener.describe(),
        // With the interface towards the client: a shaper on this side may
        // be the slower end of the path.
        host: Host::probe().with_interface_for_peer(client_ip),
    })?;
    let mut conn = listener.accept(setup.channel.timeout())?;
    let host = Host::probe();
    let mut pools = Pools::new(
        setup.max_bytes,
        setup.offset_bytes,
        setup.nocache,
        host.llc_bytes,
    );
    ch.send(&Reply::Ready {
        settings: conn.settings,
        warnings: conn.warnings,
        cpu,
    })?;
    loop {
        match ch.recv::<Request>()? {
            Request::Block {
                mode,
                kind,
                bytes,
                repeats,
            } => {
                if bytes > setup.max_bytes {
                    bail!(
                        "block of {bytes} bytes exceeds the announced maximum {}",
                        setup.max_bytes
                    );
                }
                let m = server_block(
                    conn.endpoint.as_mut(),
                    &mut pools,
                    mode,
                    kind,
                    bytes,
                    repeats,
                )
                .context("data channel failed")?;
                ch.send(&Reply::Done {
                    user_ns: m.cpu.user.as_nanos() as u64,
                    sys_ns: m.cpu.system.as_nanos() as u64,
                    elapsed_ns: m.elapsed_ns,
                })?;
            }
            Request::Bye => return Ok(()),
            Request::Setup(_) => bail!("a second setup in one session"),
        }
    }
}
