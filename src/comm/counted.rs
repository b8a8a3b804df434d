//! [`Counted`]: a communicator that counts what its rank sends, for the
//! communication rows of Bounanos and Fleury 2007's NAS tables (MB/s, messages/s and mean
//! message size per kernel) and for tests that hold a kernel's traffic to
//! NPB's.
//!
//! Point-to-point messages are counted exactly as the kernel sends them
//! (a message to this rank itself never leaves it and is not counted).
//! Collectives are passed on to the wrapped backend, so an MPI job keeps
//! its native algorithms; each counts as one message of this rank's share
//! of the data (its values for a reduction, its blocks to other ranks for
//! an all-to-all, the buffer at the root of a broadcast), which is what the
//! rank contributes whatever algorithm the library picks, not the bytes its
//! tree or ring puts on the wire.

use std::cell::Cell;

use anyhow::Result;

use super::{Communicator, Request};

/// Bytes and messages a rank has sent.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SentTotals {
    /// Payload bytes sent to other ranks.
    pub bytes: u64,
    /// Messages sent to other ranks.
    pub messages: u64,
}

/// Wraps a communicator and counts what this rank sends through it.
pub struct Counted<'a> {
    inner: &'a dyn Communicator,
    bytes: Cell<u64>,
    messages: Cell<u64>,
}

impl<'a> Counted<'a> {
    /// Counts from zero what is sent through `inner`.
    pub fn new(inner: &'a dyn Communicator) -> Self {
        Counted {
            inner,
            bytes: Cell::new(0),
            messages: Cell::new(0),
        }
    }

    /// What has been sent so far.
    pub fn totals(&self) -> SentTotals {
        SentTotals {
            bytes: self.bytes.get(),
            messages: self.messages.get(),
        }
    }

    fn count(&self, bytes: usize) {
        self.bytes.set(self.bytes.get() + bytes as u64);
        self.messages.set(self.messages.get() + 1);
    }

    fn count_to(&self, to: usize, bytes: usize) {
        if to != self.inner.rank() {
            self.count(bytes);
        }
    }

    /// Counts one message per other rank with a non-empty block.
    fn count_blocks(&self, counts: &[usize], value_bytes: usize) {
        let me = self.inner.rank();
        for (rank, &n) in counts.iter().enumerate() {
            if rank != me && n > 0 {
                self.count(n * value_bytes);
            }
        }
    }
}

