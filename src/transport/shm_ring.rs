//! The shared-memory hand-off of the `shm` transport: one single-producer,
//! single-consumer ring of chunk slots per direction.
//!
//! A message is cut into chunks of at most `chunk_bytes` (one chunk for an
//! empty message, so that it still hands over). Each chunk goes into the
//! next slot of the ring: the producer copies it in and then publishes the
//! slot's sequence number with a release store; the consumer waits for that
//! number with acquire loads, copies the chunk out and, in due course,
//! publishes how many chunks it has released, again with a release store.
//! With several slots the producer copies chunk k+1 in while the consumer
//! copies chunk k out: large messages are pipelined across two cores.
//!
//! Layout of a ring (all offsets multiples of 64 bytes):
//!
//! ```text
//! +0     released: u32        consumer -> producer, alone in 128 bytes
//! +128   slot 0: header line  seq: u32 | len: u32 | 56 inline bytes
//!        slot 0: data         chunk_bytes (rounded up to 64)
//!        slot 1: ...
//! ```
//!
//! Design choices:
//!
//! * The sequence number of a slot sits in the slot's own first cache line
//!   and the consumer's `released` count in a line of its own, so producer
//!   and consumer never write the same line.
//! * A chunk of at most [`INLINE_BYTES`] travels inside the header line,
//!   beside its sequence number: a small message costs one cache-line
//!   transfer, the floor a cache-line ping-pong measures.
//! * Sequence numbers are the chunk count plus one, truncated to 32 bits
//!   (the width of a futex word). A slot's stale number is the one of the
//!   previous lap, which differs from the awaited one for any slot count
//!   below 2^32, so no reset or wrap handling is needed.
//! * Neither end touches the `released` line on its critical path. The
//!   consumer publishes releases only when it is about to wait (after it
//!   has answered, in a ping-pong) or once half the ring is released (so a
//!   streaming producer keeps going); the producer refreshes its copy just
//!   after publishing a chunk, once half the ring is in flight, so that the
//!   miss overlaps its own wait, and stalls on the line only when its copy
//!   says the ring is full. (On x86 a store that needs the line back also
//!   holds up every later store, the next hand-off included.)
//! * Each chunk's length travels with it and the consumer checks it against
//!   what it expects: two ends that disagree on a size get a clear error
//!   instead of silently shifted data.
//! * A slot can carry a *descriptor* instead of a chunk (its length word
//!   has [`DESCRIPTOR_FLAG`] set): the offset and length of a whole message
//!   the sender left in memory the receiver maps too (the single-copy path,
//!   see `shm_message`). The consumer publishes the release of a
//!   descriptor's slot at once, after copying the message: that release is
//!   the sender's acknowledgement that its buffer may change again.

use std::io;
use std::ops::Range;
use std::sync::atomic::{AtomicU32, Ordering};

use super::wait::Waiter;

/// Largest chunk carried inside a slot's header line.
pub const INLINE_BYTES: usize = 56;
/// Bytes of a slot's header line.
const HEADER_LINE_BYTES: usize = 64;
/// Bytes before the first slot (the `released` counter, padded so that
/// adjacent-line prefetching cannot pair it with a slot).
const RING_HEAD_BYTES: usize = 128;
/// Set in a slot's length word when the slot holds a descriptor (offset
/// and length of a message in the sender's shared send memory) instead of
/// a chunk; chunk lengths stay far below it.
pub const DESCRIPTOR_FLAG: u32 = 1 << 31;
/// Bytes of a descriptor in the slot's header line: offset and length.
const DESCRIPTOR_BYTES: u32 = 16;
/// Largest chunk size accepted (bounds a region a peer can ask for).
pub const MAX_CHUNK_BYTES: usize = 16 << 20;
/// Largest slot count accepted.
pub const MAX_SLOTS: usize = 4096;

/// Shape of a ring: chunk size and number of slots.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Geometry {
    /// Largest chunk in bytes, a multiple of 64.
    pub chunk_bytes: usize,
    /// Number of slots.
    pub slots: usize,
}

