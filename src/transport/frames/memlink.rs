//! An in-memory [`FrameLink`] pair for the protocol's tests: frames cross
//! through queues that lose, duplicate and reorder them at random (seeded,
//! so a failing case repeats).

use std::collections::VecDeque;
use std::io;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use super::FrameLink;

/// How a link mistreats frames, each a probability from 0 to 1.
#[derive(Debug, Clone, Copy, Default)]
pub struct Faults {
    pub loss: f64,
    pub duplicate: f64,
    pub reorder: f64,
    /// Frames the queue holds at most (0: no limit); more are dropped, as
    /// a full switch port or shaper queue drops them.
    pub queue_frames: usize,
    /// Drop every acknowledgement-only frame (data frames still carry
    /// acknowledgements).
    pub drop_acks: bool,
    /// Drop the first copies of one data frame: `(n, copies)`, the n-th
    /// data frame this end sends (from 0) and copies of its sequence
    /// number (a test loses a frame and then its resend).
    pub drop_copies: Option<(u32, u32)>,
}

#[derive(Default)]
struct Queue {
    frames: Mutex<VecDeque<Vec<u8>>>,
    ready: Condvar,
}

/// One end of an in-memory link.
pub struct MemLink {
    mtu_bytes: usize,
    tx: Arc<Queue>,
    rx: Arc<Queue>,
    faults: Faults,
    rng: fastrand::Rng,
    /// Data frames sent so far, the sequence number of
    /// [`Faults::drop_copies`]' frame once seen, and its copies dropped.
    data_sent: u32,
    drop_seq: Option<u32>,
    copies_dropped: u32,
}

/// Two joined ends.
pub fn pair(mtu_bytes: usize, faults: Faults, seed: u64) -> (MemLink, MemLink) {
    let (q1, q2) = (Arc::new(Queue::default()), Arc::new(Queue::default()));
    let end = |tx: &Arc<Queue>, rx: &Arc<Queue>, s: u64| MemLink {
        mtu_bytes,
        tx: tx.clone(),
        rx: rx.clone(),
        faults,
        rng: fastrand::Rng::with_seed(s),
        data_sent: 0,
        drop_seq: None,
        copies_dropped: 0,
    };
    (end(&q1, &q2, seed), end(&q2, &q1, seed ^ 0x5eed))
}

impl FrameLink for MemLink {
    fn mtu_bytes(&self) -> usize {
        self.mtu_bytes
    }

    fn send_frame(&mut self, header: &[u8], payload: &[u8]) -> io::Result<()> {
        assert!(
            header.len() + payload.len() <= self.mtu_bytes,
            "frame above the MTU"
        );
        if self.rng.f64() < self.faults.loss || (self.faults.drop_acks && is_ack(header)) {
            return Ok(());
        }
        let frame = [header, payload].concat();
        // Headers are decoded only when a test asked for this fault.
        if let Some((nth, copies)) = self.faults.drop_copies {
            if let Some(seq) = data_seq(&frame) {
                if self.data_sent == nth {
                    self.drop_seq = Some(seq);
                }
                self.data_sent += 1;
                if self.copies_dropped < copies && self.drop_seq == Some(seq) {
                    self.copies_dropped += 1;
                    return Ok(());
                }
            }
        }
        let mut q = self.tx.frames.lock().unwrap();
        if self.faults.queue_frames > 0 && q.len() >= self.faults.queue_frames {
            return Ok(());
        }
        if self.rng.f64() < self.faults.duplicate {
            q.push_back(frame.clone());
        }
        q.push_back(frame);
        if q.len() >= 2 && self.rng.f64() < self.faults.reorder {
            let n = q.len();
            q.swap(n - 1, n - 2);
        }
        self.tx.ready.notify_all();
        Ok(())
    }

    fn recv_frame(&mut self, buf: &mut [u8], wait: Option<Duration>) -> io::Result<Option<usize>> {
        let mut q = self.rx.frames.lock().unwrap();
        if q.is_empty() {
            if let Some(d) = wait {
                q = self.rx.ready.wait_timeout(q, d).unwrap().0;
            }
        }
        Ok(q.pop_front().map(|f| {
            buf[..f.len()].copy_from_slice(&f);
            f.len()
        }))
    }

    fn learn_peer(&mut self) {}
}

impl MemLink {
    /// Mistreat frames sent from now on by `faults` (a test sets them
    /// after the handshake, which the faults might stop).
    pub fn set_faults(&mut self, faults: Faults) {
        self.faults = faults;
    }
}

/// The sequence number of a data frame's header.
fn data_seq(frame: &[u8]) -> Option<u32> {
    super::header::Header::decode(frame)
        .filter(|(h, _)| h.kind == super::header::Kind::Data)
        .map(|(h, _)| h.seq)
}

/// Whether `header` is that of an acknowledgement-only frame.
fn is_ack(header: &[u8]) -> bool {
    super::header::Header::decode(header).is_some_and(|(h, _)| h.kind == super::header::Kind::Ack)
}
