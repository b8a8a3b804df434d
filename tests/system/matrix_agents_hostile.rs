//! Hostile clients against a matrix's agents (issue 45 item 11): each
//! agent serves the other agents' measuring sessions on a port of its own
//! (`wulf serve`'s code, open only to clients that prove the run's secret).
//! Idle connections from many loopback addresses, each reconnecting when
//! dropped, and garbage senders, all aimed at those ports while the matrix
//! measures: every cell is still measured, the run ends on its own, and
//! the agents' threads and descriptors stay bounded. Every wait is
//! bounded; the only traffic is to loopback.

use crate::common;

use std::collections::HashSet;
use std::io::{ErrorKind, Read, Write};
use std::net::{IpAddr, SocketAddr, TcpStream};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{stderr, tempdir, wulf};

/// Idle holders per agent, each from its own loopback address.
const HOLDERS: u8 = 60;

/// The pids of the agents of this run (their command lines name one of
/// `hosts` after `--name` and a coordinator), once `n` run (at most 30 s).
fn agents(hosts: &[String], n: usize) -> Vec<u32> {
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(30) {
        let found: Vec<u32> = std::fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .filter_map(|e| {
                let pid: u32 = e.file_name().to_str()?.parse().ok()?;
                let cmd = std::fs::read(e.path().join("cmdline")).ok()?;
                let words: Vec<&[u8]> = cmd.split(|&b| b == 0).collect();
                let named = words
                    .windows(2)
                    .any(|w| w[0] == b"--name" && hosts.iter().any(|h| w[1] == h.as_bytes()));
                let agent = words.contains(&&b"--coordinator"[..]);
                (named && agent).then_some(pid)
            })
            .collect();
        if found.len() >= n {
            return found;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("{n} agents never started");
}

/// The TCP ports process `pid` listens on (its socket descriptors matched
/// with the LISTEN entries of /proc/PID/net/tcp).
fn listening_ports(pid: u32) -> Vec<u16> {
    let inodes: HashSet<String> = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|d| {
            d.flatten()
                .filter_map(|e| {
                    let link = std::fs::read_link(e.path()).ok()?;
                    let l = link.to_str()?;
                    Some(l.strip_prefix("socket:[")?.strip_suffix(']')?.to_string())
                })
                .collect()
        })
        .unwrap_or_default();
    let table = std::fs::read_to_string(format!("/proc/{pid}/net/tcp")).unwrap_or_default();
    table
        .lines()
        .skip(1)
        .filter_map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            // local_address is f[1] (ADDR:PORT in hex), st f[3], inode f[9].
            let listening = f.get(3) == Some(&"0A");
            let ours = f.get(9).is_some_and(|i| inodes.contains(*i));
            let port = f.get(1)?.rsplit_once(':')?.1;
            (listening && ours).then(|| u16::from_str_radix(port, 16).ok())?
        })
        .collect()
}

/// A TCP connection to `to` from the loopback address `from`.
fn connect_from(from: [u8; 4], to: SocketAddr) -> Option<TcpStream> {
    let s = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).ok()?;
    s.bind(&SocketAddr::new(IpAddr::from(from), 0).into())
        .ok()?;
    s.connect_timeout(&to.into(), Duration::from_secs(2)).ok()?;
    let s: TcpStream = s.into();
    s.set_nonblocking(true).ok()?;
    Some(s)
}

