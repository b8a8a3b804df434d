//! The communicator ranks run over: the NPB kernels ([`crate::npb`]) and
//! `wulf collective`'s ranks ([`crate::collective`]) alike. It sits below
//! both (it imports only the transports and the MPI adapter), so that the
//! rank tasks above can use both.
//!
//! A kernel sees its peers only through [`Communicator`]: point-to-point
//! messages between ranks `0..size`, plus the few collectives the kernels
//! need (sum and max reductions, an allgather of small arrays, all-to-alls
//! with varying counts of `f64` and of `i32`, a barrier), and the
//! broadcast and equal-block all-to-all `wulf collective` times. The trait is
//! object safe so a kernel takes `&dyn Communicator` and runs unchanged
//! over every backend:
//!
//! * [`SerialComm`]: one rank, no messages;
//! * [`ThreadComm`]: N ranks as threads of one process, over channels, so
//!   parallel runs can be tested without processes or a network;
//! * [`EndpointComm`]: ranks in separate processes, each pair linked by
//!   one of wulf's transports (tcp, unix, shm, cma);
//! * [`MpiComm`]: one rank of an MPI job, over the MPI adapter wulf loads
//!   at run time (native MPI_Sendrecv, allreduce and barrier);
//! * [`Counted`]: any of them, counting the bytes and messages its rank
//!   sends.
//!
//! # What a backend must provide
//!
//! Only [`Communicator::rank`], [`Communicator::size`],
//! [`Communicator::send_bytes`] and [`Communicator::recv_bytes`] are
//! required. Messages are bytes underneath so that one path carries every
//! element type a kernel exchanges: `f64` values (the typed
//! [`Communicator::send`], [`Communicator::recv`] and
//! [`Communicator::sendrecv`] view them as bytes, at no cost) and IS's
//! 4-byte integer keys, which travel as 4 bytes each, as in NPB. The
//! collectives have default implementations on top of them (gather to rank
//! 0, combine in rank order, broadcast back; pairwise rounds for the
//! all-to-alls), which every rank therefore sees bit for bit identical. A
//! backend with native collectives (MPI) overrides them; it must still give
//! every rank the same bits.
//!
//! Rules the kernels rely on:
//!
//! * messages between one pair of ranks arrive in the order they were sent
//!   (MPI's non-overtaking rule; a TCP stream gives it for free);
//! * [`Communicator::sendrecv_bytes`] must not deadlock when two ranks call it
//!   towards each other at the same time. The default (send, then receive)
//!   is correct only when `send` buffers the message and returns without
//!   waiting for the receiver, as [`ThreadComm`] does; a backend whose
//!   sends can block must override it (poll both directions, or MPI's
//!   `MPI_Sendrecv`);
//! * a non-blocking receive or send ([`Communicator::irecv_bytes`],
//!   [`Communicator::isend_bytes`]) holds its buffer until a wait completes
//!   it; backends without non-blocking calls of their own run the blocking
//!   call at the wait (the default), a send and a receive waited together
//!   as one `sendrecv_bytes`;
//! * every receive returns a `Result`: a peer that died, went silent past
//!   the backend's timeout or sent a message of the wrong length is an
//!   error, never a hang or a panic.

mod counted;
mod endpoints;
mod mpi;
mod request;
mod serial;
mod thread;

pub use counted::{Counted, SentTotals};
pub use endpoints::EndpointComm;
pub use mpi::MpiComm;
pub use request::Request;
pub use serial::SerialComm;
pub use thread::{ThreadComm, DEFAULT_RECV_TIMEOUT};

use anyhow::{ensure, Result};
use bytemuck::{cast_slice, cast_slice_mut, Pod};

/// Message passing between the ranks of one parallel run.
///
/// Ranks are numbered `0..size()`. A message is a run of bytes; a receive
/// must be given a buffer exactly as long as the message sent.
pub trait Communicator {
    /// This process's rank, in `0..size()`.
    fn rank(&self) -> usize;

    /// Number of ranks in the run.
    fn size(&self) -> usize;

    /// A short name of the backend for reports (e.g. "serial", "threads").
    fn backend_name(&self) -> &str;

    /// Sends `data` to rank `to` (which may be this rank) as one message.
    fn send_bytes(&self, to: usize, data: &[u8]) -> Result<()>;

    /// Receives the next message from rank `from` into `buf`, whose length
    /// must equal the message's.
    fn recv_bytes(&self, from: usize, buf: &mut [u8]) -> Result<()>;

