//! The two buffers of the protocol, both allocated once when the channel
//! is made, so nothing allocates while messages move.
//!
//! * [`SendWindow`]: the payload of every frame sent and not yet
//!   acknowledged, so a lost frame can be sent again; its size is the
//!   window (flow control: at most that many frames in flight).
//! * [`Stash`]: in-order bytes that arrived while the application was not
//!   receiving (a reply that came while a send waited for its
//!   acknowledgement), handed out by the next receive.

use super::header::after;

/// Frames sent and not yet acknowledged, by sequence number.
pub struct SendWindow {
    slots: Vec<u8>,
    lens: Vec<usize>,
    /// Per slot: the receiver holds the frame (selective acknowledgement),
    /// so it is never sent again.
    sacked: Vec<bool>,
    /// Per slot: sent again in the current recovery, with the sequence
    /// number the next new frame had then (its copy went out before that
    /// frame: held frames from there on say the copy was lost too).
    resent: Vec<Option<u32>>,
    /// In-flight frames the receiver holds (sacked).
    sacked_frames: usize,
    chunk_bytes: usize,
    /// Oldest unacknowledged sequence number.
    una: u32,
    /// Sequence number of the next new frame.
    next: u32,
}

impl SendWindow {
    /// A window of `frames` frames of up to `chunk_bytes` payload each.
    pub fn new(frames: usize, chunk_bytes: usize) -> SendWindow {
        SendWindow {
            slots: vec![0; frames * chunk_bytes],
            lens: vec![0; frames],
            sacked: vec![false; frames],
            resent: vec![None; frames],
            sacked_frames: 0,
            chunk_bytes,
            una: 0,
            next: 0,
        }
    }

    /// Frames in flight.
    pub fn in_flight(&self) -> usize {
        self.next.wrapping_sub(self.una) as usize
    }

    /// Frames in flight that the receiver does not hold yet: what a
    /// congestion window limits (RFC 6675's pipe, less its lost-frame
    /// term). Counting held frames too would stop new frames for a whole
    /// recovery, as the hole keeps the cumulative acknowledgement back.
    pub fn pipe(&self) -> usize {
        self.in_flight() - self.sacked_frames
    }

    /// Frames the window holds at most.
    pub fn capacity(&self) -> usize {
        self.lens.len()
    }

    /// Whether no further frame may be sent before an acknowledgement.
    pub fn full(&self) -> bool {
        self.in_flight() >= self.lens.len()
    }

    /// Oldest unacknowledged sequence number.
    pub fn una(&self) -> u32 {
        self.una
    }

    /// Keep `payload` (at most one chunk) as the next frame; its sequence
    /// number. The caller checks [`SendWindow::full`] first.
    pub fn push(&mut self, payload: &[u8]) -> u32 {
        debug_assert!(!self.full() && payload.len() <= self.chunk_bytes);
        let seq = self.next;
        let i = self.slot(seq);
        let start = i * self.chunk_bytes;
        self.slots[start..start + payload.len()].copy_from_slice(payload);
        self.lens[i] = payload.len();
        self.sacked[i] = false;
        self.resent[i] = None;
        self.next = self.next.wrapping_add(1);
        seq
    }

    /// Whether `seq` is in flight (sent, not cumulatively acknowledged).
    pub fn holds(&self, seq: u32) -> bool {
        !after(self.una, seq) && after(self.next, seq)
    }

    /// The receiver holds in-flight frame `seq`: whether that is news.
    pub fn sack(&mut self, seq: u32) -> bool {
        if !self.holds(seq) {
            return false;
        }
        let i = self.slot(seq);
        let news = !std::mem::replace(&mut self.sacked[i], true);
        self.sacked_frames += usize::from(news);
        news
    }

    /// Whether in-flight frame `seq` is held by the receiver.
    pub fn is_sacked(&self, seq: u32) -> bool {
        self.sacked[self.slot(seq)]
    }

    /// Whether in-flight frame `seq` was sent again in this recovery.
    pub fn is_resent(&self, seq: u32) -> bool {
        self.resent[self.slot(seq)].is_some()
    }

    /// The sequence number the next new frame had when in-flight frame
    /// `seq` was last sent again (none: not sent again in this recovery).
    pub fn resent_before(&self, seq: u32) -> Option<u32> {
        self.resent[self.slot(seq)]
    }

    /// Mark in-flight frame `seq` sent again now (`true`) or due again
    /// (`false`).
    pub fn set_resent(&mut self, seq: u32, resent: bool) {
        let i = self.slot(seq);
        self.resent[i] = resent.then_some(self.next);
    }

