//! Ranks in separate processes, linked pair by pair by one of wulf's own
//! transports (tcp, unix, shm, cma: anything with an [`Endpoint`]).
//!
//! Every pair of ranks holds one endpoint (a full mesh, set up by
//! [`crate::launch::group`]). A message is an 8-byte header carrying its
//! length in bytes, then its bytes (an `f64` value 8 of them, an IS key 4). The header is sent
//! ([`Endpoint::send_parts`]: one writev on a socket) and received as a
//! message of its own, so that endpoints that match a receive to a send
//! (shared memory) and byte streams (sockets) both work,
//! and a receive given the wrong length fails with both lengths named
//! instead of silently desynchronising the stream.
//!
//! Why sends need care: an endpoint's `send` may block until the peer
//! receives (a socket whose buffer is full, a full shared-memory ring). So
//! [`Communicator::sendrecv_bytes`] towards one peer uses the endpoint's
//! `exchange`, which moves both directions together (header and values in
//! one message each way, as both ends do the same), and towards two
//! different peers sends from a scoped thread while this one receives.
//! The default collectives (gather to rank 0, broadcast back) send only
//! small messages to a rank that is already waiting for them.

use std::cell::RefCell;
use std::io;

use anyhow::{anyhow, ensure, Context, Result};

use super::Communicator;
use crate::error::peer;
use crate::transport::{Endpoint, SendMemory};

/// Bytes of the length header in front of every message.
const HEADER_BYTES: usize = 8;

/// Exchanges from this many bytes (header included) are built in send
/// memory the link lends, where it lends any (see
/// [`EndpointComm::exchange_on`]): shm's own single-copy threshold, below
/// which its ring is the faster way.
const LENT_MIN_BYTES: usize = crate::transport::shm::SINGLE_COPY_MIN_BYTES;

/// One rank of a process group whose pairs are linked by endpoints.
pub struct EndpointComm {
    rank: usize,
    size: usize,
    /// The transport's name, for reports.
    name: String,
    /// `links[peer]`: the endpoint to `peer` (None for ourselves, and while
    /// a `sendrecv` has lent it to its sending thread).
    links: RefCell<Vec<Option<Box<dyn Endpoint>>>>,
    /// Messages sent to ourselves and not yet received, oldest first.
    to_self: RefCell<std::collections::VecDeque<Vec<u8>>>,
    /// Header and values of an exchange, outgoing (where the link lends
    /// no send memory) and incoming.
    out_scratch: RefCell<Vec<u8>>,
    in_scratch: RefCell<Vec<u8>>,
    /// `lent[peer]`: send memory the link to `peer` lent for outgoing
    /// exchanges (see [`Self::exchange_on`]); None before the first large
    /// exchange, or where the transport lends none.
    lent: RefCell<Vec<Option<SendMemory>>>,
    /// The CPUs a helper thread (the sender of a two-peer `sendrecv`)
    /// may run on when this rank is bound to one CPU; None when unbound.
    helper_cpus: Option<nix::sched::CpuSet>,
}

impl EndpointComm {
    /// Rank `rank` of `links.len()` ranks; `links[rank]` must be None and
    /// every other entry the endpoint to that rank.
    pub fn new(rank: usize, name: &str, links: Vec<Option<Box<dyn Endpoint>>>) -> Result<Self> {
        let size = links.len();
        ensure!(rank < size, "rank {rank} outside a group of {size}");
        for (peer, link) in links.iter().enumerate() {
            ensure!(
                link.is_some() == (peer != rank),
                "rank {rank}: the link to rank {peer} is {}",
                if link.is_some() {
                    "to itself"
                } else {
                    "missing"
                }
            );
        }
        Ok(EndpointComm {
            rank,
            size,
            name: name.to_string(),
            links: RefCell::new(links),
            to_self: RefCell::default(),
            out_scratch: RefCell::default(),
            in_scratch: RefCell::default(),
            lent: RefCell::new((0..size).map(|_| None).collect()),
            helper_cpus: None,
        })
    }

    /// Lets the threads this rank starts to send while it receives run on
    /// `cpus` rather than on the one CPU the rank is bound to: bound
    /// together, a spinning receiver and its sender would take turns by
    /// time slices.
    pub fn unpin_helper_threads(&mut self, cpus: nix::sched::CpuSet) {
        self.helper_cpus = Some(cpus);
    }