impl Geometry {
    /// A geometry, checked: chunks a non-zero multiple of 64 bytes up to
    /// [`MAX_CHUNK_BYTES`], 1 to [`MAX_SLOTS`] slots.
    pub fn new(chunk_bytes: usize, slots: usize) -> Result<Geometry, String> {
        if chunk_bytes == 0 || !chunk_bytes.is_multiple_of(64) || chunk_bytes > MAX_CHUNK_BYTES {
            return Err(format!(
                "chunk size {chunk_bytes} is not a multiple of 64 between 64 and {MAX_CHUNK_BYTES}"
            ));
        }
        if slots == 0 || slots > MAX_SLOTS {
            return Err(format!(
                "slot count {slots} is not between 1 and {MAX_SLOTS}"
            ));
        }
        Ok(Geometry { chunk_bytes, slots })
    }

    /// Bytes from one slot to the next.
    fn stride(&self) -> usize {
        HEADER_LINE_BYTES + self.chunk_bytes
    }

    /// Bytes of shared memory one ring needs.
    pub fn ring_bytes(&self) -> usize {
        RING_HEAD_BYTES + self.slots * self.stride()
    }

    /// The chunk of a `len`-byte message that starts at byte `start`; the
    /// message is done when the chunk ends at `len`. An empty message is one
    /// empty chunk. (Offsets, not chunk numbers: no division on the hot path.)
    #[inline(always)]
    pub fn next_chunk(&self, len: usize, start: usize) -> Range<usize> {
        start..len.min(start + self.chunk_bytes)
    }

    /// Number of chunks of a `len`-byte message (at least one).
    #[cfg(test)]
    pub fn chunks(&self, len: usize) -> usize {
        len.div_ceil(self.chunk_bytes).max(1)
    }
}

/// Sequence number of a slot header, at offset 0 of the header line.
///
/// # Safety
/// `slot` must point to a slot of a live ring, and the reference must not
/// outlive the ring's mapping.
#[inline(always)]
unsafe fn seq_of<'a>(slot: *mut u8) -> &'a AtomicU32 {
    &*(slot as *const AtomicU32)
}

/// Chunk length of a slot header, at offset 4 of the header line.
///
/// # Safety
/// As for [`seq_of`].
#[inline(always)]
unsafe fn len_of<'a>(slot: *mut u8) -> &'a AtomicU32 {
    &*(slot.add(4) as *const AtomicU32)
}

/// Where a chunk of `len` bytes lives in its slot.
///
/// # Safety
/// `slot` must point to a slot of a live ring.
#[inline(always)]
unsafe fn payload(slot: *mut u8, len: usize) -> *mut u8 {
    if len <= INLINE_BYTES {
        slot.add(8)
    } else {
        slot.add(HEADER_LINE_BYTES)
    }
}

/// The sending end of a ring.
pub struct Producer {
    ring: *mut u8,
    geo: Geometry,
    pushed: u64,
    /// `pushed % slots`, kept so that no hot path divides.
    index: usize,
    released_seen: u32,
}

// SAFETY: the ring memory is shared by design; a Producer is used by one
// thread at a time.
unsafe impl Send for Producer {}

impl Producer {
    /// The producer of the ring at `ring`.
    ///
    /// # Safety
    /// `ring` must be 64-byte aligned, point to `geo.ring_bytes()` bytes that
    /// were zeroed before either end used them, that stay mapped while the
    /// producer lives, and that only this producer and one consumer use.
    pub unsafe fn new(ring: *mut u8, geo: Geometry) -> Producer {
        Producer {
            ring,
            geo,
            pushed: 0,
            index: 0,
            released_seen: 0,
        }
    }

    /// The ring's geometry.
    #[inline(always)]
    pub fn geo(&self) -> Geometry {
        self.geo
    }

    #[inline(always)]
    fn released(&self) -> &AtomicU32 {
        // SAFETY: offset 0 of a live ring.
        unsafe { &*(self.ring as *const AtomicU32) }
    }

    #[inline(always)]
    fn slot(&self) -> *mut u8 {
        // SAFETY: index < slots, so the slot lies inside the ring.
        unsafe {
            self.ring
                .add(RING_HEAD_BYTES + self.index * self.geo.stride())
        }
    }

