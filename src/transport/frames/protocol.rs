//! The reliable channel: messages of any size over a [`FrameLink`].
//!
//! Each message is cut into frames of the link's MTU less the header and
//! numbered; the receiver delivers in order, keeps frames that arrive
//! after a gap ([`super::reorder`]) and acknowledges cumulatively, with a
//! bitmap of the frames it holds past the gap (selective acknowledgement). Progress happens only inside a call (no
//! thread runs behind the application), so the rules are about which call
//! does what:
//!
//! * a send returns as soon as its frames are handed to the link, while
//!   the window has room: the frames stay in the window until
//!   acknowledged, and any later call (send, receive, flush) that has to
//!   wait takes acknowledgements and resends on the timeout meanwhile;
//! * acknowledgements ride on every data frame (a ping-pong reply
//!   acknowledges the request, so a round trip is two frames, not four);
//!   a receiver sends one on its own only every quarter window of frames
//!   taken, when it has waited [`ACK_DELAY`] with frames unacknowledged
//!   (the sender may be waiting on them), for an old copy (its
//!   acknowledgement was lost) and on [`Reliable::flush`];
//! * [`Reliable::flush`] (the end of a block, of a sweep, the channel's
//!   drop) acknowledges what was taken and waits until everything sent is
//!   acknowledged. When the last acknowledgement is lost, the resends
//!   meet a peer that no longer listens: after [`LINGER_RESENDS`]
//!   unanswered resends the flush returns, keeping the frames to resend in
//!   the next call (a peer still waiting for them would have answered).
//!
//! What this costs: a frame lost while its sender has turned to another
//! channel (a rank of a group waiting on a third one) is resent only when
//! the sender next calls on this channel; until then the receiver waits,
//! at worst until the channel's timeout.
//!
//! Only missing frames are sent again: one the receiver reports a gap
//! at, with [`DUP_ACKS_FOR_RESEND`] held frames after it, once per
//! recovery, and again when as many frames first sent after that copy are
//! held (the copy was lost too); and on the resend timeout ([`super::rtt`]: from the measured
//! round trip as TCP's RTO, doubled on each expiry up to a cap) every
//! frame the receiver does not hold. A peer that makes no progress for the
//! channel's timeout is an error. A loss halves a congestion window
//! (frames allowed in flight and not yet held by the receiver, so that
//! new frames go on flowing while a hole is filled) once per recovery (until everything sent
//! before it is acknowledged), and each acknowledged frame grows it again,
//! as TCP's slow start does: the window does not collapse under a run of
//! losses.
//!
//! Nothing here allocates after [`Reliable::new`]; the clock is read only
//! when no frame is waiting.

use std::io;
use std::time::{Duration, Instant};

use super::counters::Counters;
use super::header::{Header, Kind, HEADER_BYTES};
use super::reorder::{Reorder, SACK_BYTES};
use super::rtt::Rtt;
pub use super::rtt::{RTO_MAX, RTO_MIN, RTO_START};
use super::window::{SendWindow, Stash};
use super::FrameLink;
use crate::transport::Endpoint;

mod recovery;
/// Unanswered resends after which a flush returns although its last
/// frames are unacknowledged: the peer took them and went quiet (only a
/// finished receive stops answering), and its acknowledgement was lost.
/// The frames stay in the window: the next call goes on resending them,
/// so nothing is given up.
const LINGER_RESENDS: u32 = 6;
/// How long a waiting receiver keeps frames unacknowledged before it
/// acknowledges them on their own: long enough that a reply (which
/// carries the acknowledgement) usually comes first, far below the
/// retransmission timeout a sender waiting on them would otherwise need.
pub const ACK_DELAY: Duration = Duration::from_micros(200);
/// Frames held by the receiver after a missing one (or, from a peer that
/// sends no bitmap, duplicate acknowledgements) that make it count as lost
/// before the timeout: fewer would take a reordering for a loss.
pub const DUP_ACKS_FOR_RESEND: u32 = 3;
/// The congestion window never shrinks below this many frames.
const MIN_CWND_FRAMES: usize = 4;
/// Empty non-blocking tries between two clock reads while busy-polling.
const POLLS_PER_CLOCK_READ: u32 = 256;
/// Bytes of frames kept in flight at most (the window), whatever the MTU.
const WINDOW_TARGET_BYTES: usize = 512 * 1024;

