//! `wulf serve`: waits for clients and runs their tests, under limits the
//! server sets itself.
//!
//! Admission happens before any work: an address outside `--allow` is
//! closed at once, and at most [`MAX_PENDING`] connections are in their
//! handshake, at most [`MAX_PENDING_PER_SOURCE`] from one address, so a
//! flood of idle or trickling connections costs a bounded number of
//! threads and a few kilobytes each. A connection beyond either limit is
//! not turned away: the *oldest* handshake of its source (or, over the
//! total, the oldest of the source holding the most places) is ended
//! instead. Refusing the newcomer, as
//! this server once did, let 16 idle connections that reconnect when
//! dropped lock every client out (0 of 20 good sweeps got in); ending the
//! oldest means a place held idle is lost to the next arrival, and a real
//! client, whose handshake takes milliseconds, is through before the
//! flood reaches it (sshd's MaxStartups and PerSourcePenalties answer the
//! same attack by dropping early and per source). Each admitted
//! connection gets its own thread; its [`session`] does the handshake
//! (version, authentication with the shared secret) by a deadline, and only
//! then takes one of the server's test slots (one for `wulf serve`) or is
//! told `busy`. A client that disconnects, stalls or sends garbage ends only
//! its own session, and never holds the server longer than the server's own
//! `--max-timeout` and `--max-session`.

use std::collections::VecDeque;
use std::io::Write;
use std::net::{IpAddr, Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context, Result};

pub use super::session::{session, LocalTransports, SessionPolicy, TestSlots};

/// Connections in their handshake at once; a newcomer beyond it ends the
/// oldest handshake.
pub const MAX_PENDING: usize = 16;

/// Connections in their handshake at once from one address; a newcomer
/// beyond it ends that address's oldest handshake.
pub const MAX_PENDING_PER_SOURCE: usize = 4;

/// Pause after a failed accept (out of file descriptors, say), so that a
/// persistent failure does not spin the CPU or flood the log.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);

/// Settings of `wulf serve`.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// Address to listen on.
    pub bind: IpAddr,
    /// Control port (0: any free port).
    pub port: u16,
    /// What clients may do.
    pub policy: SessionPolicy,
    /// Addresses allowed to connect (`--allow`); empty: any.
    pub allow: Vec<ipnet::IpNet>,
    /// Tests at once (1 for `wulf serve`).
    pub max_tests: usize,
    /// Serve one session, then exit (the local peer of a sweep).
    pub once: bool,
    /// Print `WULF-LISTENING <port>` on stdout once listening.
    pub announce: bool,
    /// Print a line per refused or failed connection.
    pub log: bool,
}

/// Bind the control port of a server, with a clear error for a port in use.
pub fn bind(bind: IpAddr, port: u16) -> Result<TcpListener> {
    let addr = SocketAddr::new(bind, port);
    TcpListener::bind(addr).map_err(|e| {
        if e.kind() == std::io::ErrorKind::AddrInUse {
            crate::error::usage(format!(
                "port {port} on {bind} is in use (another wulf serve?); choose another with --port"
            ))
        } else {
            anyhow::Error::new(e).context(format!("cannot listen on {addr}"))
        }
    })
}

/// Run the server until killed (or after one session with `once`).
pub fn serve(opts: &ServeOptions) -> Result<()> {
    let listener = bind(opts.bind, opts.port)?;
    let port = listener.local_addr()?.port();
    if opts.announce {
        println!("WULF-LISTENING {port}");
        std::io::stdout().flush()?;
    } else {
        eprintln!(
            "wulf {} serving on {}:{port} (max message {} B, max session {}{}); Ctrl-C to stop",
            env!("CARGO_PKG_VERSION"),
            opts.bind,
            opts.policy.max_bytes,
            humantime::format_duration(opts.policy.max_session),
            if opts.policy.secret.is_some() {
                ", clients must prove the shared secret"
            } else {
                ""
            }
        );
        if let Some(w) = open_server_warning(opts) {
            eprintln!("wulf serve: warning: {w}");
        }
    }
    if opts.once {
        let (stream, who) = loop {
            let (stream, who) = listener.accept()?;
            if allowed(&opts.allow, who.ip()) {
                break (stream, who);
            }
        };
        return session(stream, &opts.policy, None, &mut || {})
            .with_context(|| format!("session with {who} failed"));
    }
    serve_on(listener, opts);
    Ok(())
}

