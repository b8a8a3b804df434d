//! The reliable channel: messages of any size over a [`FrameLink`].
//!
//! Each message is cut into frames of the link's MTU less the header and
//! numbered; the receiver takes only the frame it expects next (go-back-N)
//! and acknowledges cumulatively. Progress happens only inside a call (no
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
//! A frame is sent again when its acknowledgement is late (the
//! retransmission timeout, doubled on each expiry up to a cap) or after
//! three duplicate acknowledgements (the receiver saw later frames). A
//! peer that makes no progress for the channel's timeout is an error.
//! Every loss halves a congestion window (frames allowed in flight), which
//! each acknowledged frame grows again, as TCP's slow start does.
//!
//! Nothing here allocates after [`Reliable::new`]; the clock is read only
//! when no frame is waiting.

use std::io;
use std::time::{Duration, Instant};

use super::header::{after, Header, Kind, HEADER_BYTES};
use super::window::{SendWindow, Stash};
use super::FrameLink;
use crate::transport::Endpoint;

/// First retransmission timeout: far above a link's round trip, short
/// enough that a lost tail frame costs little.
pub const RTO_START: Duration = Duration::from_millis(5);
/// Longest retransmission timeout after repeated expiries.
pub const RTO_MAX: Duration = Duration::from_millis(200);
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
/// Duplicate acknowledgements that trigger a resend before the timeout.
const DUP_ACKS_FOR_RESEND: u32 = 3;
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

/// Counters of what the protocol had to do, for the result's settings.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counters {
    /// Data frames sent, first copies and resends.
    pub data_frames: u64,
    /// Data frames sent again.
    pub resent_frames: u64,
    /// Acknowledgement-only frames sent.
    pub ack_frames: u64,
}

