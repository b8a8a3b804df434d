//! Message buffers.
//!
//! Each end keeps two pools, one it sends from and one it receives into (as
//! NetPIPE does). A pool is one allocation, touched once up front so no page
//! fault lands in a timed loop. Messages start at a page boundary plus
//! `--offset` bytes. With `--nocache` a pool holds enough slots to span more
//! than twice the last-level cache and rotates through them, so every
//! message comes from memory; otherwise one slot is reused and stays hot.
//!
//! A send pool may live in memory the transport lends
//! ([`crate::transport::Endpoint::send_memory`]: shm's single-copy path lets the receiver copy
//! straight out of it); the sweep then sends from it like from any other.
//!
//! Pools are anonymous mappings, so a pool that cannot be had (a `--nocache`
//! pool is twice the last-level cache: about 1 GiB on a machine reporting a
//! 480 MiB L3) is an error, not an abort. They are not advised to use huge
//! pages: with the kernel's `defrag=madvise` that made the faults stall in
//! compaction on a loaded machine.

use std::sync::Arc;

/// Memory an endpoint lends for send buffers ([`crate::transport::Endpoint::send_memory`]).
pub struct SendMemory {
    /// The writable mapping, page aligned.
    pub map: memmap2::MmapMut,
    /// Held as long as the mapping lives: the endpoint keeps a weak
    /// reference, so that it never takes an address for its own memory
    /// once this mapping is gone and the address reused.
    pub lease: std::sync::Arc<()>,
}

/// Assumed last-level cache size when the kernel does not report one.
pub const FALLBACK_LLC_BYTES: u64 = 32 << 20;

const PAGE_BYTES: usize = 4096;

/// The memory one pool for messages up to `max_bytes` maps, bytes (a test
/// has two, one to send from and one to receive into): what a server
/// checks against its `--max-memory` before it maps anything.
pub fn pool_bytes(max_bytes: u64, offset_bytes: u64, nocache: bool, llc_bytes: Option<u64>) -> u64 {
    let llc_bytes = llc_bytes.unwrap_or(FALLBACK_LLC_BYTES);
    let one =
        (max_bytes.saturating_add(offset_bytes)).div_ceil(PAGE_BYTES as u64) * PAGE_BYTES as u64;
    let total = if nocache {
        one.max(one.saturating_add(2 * llc_bytes))
    } else {
        one
    };
    total.saturating_add(PAGE_BYTES as u64)
}

/// How a pool of `usable` bytes is cut for messages of one size: the
/// slots a rotation cycles through and the distance between them. Shared
/// by [`BufferPool`] and the cold core-to-core limit (`c2c --nocache`,
/// whose two threads index one rotation by message number).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rotation {
    /// Bytes from one slot's start to the next (page multiple).
    pub stride_bytes: usize,
    /// Slots in the rotation (1: one hot buffer, reused).
    pub slots: usize,
}

impl Rotation {
    /// The rotation for `bytes`-byte messages at `offset_bytes` past a page
    /// boundary: with `nocache`, enough slots to span twice the last-level
    /// cache (as far as `usable` bytes reach), so every message comes from
    /// memory; otherwise one slot.
    pub fn for_size(
        bytes: u64,
        offset_bytes: u64,
        nocache: bool,
        llc_bytes: u64,
        usable: usize,
    ) -> Rotation {
        let stride_bytes = round_up((bytes + offset_bytes) as usize, PAGE_BYTES).max(PAGE_BYTES);
        let slots = if nocache {
            let wanted = (2 * llc_bytes as usize).div_ceil(stride_bytes).max(2);
            wanted.min(usable / stride_bytes).max(1)
        } else {
            1
        };
        Rotation {
            stride_bytes,
            slots,
        }
    }

    /// Byte offset of slot `n mod slots` from the pool's page-aligned start.
    #[inline(always)]
    pub fn slot_offset(&self, n: u64) -> usize {
        (n % self.slots as u64) as usize * self.stride_bytes
    }
}

/// A pool of equal-sized message slots.
pub struct BufferPool {
    storage: memmap2::MmapMut,
    /// Held while `storage` is memory a transport lent (see [`SendMemory`]).
    _lease: Option<Arc<()>>,
    base: usize,
    offset: usize,
    nocache: bool,
    llc_bytes: u64,
    stride: usize,
    slots: usize,
    next: usize,
    len: usize,
}