/// How a channel is set up.
#[derive(Debug, Clone, Copy)]
pub struct Params {
    /// This end's identifier (frames to it carry it).
    pub own_id: u32,
    /// The peer's identifier.
    pub peer_id: u32,
    /// Frame size both ends accept, bytes after the link header.
    pub mtu_bytes: usize,
    /// No progress for this long: the peer is dead.
    pub timeout: Duration,
    /// Spin on non-blocking receives instead of sleeping in the kernel.
    pub busy_poll: bool,
}

/// A reliable, ordered channel over `L`.
pub struct Reliable<L: FrameLink> {
    link: L,
    p: Params,
    chunk_bytes: usize,
    window: SendWindow,
    stash: Stash,
    /// Frames received after a gap, until it is filled.
    reorder: Reorder,
    rx_frame: Vec<u8>,
    /// Next data frame expected from the peer.
    rcv_next: u32,
    /// The last acknowledgement sent (on any frame).
    ack_sent: u32,
    dup_acks: u32,
    /// Congestion window: frames allowed in flight now (at most the send
    /// window), halved on every loss and grown by each acknowledged frame.
    cwnd: usize,
    /// In a recovery: until this frame is acknowledged, no further loss
    /// halves the window again.
    recovery: Option<u32>,
    rtt: Rtt,
    rto_deadline: Option<Instant>,
    /// When a waiting receiver acknowledges on its own what it took (set
    /// on its first wait with frames unacknowledged, cleared by any ack).
    ack_deadline: Option<Instant>,
    /// Bumped on every sign of life; the stall clock restarts when it moves.
    progress: u64,
    counters: Counters,
    /// Set by [`Endpoint::abandon`]: the drop does not flush.
    abandoned: bool,
}

impl<L: FrameLink> Reliable<L> {
    /// A channel over `link` with the peer the handshake found.
    pub fn new(link: L, p: Params) -> Reliable<L> {
        let chunk_bytes = p.mtu_bytes.saturating_sub(HEADER_BYTES).max(1);
        let frames = (WINDOW_TARGET_BYTES / chunk_bytes).clamp(16, 128);
        Reliable {
            rx_frame: vec![0; p.mtu_bytes.max(HEADER_BYTES) + 64],
            window: SendWindow::new(frames, chunk_bytes),
            // Room for a whole window of the peer's frames, twice: what it
            // may send while this end is busy sending.
            stash: Stash::new(2 * frames * chunk_bytes),
            reorder: Reorder::new(frames, chunk_bytes),
            link,
            p,
            chunk_bytes,
            rcv_next: 0,
            ack_sent: 0,
            dup_acks: 0,
            cwnd: frames,
            recovery: None,
            rtt: Rtt::new(),
            rto_deadline: None,
            ack_deadline: None,
            progress: 0,
            counters: Counters::default(),
            abandoned: false,
        }
    }

    /// The same channel with a send window of `frames` frames (at least
    /// one) instead of the default; only before anything is sent.
    pub fn with_window_frames(mut self, frames: usize) -> Reliable<L> {
        debug_assert_eq!(self.window.in_flight(), 0);
        let frames = frames.max(1);
        self.window = SendWindow::new(frames, self.chunk_bytes);
        self.reorder = Reorder::new(frames, self.chunk_bytes);
        self.cwnd = frames;
        self
    }

    /// The same channel with a congestion window of `frames` to start
    /// with, below its send window: a test's sender then sends as
    /// acknowledgements come, as one on a real link does after its first
    /// loss, instead of handing the whole window over at once.
    #[cfg(test)]
    pub fn with_congestion_window(mut self, frames: usize) -> Reliable<L> {
        self.cwnd = frames.clamp(MIN_CWND_FRAMES, self.window_capacity());
        self
    }

    /// Payload bytes per frame.
    pub fn chunk_bytes(&self) -> usize {
        self.chunk_bytes
    }

    /// Frames kept in flight at most.
    pub fn window_frames(&self) -> usize {
        self.window_capacity()
    }

    fn window_capacity(&self) -> usize {
        self.window.capacity()
    }

    /// What the protocol has done so far.
    pub fn counters(&self) -> Counters {
        self.counters
    }