    /// Whether the next slot is free. Reads the consumer's line only when
    /// the cached count says the ring is full.
    #[inline(always)]
    pub fn has_room(&mut self) -> bool {
        let slots = self.geo.slots as u32;
        if (self.pushed as u32).wrapping_sub(self.released_seen) < slots {
            return true;
        }
        self.released_seen = self.released().load(Ordering::Acquire);
        (self.pushed as u32).wrapping_sub(self.released_seen) < slots
    }

    /// Copy `chunk` (at most `chunk_bytes`) into the next slot and publish
    /// it. The caller must have seen [`has_room`](Self::has_room) true.
    #[inline(always)]
    pub fn push(&mut self, chunk: &[u8]) {
        debug_assert!(chunk.len() <= self.geo.chunk_bytes);
        let slot = self.slot();
        // SAFETY: the slot belongs to the live ring and is free (the
        // consumer released it, acquire in has_room); the chunk fits its
        // payload area, and `chunk` is private memory, so no overlap.
        unsafe {
            std::ptr::copy_nonoverlapping(chunk.as_ptr(), payload(slot, chunk.len()), chunk.len());
            len_of(slot).store(chunk.len() as u32, Ordering::Relaxed);
            self.pushed += 1;
            seq_of(slot).store(self.pushed as u32, Ordering::Release);
        }
        self.index += 1;
        if self.index == self.geo.slots {
            self.index = 0;
        }
        // The chunk is on its way; refresh the view of the consumer now, in
        // the shadow of the hand-off, rather than when the ring is full.
        let in_flight = (self.pushed as u32).wrapping_sub(self.released_seen);
        if 2 * in_flight >= self.geo.slots as u32 {
            self.released_seen = self.released().load(Ordering::Acquire);
        }
    }
}

impl Producer {
    /// Publish a descriptor of a `len`-byte message at `offset` of this
    /// end's shared send memory in the next slot. The caller must have
    /// seen [`has_room`](Self::has_room) true; the message must stay
    /// unchanged until [`all_released`](Self::all_released).
    #[inline(always)]
    pub fn push_descriptor(&mut self, offset: u64, len: u64) {
        let slot = self.slot();
        // SAFETY: as in `push`: a free slot of the live ring; the two words
        // fit the inline area of its header line (56 bytes from offset 8).
        unsafe {
            let words = payload(slot, 0) as *mut u64;
            words.write_unaligned(offset);
            words.add(1).write_unaligned(len);
            len_of(slot).store(DESCRIPTOR_FLAG | DESCRIPTOR_BYTES, Ordering::Relaxed);
            self.pushed += 1;
            seq_of(slot).store(self.pushed as u32, Ordering::Release);
        }
        self.index += 1;
        if self.index == self.geo.slots {
            self.index = 0;
        }
    }

    /// Whether the consumer has released every slot pushed so far (for a
    /// descriptor: copied its message). Reads the consumer's line.
    #[inline(always)]
    pub fn all_released(&mut self) -> bool {
        self.released_seen = self.released().load(Ordering::Acquire);
        self.released_seen == self.pushed as u32
    }
}

/// The receiving end of a ring.
pub struct Consumer {
    ring: *mut u8,
    geo: Geometry,
    popped: u64,
    /// `popped % slots`, kept so that no hot path divides.
    index: usize,
    published: u64,
}

// SAFETY: as for Producer.
unsafe impl Send for Consumer {}

impl Consumer {
    /// The consumer of the ring at `ring`.
    ///
    /// # Safety
    /// As for [`Producer::new`].
    pub unsafe fn new(ring: *mut u8, geo: Geometry) -> Consumer {
        Consumer {
            ring,
            geo,
            popped: 0,
            index: 0,
            published: 0,
        }
    }

    #[inline(always)]
    fn slot(&self) -> *mut u8 {
        // SAFETY: index < slots.
        unsafe {
            self.ring
                .add(RING_HEAD_BYTES + self.index * self.geo.stride())
        }
    }

    /// The ring's geometry.
    #[inline(always)]
    pub fn geo(&self) -> Geometry {
        self.geo
    }

    /// Whether the next chunk has been published.
    #[inline(always)]
    pub fn ready(&self) -> bool {
        // SAFETY: the slot belongs to the live ring.
        unsafe { seq_of(self.slot()) }.load(Ordering::Acquire) == (self.popped + 1) as u32
    }

