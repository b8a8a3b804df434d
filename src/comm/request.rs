//! Non-blocking messages: a receive or send posted by
//! [`Communicator::irecv_bytes`] or [`Communicator::isend_bytes`] and
//! completed by [`Communicator::wait`] or [`Communicator::wait_pair`], so a
//! rank can compute while its messages travel (NPB's `MPI_Irecv`,
//! `MPI_Isend` and `MPI_Waitall` in the line solves).
//!
//! A [`Request`] holds the caller's buffer borrowed until it completes, so
//! the buffer cannot be read or reused before the message is in (or out):
//! the borrow checker enforces MPI's rule. A backend whose messages cannot
//! progress on their own (no thread, no library underneath) leaves the
//! request *deferred*: the blocking receive or send runs at the wait, which
//! is the trait's default and always correct. A backend with real
//! non-blocking calls (MPI) marks the request *posted* in one of its slots;
//! it never lends the caller's buffer to the library (a request dropped
//! without a wait would leave the library writing into freed memory), but
//! its own staging memory, copied at the post (send) or at the wait
//! (receive).

use anyhow::{bail, Result};

use super::Communicator;

/// What a request moves.
#[derive(Debug)]
pub(crate) enum Op<'a> {
    /// A receive from rank `from` into `buf`, whose length the message must
    /// have.
    Recv { from: usize, buf: &'a mut [u8] },
    /// A send of `data` to rank `to`.
    Send { to: usize, data: &'a [u8] },
}

/// Where a request stands.
#[derive(Debug)]
pub(crate) enum State {
    /// Nothing moved yet: the wait runs the blocking call.
    Deferred,
    /// Posted in the backend's slot `slot`: the wait completes it.
    Posted { slot: usize },
    /// Already complete (a send a backend buffered at the post).
    Done,
}

/// A posted receive or send, holding its buffer until a wait completes
/// it. Complete every request: one dropped unfinished is never sent (a
/// deferred send) or leaves its backend's slot taken for good (MPI).
#[must_use = "complete a request with Communicator::wait or wait_pair"]
#[derive(Debug)]
pub struct Request<'a> {
    pub(crate) op: Op<'a>,
    pub(crate) state: State,
}

impl<'a> Request<'a> {
    /// A receive from `from` into `buf`, left to the wait (the default
    /// [`Communicator::irecv_bytes`]).
    pub fn deferred_recv(from: usize, buf: &'a mut [u8]) -> Request<'a> {
        Request {
            op: Op::Recv { from, buf },
            state: State::Deferred,
        }
    }

    /// A send of `data` to `to`, left to the wait (the default
    /// [`Communicator::isend_bytes`]).
    pub fn deferred_send(to: usize, data: &'a [u8]) -> Request<'a> {
        Request {
            op: Op::Send { to, data },
            state: State::Deferred,
        }
    }

    /// A send the backend completed at the post (it buffers sends).
    pub(crate) fn sent(to: usize, data: &'a [u8]) -> Request<'a> {
        Request {
            op: Op::Send { to, data },
            state: State::Done,
        }
    }

    /// The request as a backend's post left it in `slot`.
    pub(crate) fn posted(op: Op<'a>, slot: usize) -> Request<'a> {
        Request {
            op,
            state: State::Posted { slot },
        }
    }

    /// Whether the wait still has the whole call to run.
    pub fn is_deferred(&self) -> bool {
        matches!(self.state, State::Deferred)
    }
}

/// The default wait: runs a deferred request's blocking call; a request
/// another backend posted cannot be completed here.
pub(crate) fn complete_deferred<C: Communicator + ?Sized>(
    comm: &C,
    req: Request<'_>,
) -> Result<()> {
    match (req.state, req.op) {
        (State::Done, _) => Ok(()),
        (State::Deferred, Op::Recv { from, buf }) => comm.recv_bytes(from, buf),
        (State::Deferred, Op::Send { to, data }) => comm.send_bytes(to, data),
        (State::Posted { slot }, _) => bail!(
            "{}: request in slot {slot} was posted by another backend",
            comm.backend_name()
        ),
    }
}

/// The default [`Communicator::wait_pair`]: two deferred requests run as one
/// `sendrecv_bytes` (which cannot deadlock against a peer doing the same);
/// otherwise the send completes first, then the receive.
pub(crate) fn complete_pair<C: Communicator + ?Sized>(
    comm: &C,
    send: Request<'_>,
    recv: Request<'_>,
) -> Result<()> {
    match (send, recv) {
        (
            Request {
                op: Op::Send { to, data },
                state: State::Deferred,
            },
            Request {
                op: Op::Recv { from, buf },
                state: State::Deferred,
            },
        ) => comm.sendrecv_bytes(to, data, from, buf),
        (send, recv) => {
            comm.wait(send)?;
            comm.wait(recv)
        }
    }
}

/// Checks shared by every backend's tests of the non-blocking calls.
#[cfg(test)]
pub(crate) mod checks {
    use super::*;

    /// NPB's pattern towards `peer`, who runs the same: post the receive
    /// and the send, compute, complete both; three rounds of different
    /// lengths (the last larger than a socket's buffers), each checked
    /// value by value, then one send and one receive completed apart.
    pub(crate) fn crossing_rounds(comm: &dyn Communicator, peer: usize) -> Result<()> {
        let me = comm.rank() as f64;
        for (round, len) in [1usize, 700, 300_000].into_iter().enumerate() {
            let out: Vec<f64> = (0..len)
                .map(|i| me * 1e7 + (round * len + i) as f64)
                .collect();
            let mut inp = vec![0.0; len];
            let send = comm.isend(peer, &out)?;
            let recv = comm.irecv(peer, &mut inp)?;
            // Work while the messages travel.
            let busy: f64 = (0..20_000).map(|i| (i as f64).sqrt()).sum();
            assert!(busy > 0.0);
            comm.wait_pair(send, recv)?;
            let them = peer as f64;
            for (i, x) in inp.iter().enumerate() {
                assert_eq!(
                    *x,
                    them * 1e7 + (round * len + i) as f64,
                    "round {round} value {i}"
                );
            }
        }
        // Completed one at a time: the lower rank sends first.
        let mut got = [0.0; 3];
        if comm.rank() < peer {
            comm.wait(comm.isend(peer, &[1.0, 2.0, me])?)?;
            comm.wait(comm.irecv(peer, &mut got)?)?;
        } else {
            let recv = comm.irecv(peer, &mut got)?;
            comm.wait(recv)?;
            comm.wait(comm.isend(peer, &[1.0, 2.0, me])?)?;
        }
        assert_eq!(got, [1.0, 2.0, peer as f64]);
        Ok(())
    }
}