    /// The smoothed round trip measured so far, and the resend timeout now.
    pub fn rtt(&self) -> (Option<Duration>, Duration) {
        (self.rtt.srtt(), self.rtt.rto())
    }

    /// The link underneath.
    pub fn link_mut(&mut self) -> &mut L {
        &mut self.link
    }

    /// Acknowledge what was taken, then wait until every frame sent is
    /// acknowledged (or the peer went quiet after it took them, see
    /// [`LINGER_RESENDS`]): the end of a block or of the channel, after
    /// which this end may stop calling for a while.
    pub fn flush(&mut self) -> io::Result<()> {
        self.transfer(&[], 0, &mut [], true)
    }

    /// Send `out` `repeat` times while receiving exactly `inp.len()`
    /// bytes; returns when every frame is handed to the link and `inp` is
    /// full. `drain`: then also acknowledge what was received and wait for
    /// the acknowledgement of everything sent ([`Reliable::flush`]).
    fn transfer(&mut self, out: &[u8], repeat: u64, inp: &mut [u8], drain: bool) -> io::Result<()> {
        let mut filled = self.stash.take(inp);
        self.take_held(inp, &mut filled);
        let mut left = if out.is_empty() { 0 } else { repeat };
        let mut offset = 0usize;
        let mut idle = Idle::new(self.progress);
        loop {
            let mut queued = false;
            while left > 0 && !self.window.full() && self.window.pipe() < self.cwnd {
                let end = (offset + self.chunk_bytes).min(out.len());
                let seq = self.window.push(&out[offset..end]);
                if !self.rtt.timing() {
                    // One frame timed per round trip: one clock read.
                    self.rtt.start(seq, Instant::now());
                }
                self.queue_data(seq)?;
                queued = true;
                offset = end;
                if offset == out.len() {
                    offset = 0;
                    left -= 1;
                }
            }
            if queued {
                // The frames of this turn leave together (one call).
                self.link.push_frames()?;
            }
            if filled == inp.len() && left == 0 {
                if !drain {
                    break;
                }
                if self.ack_sent != self.rcv_next {
                    self.send_ack()?;
                }
                if self.window.in_flight() == 0 || idle.expiries >= LINGER_RESENDS {
                    break;
                }
            }
            match self.link.recv_frame(&mut self.rx_frame, None)? {
                Some(n) => self.take_frame(n, inp, &mut filled)?,
                None => self.wait(&mut idle, inp, &mut filled)?,
            }
        }
        Ok(())
    }