/// Hold [`HOLDERS`] idle connections to `port`, each from its own address,
/// reconnecting any the server drops, and send garbage on every tenth,
/// until `stop` (or 120 s). Returns how many connections were made.
fn hold(port: u16, agent: u8, stop: Arc<AtomicBool>) -> usize {
    let to = SocketAddr::from(([127, 0, 0, 1], port));
    let from = |k: u8| [127, 3, agent, k + 1];
    let mut held: Vec<Option<TcpStream>> =
        (0..HOLDERS).map(|k| connect_from(from(k), to)).collect();
    let mut made = held.iter().flatten().count();
    let start = Instant::now();
    while !stop.load(Ordering::Relaxed) && start.elapsed() < Duration::from_secs(120) {
        for (k, slot) in held.iter_mut().enumerate() {
            let closed = match slot {
                None => true,
                Some(s) => {
                    if k % 10 == 0 {
                        let _ = s.write(b"{\"garbage\": [[[[\n");
                    }
                    let mut buf = [0u8; 512];
                    match s.read(&mut buf) {
                        Ok(0) => true,
                        Ok(_) => false,
                        Err(e) => e.kind() != ErrorKind::WouldBlock,
                    }
                }
            };
            if closed {
                *slot = connect_from(from(k as u8), to);
                made += usize::from(slot.is_some());
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    made
}

#[test]
fn agents_flooded_by_idle_clients_from_many_addresses_still_measure_every_cell() {
    let _s = common::serial();
    let dir = tempdir();
    let json = dir.path().join("m.json");
    let tag = format!("agentflood{}x", std::process::id());
    let hosts: Vec<String> = (1..=2).map(|k| format!("{tag}{k}")).collect();
    let mut child = wulf(&[
        "matrix",
        "--launch",
        "local",
        "--hosts",
        &hosts.join(","),
        "--budget",
        "6s",
        "--bandwidth-size",
        "64Ki",
        "--timeout",
        "10s",
        "--quiet",
        "--json",
        json.to_str().unwrap(),
    ])
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    let pids = agents(&hosts, 2);
    // Each agent's serving port, once it listens.
    let start = Instant::now();
    let mut ports: Vec<(u32, u16)> = Vec::new();
    while ports.len() < pids.len() && start.elapsed() < Duration::from_secs(30) {
        ports = pids
            .iter()
            .filter_map(|&p| listening_ports(p).first().map(|&port| (p, port)))
            .collect();
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(ports.len(), 2, "the agents never listened: {ports:?}");
    let stop = Arc::new(AtomicBool::new(false));
    let holders: Vec<_> = ports
        .iter()
        .enumerate()
        .map(|(k, &(_, port))| {
            let stop = stop.clone();
            std::thread::spawn(move || hold(port, k as u8, stop))
        })
        .collect();
    // Sample the agents while the flood holds, to the run's end.
    let (mut threads, mut fds) = (0usize, 0usize);
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() && start.elapsed() < Duration::from_secs(120) {
        for &(pid, _) in &ports {
            let count = |d: String| std::fs::read_dir(d).map_or(0, |r| r.count());
            threads = threads.max(count(format!("/proc/{pid}/task")));
            fds = fds.max(count(format!("/proc/{pid}/fd")));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    stop.store(true, Ordering::Relaxed);
    let made: usize = holders.into_iter().map(|h| h.join().unwrap()).sum();
    if child.try_wait().unwrap().is_none() {
        let _ = child.kill();
        panic!("the flooded matrix did not end within 120 s");
    }
    let out = child.wait_with_output().unwrap();
    eprintln!("{made} hostile connections; an agent at most {threads} threads, {fds} descriptors");
    assert!(
        made >= usize::from(HOLDERS),
        "only {made} hostile connections made"
    );
    let r = wulf::result::matrix::read_matrix_result(&json).unwrap();
    let errors: Vec<_> = r.cells.iter().filter_map(|c| c.error.as_deref()).collect();
    assert_eq!(out.status.code(), Some(0), "{}{errors:?}", stderr(&out));
    assert!(r.complete);
    let rounds: Vec<_> = r.cells.iter().filter(|c| !c.remeasure).collect();
    assert_eq!(rounds.len(), 2);
    for c in rounds {
        assert!(
            c.error.is_none(),
            "cell {} -> {}: {:?}",
            c.from,
            c.to,
            c.error
        );
        assert!(
            c.latency.is_some() && c.bandwidth.is_some(),
            "cell {} -> {}",
            c.from,
            c.to
        );
    }
    // The serve's handshake places (16) and a few sessions, each a thread
    // and a few descriptors; one per connection would be over 60 each.
    assert!(threads <= 48, "{threads} threads");
    assert!(fds <= 120, "{fds} descriptors");
}
