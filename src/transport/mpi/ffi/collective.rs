//! The adapter's collectives (ABI 5): allreduce of `f64`, alltoallv of
//! `f64` or `i32`, barrier, broadcast and all-to-all of bytes, for the NAS
//! communicator and `wulf collective`. Kept apart from the point-to-point
//! calls the measured channels use.

use std::ffi::{c_int, c_longlong};
use std::io;

use super::{bump, Mpi};

/// A value type the adapter's collectives carry natively: the code tells
/// the adapter which MPI datatype to use (0 MPI_DOUBLE, 1 MPI_INT; the
/// numbers of `wulf_alltoallv` in adapter.c). Sealed: only these two.
pub trait MpiValue: bytemuck::Pod + sealed::Sealed {
    /// The adapter's code of this type.
    const TYPE_CODE: c_int;
}

impl MpiValue for f64 {
    const TYPE_CODE: c_int = 0;
}

impl MpiValue for i32 {
    const TYPE_CODE: c_int = 1;
}

mod sealed {
    /// Keeps [`super::MpiValue`] to the types the adapter knows.
    pub trait Sealed {}
    impl Sealed for f64 {}
    impl Sealed for i32 {}
}

/// A reduction for [`Mpi::allreduce_f64`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReduceOp {
    /// MPI_SUM.
    Sum,
    /// MPI_MAX.
    Max,
    /// MPI_MIN.
    Min,
}

impl Mpi {
    /// In-place MPI_Allreduce of `data` over all ranks.
    pub fn allreduce_f64(&self, data: &mut [f64], op: ReduceOp) -> io::Result<()> {
        let op = match op {
            ReduceOp::Sum => 0,
            ReduceOp::Max => 1,
            ReduceOp::Min => 2,
        };
        bump();
        // SAFETY: data is valid for its length during the call.
        let rc =
            unsafe { (self.api.allreduce_f64)(data.as_mut_ptr(), data.len() as c_longlong, op) };
        bump();
        self.check(rc, "MPI_Allreduce")
    }

    /// In-place MPI_Allreduce (MPI_SUM) of 4-byte integers over all ranks.
    pub fn allreduce_sum_i32(&self, data: &mut [i32]) -> io::Result<()> {
        bump();
        // SAFETY: data is valid for its length during the call; i32 is
        // C's int on every target MPI runs on.
        let rc = unsafe { (self.api.allreduce_i32)(data.as_mut_ptr(), data.len() as c_longlong) };
        bump();
        self.check(rc, "MPI_Allreduce")
    }

    /// MPI_Alltoallv of `T` (MPI_DOUBLE or MPI_INT) over all ranks. `layout` holds four lists
    /// of one entry per rank, one after another: send counts, send
    /// displacements, receive counts, receive displacements (in values).
    /// Fails, without calling MPI, unless every block lies inside its
    /// buffer.
    pub fn alltoallv<T: MpiValue>(
        &self,
        send: &[T],
        recv: &mut [T],
        layout: &[c_int],
    ) -> io::Result<()> {
        let size = self.size();
        let invalid = |what: &str| io::Error::new(io::ErrorKind::InvalidInput, what.to_string());
        if layout.len() != 4 * size {
            return Err(invalid(
                "MPI_Alltoallv: the layout needs four entries per rank",
            ));
        }
        let (send_layout, recv_layout) = layout.split_at(2 * size);
        for (counts_displs, len) in [(send_layout, send.len()), (recv_layout, recv.len())] {
            let (counts, displs) = counts_displs.split_at(size);
            let inside = counts.iter().zip(displs).all(|(&n, &at)| {
                n >= 0 && at >= 0 && (at as usize).saturating_add(n as usize) <= len
            });
            if !inside {
                return Err(invalid("MPI_Alltoallv: a block lies outside its buffer"));
            }
        }
        bump();
        // SAFETY: every block lies inside its buffer (checked above), the
        // buffers and the layout are valid for the call.
        let rc = unsafe {
            (self.api.alltoallv)(
                send.as_ptr().cast(),
                send_layout.as_ptr(),
                send_layout[size..].as_ptr(),
                recv.as_mut_ptr().cast(),
                recv_layout.as_ptr(),
                recv_layout[size..].as_ptr(),
                T::TYPE_CODE,
            )
        };
        bump();
        self.check(rc, "MPI_Alltoallv")
    }

    /// MPI_Barrier over all ranks.
    pub fn barrier(&self) -> io::Result<()> {
        bump();
        // SAFETY: a plain C function of no arguments.
        let rc = unsafe { (self.api.barrier)() };
        bump();
        self.check(rc, "MPI_Barrier")
    }

    /// MPI_Bcast of `buf` (bytes) from rank `root` to every rank.
    pub fn bcast(&self, buf: &mut [u8], root: usize) -> io::Result<()> {
        bump();
        // SAFETY: buf is valid for its length during the call.
        let rc = unsafe {
            (self.api.bcast)(
                buf.as_mut_ptr().cast(),
                buf.len() as c_longlong,
                root as c_int,
            )
        };
        bump();
        self.check(rc, "MPI_Bcast")
    }

    /// MPI_Alltoall of bytes: `send` and `recv` each hold one block per
    /// rank, in rank order, all of one length. Fails, without calling MPI,
    /// unless both buffers are `size` blocks long.
    pub fn alltoall(&self, send: &[u8], recv: &mut [u8]) -> io::Result<()> {
        let size = self.size().max(1);
        if send.len() != recv.len() || !send.len().is_multiple_of(size) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "MPI_Alltoall: buffers of {} and {} bytes are not {size} equal blocks each",
                    send.len(),
                    recv.len()
                ),
            ));
        }
        let block = (send.len() / size) as c_longlong;
        bump();
        // SAFETY: both buffers hold `size` blocks of `block` bytes (checked
        // above) and are valid for the call; they cannot overlap.
        let rc =
            unsafe { (self.api.alltoall)(send.as_ptr().cast(), recv.as_mut_ptr().cast(), block) };
        bump();
        self.check(rc, "MPI_Alltoall")
    }
}
