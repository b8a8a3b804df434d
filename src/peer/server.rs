//! `wulf serve`: waits for clients and runs their tests, under limits the
//! server sets itself.
//!
//! Admission happens before any work: an address outside `--allow` is
//! closed at once, and the connections in their handshake hold one of a
//! bounded number of places ([`super::admission`]: at most
//! [`MAX_PENDING`] in all, [`MAX_PENDING_PER_SOURCE`] per source), so a
//! flood of idle or trickling connections costs a bounded number of
//! threads and a few kilobytes each. When the places run out an older
//! handshake is ended, first those of sources whose handshakes keep
//! ending unauthenticated ([`super::penalty`]), whose new connections are
//! then refused while the server is under pressure: a real client, whose
//! handshake takes milliseconds, gets in whatever the attackers' address
//! spread (sshd's MaxStartups and PerSourcePenalties answer the
//! same attack by dropping early and per source). Each admitted
//! connection gets its own thread; its [`session`] does the handshake
//! (version, authentication with the shared secret) by a deadline, and only
//! then takes one of the server's test slots (one for `wulf serve`) or is
//! told `busy`. A client that disconnects, stalls or sends garbage ends only
//! its own session, and never holds the server longer than the server's own
//! `--max-timeout` and `--max-session`.

use std::io::Write;
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};

pub use super::session::{session, LocalTransports, SessionPolicy, TestSlots};

pub use super::admission::{
    Admission, Pending, ENDED_FOR_A_NEWER, MAX_PENDING, MAX_PENDING_PER_SOURCE,
};

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
    crate::sys::control_mark::bind(addr).map_err(|e| {
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
        return session(stream, &opts.policy, None, &mut |_| {})
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
    let pending = Arc::new(Pending::for_server());
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

fn client(
    stream: TcpStream,
    who: SocketAddr,
    policy: &SessionPolicy,
    slots: &TestSlots,
    mut admission: Admission,
    log: bool,
) {
    let got = session(stream, policy, Some(slots), &mut |ok| {
        admission.give_back(ok)
    });
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