    /// Nothing was waiting: spin (reading the clock now and then) or sleep
    /// in the link, resend on the timeout, fail after the stall timeout.
    fn wait(&mut self, idle: &mut Idle, inp: &mut [u8], filled: &mut usize) -> io::Result<()> {
        if self.p.busy_poll {
            idle.tries += 1;
            if !idle.tries.is_multiple_of(POLLS_PER_CLOCK_READ) {
                std::hint::spin_loop();
                return Ok(());
            }
            // No wait in the kernel sees the abort handle while spinning.
            if self.link.aborted() {
                return Err(super::aborted_error());
            }
        }
        let now = Instant::now();
        if idle.progress != self.progress || idle.stall_deadline.is_none() {
            idle.progress = self.progress;
            idle.expiries = 0;
            idle.stall_deadline = Some(now + self.p.timeout);
        }
        let stall = idle.stall_deadline.unwrap_or(now);
        if now >= stall {
            // Where the exchange stood, for the error message (off the hot path).
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!(
                    "the peer stopped answering (timeout; {} frames unacknowledged from {}, {} of {} bytes received, next frame expected {}, {:?})",
                    self.window.in_flight(),
                    self.window.una(),
                    filled,
                    inp.len(),
                    self.rcv_next,
                    self.counters
                ),
            ));
        }
        let mut until = stall;
        if self.ack_sent != self.rcv_next {
            // Frames taken and not acknowledged while this end waits: the
            // sender may be waiting on them (a full window, a flush).
            let due = *self.ack_deadline.get_or_insert(now + ACK_DELAY);
            if now >= due {
                self.send_ack()?;
            } else {
                until = until.min(due);
            }
        }
        if self.window.in_flight() > 0 {
            let rto = *self.rto_deadline.get_or_insert(now + self.rtt.rto());
            if now >= rto {
                self.counters.timeouts += 1;
                self.counters.timeout_wait_ns += self.rtt.rto().as_nanos() as u64;
                self.rtt.expired();
                self.timed_out()?;
                idle.expiries += 1;
                self.rto_deadline = Some(now + self.rtt.rto());
            }
            until = until.min(self.rto_deadline.unwrap_or(until));
        }
        if !self.p.busy_poll {
            // Coarse timers unless a stream's resends depend on them
            // (see `WAIT_SLACK_NS`).
            super::wait_timers(self.window.in_flight() <= 1);
            let nap = until
                .saturating_duration_since(now)
                .max(Duration::from_micros(100));
            if let Some(n) = self.link.recv_frame(&mut self.rx_frame, Some(nap))? {
                self.take_frame(n, inp, filled)?;
            }
        }
        Ok(())
    }

    /// Act on the frame in `rx_frame` (`n` bytes).
    fn take_frame(&mut self, n: usize, inp: &mut [u8], filled: &mut usize) -> io::Result<()> {
        let mut map = [0u8; SACK_BYTES];
        let Some((h, payload)) = Header::decode(&self.rx_frame[..n]) else {
            return Ok(());
        };
        if h.dst != self.p.own_id {
            return Ok(());
        }
        let map_bytes = if h.kind == Kind::Ack {
            payload.len().min(SACK_BYTES)
        } else {
            0
        };
        map[..map_bytes].copy_from_slice(&payload[..map_bytes]);
        match h.kind {
            Kind::Data => {
                self.take_ack(h.ack, h.kind, &[])?;
                self.take_data(h, inp, filled)
            }
            Kind::Ack => self.take_ack(h.ack, h.kind, &map[..map_bytes]),
            // The connecting end did not hear the handshake's answer.
            Kind::Hello => super::handshake::answer(&mut self.link, &self.p),
            Kind::HelloAck => Ok(()),
        }
    }

    fn take_data(&mut self, h: Header, inp: &mut [u8], filled: &mut usize) -> io::Result<()> {
        let len = usize::from(h.payload_bytes);
        let payload = &self.rx_frame[HEADER_BYTES..HEADER_BYTES + len];
        if h.seq != self.rcv_next {
            // Later than expected (one was lost): keep it and say at once
            // which frames are held, so the sender resends only the
            // missing; or a resent copy of one already taken (its
            // acknowledgement was lost): say what is expected.
            if self.reorder.put(self.rcv_next, h.seq, payload) {
                self.counters.held_frames += 1;
            }
            self.send_ack()?;
            return Ok(());
        }
        if !deliver(&mut self.stash, inp, filled, payload) {
            // No room: drop it unacknowledged; it comes again.
            return Ok(());
        }
        self.rcv_next = self.rcv_next.wrapping_add(1);
        self.take_held(inp, filled);
        self.progress += 1;
        let quarter = (self.window_capacity() / 4).max(1) as u32;
        if self.rcv_next.wrapping_sub(self.ack_sent) >= quarter || !self.reorder.is_empty() {
            self.send_ack()?;
        }
        Ok(())
    }

    /// Deliver the frames held after a gap that is now filled, as far as
    /// there is room: a frame the last call had no room for is the
    /// sender's no longer (it was acknowledged as held), so each call
    /// starts here.
    fn take_held(&mut self, inp: &mut [u8], filled: &mut usize) {
        while let Some(held) = self.reorder.get(self.rcv_next) {
            if !deliver(&mut self.stash, inp, filled, held) {
                break;
            }
            self.reorder.release(self.rcv_next);
            self.rcv_next = self.rcv_next.wrapping_add(1);
        }
    }

    fn send_data(&mut self, seq: u32) -> io::Result<()> {
        self.data_frame(seq, false)
    }

    /// A new data frame, queued to leave with the others of its turn.
    fn queue_data(&mut self, seq: u32) -> io::Result<()> {
        self.data_frame(seq, true)
    }

    fn data_frame(&mut self, seq: u32, queue: bool) -> io::Result<()> {
        let payload = self.window.payload(seq);
        let h = Header {
            kind: Kind::Data,
            payload_bytes: payload.len() as u16,
            dst: self.p.peer_id,
            seq,
            ack: self.rcv_next,
        };
        if queue {
            self.link.queue_frame(&h.encode(), payload)?;
        } else {
            self.link.send_frame(&h.encode(), payload)?;
        }
        self.ack_sent = self.rcv_next;
        self.ack_deadline = None;
        self.counters.data_frames += 1;
        Ok(())
    }

    /// An acknowledgement-only frame, with the bitmap of frames held past
    /// a gap when there are any.
    fn send_ack(&mut self) -> io::Result<()> {
        let map = self.reorder.sack(self.rcv_next);
        let map_bytes = if self.reorder.is_empty() {
            0
        } else {
            SACK_BYTES
        };
        let h = Header {
            kind: Kind::Ack,
            payload_bytes: map_bytes as u16,
            dst: self.p.peer_id,
            seq: 0,
            ack: self.rcv_next,
        };
        self.link.send_frame(&h.encode(), &map[..map_bytes])?;
        self.ack_sent = self.rcv_next;
        self.ack_deadline = None;
        self.counters.ack_frames += 1;
        Ok(())
    }
}