/// A reliable, ordered channel over `L`.
pub struct Reliable<L: FrameLink> {
    link: L,
    p: Params,
    chunk_bytes: usize,
    window: SendWindow,
    stash: Stash,
    rx_frame: Vec<u8>,
    /// Next data frame expected from the peer.
    rcv_next: u32,
    /// The last acknowledgement sent (on any frame).
    ack_sent: u32,
    /// Acknowledgements sent for frames out of order since the last in-order one.
    out_of_order_acks: u32,
    dup_acks: u32,
    /// Congestion window: frames allowed in flight now (at most the send
    /// window), halved on every loss and grown by each acknowledged frame.
    cwnd: usize,
    rto: Duration,
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
            link,
            p,
            chunk_bytes,
            rcv_next: 0,
            ack_sent: 0,
            out_of_order_acks: 0,
            dup_acks: 0,
            cwnd: frames,
            rto: RTO_START,
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
        self.cwnd = frames;
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
        let mut left = if out.is_empty() { 0 } else { repeat };
        let mut offset = 0usize;
        let mut idle = Idle::new(self.progress);
        loop {
            while left > 0 && !self.window.full() && self.window.in_flight() < self.cwnd {
                let end = (offset + self.chunk_bytes).min(out.len());
                let seq = self.window.push(&out[offset..end]);
                self.send_data(seq)?;
                offset = end;
                if offset == out.len() {
                    offset = 0;
                    left -= 1;
                }
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
            let rto = *self.rto_deadline.get_or_insert(now + self.rto);
            if now >= rto {
                self.resend_all()?;
                idle.expiries += 1;
                self.rto = (self.rto * 2).min(RTO_MAX);
                self.rto_deadline = Some(now + self.rto);
            }
            until = until.min(self.rto_deadline.unwrap_or(until));
        }
        if !self.p.busy_poll {
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
        let Some((h, _)) = Header::decode(&self.rx_frame[..n]) else {
            return Ok(());
        };
        if h.dst != self.p.own_id {
            return Ok(());
        }
        match h.kind {
            Kind::Data => {
                self.take_ack(h.ack, h.kind)?;
                self.take_data(h, inp, filled)
            }
            Kind::Ack => self.take_ack(h.ack, h.kind),
            // The connecting end did not hear the handshake's answer.
            Kind::Hello => super::handshake::answer(&mut self.link, &self.p),
            Kind::HelloAck => Ok(()),
        }
    }

    fn take_ack(&mut self, ack: u32, kind: Kind) -> io::Result<()> {
        let before = self.window.in_flight();
        if self.window.acknowledge(ack) {
            let acked = before - self.window.in_flight();
            self.cwnd = (self.cwnd + acked).min(self.window_capacity());
            self.progress += 1;
            self.dup_acks = 0;
            self.rto = RTO_START;
            self.rto_deadline = None;
        } else if kind == Kind::Ack && ack == self.window.una() && self.window.in_flight() > 0 {
            // Once per loss: the duplicates that follow (one per frame the
            // receiver got past the gap) must not each resend the window.
            self.dup_acks += 1;
            if self.dup_acks == DUP_ACKS_FOR_RESEND {
                self.resend_all()?;
            }
        }
        Ok(())
    }

    fn take_data(&mut self, h: Header, inp: &mut [u8], filled: &mut usize) -> io::Result<()> {
        let len = usize::from(h.payload_bytes);
        if h.seq != self.rcv_next {
            // Later than expected (one was lost) or a resent copy of one
            // already taken (its acknowledgement was lost): say what is
            // expected, a few times for a gap, always for an old copy.
            let old = after(self.rcv_next, h.seq);
            if old || self.out_of_order_acks < DUP_ACKS_FOR_RESEND {
                self.out_of_order_acks += 1;
                self.send_ack()?;
            }
            return Ok(());
        }
        let room = inp.len() - *filled;
        if len > room + self.stash.free() {
            // No room: drop it unacknowledged; it comes again.
            return Ok(());
        }
        let payload = &self.rx_frame[HEADER_BYTES..HEADER_BYTES + len];
        let direct = len.min(room);
        inp[*filled..*filled + direct].copy_from_slice(&payload[..direct]);
        *filled += direct;
        self.stash.put(&payload[direct..]);
        self.rcv_next = self.rcv_next.wrapping_add(1);
        self.out_of_order_acks = 0;
        self.progress += 1;
        let quarter = (self.window_capacity() / 4).max(1) as u32;
        if self.rcv_next.wrapping_sub(self.ack_sent) >= quarter {
            self.send_ack()?;
        }
        Ok(())
    }

    fn send_data(&mut self, seq: u32) -> io::Result<()> {
        let payload = self.window.payload(seq);
        let h = Header {
            kind: Kind::Data,
            payload_bytes: payload.len() as u16,
            dst: self.p.peer_id,
            seq,
            ack: self.rcv_next,
        };
        self.link.send_frame(&h.encode(), payload)?;
        self.ack_sent = self.rcv_next;
        self.ack_deadline = None;
        self.counters.data_frames += 1;
        Ok(())
    }

    /// A loss: halve the congestion window, go back to the oldest
    /// unacknowledged frame and send again as many as the window allows.
    /// Without the halving, resending a whole window into a shaper's queue
    /// shorter than it loses the same tail every time (congestion collapse:
    /// seen across a 1 Gbit/s lab link in bidirectional mode).
    fn resend_all(&mut self) -> io::Result<()> {
        self.cwnd = (self.cwnd / 2).max(MIN_CWND_FRAMES);
        let una = self.window.una();
        for i in 0..self.window.in_flight().min(self.cwnd) as u32 {
            self.send_data(una.wrapping_add(i))?;
            self.counters.resent_frames += 1;
        }
        Ok(())
    }

    fn send_ack(&mut self) -> io::Result<()> {
        let h = Header {
            kind: Kind::Ack,
            payload_bytes: 0,
            dst: self.p.peer_id,
            seq: 0,
            ack: self.rcv_next,
        };
        self.link.send_frame(&h.encode(), &[])?;
        self.ack_sent = self.rcv_next;
        self.ack_deadline = None;
        self.counters.ack_frames += 1;
        Ok(())
    }
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
