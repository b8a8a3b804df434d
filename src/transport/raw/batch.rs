//! Frames queued on a packet socket and sent together with one
//! `sendmmsg` (issue 34, CPU per byte): a 64 KiB message is 45 frames at
//! MTU 1500, and one `writev` each made raw pay 45 system call entries and
//! exits where TCP pays one (its 64 KiB leaves as one GSO segment on a
//! veth pair). The kernel still builds one socket buffer per frame: only
//! the calls are saved.
//!
//! Each queued frame is copied into a slot of this batch (Ethernet
//! header, protocol header, payload), so nothing here points into memory
//! the caller may change before the batch leaves; all memory is allocated
//! when the link opens.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd};

/// Frames sent with one call at most (the protocol's send turn is at most
/// a window, 16 to 128 frames).
pub const BATCH_FRAMES: usize = 64;

/// The frames waiting to leave.
pub struct Batch {
    slots: Vec<u8>,
    slot_bytes: usize,
    lens: [usize; BATCH_FRAMES],
    queued: usize,
    /// `sendmmsg` calls made and frames they carried (for the record).
    pub calls: u64,
}

impl Batch {
    /// Room for [`BATCH_FRAMES`] frames of up to `frame_bytes` each.
    pub fn new(frame_bytes: usize) -> Batch {
        Batch {
            slots: vec![0; BATCH_FRAMES * frame_bytes],
            slot_bytes: frame_bytes,
            lens: [0; BATCH_FRAMES],
            queued: 0,
            calls: 0,
        }
    }

    /// Whether no more frames fit.
    pub fn full(&self) -> bool {
        self.queued == BATCH_FRAMES
    }

    /// Copy the frame made of `parts` into the next slot (cut to the slot:
    /// the protocol never makes a longer one).
    pub fn put(&mut self, parts: &[&[u8]]) {
        let start = self.queued * self.slot_bytes;
        let slot = &mut self.slots[start..start + self.slot_bytes];
        let mut len = 0;
        for p in parts {
            let n = p.len().min(slot.len() - len);
            slot[len..len + n].copy_from_slice(&p[..n]);
            len += n;
        }
        self.lens[self.queued] = len;
        self.queued += 1;
    }

    /// Send every queued frame (one `sendmmsg`, more when the kernel takes
    /// fewer); the queue is empty after: a frame the device queue had no
    /// room for is skipped, a loss the protocol repairs.
    pub fn send(&mut self, fd: &OwnedFd) -> io::Result<()> {
        let mut iov = [libc::iovec {
            iov_base: std::ptr::null_mut(),
            iov_len: 0,
        }; BATCH_FRAMES];
        // SAFETY: mmsghdr is plain data; zero is a valid start.
        let mut msgs: [libc::mmsghdr; BATCH_FRAMES] = unsafe { std::mem::zeroed() };
        let n = self.queued;
        for i in 0..n {
            iov[i] = libc::iovec {
                iov_base: self.slots[i * self.slot_bytes..].as_mut_ptr().cast(),
                iov_len: self.lens[i],
            };
            msgs[i].msg_hdr.msg_iov = &mut iov[i];
            msgs[i].msg_hdr.msg_iovlen = 1;
        }
        self.queued = 0;
        let mut done = 0;
        while done < n {
            // SAFETY: the headers point at live iovecs over live slots.
            let rc = unsafe {
                libc::sendmmsg(
                    fd.as_raw_fd(),
                    msgs[done..].as_mut_ptr(),
                    (n - done) as u32,
                    0,
                )
            };
            self.calls += 1;
            if rc > 0 {
                done += rc as usize;
                continue;
            }
            if rc == 0 {
                break;
            }
            let e = io::Error::last_os_error();
            match e.raw_os_error() {
                Some(libc::EINTR) => {}
                // The device queue had no room for this frame: a loss like
                // any other (the protocol resends it); the rest still go.
                Some(libc::ENOBUFS) | Some(libc::EAGAIN) => done += 1,
                _ => return Err(e),
            }
        }
        Ok(())
    }

    /// Send the one queued frame with a plain `send` (a ping-pong's turn:
    /// the cheapest call, as the C probe's `sendto`).
    pub fn send_one(&mut self, fd: &OwnedFd) -> io::Result<()> {
        debug_assert_eq!(self.queued, 1);
        self.queued = 0;
        self.calls += 1;
        // SAFETY: slot 0 holds lens[0] bytes of a live buffer.
        let rc = unsafe { libc::send(fd.as_raw_fd(), self.slots.as_ptr().cast(), self.lens[0], 0) };
        if rc >= 0 {
            return Ok(());
        }
        let e = io::Error::last_os_error();
        match e.raw_os_error() {
            // A full queue dropped it: the protocol resends.
            Some(libc::ENOBUFS) | Some(libc::EAGAIN) | Some(libc::EINTR) => Ok(()),
            _ => Err(e),
        }
    }

    /// Frames waiting.
    pub fn queued(&self) -> usize {
        self.queued
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_are_copied_whole_and_cut_to_the_slot() {
        let mut b = Batch::new(8);
        b.put(&[b"ab", b"cd"]);
        b.put(&[b"0123456789"]);
        assert_eq!(b.queued(), 2);
        assert_eq!(&b.slots[..4], b"abcd");
        assert_eq!(b.lens[..2], [4, 8]);
        assert_eq!(&b.slots[8..16], b"01234567");
    }
}