    /// Takes the endpoint to `peer` out of the table (put it back with
    /// [`Self::put_back`]).
    fn take(&self, peer_rank: usize) -> Result<Box<dyn Endpoint>> {
        ensure!(
            peer_rank < self.size && peer_rank != self.rank,
            "rank {} has no link to rank {peer_rank} (group of {})",
            self.rank,
            self.size
        );
        self.links.borrow_mut()[peer_rank]
            .take()
            .ok_or_else(|| anyhow!("the link to rank {peer_rank} is in use"))
    }

    fn put_back(&self, peer_rank: usize, link: Box<dyn Endpoint>) {
        self.links.borrow_mut()[peer_rank] = Some(link);
    }

    /// One exchange of header and values together with `peer` (the halo
    /// exchanges and transposes of a kernel are this case): half the
    /// hand-offs of two exchanges, through scratch buffers that grow once
    /// and are reused. A peer sending fewer values than expected is then
    /// caught by the timeout, more by the header.
    ///
    /// A message of at least [`LENT_MIN_BYTES`] is built in send memory
    /// the link lends where it can (shm): the peer then copies it once,
    /// straight out of it, instead of through the ring chunk by chunk.
    /// That single copy needs only the reader running, where the ring
    /// needs both ends running at once for every chunk (FT's 1 MiB
    /// transposes at 2 processes took 32 hand-offs each way), and saves
    /// one of four copies, as Open MPI copies large messages once (CMA).
    /// On the busy 2-vCPU machine it was measured against the ring, FT at
    /// 2 processes alternated, and no difference could be resolved
    /// (docs/validation.md); the binding of spinning ranks was what
    /// counted there.
    fn exchange_on(
        &self,
        peer_rank: usize,
        link: &mut dyn Endpoint,
        data: &[u8],
        buf: &mut [u8],
    ) -> Result<()> {
        let total = HEADER_BYTES + data.len();
        let mut inp = self.in_scratch.borrow_mut();
        inp.resize(HEADER_BYTES + buf.len(), 0);
        let mut lent = self.lent.borrow_mut();
        let memory = &mut lent[peer_rank];
        if total >= LENT_MIN_BYTES && memory.as_ref().is_none_or(|m| m.map.len() < total) {
            // Only one loan per link at a time: give the smaller one back
            // first. Grown to a power of two, so a kernel's few sizes
            // settle after its first (untimed) pass.
            *memory = None;
            *memory = link
                .send_memory(total.next_power_of_two())
                .map_err(io_error)?;
        }
        let mut scratch;
        let out: &mut [u8] = match memory {
            Some(m) if total >= LENT_MIN_BYTES => &mut m.map[..total],
            _ => {
                scratch = self.out_scratch.borrow_mut();
                scratch.resize(total, 0);
                &mut scratch[..]
            }
        };
        out[..HEADER_BYTES].copy_from_slice(&(data.len() as u64).to_le_bytes());
        out[HEADER_BYTES..].copy_from_slice(data);
        link.exchange(out, &mut inp).map_err(io_error)?;
        let (header, values) = inp.split_at(HEADER_BYTES);
        check_header(header.try_into().expect("8 bytes"), buf.len())?;
        buf.copy_from_slice(values);
        Ok(())
    }

    /// Runs `f` on the endpoint to `peer`, naming both ranks in any error.
    fn with_link<T>(
        &self,
        peer_rank: usize,
        what: &str,
        f: impl FnOnce(&mut dyn Endpoint) -> Result<T>,
    ) -> Result<T> {
        let mut link = self.take(peer_rank)?;
        let out = f(link.as_mut());
        self.put_back(peer_rank, link);
        out.with_context(|| format!("rank {} {what} rank {peer_rank}", self.rank))
    }
}

/// Turns a dead or silent peer into wulf's peer error (exit code 3).
fn io_error(e: io::Error) -> anyhow::Error {
    peer(format!("{e}"))
}

fn check_header(header: [u8; HEADER_BYTES], expected: usize) -> Result<()> {
    let sent = u64::from_le_bytes(header);
    ensure!(
        sent == expected as u64,
        "message of {sent} bytes where {expected} were expected"
    );
    Ok(())
}

