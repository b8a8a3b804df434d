//! An AF_XDP socket on one receive queue of an interface: its UMEM (the
//! frames shared with the kernel) and its four rings, set up with plain
//! socket calls (socket(AF_XDP), XDP_UMEM_REG, the ring sizes, mmap of the
//! rings, bind).
//!
//! The UMEM's first half holds receive frames, which circulate between
//! the fill ring (handed to the kernel) and the receive ring (filled by
//! it); the second half holds send frames, taken from a free list, put on
//! the send ring and returned by the completion ring once sent. Each ring
//! is a single-producer single-consumer queue of a power-of-two size whose
//! indices live in memory shared with the kernel: the producer writes
//! entries then publishes its index with Release, the consumer reads the
//! index with Acquire before the entries (the kernel's side of
//! Documentation/networking/af_xdp.rst).
//!
//! Binding asks for nothing special: the kernel uses zero-copy where the
//! driver supports it and copy mode otherwise (veth), and XDP_OPTIONS
//! tells which it chose.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicU32, Ordering};

/// Kicks [`XskSocket::push`] makes at most: copy mode sends a bounded
/// batch per kick (32 frames in Linux 6.x), a window is at most 128.
const PUSH_KICKS: usize = 8;

/// Bytes per UMEM frame: one page, the largest the kernel takes for an
/// aligned UMEM without huge pages.
pub const FRAME_BYTES: usize = 4096;
/// The kernel keeps this much room before a received frame's data
/// (XDP_PACKET_HEADROOM), so a frame holds FRAME_BYTES less it.
pub const KERNEL_HEADROOM_BYTES: usize = 256;
/// Frames for each direction (and the size of every ring): far more than
/// the protocol's window of at most 128 frames in flight.
const FRAMES_PER_DIRECTION: u32 = 2048;

/// How long a bind that finds the queue busy is retried (a socket closed
/// just before still holds it until the kernel's deferred clean-up).
const BIND_BUSY_RETRY: std::time::Duration = std::time::Duration::from_secs(3);

/// Send buffer asked for: the whole UMEM's send half many times over.
const SNDBUF_BYTES: usize = 32 << 20;

/// One mapped ring.
struct Ring {
    map: *mut libc::c_void,
    map_bytes: usize,
    producer: *const AtomicU32,
    consumer: *const AtomicU32,
    entries: *mut u8,
    mask: u32,
    /// This end's copy of its own index (producer or consumer).
    head: u32,
}

impl Ring {
    /// Map ring `pgoff` of socket `fd` with `size` entries of `entry_bytes`.
    fn map(
        fd: &OwnedFd,
        pgoff: libc::off_t,
        off: &libc::xdp_ring_offset,
        size: u32,
        entry_bytes: usize,
    ) -> io::Result<Ring> {
        let map_bytes = off.desc as usize + size as usize * entry_bytes;
        // SAFETY: a shared mapping of the socket's ring at the kernel's
        // offset; checked for failure below.
        let map = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                map_bytes,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_POPULATE,
                fd.as_raw_fd(),
                pgoff,
            )
        };
        if map == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let at = |o: u64| map.cast::<u8>().wrapping_add(o as usize);
        Ok(Ring {
            map,
            map_bytes,
            producer: at(off.producer).cast(),
            consumer: at(off.consumer).cast(),
            entries: at(off.desc),
            mask: size - 1,
            head: 0,
        })
    }

    fn load(p: *const AtomicU32) -> u32 {
        // SAFETY: p points into the live mapping at a 4-byte aligned index.
        unsafe { (*p).load(Ordering::Acquire) }
    }

    fn store(p: *const AtomicU32, v: u32) {
        // SAFETY: as in load.
        unsafe { (*p).store(v, Ordering::Release) }
    }

    /// Producer side: free entries.
    fn free(&self) -> u32 {
        self.mask + 1 - self.head.wrapping_sub(Self::load(self.consumer))
    }

    /// Consumer side: entries ready.
    fn ready(&self) -> u32 {
        Self::load(self.producer).wrapping_sub(self.head)
    }

    /// Entry `head` as a `T` (u64 addresses or xdp_desc).
    fn slot<T>(&self) -> *mut T {
        let i = (self.head & self.mask) as usize;
        self.entries.cast::<T>().wrapping_add(i)
    }

    /// Producer side: publish the entry at head.
    fn publish(&mut self) {
        self.head = self.head.wrapping_add(1);
        Self::store(self.producer, self.head);
    }

    /// Consumer side: release the entry at head.
    fn release(&mut self) {
        self.head = self.head.wrapping_add(1);
        Self::store(self.consumer, self.head);
    }
}