    /// Sequence number of the next new frame.
    pub fn next(&self) -> u32 {
        self.next
    }

    /// The payload of in-flight frame `seq`.
    pub fn payload(&self, seq: u32) -> &[u8] {
        let i = self.slot(seq);
        let start = i * self.chunk_bytes;
        &self.slots[start..start + self.lens[i]]
    }

    /// Take a cumulative acknowledgement (the peer expects `ack` next):
    /// whether it acknowledged anything new. Acknowledgements outside the
    /// window (stale, or bogus) change nothing.
    pub fn acknowledge(&mut self, ack: u32) -> bool {
        if after(ack, self.una) && !after(ack, self.next) {
            while self.una != ack {
                let i = self.slot(self.una);
                if std::mem::replace(&mut self.sacked[i], false) {
                    self.sacked_frames -= 1;
                }
                self.una = self.una.wrapping_add(1);
            }
            true
        } else {
            false
        }
    }

    fn slot(&self, seq: u32) -> usize {
        seq as usize % self.lens.len()
    }
}

/// A byte ring of fixed capacity.
pub struct Stash {
    buf: Vec<u8>,
    head: usize,
    len: usize,
}

impl Stash {
    /// A stash of `capacity_bytes`.
    pub fn new(capacity_bytes: usize) -> Stash {
        Stash {
            buf: vec![0; capacity_bytes.max(1)],
            head: 0,
            len: 0,
        }
    }

    /// Bytes that still fit.
    pub fn free(&self) -> usize {
        self.buf.len() - self.len
    }

    /// Bytes held.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it holds nothing.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Append `data` (the caller checks [`Stash::free`]).
    pub fn put(&mut self, data: &[u8]) {
        debug_assert!(data.len() <= self.free());
        let cap = self.buf.len();
        let tail = (self.head + self.len) % cap;
        let first = data.len().min(cap - tail);
        self.buf[tail..tail + first].copy_from_slice(&data[..first]);
        self.buf[..data.len() - first].copy_from_slice(&data[first..]);
        self.len += data.len();
    }

    /// Move the oldest bytes into `out`, as many as fit: how many.
    pub fn take(&mut self, out: &mut [u8]) -> usize {
        let n = out.len().min(self.len);
        let cap = self.buf.len();
        let first = n.min(cap - self.head);
        out[..first].copy_from_slice(&self.buf[self.head..self.head + first]);
        out[first..n].copy_from_slice(&self.buf[..n - first]);
        self.head = (self.head + n) % cap;
        self.len -= n;
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pipe_leaves_out_held_frames_until_they_are_acknowledged() {
        let mut w = SendWindow::new(8, 1);
        let seqs: Vec<u32> = (0..5u8).map(|i| w.push(&[i])).collect();
        assert!(w.sack(seqs[2]) && w.sack(seqs[3]));
        assert!(!w.sack(seqs[3]), "a second report is no news");
        assert_eq!((w.in_flight(), w.pipe()), (5, 3));
        w.set_resent(seqs[0], true);
        assert_eq!(w.resent_before(seqs[0]), Some(seqs[4] + 1));
        assert!(w.acknowledge(seqs[4]));
        assert_eq!((w.in_flight(), w.pipe()), (1, 1));
        w.push(&[9]);
        assert_eq!(w.pipe(), 2);
    }

    #[test]
    fn window_keeps_frames_until_acknowledged_across_the_wrap() {
        let mut w = SendWindow::new(4, 3);
        w.una = u32::MAX - 1;
        w.next = u32::MAX - 1;
        let seqs: Vec<u32> = (0..4u8)
            .map(|i| w.push(&[i; 3][..1 + i as usize % 3]))
            .collect();
        assert!(w.full());
        assert_eq!(w.payload(seqs[2]), &[2, 2, 2]);
        assert!(!w.acknowledge(u32::MAX - 1), "nothing new");
        assert!(!w.acknowledge(5), "beyond what was sent");
        assert!(w.acknowledge(1));
        assert_eq!(w.in_flight(), 1);
        assert_eq!(w.payload(seqs[3]), &[3]);
    }

    #[test]
    fn stash_wraps_in_order() {
        let mut s = Stash::new(5);
        s.put(b"abc");
        let mut o = [0u8; 2];
        assert_eq!(s.take(&mut o), 2);
        s.put(b"defg");
        assert_eq!(s.free(), 0);
        let mut o = [0u8; 9];
        assert_eq!(s.take(&mut o), 5);
        assert_eq!(&o[..5], b"cdefg");
        assert_eq!(s.len(), 0);
    }
}