fn send_on(link: &mut dyn Endpoint, data: &[u8]) -> Result<()> {
    let header = (data.len() as u64).to_le_bytes();
    link.send_parts(&[&header, data]).map_err(io_error)
}

fn recv_on(link: &mut dyn Endpoint, buf: &mut [u8]) -> Result<()> {
    let mut header = [0u8; HEADER_BYTES];
    link.recv(&mut header).map_err(io_error)?;
    check_header(header, buf.len())?;
    link.recv(buf).map_err(io_error)
}

impl Communicator for EndpointComm {
    fn rank(&self) -> usize {
        self.rank
    }

    fn size(&self) -> usize {
        self.size
    }

    fn backend_name(&self) -> &str {
        &self.name
    }

    fn send_bytes(&self, to: usize, data: &[u8]) -> Result<()> {
        if to == self.rank {
            self.to_self.borrow_mut().push_back(data.to_vec());
            return Ok(());
        }
        self.with_link(to, "sending to", |link| send_on(link, data))
    }

    fn recv_bytes(&self, from: usize, buf: &mut [u8]) -> Result<()> {
        if from == self.rank {
            let message =
                self.to_self.borrow_mut().pop_front().ok_or_else(|| {
                    anyhow!("rank {from} waits for a message to itself never sent")
                })?;
            ensure!(
                message.len() == buf.len(),
                "message of {} bytes to itself where {} were expected",
                message.len(),
                buf.len()
            );
            buf.copy_from_slice(&message);
            return Ok(());
        }
        self.with_link(from, "receiving from", |link| recv_on(link, buf))
    }

    fn sendrecv_bytes(&self, to: usize, data: &[u8], from: usize, buf: &mut [u8]) -> Result<()> {
        if to == self.rank || from == self.rank {
            self.send_bytes(to, data)?;
            return self.recv_bytes(from, buf);
        }
        if to == from {
            return self.with_link(to, "exchanging with", |link| {
                self.exchange_on(to, link, data, buf)
            });
        }
        // Two different peers: the send may block until `to` receives,
        // which it may do only after we have received from `from`.
        let mut out = self.take(to)?;
        let mut inp = match self.take(from) {
            Ok(l) => l,
            Err(e) => {
                self.put_back(to, out);
                return Err(e);
            }
        };
        let helper_cpus = self.helper_cpus;
        let (sent, received) = std::thread::scope(|s| {
            let sender = s.spawn(|| {
                if let Some(cpus) = &helper_cpus {
                    // Best effort: a sender left on the rank's CPU is
                    // slower, not wrong.
                    let _ = nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(0), cpus);
                }
                send_on(out.as_mut(), data)
            });
            let received = recv_on(inp.as_mut(), buf);
            let sent = sender
                .join()
                .unwrap_or_else(|_| Err(anyhow!("the sending thread panicked")));
            (sent, received)
        });
        self.put_back(to, out);
        self.put_back(from, inp);
        sent.with_context(|| format!("rank {} sending to rank {to}", self.rank))?;
        received.with_context(|| format!("rank {} receiving from rank {from}", self.rank))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::{ChannelOptions, Transport, WaitMode};
    use std::net::{IpAddr, Ipv4Addr};
    use std::time::Duration;

    fn opts() -> ChannelOptions {
        ChannelOptions::local_for_tests(WaitMode::Yield)
    }

    /// Two ranks of one process linked by `t` with options `o`.
    fn linked(t: &dyn Transport, o: &ChannelOptions) -> (EndpointComm, EndpointComm) {
        let ip = IpAddr::V4(Ipv4Addr::LOCALHOST);
        let l = t.listen(o, ip).unwrap();
        let d = l.describe();
        let server = std::thread::spawn(move || l.accept(Duration::from_secs(5)).unwrap());
        let client = t.connect(&d, o, ip).unwrap();
        let server = server.join().unwrap();
        let a = EndpointComm::new(0, t.name(), vec![None, Some(client.endpoint)]).unwrap();
        let b = EndpointComm::new(1, t.name(), vec![Some(server.endpoint), None]).unwrap();
        (a, b)
    }

