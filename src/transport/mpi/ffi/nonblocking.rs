//! The adapter's non-blocking point-to-point calls (ABI 7): MPI_Irecv and
//! MPI_Isend into numbered request slots, completed by MPI_Wait, for the
//! NAS communicator's overlap of a stage's computation with its messages
//! (NPB's `x_solve` and its siblings).
//!
//! MPI reads or writes the buffer of a posted request until it completes,
//! which Rust's borrows cannot express once a request outlives a call: so
//! these calls are `unsafe`, and their one caller
//! ([`crate::comm::MpiComm`]) posts them only on staging memory it owns and
//! never frees or moves while a request on it may be pending.

use std::ffi::{c_int, c_longlong};
use std::io;

use super::{bump, check_length, Mpi};

/// Request slots the adapter holds (`WULF_MAX_PENDING` in adapter.c).
pub const MAX_PENDING: usize = 64;

impl Mpi {
    /// MPI_Irecv of at most `len` bytes from rank `from` into `buf`, as
    /// request `slot` (`0..MAX_PENDING`, free).
    ///
    /// # Safety
    /// `buf` must stay valid for writes of `len` bytes, and untouched by
    /// anything else, until [`Mpi::wait`] on `slot` returns.
    pub unsafe fn irecv(
        &self,
        buf: *mut u8,
        len: usize,
        from: usize,
        tag: i32,
        slot: usize,
    ) -> io::Result<()> {
        bump();
        // SAFETY: the caller keeps the buffer valid until the wait.
        let rc = unsafe {
            (self.api.irecv)(
                buf.cast(),
                len as c_longlong,
                from as c_int,
                tag,
                slot as c_int,
            )
        };
        bump();
        self.check(rc, "MPI_Irecv")
    }

    /// MPI_Isend of the `len` bytes at `data` to rank `to`, as request
    /// `slot` (`0..MAX_PENDING`, free).
    ///
    /// # Safety
    /// `data` must stay valid for reads of `len` bytes, and unchanged,
    /// until [`Mpi::wait`] on `slot` returns.
    pub unsafe fn isend(
        &self,
        data: *const u8,
        len: usize,
        to: usize,
        tag: i32,
        slot: usize,
    ) -> io::Result<()> {
        bump();
        // SAFETY: the caller keeps the buffer valid until the wait.
        let rc = unsafe {
            (self.api.isend)(
                data.cast(),
                len as c_longlong,
                to as c_int,
                tag,
                slot as c_int,
            )
        };
        bump();
        self.check(rc, "MPI_Isend")
    }

    /// MPI_Wait on request `slot`, which becomes free. For a receive,
    /// checks that exactly `want_bytes` arrived from rank `from`; for a
    /// send give `None`.
    pub fn wait(&self, slot: usize, want: Option<(usize, usize)>) -> io::Result<()> {
        let mut got: c_longlong = 0;
        bump();
        // SAFETY: the out-pointer is valid for the call.
        let rc = unsafe { (self.api.wait)(slot as c_int, &mut got) };
        bump();
        self.check(rc, "MPI_Wait")?;
        match want {
            Some((want_bytes, from)) => check_length(got, want_bytes, from),
            None => Ok(()),
        }
    }
}