/// The warning for a server anyone on the network can use, if it is one.
pub fn open_server_warning(opts: &ServeOptions) -> Option<String> {
    if opts.policy.secret.is_some() || opts.bind.is_loopback() {
        return None;
    }
    let who = if opts.allow.is_empty() {
        "anyone who can reach this port".to_string()
    } else {
        let nets: Vec<String> = opts.allow.iter().map(|n| n.to_string()).collect();
        format!("anyone from {}", nets.join(", "))
    };
    Some(format!(
        "no shared secret (--secret-file or WULF_SECRET): {who} can make this machine send and receive messages of up to {} bytes at full speed for up to {} per test, using its CPU and network",
        opts.policy.max_bytes,
        humantime::format_duration(opts.policy.max_session)
    ))
}

/// Whether `ip` may connect under `--allow`.
pub fn allowed(allow: &[ipnet::IpNet], ip: IpAddr) -> bool {
    let ip = crate::sys::path::plain_ip(ip);
    allow.is_empty() || allow.iter().any(|n| n.contains(&ip))
}

/// Accept clients on `listener` forever (the accept loop of `wulf serve`
/// and of a cluster agent).
pub fn serve_on(listener: TcpListener, opts: &ServeOptions) {
    let pending = Arc::new(Pending::default());
    let slots = TestSlots::new(opts.max_tests.max(1));
    let log = opts.log;
    for conn in listener.incoming() {
        let stream = match conn {
            Ok(s) => s,
            Err(e) => {
                if log {
                    eprintln!("wulf serve: accept failed: {e}");
                }
                std::thread::sleep(ACCEPT_BACKOFF);
                continue;
            }
        };
        let who = match stream.peer_addr() {
            Ok(a) => a,
            Err(_) => continue,
        };
        if !allowed(&opts.allow, who.ip()) {
            if log {
                eprintln!("wulf serve: refused {who}: not in --allow");
            }
            continue;
        }
        let Some(admission) = Pending::admit(&pending, &stream, who.ip(), log) else {
            // Dropping the stream closes it: no thread, no allocation.
            continue;
        };
        let policy = opts.policy.clone();
        let slots = slots.clone();
        let spawned = std::thread::Builder::new()
            .name("wulf-session".into())
            .spawn(move || client(stream, who, &policy, &slots, admission, log));
        if let Err(e) = spawned {
            // The closure (and with it the stream and the admission) is
            // dropped: the connection closes and its place is free again.
            if log {
                eprintln!("wulf serve: cannot start a session for {who}: {e}");
            }
        }
    }
}

/// The connections in their handshake, oldest first: an id, the source
/// address, and a handle to end the connection (`wulf matrix`'s
/// coordinator admits its agents' connections with it too).
#[derive(Default)]
pub struct Pending {
    entries: Mutex<VecDeque<(u64, IpAddr, TcpStream)>>,
    next_id: std::sync::atomic::AtomicU64,
    /// Places in all and per source, when not [`MAX_PENDING`] and
    /// [`MAX_PENDING_PER_SOURCE`].
    limits: Option<(usize, usize)>,
    /// The line an ended handshake is told (its protocol's error message);
    /// None: `wulf serve`'s [`super::protocol::Reply::Error`].
    refusal: Option<Vec<u8>>,
}

impl Pending {
    /// Handshake places with other limits than `wulf serve`'s: `total` in
    /// all, `per_source` from one address (a coordinator expecting many
    /// agents at once, all of them from this machine's loopback when
    /// simulated).
    pub fn with_limits(total: usize, per_source: usize) -> Pending {
        Pending {
            limits: Some((total.max(1), per_source.max(1))),
            ..Pending::default()
        }
    }

    /// The same, telling an ended handshake `line` (a whole message of the
    /// protocol spoken on these connections, newline included) instead of
    /// `wulf serve`'s error reply.
    pub fn with_refusal(self, line: Vec<u8>) -> Pending {
        Pending {
            refusal: Some(line),
            ..self
        }
    }