    /// Publish the slots released so far, if any are unpublished; returns
    /// whether it published (the producer may then need waking).
    #[inline(always)]
    pub fn flush(&mut self) -> bool {
        if self.published == self.popped {
            return false;
        }
        self.published = self.popped;
        // SAFETY: offset 0 of a live ring.
        let released = unsafe { &*(self.ring as *const AtomicU32) };
        released.store(self.popped as u32, Ordering::Release);
        true
    }

    /// Copy the next chunk into `out`, whose length must be the chunk's, and
    /// release its slot (published once half the ring is released, or by
    /// [`flush`](Self::flush)); returns whether it published. The caller
    /// must have seen [`ready`](Self::ready).
    #[inline(always)]
    pub fn pop(&mut self, out: &mut [u8]) -> io::Result<bool> {
        let slot = self.slot();
        // SAFETY: the slot belongs to the live ring.
        let len = unsafe { len_of(slot) }.load(Ordering::Relaxed) as usize;
        if len != out.len() {
            return Err(size_mismatch(len, out.len()));
        }
        // SAFETY: the chunk was published (acquire in `ready`) and its
        // length checked against `out`, which is private memory.
        unsafe {
            std::ptr::copy_nonoverlapping(payload(slot, len), out.as_mut_ptr(), len);
        }
        self.popped += 1;
        self.index += 1;
        if self.index == self.geo.slots {
            self.index = 0;
        }
        if 2 * (self.popped - self.published) >= self.geo.slots as u64 {
            return Ok(self.flush());
        }
        Ok(false)
    }
}

impl Consumer {
    /// The descriptor in the next slot, `(offset, len)`, or None when the
    /// slot holds a chunk. The caller must have seen [`ready`](Self::ready).
    #[inline(always)]
    pub fn descriptor(&self) -> Option<(u64, u64)> {
        let slot = self.slot();
        // SAFETY: the slot belongs to the live ring and was published
        // (acquire in `ready`), so its header line is complete.
        unsafe {
            if len_of(slot).load(Ordering::Relaxed) & DESCRIPTOR_FLAG == 0 {
                return None;
            }
            let words = payload(slot, 0) as *const u64;
            Some((words.read_unaligned(), words.add(1).read_unaligned()))
        }
    }

    /// Release the descriptor's slot once its message is copied, and
    /// publish it at once (the sender waits for it); the caller notifies.
    #[inline(always)]
    pub fn pop_descriptor(&mut self) {
        self.popped += 1;
        self.index += 1;
        if self.index == self.geo.slots {
            self.index = 0;
        }
        self.flush();
    }
}

#[cold]
fn size_mismatch(got: usize, expected: usize) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!(
            "the peer sent a {got}-byte chunk where {expected} bytes were expected \
             (the two ends disagree on the message size)"
        ),
    )
}

/// Send `msg` through `p`, chunk by chunk, waiting for free slots.
#[inline]
pub fn send(p: &mut Producer, w: &Waiter, msg: &[u8]) -> io::Result<()> {
    let geo = p.geo;
    let mut start = 0;
    loop {
        let r = geo.next_chunk(msg.len(), start);
        start = r.end;
        w.wait(|| Ok(p.has_room()))?;
        p.push(&msg[r]);
        w.notify();
        if start >= msg.len() {
            return Ok(());
        }
    }
}

/// Receive exactly `buf.len()` bytes from `c`, chunk by chunk.
#[inline]
pub fn recv(c: &mut Consumer, w: &Waiter, buf: &mut [u8]) -> io::Result<()> {
    let geo = c.geo;
    let len = buf.len();
    let mut start = 0;
    loop {
        let r = geo.next_chunk(len, start);
        start = r.end;
        if !c.ready() {
            // About to wait: let the producer have the slots first.
            if c.flush() {
                w.notify();
            }
            w.wait(|| Ok(c.ready()))?;
        }
        if c.pop(&mut buf[r])? {
            w.notify();
        }
        if start >= len {
            return Ok(());
        }
    }
}

#[cfg(test)]
#[path = "shm_ring_tests.rs"]
mod tests;
