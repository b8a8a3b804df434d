//! Selective acknowledgement, the receiving side: data frames that
//! arrive after a gap (an earlier frame was lost) are kept here instead of
//! dropped, and every acknowledgement sent while any are held carries a
//! bitmap of them ([`Reorder::sack`]), so the sender resends only the
//! frames that are missing. Allocated once when the channel is made.
//!
//! The bitmap rides in the payload of an acknowledgement frame: bit `i`
//! (byte `i / 8`, bit `i % 8` from the least significant) says frame
//! `ack + 1 + i` is held. A peer that sends no bitmap (an acknowledgement
//! with no payload) gets cumulative acknowledgements only.

use super::header::after;

/// Bytes of the bitmap: one bit per frame of the largest window (128).
pub const SACK_BYTES: usize = 16;
/// Frames a bitmap covers after the cumulative acknowledgement.
pub const SACK_FRAMES: usize = 8 * SACK_BYTES;

/// Frames received past a gap, by sequence number.
pub struct Reorder {
    buf: Vec<u8>,
    lens: Vec<usize>,
    /// The sequence number each slot holds, when `held`.
    seqs: Vec<u32>,
    held: Vec<bool>,
    chunk_bytes: usize,
    /// Frames held now.
    count: usize,
}

impl Reorder {
    /// Room for `frames` frames of up to `chunk_bytes` each.
    pub fn new(frames: usize, chunk_bytes: usize) -> Reorder {
        let frames = frames.clamp(1, SACK_FRAMES);
        Reorder {
            buf: vec![0; frames * chunk_bytes],
            lens: vec![0; frames],
            seqs: vec![0; frames],
            held: vec![false; frames],
            chunk_bytes,
            count: 0,
        }
    }

    /// Whether no frame is held.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    fn slot(&self, seq: u32) -> usize {
        seq as usize % self.lens.len()
    }

    /// Keep frame `seq` (which came while `next` was expected): false
    /// when it lies beyond what is kept (it comes again) or is held.
    pub fn put(&mut self, next: u32, seq: u32, payload: &[u8]) -> bool {
        let ahead = seq.wrapping_sub(next) as usize;
        if !after(seq, next) || ahead >= self.lens.len() || payload.len() > self.chunk_bytes {
            return false;
        }
        let i = self.slot(seq);
        if self.held[i] && self.seqs[i] == seq {
            return false;
        }
        // A slot still holding an older frame (from before `next`) is stale.
        if !self.held[i] {
            self.count += 1;
        }
        let start = i * self.chunk_bytes;
        self.buf[start..start + payload.len()].copy_from_slice(payload);
        self.lens[i] = payload.len();
        self.seqs[i] = seq;
        self.held[i] = true;
        true
    }

    /// The payload of frame `seq` if held (the caller then [`Reorder::release`]s it).
    pub fn get(&self, seq: u32) -> Option<&[u8]> {
        let i = self.slot(seq);
        (self.held[i] && self.seqs[i] == seq).then(|| {
            let start = i * self.chunk_bytes;
            &self.buf[start..start + self.lens[i]]
        })
    }

    /// Forget frame `seq` (delivered).
    pub fn release(&mut self, seq: u32) {
        let i = self.slot(seq);
        if self.held[i] && self.seqs[i] == seq {
            self.held[i] = false;
            self.count -= 1;
        }
    }

    /// The bitmap of frames held after `next` (the cumulative
    /// acknowledgement): bit i for frame next + 1 + i.
    pub fn sack(&self, next: u32) -> [u8; SACK_BYTES] {
        let mut map = [0u8; SACK_BYTES];
        if self.count == 0 {
            return map;
        }
        for (i, byte) in (0..SACK_FRAMES.min(self.lens.len())).map(|i| (i, i / 8)) {
            if self.get(next.wrapping_add(1 + i as u32)).is_some() {
                map[byte] |= 1 << (i % 8);
            }
        }
        map
    }
}

/// The frames a bitmap says are held, as sequence numbers after `ack`.
pub fn sacked(ack: u32, map: &[u8]) -> impl Iterator<Item = u32> + '_ {
    map.iter().enumerate().flat_map(move |(byte, bits)| {
        (0..8)
            .filter(move |b| bits & (1 << b) != 0)
            .map(move |b| ack.wrapping_add(1 + (8 * byte + b) as u32))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_past_a_gap_are_held_and_reported_until_delivered() {
        let mut r = Reorder::new(8, 4);
        let next = u32::MAX; // across the wrap
        assert!(
            !r.put(next, next, b"a"),
            "the expected frame is not held here"
        );
        assert!(r.put(next, 1, b"c"));
        assert!(r.put(next, 0, b"b"));
        assert!(!r.put(next, 0, b"b"), "a duplicate");
        assert!(!r.put(next, 7, b"x"), "beyond the window");
        let map = r.sack(next);
        let held: Vec<u32> = sacked(next, &map).collect();
        assert_eq!(held, vec![0, 1]);
        assert_eq!(r.get(0), Some(&b"b"[..]));
        r.release(0);
        r.release(1);
        assert!(r.is_empty());
        assert_eq!(r.sack(1), [0; SACK_BYTES]);
    }
}
