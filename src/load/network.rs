//! `--load network[:RATE]`: a competing TCP stream on loopback, through
//! the same kernel network stack (and softirq work) as a local sweep, at
//! most RATE bit/s or unlimited.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::{record, LoadRecord, Workers};

/// Bytes per write.
const CHUNK_BYTES: usize = 64 << 10;
/// How often a blocked read or write wakes up to look at the stop flag.
const POLL: Duration = Duration::from_millis(50);

/// Start a sender and a receiver thread joined by a loopback connection.
pub(super) fn start(rate_bits_per_s: Option<u64>) -> anyhow::Result<(Workers, LoadRecord)> {
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
        let mut s = sender;
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
                Ok(n) => sent += n as u64,
                Err(e) if is_timeout(&e) => {}
                Err(_) => break,
            }
        }
        let _ = s.shutdown(std::net::Shutdown::Both);
    })?;
    let mut r = record("network", vec![None, None]);
    r.rate_limit_bits_per_s = rate_bits_per_s;
    r.path = Some(format!("loopback tcp {addr}"));
    Ok((w, r))
}

fn is_timeout(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::WouldBlock
            | std::io::ErrorKind::TimedOut
            | std::io::ErrorKind::Interrupted
    )
}
