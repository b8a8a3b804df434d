//! Receiving frames on a packet socket with plain calls into slots
//! allocated when the link opens: one frame with `recv`, a stream's
//! frames in batches with `recvmmsg`, blocking in the kernel (SO_RCVTIMEO)
//! when nothing waits.
//!
//! Why not the TPACKET_V2 receive ring any more (issue 34, third pass):
//! a ring is read without system calls but can only be waited on with
//! `poll`, and the poll wake-up was what kept raw 1.2x above the plain C
//! probe. `bench/lean_recv_variants.sh` (the C probe in interleaved
//! rounds, 8 B, one-way): blocking `recvfrom` 3.94-3.98 us, the same with
//! a non-blocking `recv` before it 1.01-1.03x, `ppoll` + `recvfrom`
//! without any ring 1.21x, the ring + `ppoll` 1.20x, the ring + `epoll`
//! 1.28x. The ring's memory was not it (a 64 KiB ring: 1.20x).
//!
//! So a wait whose deadline may be a few milliseconds late (a ping-pong's,
//! a receiver's: [`super::super::frames::wait_timers`]) blocks in `recv`
//! itself; its timeout, SO_RCVTIMEO, counts in scheduler ticks and is set
//! only when it changes. A stream's sender, whose resend timer must be
//! exact, waits in `ppoll` as before. A non-blocking look that finds
//! nothing costs a call (1-3% in the first measurement above), so the
//! link skips the look right after it sent one frame (`super::PacketLink`).

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd};
use std::time::Duration;

/// Frames taken with one call at most.
pub const BATCH_FRAMES: usize = 32;

/// Looks in a row that found frames before a look takes a batch.
const BATCH_AFTER_HITS: u32 = 2;

/// The longest blocking receive: a wait ends this often to look at the
/// abort handle (a killed client frees its server within about this), as
/// a shared-memory wait does ([`crate::transport::wait::ABORT_CHECK_EVERY`]).
pub const ABORT_CHECK_EVERY: Duration = crate::transport::wait::ABORT_CHECK_EVERY;

/// Socket receive buffer asked for: a few windows of full frames (the
/// protocol keeps at most 512 KiB in flight each way; the kernel counts
/// each frame's whole buffer, about twice its bytes). A frame that finds
/// the buffer full is dropped, a loss the protocol repairs.
pub const RCVBUF_BYTES: usize = 4 << 20;

/// Frames received and not yet handed out.
pub struct RxBatch {
    slots: Vec<u8>,
    slot_bytes: usize,
    lens: [usize; BATCH_FRAMES],
    /// Frames in the slots, and the next to hand out.
    count: usize,
    next: usize,
    /// The SO_RCVTIMEO now set (None: not yet).
    timeout: Option<Duration>,
    /// Bytes of receive buffer the kernel granted.
    rcvbuf_bytes: usize,
    /// Non-blocking looks in a row that found frames: from
    /// [`BATCH_AFTER_HITS`] on a stream flows and a look takes a batch.
    hits: u32,
    /// The call's message headers and their iovecs, one per slot, made
    /// once (the slots' heap memory never moves).
    _iov: Box<[libc::iovec]>,
    msgs: Box<[libc::mmsghdr]>,
}

// SAFETY: the raw pointers in `_iov` and `msgs` point only into this
// value's own heap memory (`slots`, `_iov`), which moves with it.
unsafe impl Send for RxBatch {}

/// How a receive call waits.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Block {
    /// Return at once when nothing waits.
    No,
    /// Block up to the socket's SO_RCVTIMEO for the first frame.
    Timed,
}

impl RxBatch {
    /// Slots for [`BATCH_FRAMES`] frames of up to `frame_bytes` each
    /// (Ethernet header included); asks `fd` for [`RCVBUF_BYTES`] of
    /// receive buffer (SO_RCVBUFFORCE, past `net.core.rmem_max`, where
    /// allowed).
    pub fn new(fd: &OwnedFd, frame_bytes: usize) -> io::Result<RxBatch> {
        let bytes = RCVBUF_BYTES as libc::c_int;
        if set_int(fd, libc::SO_RCVBUFFORCE, bytes).is_err() {
            set_int(fd, libc::SO_RCVBUF, bytes)?;
        }
        let rcvbuf_bytes = socket2::SockRef::from(fd).recv_buffer_size()?;
        let mut slots = vec![0u8; BATCH_FRAMES * frame_bytes];
        let mut iov: Box<[libc::iovec]> = (0..BATCH_FRAMES)
            .map(|i| libc::iovec {
                iov_base: slots[i * frame_bytes..].as_mut_ptr().cast(),
                iov_len: frame_bytes,
            })
            .collect();
        let msgs: Box<[libc::mmsghdr]> = iov
            .iter_mut()
            .map(|v| {
                // SAFETY: mmsghdr is plain data; zero is a valid start.
                let mut m: libc::mmsghdr = unsafe { std::mem::zeroed() };
                m.msg_hdr.msg_iov = v;
                m.msg_hdr.msg_iovlen = 1;
                m
            })
            .collect();
        Ok(RxBatch {
            slots,
            _iov: iov,
            msgs,
            slot_bytes: frame_bytes,
            lens: [0; BATCH_FRAMES],
            count: 0,
            next: 0,
            timeout: None,
            rcvbuf_bytes,
            hits: 0,
        })
    }

