//! The sink of `--load network` with `--peer`: the network load's stream
//! goes to the peer's `wulf serve`, so that it crosses the path being
//! measured instead of loopback.
//!
//! A sink is a session of its own, authenticated like every session, asked
//! for in the client's `Auth` ([`SinkAsk`]) so that it never takes the
//! server's one test slot (the sweep's own session needs it). The server
//! runs it only with `--allow-load`, reads at most [`MAX_SINK_BITS_PER_S`]
//! (or the client's lower rate) for at most the client's stated seconds,
//! never beyond its `--max-session`, accepts one stream from the client's
//! address alone, and ends it when the client closes it (its test ended),
//! when the control connection goes, or at the deadline, whichever is first.

use std::io::Read;
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use super::auth::Secret;
use super::protocol::{ControlChannel, Reply, SinkAsk};
use super::watchdog::Watchdog;

/// Fastest a server reads a client's sink, bit/s: the load may fill a
/// 100 Gbit/s path, but a client cannot ask for more than that of it.
pub const MAX_SINK_BITS_PER_S: u64 = 100_000_000_000;

/// Longest a sink runs, seconds, whatever the client states (and never
/// beyond the server's `--max-session`).
pub const MAX_SINK_SECONDS: u64 = 3600;

/// How long the server waits for the client's stream to connect.
const ACCEPT_WAIT: Duration = Duration::from_secs(10);

/// How often a blocked read wakes to look at the deadline and the control
/// connection.
const POLL: Duration = Duration::from_millis(50);

/// Bytes per read.
const CHUNK_BYTES: usize = 64 << 10;

/// Most sinks a server runs at once: a client's load and a spare, so that
/// clients opening sinks in a loop cannot multiply the server's traffic.
pub const MAX_SINKS: usize = 2;

/// A server's count of running sinks (shared by its sessions).
#[derive(Debug, Clone, Default)]
pub struct SinkPlaces(Arc<AtomicUsize>);

/// A running sink's place among [`MAX_SINKS`]; given back on drop.
pub struct SinkPlace(Arc<AtomicUsize>);

impl Drop for SinkPlace {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl SinkPlaces {
    /// A place, or None when [`MAX_SINKS`] run already.
    fn take(&self) -> Option<SinkPlace> {
        let n = self.0.fetch_add(1, Ordering::SeqCst);
        // Made first, so that a refusal gives its count back on drop.
        let place = SinkPlace(self.0.clone());
        (n < MAX_SINKS).then_some(place)
    }
}

/// Admit an authenticated client's sink, or refuse it on `ch` saying why:
/// loads are the server's owner's decision (`--allow-load`), and `places`
/// (None: a local peer's, unlimited) bounds how many run at once.
pub(super) fn admit(
    ch: &mut ControlChannel,
    allow_load: bool,
    places: Option<&SinkPlaces>,
) -> Result<Option<SinkPlace>> {
    let refusal = if !allow_load {
        Some(
            "this server does not take network loads from its clients (start it with --allow-load)"
                .to_string(),
        )
    } else {
        match places.map(SinkPlaces::take) {
            Some(None) => Some(format!(
                "this server already runs {MAX_SINKS} network loads for its clients"
            )),
            Some(place) => return Ok(place),
            None => return Ok(None),
        }
    };
    Err(ch.refuse(refusal.unwrap_or_default()).context("refused"))
}

/// What the server grants for `ask` under a `--max-session` of
/// `max_session`: the rate and the seconds it enforces.
pub fn granted(ask: &SinkAsk, max_session: Duration) -> (u64, u64) {
    let rate = ask
        .rate_bits_per_s
        .unwrap_or(MAX_SINK_BITS_PER_S)
        .clamp(1, MAX_SINK_BITS_PER_S);
    let seconds = ask
        .seconds
        .min(MAX_SINK_SECONDS)
        .min(max_session.as_secs())
        .max(1);
    (rate, seconds)
}

/// The server's side: listen, accept the client's stream, read it within
/// the limits, then say how many bytes arrived.
pub(super) fn serve(
    ch: &mut ControlChannel,
    ask: &SinkAsk,
    max_session: Duration,
    local_ip: IpAddr,
    client_ip: IpAddr,
    dog: &Watchdog,
) -> Result<()> {
    let (rate, seconds) = granted(ask, max_session);
    let listener = TcpListener::bind(SocketAddr::new(local_ip, 0))?;
    listener.set_nonblocking(true)?;
    ch.send(&Reply::Sink {
        port: listener.local_addr()?.port(),
        rate_bits_per_s: rate,
        seconds,
    })?;
    let mut stream = accept_from(&listener, client_ip, dog)?;
    stream.set_nonblocking(false)?;
    stream.set_read_timeout(Some(POLL))?;
    let started = Instant::now();
    let end = started + Duration::from_secs(seconds);
    let bytes_per_s = rate as f64 / 8.0;
    let mut buf = vec![0u8; CHUNK_BYTES];
    let mut got = 0u64;
    // Bounded by `end`; a closed stream or control connection ends it sooner.
    while Instant::now() < end && dog.fired().is_none() {
        // Pace by reading no faster than the rate: TCP's window then holds
        // the sender back, whatever it does.
        let allowed = bytes_per_s * started.elapsed().as_secs_f64();
        if got as f64 > allowed {
            let ahead = (got as f64 - allowed) / bytes_per_s;
            std::thread::sleep(Duration::from_secs_f64(ahead).min(POLL));
            continue;
        }
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => got += n as u64,
            Err(e) if is_timeout(&e) => {}
            Err(_) => break,
        }
    }
    drop(stream);
    // The client may be gone already (its test over): best effort.
    let _ = ch.send(&Reply::SinkDone { bytes: got });
    Ok(())
}