impl Drop for Ring {
    fn drop(&mut self) {
        // SAFETY: the mapping made in Ring::map, unmapped once.
        unsafe { libc::munmap(self.map, self.map_bytes) };
    }
}

/// An AF_XDP socket bound to one queue, with its UMEM and rings.
pub struct XskSocket {
    fd: OwnedFd,
    umem: memmap2::MmapMut,
    fill: Ring,
    completion: Ring,
    rx: Ring,
    tx: Ring,
    /// Send frames not in the kernel's hands (UMEM offsets).
    free_tx: Vec<u64>,
    zero_copy: bool,
}

// SAFETY: the raw pointers point into mappings this value owns alone; it
// moves between threads as a whole, never shared.
unsafe impl Send for XskSocket {}

/// An AF_XDP socket, not yet bound (the cheap probe of availability).
pub fn open_socket() -> io::Result<OwnedFd> {
    // SAFETY: plain socket(2); the descriptor is owned right away.
    let fd = unsafe { libc::socket(libc::AF_XDP, libc::SOCK_RAW | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a fresh descriptor nobody else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// setsockopt (`set`) or getsockopt of SOL_XDP option `opt` with `v`.
fn xdp_option<T>(fd: &OwnedFd, opt: libc::c_int, v: &mut T, set: bool) -> io::Result<()> {
    let mut len = std::mem::size_of::<T>() as libc::socklen_t;
    let p = (v as *mut T).cast::<libc::c_void>();
    // SAFETY: v is a live value of the size given (written by the kernel
    // on a get).
    let rc = unsafe {
        if set {
            libc::setsockopt(fd.as_raw_fd(), libc::SOL_XDP, opt, p, len)
        } else {
            libc::getsockopt(fd.as_raw_fd(), libc::SOL_XDP, opt, p, &mut len)
        }
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

fn step<T>(what: &str, r: io::Result<T>) -> io::Result<T> {
    r.map_err(|e| io::Error::new(e.kind(), format!("AF_XDP {what}: {e}")))
}

impl XskSocket {
    /// A socket on queue `queue` of interface `ifindex`, its fill ring
    /// full of receive frames.
    pub fn open(ifindex: i32, queue: u32) -> io::Result<XskSocket> {
        let fd = step("socket", open_socket())?;
        // Copy mode charges every frame in flight to the socket's send
        // buffer until the receiver took it; at the default size a window
        // of frames no longer fits and sends fail with EAGAIN. Root may
        // exceed wmem_max (SO_SNDBUFFORCE); anyone else gets the limit.
        let sock = socket2::SockRef::from(&fd);
        let force = SNDBUF_BYTES as libc::c_int;
        // SAFETY: force lives across the call; the size matches its type.
        let forced = unsafe {
            libc::setsockopt(
                fd.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_SNDBUFFORCE,
                (&force as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        if forced != 0 {
            let _ = sock.set_send_buffer_size(SNDBUF_BYTES);
        }
        let n = FRAMES_PER_DIRECTION;
        let umem_bytes = 2 * n as usize * FRAME_BYTES;
        let mut umem = step("UMEM", memmap2::MmapMut::map_anon(umem_bytes))?;
        let mut reg = libc::xdp_umem_reg {
            addr: umem.as_mut_ptr() as u64,
            len: umem_bytes as u64,
            chunk_size: FRAME_BYTES as u32,
            headroom: 0,
            flags: 0,
            tx_metadata_len: 0,
        };
        step(
            "UMEM registration",
            xdp_option(&fd, libc::XDP_UMEM_REG, &mut reg, true),
        )?;
        for opt in [
            libc::XDP_UMEM_FILL_RING,
            libc::XDP_UMEM_COMPLETION_RING,
            libc::XDP_RX_RING,
            libc::XDP_TX_RING,
        ] {
            let mut size = n as libc::c_int;
            step("ring sizes", xdp_option(&fd, opt, &mut size, true))?;
        }
        // SAFETY: plain data the kernel fills in.
        let mut off: libc::xdp_mmap_offsets = unsafe { std::mem::zeroed() };
        step(
            "ring offsets",
            xdp_option(&fd, libc::XDP_MMAP_OFFSETS, &mut off, false),
        )?;
        let desc = std::mem::size_of::<libc::xdp_desc>();
        let rx = step(
            "rx ring",
            Ring::map(&fd, libc::XDP_PGOFF_RX_RING, &off.rx, n, desc),
        )?;
        let tx = step(
            "tx ring",
            Ring::map(&fd, libc::XDP_PGOFF_TX_RING, &off.tx, n, desc),
        )?;
        let fill_pg = libc::XDP_UMEM_PGOFF_FILL_RING as libc::off_t;
        let fill = step("fill ring", Ring::map(&fd, fill_pg, &off.fr, n, 8))?;
        let comp_pg = libc::XDP_UMEM_PGOFF_COMPLETION_RING as libc::off_t;
        let completion = step("completion ring", Ring::map(&fd, comp_pg, &off.cr, n, 8))?;
        let mut s = XskSocket {
            fd,
            umem,
            fill,
            completion,
            rx,
            tx,
            free_tx: (n..2 * n)
                .map(|i| u64::from(i) * FRAME_BYTES as u64)
                .collect(),
            zero_copy: false,
        };
        // Every receive frame to the kernel before binding, so the first
        // frame already finds room.
        for i in 0..n {
            s.give_rx_frame(u64::from(i) * FRAME_BYTES as u64);
        }
        let addr = libc::sockaddr_xdp {
            sxdp_family: libc::AF_XDP as u16,
            sxdp_flags: 0,
            sxdp_ifindex: ifindex as u32,
            sxdp_queue_id: queue,
            sxdp_shared_umem_fd: 0,
        };
        // The kernel frees a closed AF_XDP socket's hold on its queue
        // after a deferred clean-up, so a channel opened right after the
        // last one closed (a server's next session) can find the queue
        // busy for a moment: retry EBUSY for up to BIND_BUSY_RETRY.
        let started = std::time::Instant::now();
        loop {
            // SAFETY: addr is a valid sockaddr_xdp of the size given.
            let rc = unsafe {
                libc::bind(
                    s.fd.as_raw_fd(),
                    (&addr as *const libc::sockaddr_xdp).cast(),
                    std::mem::size_of::<libc::sockaddr_xdp>() as libc::socklen_t,
                )
            };
            if rc == 0 {
                break;
            }
            let e = io::Error::last_os_error();
            if e.raw_os_error() != Some(libc::EBUSY) || started.elapsed() > BIND_BUSY_RETRY {
                return step("bind", Err(e));
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let mut opts = libc::xdp_options { flags: 0 };
        step(
            "options",
            xdp_option(&s.fd, libc::XDP_OPTIONS, &mut opts, false),
        )?;
        s.zero_copy = opts.flags & libc::XDP_OPTIONS_ZEROCOPY != 0;
        Ok(s)
    }

    /// The socket's descriptor (for the XSKMAP and poll).
    pub fn fd(&self) -> &OwnedFd {
        &self.fd
    }

    /// Whether the kernel bound in zero-copy mode (else copy mode).
    pub fn zero_copy(&self) -> bool {
        self.zero_copy
    }

    /// Hand receive frame `addr` (any offset inside it) to the kernel.
    fn give_rx_frame(&mut self, addr: u64) {
        // There are exactly as many receive frames as fill slots, so a
        // frame coming back always finds one.
        debug_assert!(self.fill.free() > 0);
        let base = addr - addr % FRAME_BYTES as u64;
        // SAFETY: the slot at head is this end's to write until published.
        unsafe { *self.fill.slot::<u64>() = base };
        self.fill.publish();
    }

    /// Take send frames the kernel is done with back into the free list.
    fn reclaim(&mut self) {
        while self.completion.ready() > 0 {
            // SAFETY: a slot the kernel published.
            let addr = unsafe { *self.completion.slot::<u64>() };
            self.completion.release();
            self.free_tx.push(addr);
        }
    }

    /// Queue one frame made of `parts` and ask the kernel to send it.
    /// False when no send frame or ring slot is free (the frame is
    /// dropped, as a full device queue drops it).
    pub fn send(&mut self, parts: &[&[u8]]) -> io::Result<bool> {
        let queued = self.queue(parts)?;
        self.kick()?;
        Ok(queued)
    }

    /// Put one frame on the send ring without asking the kernel to send
    /// it ([`XskSocket::push`] does, for every frame queued): a window of
    /// frames costs one or two kicks instead of one each. False as in
    /// [`XskSocket::send`].
    pub fn queue(&mut self, parts: &[&[u8]]) -> io::Result<bool> {
        self.reclaim();
        if self.free_tx.is_empty() || self.tx.free() == 0 {
            // Frames queued but not yet sent: one more kick sends them.
            self.kick()?;
            self.reclaim();
            if self.free_tx.is_empty() || self.tx.free() == 0 {
                return Ok(false);
            }
        }
        let Some(addr) = self.free_tx.pop() else {
            return Ok(false);
        };
        let mut len = 0usize;
        for p in parts {
            let n = p.len().min(FRAME_BYTES - len);
            let at = addr as usize + len;
            self.umem[at..at + n].copy_from_slice(&p[..n]);
            len += n;
        }
        // SAFETY: the slot at head is this end's to write until published.
        unsafe {
            *self.tx.slot::<libc::xdp_desc>() = libc::xdp_desc {
                addr,
                len: len as u32,
                options: 0,
            }
        };
        self.tx.publish();
        Ok(true)
    }

    /// Send what [`XskSocket::queue`] put on the ring: kicks until the
    /// kernel took every frame (copy mode takes a bounded batch per call)
    /// or stops taking any.
    pub fn push(&mut self) -> io::Result<()> {
        for _ in 0..PUSH_KICKS {
            if self.tx.free() > self.tx.mask {
                break;
            }
            self.kick()?;
        }
        Ok(())
    }

    /// Kick the kernel again if frames still wait on the send ring (a
    /// kick that found the device busy left them there, and nothing else
    /// would send them before the protocol's resend timeout).
    pub fn flush(&mut self) -> io::Result<()> {
        if self.tx.free() <= self.tx.mask {
            self.kick()?;
        }
        Ok(())
    }

    /// Make the kernel process the send ring (copy mode sends only in
    /// this call; zero-copy drivers are woken by it).
    fn kick(&self) -> io::Result<()> {
        // SAFETY: sendto with no data and no address is AF_XDP's wake-up.
        let rc = unsafe {
            libc::sendto(
                self.fd.as_raw_fd(),
                std::ptr::null(),
                0,
                libc::MSG_DONTWAIT,
                std::ptr::null(),
                0,
            )
        };
        if rc >= 0 {
            return Ok(());
        }
        let e = io::Error::last_os_error();
        match e.raw_os_error() {
            // Busy or out of buffers now: the frames stay queued and go
            // with the next kick (or are lost, which the protocol repairs).
            Some(libc::EAGAIN) | Some(libc::EBUSY) | Some(libc::ENOBUFS) | Some(libc::EINTR) => {
                Ok(())
            }
            _ => Err(e),
        }
    }

    /// One received frame, copied with `take` (which gets the frame's
    /// bytes and returns what the caller wants); None when none is waiting.
    pub fn recv<R>(&mut self, take: impl FnOnce(&[u8]) -> R) -> Option<R> {
        if self.rx.ready() == 0 {
            return None;
        }
        // SAFETY: a slot the kernel published.
        let d = unsafe { *self.rx.slot::<libc::xdp_desc>() };
        self.rx.release();
        let start = (d.addr as usize).min(self.umem.len());
        let end = (start + d.len as usize).min(self.umem.len());
        let out = take(&self.umem[start..end]);
        self.give_rx_frame(d.addr);
        Some(out)
    }
}
