//! N ranks as threads of one process, talking over channels.
//!
//! Every ordered pair of ranks has its own FIFO channel, which gives the
//! per-pair ordering the kernels rely on; sends are buffered (unbounded
//! channels), so the default send-then-receive `sendrecv` cannot deadlock.
//!
//! Why buffers come back: a message is a `Vec<u8>` (the bytes of its
//! values) moved through the channel. Once the receiver has copied it out,
//! it hands the `Vec` back to the sender's pool, and the sender reuses it
//! for its next message. After the first exchanges a run therefore sends
//! without allocating, like a real transport writing into preallocated
//! buffers.

use super::{Communicator, Request};
use crate::error::peer;
use anyhow::{anyhow, ensure, Context, Result};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError, Sender};
use std::time::Duration;

/// How long a receive waits before the peer counts as gone.
pub const DEFAULT_RECV_TIMEOUT: Duration = Duration::from_secs(120);

/// One rank of an in-process group; create the group with
/// [`ThreadComm::group`] or run a closure on every rank with
/// [`ThreadComm::run`].
#[derive(Debug)]
pub struct ThreadComm {
    rank: usize,
    size: usize,
    /// `to[dst]`: the channel carrying our messages to `dst`.
    to: Vec<Sender<Vec<u8>>>,
    /// `from[src]`: the channel carrying `src`'s messages to us.
    from: Vec<Receiver<Vec<u8>>>,
    /// `pool_of[src]`: where buffers of `src`'s messages go back once read.
    pool_of: Vec<Sender<Vec<u8>>>,
    /// Spent buffers of our own messages, returned by their receivers.
    pool: Receiver<Vec<u8>>,
    recv_timeout: Duration,
}

impl ThreadComm {
    /// Creates the `size` ranks of one group, in rank order. Move each into
    /// its own thread.
    pub fn group(size: usize) -> Result<Vec<ThreadComm>> {
        ensure!(size >= 1, "a group needs at least one rank");
        // senders[src][dst] / receivers[dst][src] are the two ends of the
        // channel from src to dst.
        let mut senders: Vec<Vec<Sender<Vec<u8>>>> = (0..size).map(|_| Vec::new()).collect();
        let mut receivers: Vec<Vec<Option<Receiver<Vec<u8>>>>> = (0..size)
            .map(|_| (0..size).map(|_| None).collect())
            .collect();
        for (src, row) in senders.iter_mut().enumerate() {
            for inbox in receivers.iter_mut() {
                let (tx, rx) = channel();
                row.push(tx);
                inbox[src] = Some(rx);
            }
        }
        let (pool_senders, pools): (Vec<_>, Vec<_>) = (0..size).map(|_| channel()).unzip();
        let comms = senders
            .into_iter()
            .zip(receivers)
            .zip(pools)
            .enumerate()
            .map(|(rank, ((to, from), pool))| ThreadComm {
                rank,
                size,
                to,
                from: from
                    .into_iter()
                    .map(|rx| rx.expect("every pair has a channel"))
                    .collect(),
                pool_of: pool_senders.clone(),
                pool,
                recv_timeout: DEFAULT_RECV_TIMEOUT,
            })
            .collect();
        Ok(comms)
    }

    /// Sets how long a receive waits before failing (default
    /// [`DEFAULT_RECV_TIMEOUT`]).
    pub fn with_recv_timeout(mut self, timeout: Duration) -> Self {
        self.recv_timeout = timeout;
        self
    }

    /// Runs `body` on `size` ranks, one thread each, and returns their
    /// results in rank order, or the first error by rank (a rank that
    /// panicked counts as an error). A rank that fails drops its channels,
    /// so the others fail promptly instead of waiting for their timeout.
    pub fn run<T, F>(size: usize, body: F) -> Result<Vec<T>>
    where
        T: Send,
        F: Fn(&dyn Communicator) -> Result<T> + Sync,
    {
        let comms = Self::group(size)?;
        let body = &body;
        let outcomes: Vec<Result<T>> = std::thread::scope(|scope| {
            let handles: Vec<_> = comms
                .into_iter()
                .map(|comm| {
                    std::thread::Builder::new()
                        .name(format!("npb-rank-{}", comm.rank))
                        .spawn_scoped(scope, move || body(&comm))
                })
                .collect();
            handles
                .into_iter()
                .enumerate()
                .map(|(rank, handle)| match handle {
                    Err(e) => Err(anyhow!(e).context(format!("spawning rank {rank}"))),
                    Ok(h) => h
                        .join()
                        .unwrap_or_else(|_| Err(anyhow!("rank {rank} panicked"))),
                })
                .collect()
        });
        outcomes
            .into_iter()
            .enumerate()
            .map(|(rank, r)| r.with_context(|| format!("rank {rank} of {size}")))
            .collect()
    }
}