impl Communicator for Counted<'_> {
    fn rank(&self) -> usize {
        self.inner.rank()
    }

    fn size(&self) -> usize {
        self.inner.size()
    }

    fn backend_name(&self) -> &str {
        self.inner.backend_name()
    }

    fn send_bytes(&self, to: usize, data: &[u8]) -> Result<()> {
        self.count_to(to, data.len());
        self.inner.send_bytes(to, data)
    }

    fn recv_bytes(&self, from: usize, buf: &mut [u8]) -> Result<()> {
        self.inner.recv_bytes(from, buf)
    }

    fn sendrecv_bytes(&self, to: usize, data: &[u8], from: usize, buf: &mut [u8]) -> Result<()> {
        self.count_to(to, data.len());
        self.inner.sendrecv_bytes(to, data, from, buf)
    }

    fn irecv_bytes<'b>(&self, from: usize, buf: &'b mut [u8]) -> Result<Request<'b>> {
        self.inner.irecv_bytes(from, buf)
    }

    // Counted at the post, as MPI counts a message once it is sent; the
    // waits go to the backend that posted (the defaults here would run a
    // deferred send through this wrapper and count it again).
    fn isend_bytes<'b>(&self, to: usize, data: &'b [u8]) -> Result<Request<'b>> {
        self.count_to(to, data.len());
        self.inner.isend_bytes(to, data)
    }

    fn wait(&self, req: Request<'_>) -> Result<()> {
        self.inner.wait(req)
    }

    fn wait_pair(&self, send: Request<'_>, recv: Request<'_>) -> Result<()> {
        self.inner.wait_pair(send, recv)
    }

    fn allreduce_sum_f64(&self, values: &mut [f64]) -> Result<()> {
        if self.size() > 1 {
            self.count(std::mem::size_of_val(values));
        }
        self.inner.allreduce_sum_f64(values)
    }

    fn allreduce_max_f64(&self, values: &mut [f64]) -> Result<()> {
        if self.size() > 1 {
            self.count(std::mem::size_of_val(values));
        }
        self.inner.allreduce_max_f64(values)
    }

    fn allreduce_sum_i32(&self, values: &mut [i32]) -> Result<()> {
        if self.size() > 1 {
            self.count(std::mem::size_of_val(values));
        }
        self.inner.allreduce_sum_i32(values)
    }

    fn allgather_f64(&self, mine: &[f64], all: &mut [f64]) -> Result<()> {
        if self.size() > 1 {
            self.count(std::mem::size_of_val(mine));
        }
        self.inner.allgather_f64(mine, all)
    }

    fn alltoallv_f64(
        &self,
        send: &[f64],
        send_counts: &[usize],
        recv: &mut [f64],
        recv_counts: &[usize],
    ) -> Result<()> {
        self.count_blocks(send_counts, 8);
        self.inner
            .alltoallv_f64(send, send_counts, recv, recv_counts)
    }

    fn alltoallv_i32(
        &self,
        send: &[i32],
        send_counts: &[usize],
        recv: &mut [i32],
        recv_counts: &[usize],
    ) -> Result<()> {
        self.count_blocks(send_counts, 4);
        self.inner
            .alltoallv_i32(send, send_counts, recv, recv_counts)
    }

    fn barrier(&self) -> Result<()> {
        self.inner.barrier()
    }

    fn sent_totals(&self) -> Option<SentTotals> {
        Some(self.totals())
    }

    fn bcast_bytes(&self, root: usize, buf: &mut [u8]) -> Result<()> {
        if self.rank() == root && self.size() > 1 {
            self.count(buf.len());
        }
        self.inner.bcast_bytes(root, buf)
    }

    fn alltoall_bytes(&self, send: &[u8], recv: &mut [u8]) -> Result<()> {
        let size = self.size();
        if size > 1 {
            for _ in 1..size {
                self.count(send.len() / size);
            }
        }
        self.inner.alltoall_bytes(send, recv)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::comm::ThreadComm;

    #[test]
    fn messages_to_others_are_counted_and_to_self_are_not() {
        let totals = ThreadComm::run(2, |comm| {
            let counted = Counted::new(comm);
            let peer = 1 - comm.rank();
            let mut buf = [0.0; 3];
            counted.sendrecv(peer, &[1.0, 2.0, 3.0], peer, &mut buf)?;
            counted.send(comm.rank(), &[1.0])?;
            let mut own = [0.0];
            counted.recv(comm.rank(), &mut own)?;
            let mut sums = [1.0, 2.0];
            counted.allreduce_sum_f64(&mut sums)?;
            assert_eq!(sums, [2.0, 4.0]);
            Ok(counted.totals())
        })
        .unwrap();
        for t in totals {
            assert_eq!(
                t,
                SentTotals {
                    bytes: 24 + 16,
                    messages: 2
                }
            );
        }
    }

    /// A backend with only the required methods: its non-blocking calls
    /// are the trait's deferred defaults.
    struct Plain<'a>(&'a dyn Communicator);

    impl Communicator for Plain<'_> {
        fn rank(&self) -> usize {
            self.0.rank()
        }
        fn size(&self) -> usize {
            self.0.size()
        }
        fn backend_name(&self) -> &str {
            "plain"
        }
        fn send_bytes(&self, to: usize, data: &[u8]) -> Result<()> {
            self.0.send_bytes(to, data)
        }
        fn recv_bytes(&self, from: usize, buf: &mut [u8]) -> Result<()> {
            self.0.recv_bytes(from, buf)
        }
    }

    #[test]
    fn a_nonblocking_send_counts_once_whoever_completes_it() {
        let totals = ThreadComm::run(2, |comm| {
            let peer = 1 - comm.rank();
            let plain = Plain(comm);
            let mut all = Vec::new();
            for inner in [comm, &plain as &dyn Communicator] {
                let counted = Counted::new(inner);
                let mut buf = [0.0; 4];
                let send = counted.isend(peer, &[1.0, 2.0, 3.0, 4.0])?;
                let recv = counted.irecv(peer, &mut buf)?;
                counted.wait_pair(send, recv)?;
                assert_eq!(buf, [1.0, 2.0, 3.0, 4.0]);
                all.push(counted.totals());
            }
            Ok(all)
        })
        .unwrap();
        for t in totals.into_iter().flatten() {
            assert_eq!(
                t,
                SentTotals {
                    bytes: 32,
                    messages: 1
                }
            );
        }
    }
}