    /// Sends `data` to `to` and receives the next message from `from` into
    /// `buf`, without deadlocking against a peer doing the same towards us.
    fn sendrecv_bytes(&self, to: usize, data: &[u8], from: usize, buf: &mut [u8]) -> Result<()> {
        self.send_bytes(to, data)?;
        self.recv_bytes(from, buf)
    }

    /// Posts a receive from rank `from` into `buf` (whose length must
    /// equal the message's) and returns at once; [`Self::wait`] completes
    /// it. Work between the two overlaps the message's travel where the
    /// backend can move it meanwhile. The default defers the whole receive
    /// to the wait, which is always correct.
    fn irecv_bytes<'a>(&self, from: usize, buf: &'a mut [u8]) -> Result<Request<'a>> {
        Ok(Request::deferred_recv(from, buf))
    }

    /// Posts a send of `data` to rank `to` and returns at once;
    /// [`Self::wait`] completes it. The default defers the send to the
    /// wait: complete a send and a receive towards one peer together with
    /// [`Self::wait_pair`], which cannot deadlock.
    fn isend_bytes<'a>(&self, to: usize, data: &'a [u8]) -> Result<Request<'a>> {
        Ok(Request::deferred_send(to, data))
    }

    /// Completes a request this communicator posted: returns once its
    /// message is in `buf` (a receive) or on its way (a send), or with an
    /// error where the blocking call would have one (a dead or silent peer,
    /// a message of the wrong length): never a hang.
    fn wait(&self, req: Request<'_>) -> Result<()> {
        request::complete_deferred(self, req)
    }

    /// Completes a send and a receive posted together (NPB's
    /// `MPI_Waitall` of two): deferred ones run as one
    /// [`Self::sendrecv_bytes`], so two ranks waiting towards each other
    /// never deadlock.
    fn wait_pair(&self, send: Request<'_>, recv: Request<'_>) -> Result<()> {
        request::complete_pair(self, send, recv)
    }

    /// [`Self::irecv_bytes`] of values.
    fn irecv<'a>(&self, from: usize, buf: &'a mut [f64]) -> Result<Request<'a>> {
        self.irecv_bytes(from, cast_slice_mut(buf))
    }

    /// [`Self::isend_bytes`] of values.
    fn isend<'a>(&self, to: usize, data: &'a [f64]) -> Result<Request<'a>> {
        self.isend_bytes(to, cast_slice(data))
    }

    /// Sends the values `data` to rank `to` (see [`Self::send_bytes`]).
    fn send(&self, to: usize, data: &[f64]) -> Result<()> {
        self.send_bytes(to, cast_slice(data))
    }

    /// Receives values from rank `from` into `buf` (see
    /// [`Self::recv_bytes`]).
    fn recv(&self, from: usize, buf: &mut [f64]) -> Result<()> {
        self.recv_bytes(from, cast_slice_mut(buf))
    }

    /// [`Self::sendrecv_bytes`] of values.
    fn sendrecv(&self, to: usize, data: &[f64], from: usize, buf: &mut [f64]) -> Result<()> {
        self.sendrecv_bytes(to, cast_slice(data), from, cast_slice_mut(buf))
    }

    /// Element-wise sum of `values` over all ranks, left in `values` on
    /// every rank.
    fn allreduce_sum_f64(&self, values: &mut [f64]) -> Result<()> {
        reduce_via_root(self, values, |acc, x| acc + x)
    }

    /// Element-wise maximum of `values` over all ranks, left in `values` on
    /// every rank.
    fn allreduce_max_f64(&self, values: &mut [f64]) -> Result<()> {
        reduce_via_root(self, values, f64::max)
    }

    /// Element-wise sum of 4-byte integers over all ranks (IS's bucket
    /// sizes, which NPB reduces as MPI_INT: half the bytes of doubles),
    /// left in `values` on every rank (a sum past `i32::MAX` wraps, as
    /// MPI's does: callers keep their sums in range).
    fn allreduce_sum_i32(&self, values: &mut [i32]) -> Result<()> {
        reduce_i32_via_root(self, values)
    }

    /// Concatenates every rank's `mine` (all of one length) in rank order
    /// into `all`, whose length must be `size() * mine.len()`, on every rank.
    fn allgather_f64(&self, mine: &[f64], all: &mut [f64]) -> Result<()> {
        allgather_via_root(self, mine, all)
    }

    /// All-to-all with varying counts: `send` holds, in rank order, a
    /// block of `send_counts[j]` values for each rank `j`; on return `recv`
    /// holds, in rank order, the block every rank `j` sent us, which must be
    /// `recv_counts[j]` long. Both count lists have one entry per rank, and
    /// each buffer is exactly as long as its counts add up to.
    fn alltoallv_f64(
        &self,
        send: &[f64],
        send_counts: &[usize],
        recv: &mut [f64],
        recv_counts: &[usize],
    ) -> Result<()> {
        alltoallv_pairwise(self, send, send_counts, recv, recv_counts)
    }

    /// [`Self::alltoallv_f64`] of 4-byte integers (IS's keys and counts,
    /// which NPB exchanges as MPI_INT): counts are in values, and every
    /// value travels as its 4 bytes.
    fn alltoallv_i32(
        &self,
        send: &[i32],
        send_counts: &[usize],
        recv: &mut [i32],
        recv_counts: &[usize],
    ) -> Result<()> {
        alltoallv_pairwise(self, send, send_counts, recv, recv_counts)
    }

    /// What this rank has sent so far, where the communicator counts it
    /// ([`Counted`]); `None` for the others.
    fn sent_totals(&self) -> Option<SentTotals> {
        None
    }

    /// Returns once every rank has entered the barrier.
    fn barrier(&self) -> Result<()> {
        let mut token = [0.0];
        self.allreduce_sum_f64(&mut token)
    }

    /// Copies `buf` of rank `root` into `buf` of every other rank (all of
    /// one length). The default is the plain algorithm: the root sends to
    /// each rank in turn (`wulf collective bcast` compares it with the
    /// libraries' trees).
    fn bcast_bytes(&self, root: usize, buf: &mut [u8]) -> Result<()> {
        ensure!(
            root < self.size(),
            "bcast: root {root} outside a group of {}",
            self.size()
        );
        if self.rank() != root {
            return self.recv_bytes(root, buf);
        }
        for peer in (0..self.size()).filter(|&p| p != root) {
            self.send_bytes(peer, buf)?;
        }
        Ok(())
    }

    /// All-to-all of equal blocks of bytes: `send` holds one block for each
    /// rank, in rank order; on return `recv` holds the block every rank
    /// sent us, in rank order. Both are `size()` blocks long. The default
    /// runs the rounds of [`Self::alltoallv_f64`]'s default (every rank
    /// sends to the rank `step` above it and receives from the one below).
    fn alltoall_bytes(&self, send: &[u8], recv: &mut [u8]) -> Result<()> {
        let (size, rank) = (self.size(), self.rank());
        ensure!(
            send.len() == recv.len() && send.len().is_multiple_of(size),
            "alltoall: buffers of {} and {} bytes are not {size} equal blocks each",
            send.len(),
            recv.len()
        );
        let n = send.len() / size;
        let block = |j: usize| j * n..(j + 1) * n;
        recv[block(rank)].copy_from_slice(&send[block(rank)]);
        for step in 1..size {
            let to = (rank + step) % size;
            let from = (rank + size - step) % size;
            self.sendrecv_bytes(to, &send[block(to)], from, &mut recv[block(from)])?;
        }
        Ok(())
    }
}