    /// Bytes of receive buffer granted (Linux reports twice the request).
    pub fn rcvbuf_bytes(&self) -> usize {
        self.rcvbuf_bytes
    }

    /// The next frame received, handed to `take` (its bytes from the
    /// Ethernet header on); None when the batch is empty.
    pub fn take<R>(&mut self, take: impl FnOnce(&[u8]) -> R) -> Option<R> {
        if self.next == self.count {
            return None;
        }
        let i = self.next;
        self.next += 1;
        let start = i * self.slot_bytes;
        Some(take(&self.slots[start..start + self.lens[i]]))
    }

    /// Set the blocking receive's timeout to `wait` rounded up to a
    /// millisecond, at most [`ABORT_CHECK_EVERY`] (a system call only
    /// when that changes: a ping-pong's waits all round the same).
    pub fn set_timeout(&mut self, fd: &OwnedFd, wait: Duration) -> io::Result<()> {
        let ms = wait.as_nanos().div_ceil(1_000_000).max(1) as u64;
        let t = Duration::from_millis(ms).min(ABORT_CHECK_EVERY);
        if self.timeout != Some(t) {
            socket2::SockRef::from(fd).set_read_timeout(Some(t))?;
            self.timeout = Some(t);
        }
        Ok(())
    }

    /// Receive what waits into the (empty) batch: how many frames came.
    /// `block`: [`Block::Timed`] waits for the first up to the socket's
    /// timeout; a timeout or an interruption is 0 frames. Frames the slot
    /// cut short are dropped here (their sender resends them).
    ///
    /// One frame with `recv` unless the last [`BATCH_AFTER_HITS`] looks
    /// found frames (a stream flows): `recvmmsg`, even when it finds one,
    /// cost the C probe 1.10x `recvfrom`'s one-way time, and 1.15x with a
    /// look before each wait (`bench/lean_recv_variants.sh`, `mmsg`,
    /// `try+mmsg`). One look that found a frame is not enough: a
    /// ping-pong's look finds the answer whenever this end was preempted
    /// after its send (on the loaded 2-vCPU VM 0.8 looks a message took
    /// `recvmmsg` under that rule).
    pub fn fill(&mut self, fd: BorrowedFd<'_>, block: Block) -> io::Result<usize> {
        debug_assert_eq!(self.next, self.count);
        self.count = 0;
        self.next = 0;
        let got = if block == Block::No && self.hits >= BATCH_AFTER_HITS {
            self.recv_many(fd)?
        } else {
            self.recv_one(fd, block)?
        };
        if block == Block::No {
            self.hits = if got > 0 {
                self.hits.saturating_add(1)
            } else {
                0
            };
        }
        Ok(got)
    }

    /// One frame into slot 0 (`recv`; MSG_TRUNC makes it tell a cut
    /// frame's whole length).
    fn recv_one(&mut self, fd: BorrowedFd<'_>, block: Block) -> io::Result<usize> {
        let flags = libc::MSG_TRUNC
            | match block {
                Block::No => libc::MSG_DONTWAIT,
                Block::Timed => 0,
            };
        // SAFETY: slot 0 is live memory of slot_bytes.
        let rc = unsafe {
            libc::recv(
                fd.as_raw_fd(),
                self.slots.as_mut_ptr().cast(),
                self.slot_bytes,
                flags,
            )
        };
        if rc < 0 {
            return quiet_error();
        }
        if rc as usize > self.slot_bytes {
            return Ok(0);
        }
        self.lens[0] = rc as usize;
        self.count = 1;
        Ok(1)
    }

    /// Up to [`BATCH_FRAMES`] frames that wait (`recvmmsg`, never blocking).
    fn recv_many(&mut self, fd: BorrowedFd<'_>) -> io::Result<usize> {
        // SAFETY: the headers point at this batch's iovecs over its slots
        // (both allocated once, never moved); no timeout argument.
        let rc = unsafe {
            libc::recvmmsg(
                fd.as_raw_fd(),
                self.msgs.as_mut_ptr(),
                BATCH_FRAMES as u32,
                libc::MSG_DONTWAIT,
                std::ptr::null_mut(),
            )
        };
        if rc < 0 {
            return quiet_error();
        }
        for i in 0..rc as usize {
            let m = &self.msgs[i];
            if m.msg_hdr.msg_flags & libc::MSG_TRUNC != 0 {
                continue;
            }
            let len = m.msg_len as usize;
            if self.count != i {
                // A cut frame was skipped before this one: close the gap
                // (slot `count` is free: cut, or already moved down).
                let from = i * self.slot_bytes;
                self.slots
                    .copy_within(from..from + len, self.count * self.slot_bytes);
            }
            self.lens[self.count] = len;
            self.count += 1;
        }
        Ok(self.count)
    }
}

