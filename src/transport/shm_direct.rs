//! The memory behind `shm`'s single-copy path: each end's send buffers
//! live in a memory file of its own (memfd) that the other end maps
//! read-only, so a large message is copied once, by the receiver, straight
//! out of the sender's buffer (the way MPI libraries' shared windows and
//! XPMEM-style single copies work), instead of twice through the ring.
//!
//! The sender's [`Lender`] creates the file when the channel is set up and
//! lends mappings of it as send buffers ([`crate::transport::SendMemory`]);
//! the receiver's [`PeerMemory`] opens the same file through
//! `/proc/PID/fd/N` during set-up (a refusal shows up there, and the
//! single-copy path is then left off) and maps it when the first message
//! from it arrives, again whenever the file has grown. A memfd has no name
//! in /dev/shm: nothing can be left behind, whoever dies and however.

use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::sync::{Arc, Weak};

use anyhow::{Context, Result};
use memmap2::{Mmap, MmapOptions};
use nix::sys::memfd::{memfd_create, MemFdCreateFlag};

use super::SendMemory;

/// Largest send memory one end lends (bounds what a peer must map).
pub const MAX_LENT_BYTES: usize = 4 << 30;

/// This end's send memory: the file and the mapping currently lent.
pub struct Lender {
    file: File,
    file_bytes: usize,
    /// Address range of the mapping lent, and its lease.
    lent: Option<(usize, usize, Weak<()>)>,
}

impl Lender {
    /// A new, empty memory file.
    pub fn new() -> Result<Lender> {
        let fd = memfd_create(c"wulf-shm-send", MemFdCreateFlag::MFD_CLOEXEC)
            .context("cannot create the shm send memory (memfd_create)")?;
        Ok(Lender {
            file: File::from(fd),
            file_bytes: 0,
            lent: None,
        })
    }

    /// The file's descriptor number, for the other end's `/proc` path.
    pub fn fd(&self) -> RawFd {
        self.file.as_raw_fd()
    }

    /// Lend a mapping of `bytes` as send memory, growing the file (its
    /// pages reserved, so a full tmpfs is an error now rather than a SIGBUS
    /// later); None while an earlier loan is still alive (only one range
    /// at a time is recognised as shared).
    pub fn lend(&mut self, bytes: usize) -> io::Result<Option<SendMemory>> {
        if self.lent.as_ref().is_some_and(|l| l.2.strong_count() > 0) {
            return Ok(None);
        }
        if bytes == 0 || bytes > MAX_LENT_BYTES {
            return Ok(None);
        }
        if bytes > self.file_bytes {
            self.file.set_len(bytes as u64)?;
            nix::fcntl::posix_fallocate(self.file.as_raw_fd(), 0, bytes as libc::off_t).map_err(
                |e| {
                    io::Error::other(format!(
                        "cannot reserve {bytes} bytes of shared send memory: {e}"
                    ))
                },
            )?;
            self.file_bytes = bytes;
        }
        // SAFETY: the file is this process's own memfd; the other end only
        // reads it, and only the ranges this end publishes as messages.
        let map = unsafe { MmapOptions::new().len(bytes).populate().map_mut(&self.file) }?;
        let lease = Arc::new(());
        self.lent = Some((map.as_ptr() as usize, bytes, Arc::downgrade(&lease)));
        Ok(Some(SendMemory { map, lease }))
    }

    /// Where `buf` starts in the send memory, if it lies wholly inside the
    /// mapping lent and still alive. Hot path: no system call.
    #[inline(always)]
    pub fn offset_of(&self, buf: &[u8]) -> Option<u64> {
        let (base, len, lease) = self.lent.as_ref()?;
        let addr = buf.as_ptr() as usize;
        let inside = addr >= *base && addr + buf.len() <= base + len;
        (inside && lease.strong_count() > 0).then(|| (addr - base) as u64)
    }
}

/// The other end's send memory, as this end reads it.
pub struct PeerMemory {
    file: File,
    map: Option<Mmap>,
}

impl PeerMemory {
    /// Open the send memory of process `pid`, descriptor `fd`.
    pub fn open(pid: u32, fd: u64) -> Result<PeerMemory> {
        let path = format!("/proc/{pid}/fd/{fd}");
        let file = File::open(&path)
            .with_context(|| format!("cannot open the peer's send memory {path}"))?;
        Ok(PeerMemory { file, map: None })
    }

    /// The `len` bytes at `offset`, mapping (again) when the file has grown
    /// past the current mapping: only on the first message of a new loan,
    /// which is a block's untimed primer. An error for a range beyond the
    /// file.
    #[inline(always)]
    pub fn bytes(&mut self, offset: u64, len: u64) -> io::Result<*const u8> {
        let end = offset.checked_add(len).ok_or_else(bad_range)?;
        match &self.map {
            Some(m) if end <= m.len() as u64 => Ok(m.as_ptr().wrapping_add(offset as usize)),
            _ => self.remap(offset, end),
        }
    }

    #[cold]
    fn remap(&mut self, offset: u64, end: u64) -> io::Result<*const u8> {
        let file_bytes = self.file.metadata()?.len();
        if end > file_bytes || file_bytes > MAX_LENT_BYTES as u64 {
            return Err(bad_range());
        }
        self.map = None;
        // SAFETY: the peer's memfd, mapped read-only; it never shrinks (the
        // lender only grows it), so no access beyond its end can fault.
        let map = unsafe {
            MmapOptions::new()
                .len(file_bytes as usize)
                .populate()
                .map(&self.file)
        }?;
        let p = map.as_ptr().wrapping_add(offset as usize);
        self.map = Some(map);
        Ok(p)
    }
}

#[cold]
fn bad_range() -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        "the peer described a message outside its send memory",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lent_memory_is_read_through_the_other_mapping() {
        let mut l = Lender::new().unwrap();
        let mut m = l.lend(8192).unwrap().unwrap();
        assert!(l.lend(4096).unwrap().is_none(), "one loan at a time");
        m.map[5000..5004].copy_from_slice(b"wulf");
        assert_eq!(l.offset_of(&m.map[5000..5004]), Some(5000));
        assert_eq!(l.offset_of(b"elsewhere"), None);
        let mut p = PeerMemory::open(std::process::id(), l.fd() as u64).unwrap();
        let at = p.bytes(5000, 4).unwrap();
        // SAFETY: 4 bytes inside the mapping just checked.
        assert_eq!(unsafe { std::slice::from_raw_parts(at, 4) }, b"wulf");
        assert!(p.bytes(8190, 4).is_err(), "beyond the file");
        assert!(p.bytes(u64::MAX, 2).is_err());
        drop(m);
        // The loan is over: its addresses are no longer taken as shared,
        // and a larger loan grows the file, which the reader maps anew.
        let m = l.lend(3 << 20).unwrap().unwrap();
        assert!(p.bytes((3 << 20) - 8, 8).is_ok());
        assert_eq!(l.offset_of(&m.map[..]), Some(0));
    }
}