    /// What an ended handshake is told.
    fn refusal_line(&self) -> Vec<u8> {
        if let Some(l) = &self.refusal {
            return l.clone();
        }
        let mut l = serde_json::to_vec(&super::protocol::Reply::Error {
            message: ENDED_FOR_A_NEWER.to_string(),
        })
        .unwrap_or_default();
        l.push(b'\n');
        l
    }

    /// Take a place for `stream` from `ip`, ending the oldest handshake of
    /// its source or of all when a limit is reached (see the module
    /// notes); `None` when no handle to it can be made (out of
    /// descriptors: the connection is closed).
    pub fn admit(
        pending: &Arc<Pending>,
        stream: &TcpStream,
        ip: IpAddr,
        log: bool,
    ) -> Option<Admission> {
        let handle = stream.try_clone().ok()?;
        let id = pending
            .next_id
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let (max, per_source) = pending
            .limits
            .unwrap_or((MAX_PENDING, MAX_PENDING_PER_SOURCE));
        let mut entries = pending.entries.lock().unwrap_or_else(|e| e.into_inner());
        let count = |ip: IpAddr| entries.iter().filter(|e| e.1 == ip).count();
        let victim = if count(ip) >= per_source {
            entries.iter().position(|e| e.1 == ip)
        } else if entries.len() >= max {
            // The oldest handshake of the source holding the most places:
            // a flood from many addresses ends its own connections before
            // a client's single one.
            let heaviest = entries.iter().map(|e| e.1).max_by_key(|&ip| count(ip));
            heaviest.and_then(|h| entries.iter().position(|e| e.1 == h))
        } else {
            None
        };
        if let Some(k) = victim.and_then(|k| entries.remove(k)) {
            // Told why (issue 26: refused handshakes closed without a
            // word), without waiting: a line fits the send buffer, and a
            // full one means a client that reads nothing anyway.
            let line = pending.refusal_line();
            let _ = socket2::SockRef::from(&k.2).send_with_flags(&line, libc::MSG_DONTWAIT);
            // Its session's next read fails at once and the thread ends;
            // its admission then finds its entry gone.
            let _ = k.2.shutdown(Shutdown::Write);
            let _ = k.2.shutdown(Shutdown::Both);
            if log {
                eprintln!(
                    "wulf serve: ended a handshake from {} to admit a newer one",
                    k.1
                );
            }
        }
        entries.push_back((id, ip, handle));
        Some(Admission(Some((Arc::clone(pending), id))))
    }

    fn release(&self, id: u64) {
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        entries.retain(|e| e.0 != id);
    }
}

/// Why a handshake was ended by the server (the message it is told).
pub const ENDED_FOR_A_NEWER: &str = "too many connections in their handshake: \
     this one, the oldest of its address (or of the busiest), was ended to admit a newer one";

/// A connection's place among those in their handshake, given back once.
pub struct Admission(Option<(Arc<Pending>, u64)>);

impl Admission {
    fn release(&mut self) {
        if let Some((p, id)) = self.0.take() {
            p.release(id);
        }
    }
}

impl Drop for Admission {
    fn drop(&mut self) {
        self.release();
    }
}

fn client(
    stream: TcpStream,
    who: SocketAddr,
    policy: &SessionPolicy,
    slots: &TestSlots,
    mut admission: Admission,
    log: bool,
) {
    let got = session(stream, policy, Some(slots), &mut || admission.release());
    if let Err(e) = got {
        if log {
            eprintln!("wulf serve: session with {who} ended: {e:#}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allow_lists_match_networks_and_mapped_addresses() {
        let allow: Vec<ipnet::IpNet> = vec![
            "10.0.0.0/8".parse().unwrap(),
            "192.168.1.5/32".parse().unwrap(),
        ];
        assert!(allowed(&allow, "10.1.2.3".parse().unwrap()));
        assert!(allowed(&allow, "192.168.1.5".parse().unwrap()));
        assert!(!allowed(&allow, "192.168.1.6".parse().unwrap()));
        assert!(allowed(&allow, "::ffff:10.0.0.1".parse().unwrap()));
        assert!(!allowed(&allow, "::1".parse().unwrap()));
        assert!(allowed(&[], "203.0.113.9".parse().unwrap()));
    }
}