/// The client's stream, from its address alone, within [`ACCEPT_WAIT`].
fn accept_from(listener: &TcpListener, client_ip: IpAddr, dog: &Watchdog) -> Result<TcpStream> {
    let until = Instant::now() + ACCEPT_WAIT;
    while Instant::now() < until && dog.fired().is_none() {
        match listener.accept() {
            Ok((s, from)) if from.ip() == client_ip => return Ok(s),
            // Someone else: not this client's stream; keep waiting.
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => std::thread::sleep(POLL / 5),
            Err(e) => return Err(e).context("the sink's listener failed"),
        }
    }
    bail!(
        "the client did not connect its load stream within {}",
        humantime::format_duration(ACCEPT_WAIT)
    )
}

fn is_timeout(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::WouldBlock
            | std::io::ErrorKind::TimedOut
            | std::io::ErrorKind::Interrupted
    )
}

/// A sink opened on a peer: the stream to write the load into, and the
/// session's control connection, which must stay open while it runs.
pub struct PeerSink {
    /// The load's stream to the peer's sink.
    pub stream: TcpStream,
    /// Where it goes, for the load's record.
    pub to: SocketAddr,
    /// The session: closed (dropped) with the load.
    pub control: ControlChannel,
}

/// Open a sink on the peer at `addr` (its `wulf serve` must allow loads).
pub fn open(
    addr: SocketAddr,
    secret: Option<&Secret>,
    ask: SinkAsk,
    timeout: Duration,
) -> Result<PeerSink> {
    let (mut control, _) = super::client::greet(addr, timeout, secret, Some(ask))?;
    let port = match control.recv::<Reply>()? {
        Reply::Sink { port, .. } => port,
        Reply::Error { message } => bail!("the peer at {addr} refused the network load: {message}"),
        other => bail!("the peer at {addr} answered a sink out of turn: {other:?}"),
    };
    let to = SocketAddr::new(addr.ip(), port);
    let stream = TcpStream::connect_timeout(&to, timeout)
        .with_context(|| format!("cannot connect the network load to the peer's sink {to}"))?;
    Ok(PeerSink {
        stream,
        to,
        control,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn at_most_max_sinks_run_at_once_and_each_gives_its_place_back() {
        let places = SinkPlaces::default();
        let held: Vec<SinkPlace> = (0..MAX_SINKS).map(|_| places.take().unwrap()).collect();
        assert!(places.take().is_none());
        drop(held);
        assert!(places.take().is_some());
    }

    #[test]
    fn a_sink_never_runs_beyond_the_servers_limits() {
        let ask = SinkAsk {
            rate_bits_per_s: None,
            seconds: 1_000_000,
        };
        let (rate, s) = granted(&ask, Duration::from_secs(600));
        assert_eq!((rate, s), (MAX_SINK_BITS_PER_S, 600));
        let slow = SinkAsk {
            rate_bits_per_s: Some(1_000_000),
            seconds: 5,
        };
        assert_eq!(granted(&slow, Duration::from_secs(600)), (1_000_000, 5));
        let huge = SinkAsk {
            rate_bits_per_s: Some(u64::MAX),
            seconds: 5,
        };
        assert_eq!(granted(&huge, Duration::MAX).0, MAX_SINK_BITS_PER_S);
    }
}