/// Copy `payload` into what `inp` still lacks and the rest into `stash`:
/// false (nothing copied) when both together have no room for it.
fn deliver(stash: &mut Stash, inp: &mut [u8], filled: &mut usize, payload: &[u8]) -> bool {
    let room = inp.len() - *filled;
    if payload.len() > room + stash.free() {
        return false;
    }
    let direct = payload.len().min(room);
    inp[*filled..*filled + direct].copy_from_slice(&payload[..direct]);
    *filled += direct;
    stash.put(&payload[direct..]);
    true
}

/// State of one call's waiting: when the peer counts as dead.
struct Idle {
    tries: u32,
    /// Retransmission timeouts since the peer last showed progress.
    expiries: u32,
    progress: u64,
    stall_deadline: Option<Instant>,
}

impl Idle {
    fn new(progress: u64) -> Idle {
        Idle {
            tries: 0,
            expiries: 0,
            progress,
            stall_deadline: None,
        }
    }
}

/// Messages a stream-mode call hands over at once: fewer calls, and the
/// window (not the call) decides how many frames are in flight.
const STREAM_MESSAGES: u64 = 64;

impl<L: FrameLink> Endpoint for Reliable<L> {
    fn send(&mut self, buf: &[u8]) -> io::Result<()> {
        self.transfer(buf, 1, &mut [], false)
    }

    fn recv(&mut self, buf: &mut [u8]) -> io::Result<()> {
        self.transfer(&[], 0, buf, false)
    }

    fn exchange(&mut self, out: &[u8], inp: &mut [u8]) -> io::Result<()> {
        self.transfer(out, 1, inp, false)
    }

    fn stream_window(&self) -> u64 {
        STREAM_MESSAGES
    }

    fn send_stream(&mut self, buf: &[u8], count: u64) -> io::Result<()> {
        self.transfer(buf, count, &mut [], false)
    }

    fn recv_stream(&mut self, buf: &mut [u8], count: u64) -> io::Result<()> {
        for _ in 0..count {
            // Acknowledged by the quarter-window rule and the delayed
            // acknowledgement meanwhile, by the flush at the end.
            self.transfer(&[], 0, buf, false)?;
        }
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        Reliable::flush(self)
    }

    fn abandon(&mut self) {
        self.abandoned = true;
    }

    fn abort_handle(&self) -> Option<crate::transport::AbortHandle> {
        self.link.abort_handle()
    }

    fn protocol_counters(&self) -> Option<serde_json::Value> {
        Some(self.counters.to_json(self.rtt.srtt(), self.rtt.rto()))
    }
}

impl<L: FrameLink> Drop for Reliable<L> {
    /// A channel dropped without a flush (a group's link at the end of a
    /// job) still delivers its last frames to a peer waiting for them;
    /// errors are moot here (the peer reports its own). Not after
    /// [`Endpoint::abandon`]: a peer that has everything it asked for
    /// answers no resend (it closed its end), so the flush would only
    /// linger through [`LINGER_RESENDS`] timeouts, up to about a second
    /// at [`RTO_MAX`], before the channel is gone (a `wulf serve` kept
    /// its test slot meanwhile and turned the next client away).
    fn drop(&mut self) {
        if self.abandoned {
            return;
        }
        if self.window.in_flight() > 0 || self.ack_sent != self.rcv_next {
            let _ = self.flush();
        }
    }
}
