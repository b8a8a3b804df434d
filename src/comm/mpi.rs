//! The NPB communicator over MPI, through wulf's run-time loaded adapter.
//!
//! Point-to-point messages are MPI_Send / MPI_Recv of bytes on one tag of
//! MPI_COMM_WORLD (MPI's non-overtaking rule gives the per-pair ordering
//! the kernels rely on); [`Communicator::sendrecv_bytes`] is a native
//! MPI_Sendrecv, so two ranks shifting towards each other never deadlock,
//! whatever the message size; the reductions, the all-to-alls and the
//! barrier are MPI's own collectives (MPI_Allreduce, MPI_Alltoallv of
//! MPI_DOUBLE or, for IS's keys as in NPB, MPI_INT; MPI_Barrier), and so
//! are the broadcast and all-to-all `wulf collective` times (MPI_Bcast,
//! MPI_Alltoall). The allgather keeps the trait's default: the kernels gather
//! only small arrays, rarely.
//!
//! Messages a rank sends to itself never touch MPI: a blocking MPI_Send to
//! oneself waits for a receive that the same thread has not posted yet once
//! the message is too large to buffer, so they go through a local queue.
//!
//! Non-blocking receives and sends are MPI_Irecv and MPI_Isend (NPB's own
//! calls in its line solves) on staging memory the communicator owns, one
//! buffer per adapter request slot, grown once and reused: a receive is
//! copied into the caller's buffer at the wait, a send out of it at the
//! post, so MPI never holds a borrow Rust could end early.
//!
//! MPI calls cannot time out: a peer that hangs is caught by the worker's
//! watchdog (see [`crate::transport::mpi`]), one that fails makes MPI
//! return an error (the adapter sets MPI_ERRORS_RETURN), which every method
//! turns into a `Result` error naming the call and the backend.

use std::cell::RefCell;
use std::collections::VecDeque;

use anyhow::{anyhow, ensure, Result};

use super::request::{complete_deferred, Op, State};
use super::{Communicator, Request};
use crate::transport::mpi::ffi::nonblocking::MAX_PENDING;
use crate::transport::mpi::ffi::{Mpi, MpiValue, ReduceOp};

/// The MPI tag of every message of the kernels (the set-up messages of
/// wulf's MPI worker use others).
const NPB_TAG: i32 = 11;

/// One rank of an MPI job (MPI_COMM_WORLD) as a [`Communicator`].
#[derive(Debug)]
pub struct MpiComm {
    mpi: Mpi,
    name: String,
    /// Messages to this rank itself, oldest first.
    to_self: RefCell<VecDeque<Vec<u8>>>,
    /// Counts and displacements of the last all-to-all, kept so that the
    /// next one of the same size does not allocate.
    layout: RefCell<Vec<std::os::raw::c_int>>,
    staging: RefCell<Staging>,
}

/// The non-blocking calls' memory: buffer `i` is what adapter slot `i`
/// reads or writes while busy. A busy buffer is never resized (it would
/// move), and one still busy when the communicator goes (a request dropped
/// unfinished) is leaked rather than freed under MPI.
#[derive(Debug, Default)]
struct Staging {
    bufs: Vec<Vec<u8>>,
    busy: Vec<bool>,
}

impl Staging {
    /// A free slot with at least `len` bytes, marked busy.
    fn take(&mut self, len: usize) -> Result<usize> {
        let slot = match self.busy.iter().position(|b| !b) {
            Some(i) => i,
            None => {
                ensure!(
                    self.bufs.len() < MAX_PENDING,
                    "more than {MAX_PENDING} non-blocking requests pending at once"
                );
                self.bufs.push(Vec::new());
                self.busy.push(false);
                self.bufs.len() - 1
            }
        };
        if self.bufs[slot].len() < len {
            self.bufs[slot].resize(len, 0);
        }
        self.busy[slot] = true;
        Ok(slot)
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        for (buf, busy) in self.bufs.iter_mut().zip(&self.busy) {
            if *busy {
                std::mem::forget(std::mem::take(buf));
            }
        }
    }
}

impl MpiComm {
    /// Wraps an initialised MPI. `backend_name` is what reports show, the
    /// transport's name (`mpi:openmpi(tcp)`...).
    pub fn new(mpi: Mpi, backend_name: impl Into<String>) -> MpiComm {
        MpiComm {
            mpi,
            name: backend_name.into(),
            to_self: RefCell::new(VecDeque::new()),
            layout: RefCell::new(Vec::new()),
            staging: RefCell::default(),
        }
    }