impl BufferPool {
    /// A pool for messages up to `max_bytes`; an error when the memory
    /// cannot be mapped (a `ulimit -v`, or `--nocache` on a huge cache).
    pub fn new(
        max_bytes: u64,
        offset_bytes: u64,
        nocache: bool,
        llc_bytes: Option<u64>,
    ) -> std::io::Result<Self> {
        Self::build(max_bytes, offset_bytes, nocache, llc_bytes, |_| Ok(None))
    }

    /// A pool to send from, in memory `lend` lends when it does (an
    /// endpoint's [`crate::transport::Endpoint::send_memory`]), else like
    /// [`BufferPool::new`].
    pub fn for_sending(
        lend: impl FnOnce(usize) -> std::io::Result<Option<SendMemory>>,
        max_bytes: u64,
        offset_bytes: u64,
        nocache: bool,
        llc_bytes: Option<u64>,
    ) -> std::io::Result<Self> {
        Self::build(max_bytes, offset_bytes, nocache, llc_bytes, lend)
    }

    fn build(
        max_bytes: u64,
        offset_bytes: u64,
        nocache: bool,
        llc_bytes: Option<u64>,
        lend: impl FnOnce(usize) -> std::io::Result<Option<SendMemory>>,
    ) -> std::io::Result<Self> {
        let llc_bytes = llc_bytes.unwrap_or(FALLBACK_LLC_BYTES);
        let offset = offset_bytes as usize;
        let one = round_up(max_bytes as usize + offset, PAGE_BYTES);
        let total =
            pool_bytes(max_bytes, offset_bytes, nocache, Some(llc_bytes)) as usize - PAGE_BYTES;
        let (storage, lease) = match lend(total + PAGE_BYTES)? {
            Some(SendMemory { mut map, lease }) => {
                map.fill(0xa5);
                (map, Some(lease))
            }
            None => (touched_pool(total + PAGE_BYTES)?, None),
        };
        let base = storage.as_ptr().align_offset(PAGE_BYTES);
        let mut pool = BufferPool {
            storage,
            _lease: lease,
            base,
            offset,
            nocache,
            llc_bytes,
            stride: one,
            slots: 1,
            next: 0,
            len: max_bytes as usize,
        };
        pool.prepare(max_bytes);
        Ok(pool)
    }

    /// Lay the pool out for `bytes`-sized messages and restart the rotation.
    pub fn prepare(&mut self, bytes: u64) {
        let usable = self.storage.len() - self.base;
        let r = Rotation::for_size(
            bytes,
            self.offset as u64,
            self.nocache,
            self.llc_bytes,
            usable,
        );
        self.len = bytes as usize;
        self.stride = r.stride_bytes;
        self.slots = r.slots;
        self.next = 0;
    }

    /// Number of slots the rotation cycles through.
    pub fn slots(&self) -> usize {
        self.slots
    }

    /// The next message buffer in the rotation.
    #[inline(always)]
    pub fn next_buf(&mut self) -> &mut [u8] {
        let start = self.base + self.next * self.stride + self.offset;
        self.next += 1;
        if self.next == self.slots {
            self.next = 0;
        }
        &mut self.storage[start..start + self.len]
    }
}

/// An anonymous mapping of `len` bytes, every page touched now (filled with
/// a non-zero byte), not in a timed loop.
fn touched_pool(len: usize) -> std::io::Result<memmap2::MmapMut> {
    let mut map = memmap2::MmapMut::map_anon(len).map_err(|e| {
        std::io::Error::new(
            e.kind(),
            format!("cannot map a {len}-byte message pool: {e}"),
        )
    })?;
    map.fill(0xa5);
    Ok(map)
}

fn round_up(n: usize, to: usize) -> usize {
    n.div_ceil(to) * to
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offset_and_alignment() {
        let mut p = BufferPool::new(100, 3, false, None).unwrap();
        let b = p.next_buf();
        assert_eq!(b.len(), 100);
        assert_eq!(b.as_ptr() as usize % PAGE_BYTES, 3);
        assert_eq!(p.slots(), 1);
    }

    #[test]
    fn nocache_rotates_past_the_cache() {
        let mut p = BufferPool::new(8192, 0, true, Some(1 << 20)).unwrap();
        p.prepare(4096);
        assert!(p.slots() * 4096 >= 2 << 20);
        let first = p.next_buf().as_ptr();
        for _ in 1..p.slots() {
            assert_ne!(p.next_buf().as_ptr(), first);
        }
        assert_eq!(p.next_buf().as_ptr(), first);
    }

    #[test]
    fn small_sizes_fit() {
        let mut p = BufferPool::new(1, 0, true, Some(64 << 10)).unwrap();
        p.prepare(1);
        assert_eq!(p.next_buf().len(), 1);
    }
}