impl Communicator for ThreadComm {
    fn rank(&self) -> usize {
        self.rank
    }

    fn size(&self) -> usize {
        self.size
    }

    fn backend_name(&self) -> &str {
        "threads"
    }

    fn send_bytes(&self, to: usize, data: &[u8]) -> Result<()> {
        ensure!(
            to < self.size,
            "rank {to} does not exist (size {})",
            self.size
        );
        let mut message = self.pool.try_recv().unwrap_or_default();
        message.clear();
        message.extend_from_slice(data);
        self.to[to]
            .send(message)
            .map_err(|_| peer(format!("rank {to} has gone (send from rank {})", self.rank)))
    }

    // Sends are buffered by the channel, so a posted send is complete at
    // once and a posted receive's message waits in the channel meanwhile.
    fn isend_bytes<'a>(&self, to: usize, data: &'a [u8]) -> Result<Request<'a>> {
        self.send_bytes(to, data)?;
        Ok(Request::sent(to, data))
    }

    fn recv_bytes(&self, from: usize, buf: &mut [u8]) -> Result<()> {
        ensure!(
            from < self.size,
            "rank {from} does not exist (size {})",
            self.size
        );
        let message = match self.from[from].recv_timeout(self.recv_timeout) {
            Ok(m) => m,
            Err(RecvTimeoutError::Timeout) => {
                return Err(peer(format!(
                    "rank {}: no message from rank {from} within {:?}",
                    self.rank, self.recv_timeout
                )))
            }
            Err(RecvTimeoutError::Disconnected) => {
                return Err(peer(format!(
                    "rank {from} has gone (recv on rank {})",
                    self.rank
                )))
            }
        };
        ensure!(
            message.len() == buf.len(),
            "rank {}: message of {} bytes from rank {from}, buffer of {}",
            self.rank,
            message.len(),
            buf.len()
        );
        buf.copy_from_slice(&message);
        // The sender may have finished; then its pool is gone and the buffer
        // is simply dropped.
        let _ = self.pool_of[from].send(message);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn collectives_agree_on_every_rank() {
        let results = ThreadComm::run(4, |comm| {
            let r = comm.rank() as f64;
            let mut sum = [r, 1.0];
            comm.allreduce_sum_f64(&mut sum)?;
            let mut max = [r, -r];
            comm.allreduce_max_f64(&mut max)?;
            let mut all = [0.0; 8];
            comm.allgather_f64(&[r, 10.0 * r], &mut all)?;
            comm.barrier()?;
            Ok((sum, max, all))
        })
        .unwrap();
        for (sum, max, all) in results {
            assert_eq!(sum, [6.0, 4.0]);
            assert_eq!(max, [3.0, 0.0]);
            assert_eq!(all, [0.0, 0.0, 1.0, 10.0, 2.0, 20.0, 3.0, 30.0]);
        }
    }

    #[test]
    fn integer_sums_agree_on_every_rank() {
        let sums = ThreadComm::run(3, |comm| {
            let r = comm.rank() as i32;
            let mut v = [r, 1, -r];
            comm.allreduce_sum_i32(&mut v)?;
            Ok(v)
        })
        .unwrap();
        assert_eq!(sums, vec![[3, 3, -3]; 3]);
    }

    #[test]
    fn alltoallv_delivers_every_block_in_rank_order() {
        // Rank r sends j + 1 copies of 10 r + j to rank j, itself included.
        let got = ThreadComm::run(3, |comm| {
            let (me, n) = (comm.rank(), comm.size());
            let send_counts: Vec<usize> = (0..n).map(|j| j + 1).collect();
            let send: Vec<f64> = (0..n)
                .flat_map(|j| std::iter::repeat_n((10 * me + j) as f64, j + 1))
                .collect();
            let recv_counts = vec![me + 1; n];
            let mut recv = vec![0.0; n * (me + 1)];
            comm.alltoallv_f64(&send, &send_counts, &mut recv, &recv_counts)?;
            // Wrong counts are an error, not a panic.
            let mut short = vec![0.0; 1];
            assert!(comm
                .alltoallv_f64(&send, &send_counts, &mut short, &recv_counts)
                .is_err());
            // The same blocks as 4-byte integers, near i32::MAX so that a
            // trip through f64 or a lost byte would show.
            let ints: Vec<i32> = send.iter().map(|&x| i32::MAX - x as i32).collect();
            let mut ints_in = vec![0; recv.len()];
            comm.alltoallv_i32(&ints, &send_counts, &mut ints_in, &recv_counts)?;
            let mut short = vec![0; 1];
            assert!(comm
                .alltoallv_i32(&ints, &send_counts, &mut short, &recv_counts)
                .is_err());
            Ok((recv, ints_in))
        })
        .unwrap();
        for (me, (recv, ints)) in got.into_iter().enumerate() {
            let want: Vec<f64> = (0..3)
                .flat_map(|r| std::iter::repeat_n((10 * r + me) as f64, me + 1))
                .collect();
            assert_eq!(recv, want, "rank {me}");
            let want: Vec<i32> = want.iter().map(|&x| i32::MAX - x as i32).collect();
            assert_eq!(ints, want, "rank {me}");
        }
    }

    #[test]
    fn ring_exchange_keeps_pair_order() {
        let got = ThreadComm::run(3, |comm| {
            let (me, n) = (comm.rank(), comm.size());
            let right = (me + 1) % n;
            let left = (me + n - 1) % n;
            let mut first = [0.0; 2];
            let mut second = [0.0; 2];
            comm.sendrecv(right, &[me as f64, 1.0], left, &mut first)?;
            comm.sendrecv(right, &[me as f64, 2.0], left, &mut second)?;
            Ok((first, second))
        })
        .unwrap();
        for (me, (first, second)) in got.into_iter().enumerate() {
            let left = ((me + 2) % 3) as f64;
            assert_eq!(first, [left, 1.0]);
            assert_eq!(second, [left, 2.0]);
        }
    }

    #[test]
    fn nonblocking_receives_and_sends_cross() {
        ThreadComm::run(2, |comm| {
            super::super::request::checks::crossing_rounds(comm, 1 - comm.rank())
        })
        .unwrap();
    }

    #[test]
    fn a_wait_on_a_silent_or_dead_peer_is_an_error() {
        let mut group = ThreadComm::group(2).unwrap();
        let b = group.pop().unwrap();
        let a = group
            .pop()
            .unwrap()
            .with_recv_timeout(Duration::from_millis(20));
        let mut buf = [0.0; 2];
        let recv = a.irecv(1, &mut buf).unwrap();
        assert!(a.wait(recv).is_err(), "silent peer");
        drop(b);
        let send = a.isend(1, &[1.0]);
        let recv = a.irecv(1, &mut buf).unwrap();
        assert!(send.is_err() || a.wait(recv).is_err(), "dead peer");
    }

    #[test]
    fn failures_are_errors_not_hangs() {
        let comms = ThreadComm::group(2).unwrap();
        let mut it = comms.into_iter();
        let a = it
            .next()
            .unwrap()
            .with_recv_timeout(Duration::from_millis(20));
        let b = it.next().unwrap();
        let mut buf = [0.0];
        // Nothing sent: timeout.
        assert!(a.recv(1, &mut buf).is_err());
        // Wrong length.
        b.send(0, &[1.0, 2.0]).unwrap();
        assert!(a.recv(1, &mut buf).is_err());
        // Peer gone.
        drop(b);
        assert!(a.recv(1, &mut buf).is_err());
        assert!(a.send(1, &[1.0]).is_err());
        // A failing rank makes the run an error.
        let err = ThreadComm::run(2, |comm| {
            anyhow::ensure!(comm.rank() == 0, "boom");
            let mut x = [0.0];
            comm.recv(1, &mut x)
        });
        assert!(err.is_err());
    }
}
