//! A packet socket's receive ring (PACKET_RX_RING, TPACKET_V2): the
//! kernel writes each frame of wulf's EtherType into a slot of memory
//! mapped into this process and flips the slot's status word, so taking a
//! frame that already arrived costs no system call, and waiting for one
//! costs one (`ppoll`, whose timeout is exact, unlike SO_RCVTIMEO's, which
//! the kernel rounds to a scheduler tick).
//!
//! Why it matters (issue 34): a receive with plain calls was a
//! non-blocking `recvmsg` (nothing yet), `ppoll`, and `recvmsg` again,
//! three system calls where a plain C ping-pong makes one; with the ring a
//! ping-pong message costs `writev` and `ppoll`, as C's `sendto` and
//! `recvfrom`. TPACKET_V3 (blocks retired on a millisecond timer) suits
//! capture, not single frames, so V2 with one frame per slot is used.
//!
//! Slot protocol (Documentation/networking/packet_mmap.rst): a slot whose
//! status has TP_STATUS_USER is this process's; reading the status with
//! Acquire orders the frame bytes after it; handing the slot back is a
//! Release store of TP_STATUS_KERNEL. Slots are taken in order.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

/// Bytes of ring asked for: a few windows of full frames (the protocol
/// keeps at most 512 KiB in flight each way); a frame that finds the ring
/// full is dropped, a loss the protocol repairs.
const RING_BYTES: usize = 4 << 20;
/// The ring layout asked for (enum tpacket_versions in if_packet.h).
const TPACKET_V2: libc::c_int = 1;
/// Slots at least, whatever the MTU.
const MIN_SLOTS: usize = 256;
/// Bytes of each ring block (a multiple of the page size, holding whole
/// slots): small enough that the kernel finds the memory easily.
const BLOCK_BYTES: usize = 64 << 10;
/// Room in a slot before the frame: the TPACKET_V2 header, the
/// sockaddr_ll after it and the alignment padding (generously).
const SLOT_OVERHEAD_BYTES: usize = 128;

/// The mapped receive ring of one packet socket.
pub struct RxRing {
    map: *mut u8,
    map_bytes: usize,
    slot_bytes: usize,
    slots: usize,
    /// The next slot to look at.
    next: usize,
}

// SAFETY: the mapping is owned by this value alone; the kernel is the
// only other party and synchronises through the status words.
unsafe impl Send for RxRing {}

impl RxRing {
    /// Set up and map a ring on `fd` (before bind, after socket) for
    /// frames of up to `frame_bytes` (Ethernet header included).
    pub fn new(fd: &OwnedFd, frame_bytes: usize) -> io::Result<RxRing> {
        let slot_bytes = (frame_bytes + SLOT_OVERHEAD_BYTES).next_power_of_two();
        let block_bytes = BLOCK_BYTES.max(slot_bytes);
        let slots = (RING_BYTES / slot_bytes).max(MIN_SLOTS);
        let blocks = slots.div_ceil(block_bytes / slot_bytes);
        let slots = blocks * (block_bytes / slot_bytes);
        sockopt(fd, libc::PACKET_VERSION, &TPACKET_V2)?;
        let req = libc::tpacket_req {
            tp_block_size: block_bytes as u32,
            tp_block_nr: blocks as u32,
            tp_frame_size: slot_bytes as u32,
            tp_frame_nr: slots as u32,
        };
        sockopt(fd, libc::PACKET_RX_RING, &req)?;
        let map_bytes = blocks * block_bytes;
        // SAFETY: a shared mapping of the ring just set up, of its size;
        // checked for failure below.
        let map = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                map_bytes,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        if map == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(RxRing {
            map: map.cast(),
            map_bytes,
            slot_bytes,
            slots,
            next: 0,
        })
    }

    /// Slots in the ring.
    pub fn slots(&self) -> usize {
        self.slots
    }

    /// Bytes of the ring.
    pub fn bytes(&self) -> usize {
        self.map_bytes
    }

    fn header(&self) -> *mut libc::tpacket2_hdr {
        // Blocks hold whole slots and follow each other, so slot i starts
        // at i slot sizes.
        self.map.wrapping_add(self.next * self.slot_bytes).cast()
    }

    fn status(&self) -> &AtomicU32 {
        // SAFETY: tp_status is the first, aligned u32 of a live slot; the
        // kernel writes it concurrently, hence the atomic view.
        unsafe { &*(self.header().cast::<AtomicU32>()) }
    }

    /// The next frame, handed to `take` (its bytes from the Ethernet
    /// header on) and returned to the kernel after; None when none waits.
    /// A frame the slot cut short is skipped (its sender resends it).
    pub fn take<R>(&mut self, mut take: impl FnMut(&[u8]) -> R) -> Option<R> {
        loop {
            if self.status().load(Ordering::Acquire) & libc::TP_STATUS_USER == 0 {
                return None;
            }
            // SAFETY: the slot is this process's until handed back; its
            // header and frame lie within the slot (the kernel wrote them).
            let out = unsafe {
                let h = &*self.header();
                let whole = h.tp_len == h.tp_snaplen;
                let start = usize::from(h.tp_mac);
                let len = (h.tp_snaplen as usize).min(self.slot_bytes.saturating_sub(start));
                let frame = std::slice::from_raw_parts(self.header().cast::<u8>().add(start), len);
                whole.then(|| take(frame))
            };
            self.status()
                .store(libc::TP_STATUS_KERNEL, Ordering::Release);
            self.next = (self.next + 1) % self.slots;
            if out.is_some() {
                return out;
            }
        }
    }

    /// Wait up to `wait` for a frame (one `ppoll`), or until `abort`
    /// becomes readable: whether it did. Interrupted or timed out alike
    /// return Ok(false): the caller looks at the ring again.
    pub fn wait(&self, fd: &OwnedFd, abort: BorrowedFd<'_>, wait: Duration) -> io::Result<bool> {
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
}

impl Drop for RxRing {
    fn drop(&mut self) {
        // SAFETY: the mapping made in new, unmapped once.
        unsafe {
            libc::munmap(self.map.cast(), self.map_bytes);
        }
    }
}

/// setsockopt(SOL_PACKET, `opt`, `v`).
fn sockopt<T>(fd: &OwnedFd, opt: libc::c_int, v: &T) -> io::Result<()> {
    // SAFETY: v lives across the call; the size matches its type.
    let rc = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::SOL_PACKET,
            opt,
            (v as *const T).cast(),
            std::mem::size_of::<T>() as u32,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}