    /// Two ranks of one process linked by a real unix socket.
    fn pair() -> (EndpointComm, EndpointComm) {
        linked(&crate::transport::unix::Unix, &opts())
    }

    #[test]
    fn nonblocking_receives_and_sends_cross_over_every_transport() {
        use crate::transport::{cma::Cma, shm::Shm, tcp::Tcp, unix::Unix};
        let transports: [&dyn Transport; 4] = [&Tcp, &Unix, &Shm, &Cma];
        for t in transports {
            if let Err(why) = t.availability() {
                eprintln!("{}: skipped ({why})", t.name());
                continue;
            }
            let (a, b) = linked(t, &opts());
            let peer =
                std::thread::spawn(move || super::super::request::checks::crossing_rounds(&b, 0));
            super::super::request::checks::crossing_rounds(&a, 1)
                .unwrap_or_else(|e| panic!("{}: {e:#}", t.name()));
            peer.join()
                .unwrap()
                .unwrap_or_else(|e| panic!("{}: {e:#}", t.name()));
        }
    }

    #[test]
    fn a_wait_on_a_dead_peer_is_an_error_within_the_timeout() {
        use crate::transport::{shm::Shm, tcp::Tcp};
        let transports: [&dyn Transport; 2] = [&Tcp, &Shm];
        for t in transports {
            let (a, b) = linked(t, &opts());
            drop(b);
            let mut buf = [0.0; 4];
            let started = std::time::Instant::now();
            let recv = a.irecv(1, &mut buf).unwrap();
            let err = a.wait(recv).expect_err("the peer is gone");
            // The options' timeout is 5 s: a dead peer ends it sooner
            // or at it, never later.
            assert!(
                started.elapsed() < Duration::from_secs(8),
                "{}: {err:#} after {:?}",
                t.name(),
                started.elapsed()
            );
        }
    }

    #[test]
    fn messages_and_exchanges_far_larger_than_socket_buffers() {
        let (a, b) = pair();
        let big: Vec<f64> = (0..1_000_000).map(|i| i as f64).collect();
        let other: Vec<f64> = big.iter().map(|x| -x).collect();
        let (big2, other2) = (big.clone(), other.clone());
        // A comm is used by one thread at a time: the other rank moves.
        let peer = std::thread::spawn(move || {
            let mut got = vec![0.0; big2.len()];
            b.sendrecv(0, &other2, 0, &mut got).unwrap();
            assert_eq!(got, big2);
            b.send(0, &[1.5, 2.5]).unwrap();
            let mut sum = [2.0];
            b.allreduce_sum_f64(&mut sum).unwrap();
            assert_eq!(sum, [3.0]);
        });
        let mut got = vec![0.0; big.len()];
        a.sendrecv(1, &big, 1, &mut got).unwrap();
        assert_eq!(got, other);
        let mut two = [0.0; 2];
        a.recv(1, &mut two).unwrap();
        assert_eq!(two, [1.5, 2.5]);
        let mut sum = [1.0];
        a.allreduce_sum_f64(&mut sum).unwrap();
        assert_eq!(sum, [3.0]);
        peer.join().unwrap();
    }

    #[test]
    fn integer_alltoallv_carries_each_key_as_4_bytes() {
        let (a, b) = pair();
        // Rank 1 sends rank 0 a block larger than a socket buffer.
        let peer = std::thread::spawn(move || {
            let send: Vec<i32> = (0..300_000).map(|i| i32::MIN + i).chain([7, 8]).collect();
            let mut got = vec![0; 100_002];
            b.alltoallv_i32(&send, &[300_000, 2], &mut got, &[100_000, 2])
                .unwrap();
            assert_eq!(got[..100_000], (0..100_000).map(|i| -i).collect::<Vec<_>>());
            assert_eq!(got[100_000..], [7, 8]);
            // Then 5 keys for rank 0 and 1 for itself.
            b.alltoallv_i32(&[9; 6], &[5, 1], &mut [0; 2], &[1, 1])
                .unwrap();
        });
        let send: Vec<i32> = [1, 2, 3]
            .into_iter()
            .chain((0..100_000).map(|i| -i))
            .collect();
        let mut got = vec![0; 300_003];
        a.alltoallv_i32(&send, &[3, 100_000], &mut got, &[3, 300_000])
            .unwrap();
        assert_eq!(got[..3], [1, 2, 3]);
        assert!(got[3..].iter().zip(0..).all(|(&k, i)| k == i32::MIN + i));
        // Rank 1's 5 keys, read as bytes: 20 of them, not 40.
        a.send_bytes(1, &3i32.to_ne_bytes()).unwrap();
        let mut raw = [0u8; 20];
        a.recv_bytes(1, &mut raw).unwrap();
        let keys: Vec<i32> = raw
            .chunks(4)
            .map(|c| i32::from_ne_bytes(c.try_into().unwrap()))
            .collect();
        assert_eq!(keys, [9; 5]);
        peer.join().unwrap();
    }

