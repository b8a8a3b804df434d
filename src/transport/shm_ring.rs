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

/// Send `out` through `p` while receiving `inp` from `c`, alternating one
/// chunk each way whenever possible, so that two ends exchanging messages
/// far larger than their rings both make progress.
pub fn exchange(
    p: &mut Producer,
    c: &mut Consumer,
    w: &Waiter,
    out: &[u8],
    inp: &mut [u8],
) -> io::Result<()> {
    // Next chunk's start in each direction; None once the last is done.
    let (mut sent, mut got) = (Some(0usize), Some(0usize));
    while sent.is_some() || got.is_some() {
        let mut progressed = false;
        if let Some(start) = sent {
            if p.has_room() {
                let r = p.geo.next_chunk(out.len(), start);
                sent = (r.end < out.len()).then_some(r.end);
                p.push(&out[r]);
                progressed = true;
            }
        }
        if let Some(start) = got {
            if c.ready() {
                let r = c.geo.next_chunk(inp.len(), start);
                got = (r.end < inp.len()).then_some(r.end);
                c.pop(&mut inp[r])?;
                progressed = true;
            }
        }
        if progressed {
            w.notify();
        } else {
            c.flush();
            w.notify();
            w.wait(|| Ok((sent.is_some() && p.has_room()) || (got.is_some() && c.ready())))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::wait::{Doorbell, WaitMode};
    use super::*;
    use proptest::prelude::*;
    use std::time::Duration;

    /// Zeroed, page-aligned memory standing in for a shared region: two
    /// rings and two doorbells.
    struct Mem {
        map: memmap2::MmapMut,
        geo: Geometry,
    }

    impl Mem {
        fn new(geo: Geometry) -> Mem {
            let map = memmap2::MmapMut::map_anon(512 + 2 * geo.ring_bytes()).unwrap();
            Mem { map, geo }
        }
        fn ptr(&self, off: usize) -> *mut u8 {
            // SAFETY: inside the map.
            unsafe { (self.map.as_ptr() as *mut u8).add(off) }
        }
        /// (producer, consumer, waiter) of side 0 or 1.
        fn side(&self, s: usize, mode: WaitMode) -> (Producer, Consumer, Waiter) {
            let rings = [self.ptr(512), self.ptr(512 + self.geo.ring_bytes())];
            let bells = [
                self.ptr(0) as *const Doorbell,
                self.ptr(256) as *const Doorbell,
            ];
            // SAFETY: the map outlives every use in these tests.
            unsafe {
                (
                    Producer::new(rings[s], self.geo),
                    Consumer::new(rings[1 - s], self.geo),
                    Waiter::new(mode, Duration::from_secs(20), bells[s], bells[1 - s]),
                )
            }
        }
    }

    fn pattern(len: usize, seed: u64) -> Vec<u8> {
        (0..len)
            .map(|i| ((i as u64).wrapping_mul(131) ^ seed.wrapping_mul(0x9e37)) as u8)
            .collect()
    }

    #[test]
    fn chunking_covers_every_byte_once() {
        let g = Geometry::new(128, 3).unwrap();
        assert_eq!(g.chunks(0), 1);
        assert_eq!(g.next_chunk(0, 0), 0..0);
        assert_eq!(g.chunks(128), 1);
        assert_eq!(g.chunks(129), 2);
        assert_eq!(g.next_chunk(300, 256), 256..300);
        assert!(Geometry::new(100, 2).is_err());
        assert!(Geometry::new(64, 0).is_err());
    }

    #[test]
    fn single_thread_fill_and_drain() {
        let g = Geometry::new(64, 4).unwrap();
        let m = Mem::new(g);
        let (mut p, _, _) = m.side(0, WaitMode::Spin);
        let (_, mut c, _) = m.side(1, WaitMode::Spin);
        assert!(!c.ready());
        for i in 0..4u8 {
            assert!(p.has_room());
            p.push(&[i; 10]);
        }
        assert!(!p.has_room(), "four slots, four chunks in flight");
        let mut b = [0u8; 10];
        assert!(!c.pop(&mut b).unwrap(), "one of four: not yet published");
        assert_eq!(b, [0; 10]);
        assert!(!p.has_room(), "the release is not published yet");
        assert!(c.flush());
        assert!(!c.flush(), "nothing new to publish");
        assert!(p.has_room(), "one slot released");
        p.push(&[9; 64]);
        for i in 1..4u8 {
            assert!(c.ready());
            c.pop(&mut b).unwrap();
            assert_eq!(b, [i; 10]);
        }
        let mut wrong = [0u8; 10];
        assert!(c.ready());
        let e = c.pop(&mut wrong).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidData);
        assert!(e.to_string().contains("64-byte chunk"), "{e}");
    }

    /// Side 0 sends `msgs` one after the other, side 1 receives and checks.
    fn stream(geo: Geometry, msgs: &[usize], mode: WaitMode) {
        let m = Mem::new(geo);
        let (mut p, _, w0) = m.side(0, mode);
        let (_, mut c, w1) = m.side(1, mode);
        std::thread::scope(|s| {
            s.spawn(move || {
                for (k, &len) in msgs.iter().enumerate() {
                    send(&mut p, &w0, &pattern(len, k as u64)).unwrap();
                }
            });
            for (k, &len) in msgs.iter().enumerate() {
                let mut b = vec![0u8; len];
                recv(&mut c, &w1, &mut b).unwrap();
                assert!(b == pattern(len, k as u64), "message {k} of {len} bytes");
            }
        });
    }

    /// Both sides exchange `msgs` at once.
    fn both_ways(geo: Geometry, msgs: &[usize], mode: WaitMode) {
        let m = Mem::new(geo);
        let sides = [m.side(0, mode), m.side(1, mode)];
        std::thread::scope(|s| {
            for (side, (mut p, mut c, w)) in sides.into_iter().enumerate() {
                s.spawn(move || {
                    for (k, &len) in msgs.iter().enumerate() {
                        let out = pattern(len, (2 * k + side) as u64);
                        let mut inp = vec![0u8; len];
                        exchange(&mut p, &mut c, &w, &out, &mut inp).unwrap();
                        assert!(inp == pattern(len, (2 * k + 1 - side) as u64));
                    }
                });
            }
        });
    }

    #[test]
    fn messages_far_larger_than_the_ring() {
        let g = Geometry::new(256, 2).unwrap();
        // Spin only for a few hand-offs: on a busy two-CPU machine every
        // spin-mode hand-off may cost a time slice.
        stream(g, &[0, 1, 56, 57, 1000], WaitMode::Spin);
        stream(g, &[0, 1, 56, 57, 100_000, 3, 65_536], WaitMode::Yield);
        both_ways(g, &[1, 200_000, 0, 57], WaitMode::Yield);
    }

    #[test]
    fn every_wait_mode_hands_off() {
        let g = Geometry::new(128, 4).unwrap();
        for mode in [WaitMode::Yield, WaitMode::Block] {
            stream(g, &[8, 5000, 1, 129], mode);
            both_ways(g, &[8, 5000], mode);
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

        #[test]
        fn chunk_ranges_partition_the_message(len in 0usize..100_000, chunk64 in 1usize..64) {
            let g = Geometry::new(chunk64 * 64, 2).unwrap();
            let (mut start, mut n) = (0, 0);
            loop {
                let r = g.next_chunk(len, start);
                prop_assert_eq!(r.start, start);
                prop_assert!(r.len() <= g.chunk_bytes);
                prop_assert!(r.end > r.start || len == 0);
                n += 1;
                start = r.end;
                if start >= len {
                    break;
                }
            }
            prop_assert_eq!(start, len);
            prop_assert_eq!(n, g.chunks(len));
        }

        #[test]
        fn random_sizes_and_geometries_arrive_intact(
            chunk64 in 1usize..40,
            slots in 1usize..9,
            msgs in proptest::collection::vec(0usize..20_000, 1..12),
            bidir in any::<bool>(),
        ) {
            let g = Geometry::new(chunk64 * 64, slots).unwrap();
            if bidir {
                both_ways(g, &msgs, WaitMode::Yield);
            } else {
                stream(g, &msgs, WaitMode::Yield);
            }
        }
    }
}