thread_local! {
    /// Rank 0's buffer for incoming contributions of [`reduce_via_root`] (and, as integers, of `reduce_i32_via_root`):
    /// grown once and reused, so a reduction in a timed loop allocates
    /// nothing after the first.
    static REDUCE_SCRATCH: std::cell::RefCell<Vec<f64>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Default reduction: rank 0 combines the contributions in rank order, so
/// the result does not depend on message timing, then broadcasts it.
fn reduce_via_root<C, F>(comm: &C, values: &mut [f64], combine: F) -> Result<()>
where
    C: Communicator + ?Sized,
    F: Fn(f64, f64) -> f64,
{
    let size = comm.size();
    if size == 1 {
        return Ok(());
    }
    if comm.rank() == 0 {
        REDUCE_SCRATCH.with(|scratch| -> Result<()> {
            let mut incoming = scratch.borrow_mut();
            incoming.resize(values.len(), 0.0);
            for peer in 1..size {
                comm.recv(peer, &mut incoming)?;
                for (acc, x) in values.iter_mut().zip(incoming.iter()) {
                    *acc = combine(*acc, *x);
                }
            }
            Ok(())
        })?;
        for peer in 1..size {
            comm.send(peer, values)?;
        }
        Ok(())
    } else {
        comm.send(0, values)?;
        comm.recv(0, values)
    }
}

/// [`reduce_via_root`] of 4-byte integers, summed: rank 0 adds the
/// contributions in rank order and sends the sums back.
fn reduce_i32_via_root<C>(comm: &C, values: &mut [i32]) -> Result<()>
where
    C: Communicator + ?Sized,
{
    let size = comm.size();
    if size == 1 {
        return Ok(());
    }
    if comm.rank() != 0 {
        comm.send_bytes(0, bytemuck::cast_slice(values))?;
        return comm.recv_bytes(0, bytemuck::cast_slice_mut(values));
    }
    // The doubles' scratch buffer, half as many of them, holds the
    // integers (no second process-wide buffer).
    REDUCE_SCRATCH.with(|scratch| -> Result<()> {
        let mut doubles = scratch.borrow_mut();
        doubles.resize(values.len().div_ceil(2), 0.0);
        let incoming: &mut [i32] = &mut bytemuck::cast_slice_mut(&mut doubles[..])[..values.len()];
        for peer in 1..size {
            comm.recv_bytes(peer, bytemuck::cast_slice_mut(incoming))?;
            for (acc, x) in values.iter_mut().zip(incoming.iter()) {
                // Wraps as MPI's sums of MPI_INT do; stopping here would
                // leave the other ranks waiting for the result.
                *acc = acc.wrapping_add(*x);
            }
        }
        Ok(())
    })?;
    for peer in 1..size {
        comm.send_bytes(peer, bytemuck::cast_slice(values))?;
    }
    Ok(())
}

/// Checks that `counts` has one entry per rank and covers `len` values.
pub(crate) fn check_counts(size: usize, counts: &[usize], len: usize, what: &str) -> Result<()> {
    ensure!(
        counts.len() == size,
        "alltoallv: {} {what} counts for {size} ranks",
        counts.len()
    );
    let total: usize = counts.iter().sum();
    ensure!(
        total == len,
        "alltoallv: {what} counts add up to {total}, the buffer holds {len}"
    );
    Ok(())
}

/// Default all-to-all: `size - 1` rounds in which every rank sends to the
/// rank `step` above it and receives from the one `step` below, so each
/// round is a permutation (every rank sends once and receives once) and a
/// `sendrecv_bytes` that cannot deadlock carries it. Generic over the
/// value type so `f64` and `i32` share one algorithm; blocks travel as
/// their bytes.
fn alltoallv_pairwise<C, T>(
    comm: &C,
    send: &[T],
    send_counts: &[usize],
    recv: &mut [T],
    recv_counts: &[usize],
) -> Result<()>
where
    C: Communicator + ?Sized,
    T: Pod,
{
    let (size, rank) = (comm.size(), comm.rank());
    check_counts(size, send_counts, send.len(), "send")?;
    check_counts(size, recv_counts, recv.len(), "receive")?;
    let offsets = |counts: &[usize]| -> Vec<usize> {
        counts
            .iter()
            .scan(0, |at, &n| {
                let start = *at;
                *at += n;
                Some(start)
            })
            .collect()
    };
    let (send_at, recv_at) = (offsets(send_counts), offsets(recv_counts));
    let block = |at: &[usize], counts: &[usize], j: usize| at[j]..at[j] + counts[j];
    ensure!(
        send_counts[rank] == recv_counts[rank],
        "alltoallv: rank {rank} sends itself {} values but expects {}",
        send_counts[rank],
        recv_counts[rank]
    );
    recv[block(&recv_at, recv_counts, rank)]
        .copy_from_slice(&send[block(&send_at, send_counts, rank)]);
    for step in 1..size {
        let to = (rank + step) % size;
        let from = (rank + size - step) % size;
        comm.sendrecv_bytes(
            to,
            cast_slice(&send[block(&send_at, send_counts, to)]),
            from,
            cast_slice_mut(&mut recv[block(&recv_at, recv_counts, from)]),
        )?;
    }
    Ok(())
}

/// Default allgather: rank 0 assembles the blocks in rank order and
/// broadcasts the whole array.
fn allgather_via_root<C>(comm: &C, mine: &[f64], all: &mut [f64]) -> Result<()>
where
    C: Communicator + ?Sized,
{
    let size = comm.size();
    let block = mine.len();
    ensure!(
        all.len() == size * block,
        "allgather: output holds {} values, expected {} ranks x {block}",
        all.len(),
        size
    );
    let rank = comm.rank();
    if rank == 0 {
        all[..block].copy_from_slice(mine);
        for peer in 1..size {
            comm.recv(peer, &mut all[peer * block..(peer + 1) * block])?;
        }
        for peer in 1..size {
            comm.send(peer, all)?;
        }
        Ok(())
    } else {
        comm.send(0, mine)?;
        comm.recv(0, all)
    }
}