    /// The MPI handle, for calls the trait does not cover (processor name,
    /// library version).
    pub fn mpi(&self) -> &Mpi {
        &self.mpi
    }

    /// Gives MPI back, e.g. to finalise it.
    pub fn into_mpi(self) -> Mpi {
        self.mpi
    }

    fn check_peer(&self, peer: usize) -> Result<()> {
        ensure!(
            peer < self.mpi.size(),
            "{}: rank {peer} does not exist in a job of {} ranks",
            self.name,
            self.mpi.size()
        );
        Ok(())
    }

    fn failed(&self, e: std::io::Error) -> anyhow::Error {
        anyhow!("{} (rank {}): {e}", self.name, self.mpi.rank())
    }

    fn push_self(&self, data: &[u8]) {
        self.to_self.borrow_mut().push_back(data.to_vec());
    }

    fn pop_self(&self, buf: &mut [u8]) -> Result<()> {
        let msg = self.to_self.borrow_mut().pop_front().ok_or_else(|| {
            // Nobody else can ever send it: waiting would hang forever.
            anyhow!(
                "{}: rank {} receives from itself but sent itself nothing",
                self.name,
                self.mpi.rank()
            )
        })?;
        ensure!(
            msg.len() == buf.len(),
            "{}: rank {} sent itself {} bytes where {} were expected",
            self.name,
            self.mpi.rank(),
            msg.len(),
            buf.len()
        );
        buf.copy_from_slice(&msg);
        Ok(())
    }
    /// MPI_Alltoallv of `T`, with the contract of the other backends: a
    /// count per rank, and counts that add up to the buffers' lengths.
    fn alltoallv_native<T: MpiValue>(
        &self,
        send: &[T],
        send_counts: &[usize],
        recv: &mut [T],
        recv_counts: &[usize],
    ) -> Result<()> {
        let size = self.size();
        super::check_counts(size, send_counts, send.len(), "send")?;
        super::check_counts(size, recv_counts, recv.len(), "receive")?;
        let mut layout = self.layout.borrow_mut();
        layout.clear();
        for counts in [send_counts, recv_counts] {
            let as_int = |n: usize| {
                std::os::raw::c_int::try_from(n).map_err(|_| {
                    anyhow!("{}: alltoallv block of {n} values is too long", self.name)
                })
            };
            for &n in counts {
                layout.push(as_int(n)?);
            }
            let mut at = 0;
            for &n in counts {
                layout.push(as_int(at)?);
                at += n;
            }
        }
        self.mpi
            .alltoallv(send, recv, &layout)
            .map_err(|e| self.failed(e))
    }
}

impl Communicator for MpiComm {
    fn rank(&self) -> usize {
        self.mpi.rank()
    }

    fn size(&self) -> usize {
        self.mpi.size()
    }

    fn backend_name(&self) -> &str {
        &self.name
    }

    fn send_bytes(&self, to: usize, data: &[u8]) -> Result<()> {
        self.check_peer(to)?;
        if to == self.rank() {
            self.push_self(data);
            return Ok(());
        }
        self.mpi.send(data, to, NPB_TAG).map_err(|e| self.failed(e))
    }

    fn recv_bytes(&self, from: usize, buf: &mut [u8]) -> Result<()> {
        self.check_peer(from)?;
        if from == self.rank() {
            return self.pop_self(buf);
        }
        self.mpi
            .recv_exact(buf, from, NPB_TAG)
            .map_err(|e| self.failed(e))
    }

    fn sendrecv_bytes(&self, to: usize, data: &[u8], from: usize, buf: &mut [u8]) -> Result<()> {
        self.check_peer(to)?;
        self.check_peer(from)?;
        let me = self.rank();
        match (to == me, from == me) {
            // MPI_Sendrecv handles to == from (two ranks on an axis) too.
            (false, false) => self
                .mpi
                .sendrecv_exact(to, data, from, buf, NPB_TAG)
                .map_err(|e| self.failed(e)),
            (true, true) => {
                self.push_self(data);
                self.pop_self(buf)
            }
            // Our own message is queued locally, so the MPI half cannot
            // wait on it.
            (true, false) => {
                self.push_self(data);
                self.recv_bytes(from, buf)
            }
            (false, true) => {
                self.pop_self(buf)?;
                self.send_bytes(to, data)
            }
        }
    }