/// A receive's error: nothing waited, the wait timed out or a signal
/// came are 0 frames; anything else is the error.
fn quiet_error() -> io::Result<usize> {
    let e = io::Error::last_os_error();
    match e.raw_os_error() {
        Some(libc::EAGAIN) | Some(libc::EINTR) => Ok(0),
        _ => Err(e),
    }
}

/// Wait up to `wait` (exactly: ppoll's high-resolution timer) for a frame
/// on `fd`, or until `abort` becomes readable: whether it did.
/// Interrupted or timed out alike return Ok(false): the caller looks at
/// the socket again.
pub fn poll_wait(fd: BorrowedFd<'_>, abort: BorrowedFd<'_>, wait: Duration) -> io::Result<bool> {
    let ts = libc::timespec {
        tv_sec: wait.as_secs() as libc::time_t,
        tv_nsec: wait.subsec_nanos() as libc::c_long,
    };
    let mut pfd = [
        libc::pollfd {
            fd: fd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        },
        libc::pollfd {
            fd: abort.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        },
    ];
    // SAFETY: two valid pollfds and a valid timespec; no signal mask.
    let rc = unsafe { libc::ppoll(pfd.as_mut_ptr(), 2, &ts, std::ptr::null()) };
    if rc < 0 {
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
        return Ok(false);
    }
    Ok(pfd[1].revents != 0)
}

/// setsockopt(SOL_SOCKET, `opt`, `v`).
fn set_int(fd: &OwnedFd, opt: libc::c_int, v: libc::c_int) -> io::Result<()> {
    // SAFETY: v lives across the call; the size matches its type.
    let rc = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            opt,
            (&v as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as u32,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsFd;

    /// A datagram socket pair stands in for the packet socket: recvmmsg
    /// behaves alike (whole messages, MSG_TRUNC for a cut one).
    fn pair() -> (OwnedFd, OwnedFd) {
        let (a, b) = std::os::unix::net::UnixDatagram::pair().unwrap();
        (OwnedFd::from(a), OwnedFd::from(b))
    }

    fn send(fd: &OwnedFd, bytes: &[u8]) {
        // SAFETY: a live buffer of its length.
        let n = unsafe { libc::send(fd.as_raw_fd(), bytes.as_ptr().cast(), bytes.len(), 0) };
        assert_eq!(n, bytes.len() as isize);
    }

    #[test]
    fn a_batch_hands_out_whole_frames_in_order_and_drops_cut_ones() {
        let (a, b) = pair();
        let mut rx = RxBatch::new(&b, 8).unwrap();
        assert_eq!(rx.fill(b.as_fd(), Block::No).unwrap(), 0);
        send(&a, b"one");
        send(&a, b"far too long");
        // Nothing flowed: one frame with recv (a cut one is none).
        assert_eq!(rx.fill(b.as_fd(), Block::No).unwrap(), 1);
        assert_eq!(rx.take(|f| f.to_vec()).unwrap(), b"one");
        assert!(rx.take(|f| f.len()).is_none());
        assert_eq!(rx.fill(b.as_fd(), Block::No).unwrap(), 0);
        assert_eq!(rx.hits, 0);
        send(&a, b"two");
        assert_eq!(rx.fill(b.as_fd(), Block::No).unwrap(), 1);
        assert_eq!(rx.take(|f| f.to_vec()).unwrap(), b"two");
        send(&a, b"two+");
        assert_eq!(rx.fill(b.as_fd(), Block::No).unwrap(), 1);
        assert_eq!(rx.take(|f| f.to_vec()).unwrap(), b"two+");
        send(&a, b"far too long");
        send(&a, b"three");
        send(&a, b"four");
        send(&a, b"also too long");
        // Frames flow: the rest in one recvmmsg, the cut ones dropped.
        assert_eq!(rx.fill(b.as_fd(), Block::No).unwrap(), 2);
        assert_eq!(rx.take(|f| f.to_vec()).unwrap(), b"three");
        assert_eq!(rx.take(|f| f.to_vec()).unwrap(), b"four");
        assert!(rx.take(|f| f.len()).is_none());
        // A cut frame alone is no frame.
        send(&a, b"too long again");
        assert_eq!(rx.fill(b.as_fd(), Block::Timed).unwrap(), 0);
    }

    #[test]
    fn a_timed_fill_returns_empty_after_the_timeout_rounded_to_a_millisecond() {
        let (_a, b) = pair();
        let mut rx = RxBatch::new(&b, 8).unwrap();
        rx.set_timeout(&b, Duration::from_micros(10)).unwrap();
        assert_eq!(rx.timeout, Some(Duration::from_millis(1)));
        rx.set_timeout(&b, Duration::from_secs(5)).unwrap();
        assert_eq!(rx.timeout, Some(ABORT_CHECK_EVERY));
        let t0 = std::time::Instant::now();
        assert_eq!(rx.fill(b.as_fd(), Block::Timed).unwrap(), 0);
        let waited = t0.elapsed();
        assert!(
            waited >= ABORT_CHECK_EVERY / 2 && waited < Duration::from_secs(2),
            "{waited:?}"
        );
    }
}