    /// Two ranks of one process linked by shm (single copy where /proc
    /// lets each end open the other's send memory).
    fn shm_pair(timeout_ms: u64) -> (EndpointComm, EndpointComm) {
        let mut o = opts();
        o.timeout_ms = timeout_ms;
        linked(&crate::transport::shm::Shm, &o)
    }

    #[test]
    fn large_exchanges_go_from_lent_memory_and_arrive_whole() {
        let (a, b) = shm_pair(5000);
        // Small (ring), a transpose's 1 MiB (lent), larger (the loan
        // regrows), and sizes that differ each way.
        let sizes = [
            (3, 3),
            (131_072, 131_072),
            (400_000, 400_000),
            (2_000, 70_000),
        ];
        let peer = std::thread::spawn(move || {
            for (i, &(mine, theirs)) in sizes.iter().enumerate() {
                let out: Vec<f64> = (0..theirs).map(|v| -(v as f64) - i as f64).collect();
                let mut got = vec![0.0; mine];
                b.sendrecv(0, &out, 0, &mut got).unwrap();
                assert!(got.iter().enumerate().all(|(v, &x)| x == (v + i) as f64));
            }
            b.lent.borrow()[0].is_some()
        });
        for (i, &(mine, theirs)) in sizes.iter().enumerate() {
            let out: Vec<f64> = (0..mine).map(|v| (v + i) as f64).collect();
            let mut got = vec![0.0; theirs];
            a.sendrecv(1, &out, 1, &mut got).unwrap();
            assert!(got
                .iter()
                .enumerate()
                .all(|(v, &x)| x == -(v as f64) - i as f64));
        }
        assert!(a.lent.borrow()[1].as_ref().unwrap().map.len() >= 8 * 400_000 + HEADER_BYTES);
        assert!(
            peer.join().unwrap(),
            "the peer built its large messages in lent memory"
        );
    }

    #[test]
    fn a_wrong_length_from_lent_memory_is_an_error() {
        // The peer waits in vain for its message to be taken: a short
        // timeout ends it.
        let (a, b) = shm_pair(300);
        let peer = std::thread::spawn(move || {
            let mut got = vec![0.0; 10_000];
            // The peer fails (or times out) too; only rank 0's error is checked.
            let _ = b.sendrecv(0, &[1.0; 10_000], 0, &mut got);
        });
        let mut got = vec![0.0; 9_999];
        let e = format!(
            "{:#}",
            a.sendrecv(1, &[2.0; 10_000], 1, &mut got).unwrap_err()
        );
        assert!(e.contains("80008") || e.contains("80000"), "{e}");
        peer.join().unwrap();
    }

    #[test]
    fn a_wrong_length_is_an_error_naming_both_lengths() {
        let (a, b) = pair();
        b.send(0, &[1.0, 2.0, 3.0]).unwrap();
        let mut buf = [0.0; 2];
        let e = format!("{:#}", a.recv(1, &mut buf).unwrap_err());
        assert!(e.contains("24 bytes where 16"), "{e}");
    }

    #[test]
    fn a_dead_peer_is_an_error_not_a_hang() {
        let (a, b) = pair();
        drop(b);
        let mut buf = [0.0; 4];
        assert!(a.recv(1, &mut buf).is_err());
    }

    #[test]
    fn messages_to_oneself_queue() {
        let (a, _b) = pair();
        a.send(0, &[7.0]).unwrap();
        let mut one = [0.0];
        a.recv(0, &mut one).unwrap();
        assert_eq!(one, [7.0]);
        assert!(a.recv(0, &mut one).is_err());
    }
}
