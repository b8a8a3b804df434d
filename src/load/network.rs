//! `--load network[:RATE]`: a competing TCP stream, at most RATE bit/s or
//! unlimited. With a [`NetworkTarget`] (the peer's sink, `--peer`, and so
//! `--lab`'s node2 as well) it crosses the path being measured; without
//! one it runs on loopback, through the same kernel network stack (and
//! softirq work) as a local sweep.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::{record, LoadRecord, NetworkTarget, Workers};

/// Bytes per write.
const CHUNK_BYTES: usize = 64 << 10;
/// How often a blocked read or write wakes up to look at the stop flag.
const POLL: Duration = Duration::from_millis(50);

/// Start the stream: a sender thread into `target` when given, else a
/// sender and a receiver thread joined by a loopback connection.
pub(super) fn start(
    rate_bits_per_s: Option<u64>,
    target: Option<NetworkTarget>,
) -> anyhow::Result<(Workers, LoadRecord)> {
    if let Some(t) = target {
        return start_to(rate_bits_per_s, t);
    }
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let addr = listener.local_addr()?;
    let sender = TcpStream::connect_timeout(&addr, Duration::from_secs(2))?;
    let (receiver, _) = listener.accept()?;
    for s in [&sender, &receiver] {
        s.set_read_timeout(Some(POLL))?;
        s.set_write_timeout(Some(POLL))?;
        s.set_nodelay(true)?;
    }
    let mut w = Workers::new();
    w.spawn("wulf-load-net-rx".into(), move |stop, count| {
        let mut s = receiver;
        let mut buf = vec![0u8; CHUNK_BYTES];
        while !stop.load(Ordering::Relaxed) {
            match s.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    count.fetch_add(n as u64, Ordering::Relaxed);
                }
                Err(e) if is_timeout(&e) => {}
                Err(_) => break,
            }
        }
    })?;
    w.spawn("wulf-load-net-tx".into(), move |stop, _| {
        send(sender, rate_bits_per_s, stop, None)
    })?;
    let mut r = record("network", vec![None, None]);
    r.rate_limit_bits_per_s = rate_bits_per_s;
    r.path = Some(format!("loopback tcp {addr}"));
    Ok((w, r))
}

/// One sender thread into the target's stream; its count is the bytes
/// sent (the receiver is the peer's). The target's session is dropped
/// after the stream is shut down, so the peer's sink ends with it.
fn start_to(
    rate_bits_per_s: Option<u64>,
    t: NetworkTarget,
) -> anyhow::Result<(Workers, LoadRecord)> {
    t.stream.set_read_timeout(Some(POLL))?;
    t.stream.set_write_timeout(Some(POLL))?;
    t.stream.set_nodelay(true)?;
    let mut w = Workers::new();
    let (stream, keep) = (t.stream, t.keep);
    w.spawn("wulf-load-net-tx".into(), move |stop, count| {
        send(stream, rate_bits_per_s, stop, Some(count));
        drop(keep);
    })?;
    let mut r = record("network", vec![None]);
    r.rate_limit_bits_per_s = rate_bits_per_s;
    r.path = Some(t.path);
    Ok((w, r))
}

/// Write into `s` until stopped or the stream fails, paced to the rate;
/// bytes sent added to `count` when given.
fn send(
    mut s: TcpStream,
    rate_bits_per_s: Option<u64>,
    stop: &std::sync::atomic::AtomicBool,
    count: Option<&std::sync::atomic::AtomicU64>,
) {
    {
        let buf = vec![0x5au8; CHUNK_BYTES];
        let t0 = Instant::now();
        let mut sent = 0u64;
        while !stop.load(Ordering::Relaxed) {
            if let Some(rate) = rate_bits_per_s {
                // Pace: never ahead of rate * elapsed; sleep off the excess
                // in short naps so a stop is seen quickly.
                let allowed = rate as f64 / 8.0 * t0.elapsed().as_secs_f64();
                if sent as f64 > allowed {
                    let ahead_s = (sent as f64 - allowed) / (rate as f64 / 8.0);
                    std::thread::sleep(Duration::from_secs_f64(ahead_s).min(POLL));
                    continue;
                }
            }
            match s.write(&buf) {
                Ok(n) => {
                    sent += n as u64;
                    if let Some(c) = count {
                        c.fetch_add(n as u64, Ordering::Relaxed);
                    }
                }
                Err(e) if is_timeout(&e) => {}
                Err(_) => break,
            }
        }
        let _ = s.shutdown(std::net::Shutdown::Both);
    }
}

fn is_timeout(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::WouldBlock
            | std::io::ErrorKind::TimedOut
            | std::io::ErrorKind::Interrupted
    )
}