    fn irecv_bytes<'a>(&self, from: usize, buf: &'a mut [u8]) -> Result<Request<'a>> {
        self.check_peer(from)?;
        if from == self.rank() {
            return Ok(Request::deferred_recv(from, buf));
        }
        let mut staging = self.staging.borrow_mut();
        let slot = staging.take(buf.len())?;
        let at = staging.bufs[slot].as_mut_ptr();
        // SAFETY: the slot's buffer holds at least buf.len() bytes and is
        // neither resized, touched nor freed while the slot is busy.
        if let Err(e) = unsafe { self.mpi.irecv(at, buf.len(), from, NPB_TAG, slot) } {
            staging.busy[slot] = false;
            return Err(self.failed(e));
        }
        Ok(Request::posted(Op::Recv { from, buf }, slot))
    }

    fn isend_bytes<'a>(&self, to: usize, data: &'a [u8]) -> Result<Request<'a>> {
        self.check_peer(to)?;
        if to == self.rank() {
            self.push_self(data);
            return Ok(Request::sent(to, data));
        }
        let mut staging = self.staging.borrow_mut();
        let slot = staging.take(data.len())?;
        staging.bufs[slot][..data.len()].copy_from_slice(data);
        let at = staging.bufs[slot].as_ptr();
        // SAFETY: as in irecv_bytes: the copy stays put until the wait.
        if let Err(e) = unsafe { self.mpi.isend(at, data.len(), to, NPB_TAG, slot) } {
            staging.busy[slot] = false;
            return Err(self.failed(e));
        }
        Ok(Request::posted(Op::Send { to, data }, slot))
    }

    fn wait(&self, req: Request<'_>) -> Result<()> {
        let State::Posted { slot } = req.state else {
            return complete_deferred(self, req);
        };
        let mut staging = self.staging.borrow_mut();
        ensure!(
            staging.busy.get(slot) == Some(&true),
            "{}: no request pending in slot {slot}",
            self.name
        );
        let want = match &req.op {
            Op::Recv { from, buf } => Some((buf.len(), *from)),
            Op::Send { .. } => None,
        };
        let done = self.mpi.wait(slot, want);
        // MPI_Wait returned: the request is over, successful or not.
        staging.busy[slot] = false;
        done.map_err(|e| self.failed(e))?;
        if let Op::Recv { buf, .. } = req.op {
            buf.copy_from_slice(&staging.bufs[slot][..buf.len()]);
        }
        Ok(())
    }

    fn wait_pair(&self, send: Request<'_>, recv: Request<'_>) -> Result<()> {
        // Both posted: either order completes; wait for both even when
        // the first fails, so no slot stays taken.
        let sent = self.wait(send);
        let received = self.wait(recv);
        sent.and(received)
    }

    fn allreduce_sum_f64(&self, values: &mut [f64]) -> Result<()> {
        self.mpi
            .allreduce_f64(values, ReduceOp::Sum)
            .map_err(|e| self.failed(e))
    }

    fn allreduce_max_f64(&self, values: &mut [f64]) -> Result<()> {
        self.mpi
            .allreduce_f64(values, ReduceOp::Max)
            .map_err(|e| self.failed(e))
    }

    fn allreduce_sum_i32(&self, values: &mut [i32]) -> Result<()> {
        self.mpi
            .allreduce_sum_i32(values)
            .map_err(|e| self.failed(e))
    }

    fn alltoallv_f64(
        &self,
        send: &[f64],
        send_counts: &[usize],
        recv: &mut [f64],
        recv_counts: &[usize],
    ) -> Result<()> {
        self.alltoallv_native(send, send_counts, recv, recv_counts)
    }

    fn alltoallv_i32(
        &self,
        send: &[i32],
        send_counts: &[usize],
        recv: &mut [i32],
        recv_counts: &[usize],
    ) -> Result<()> {
        self.alltoallv_native(send, send_counts, recv, recv_counts)
    }

    fn barrier(&self) -> Result<()> {
        self.mpi.barrier().map_err(|e| self.failed(e))
    }

    fn bcast_bytes(&self, root: usize, buf: &mut [u8]) -> Result<()> {
        self.check_peer(root)?;
        self.mpi.bcast(buf, root).map_err(|e| self.failed(e))
    }

    fn alltoall_bytes(&self, send: &[u8], recv: &mut [u8]) -> Result<()> {
        self.mpi.alltoall(send, recv).map_err(|e| self.failed(e))
    }
}
