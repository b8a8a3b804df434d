//! Loss recovery of [`Reliable`]: acknowledgements in, and the resends
//! they or the resend timeout call for (selective repeat, RFC 6675's loss
//! rule, one window halving per recovery). Split from the channel's data
//! path only to keep each file short; it works on the same state.

use std::io;
use std::time::Instant;

use super::super::header::{after, Kind};
use super::super::reorder::sacked;
use super::super::FrameLink;
use super::{Reliable, DUP_ACKS_FOR_RESEND, MIN_CWND_FRAMES};

impl<L: FrameLink> Reliable<L> {
    /// A cumulative acknowledgement `ack` and the receiver's bitmap
    /// `map` of frames it holds after it (empty: none, or a peer that
    /// sends none).
    pub(super) fn take_ack(&mut self, ack: u32, kind: Kind, map: &[u8]) -> io::Result<()> {
        let before = self.window.in_flight();
        if self.window.acknowledge(ack) {
            let acked = before - self.window.in_flight();
            self.cwnd = (self.cwnd + acked).min(self.window_capacity());
            self.progress += 1;
            self.dup_acks = 0;
            self.rtt.acknowledged(ack, Instant::now);
            self.rtt.progress();
            self.rto_deadline = None;
            if self.recovery.is_some_and(|point| !after(point, ack)) {
                self.recovery = None;
            }
        } else if kind == Kind::Ack
            && map.is_empty()
            && ack == self.window.una()
            && self.window.in_flight() > 0
        {
            // A peer that reports no held frames: once per loss, the
            // oldest frame alone (the duplicates that follow, one per
            // frame the receiver got past the gap, must not each resend).
            self.dup_acks += 1;
            if self.dup_acks == DUP_ACKS_FOR_RESEND && !self.window.is_resent(ack) {
                self.enter_recovery();
                self.resend(ack)?;
            }
        }
        if !map.is_empty() && self.window.in_flight() > 0 {
            let mut news = false;
            for seq in sacked(ack, map) {
                news |= self.window.sack(seq);
            }
            if news {
                // The receiver is alive and taking frames.
                self.progress += 1;
                self.resend_lost()?;
            }
        }
        Ok(())
    }

    /// Resend every frame the receiver lacks that has
    /// [`DUP_ACKS_FOR_RESEND`] held frames after it (RFC 6675's rule):
    /// once per recovery, and again when that many frames first sent
    /// after its copy are held too, so the copy was lost as well (RACK's
    /// rule, RFC 8985, by send order instead of time). Without the second
    /// rule every lost copy waited for the resend timeout: at 5% loss
    /// about one resend in twenty, 118 timeouts and 15% of a stream
    /// sweep's wall time on a ge lab link.
    fn resend_lost(&mut self) -> io::Result<()> {
        let una = self.window.una();
        let mut held_after = 0;
        let mut below = None;
        let mut seq = self.window.next();
        while seq != una {
            seq = seq.wrapping_sub(1);
            if self.window.is_sacked(seq) {
                held_after += 1;
                if held_after == DUP_ACKS_FOR_RESEND {
                    below = Some(seq);
                    break;
                }
            }
        }
        let Some(below) = below else {
            return Ok(());
        };
        let mut seq = una;
        while seq != below {
            let due = match self.window.resent_before(seq) {
                None => true,
                Some(mark) => !after(mark, below),
            };
            if due && !self.window.is_sacked(seq) {
                self.enter_recovery();
                self.resend(seq)?;
            }
            seq = seq.wrapping_add(1);
        }
        Ok(())
    }

    /// A loss: halve the congestion window, once per recovery. Without
    /// the halving, resending into a shaper's queue shorter than the
    /// window loses the same tail every time (congestion collapse: seen
    /// across a 1 Gbit/s lab link in bidirectional mode).
    fn enter_recovery(&mut self) {
        if self.recovery.is_none() {
            self.recovery = Some(self.window.next());
            self.cwnd = (self.cwnd / 2).max(MIN_CWND_FRAMES);
        }
    }

    /// The resend timeout expired: every frame the receiver does not hold
    /// is due again (the copies resent in the recovery were lost too), as
    /// many as the halved window allows, oldest first.
    pub(super) fn timed_out(&mut self) -> io::Result<()> {
        self.recovery = None;
        self.enter_recovery();
        let una = self.window.una();
        let mut sent = 0;
        for i in 0..self.window.in_flight() as u32 {
            let seq = una.wrapping_add(i);
            self.window.set_resent(seq, false);
            if sent < self.cwnd && !self.window.is_sacked(seq) {
                self.resend(seq)?;
                sent += 1;
            }
        }
        Ok(())
    }

    fn resend(&mut self, seq: u32) -> io::Result<()> {
        self.window.set_resent(seq, true);
        self.rtt.forget();
        self.send_data(seq)?;
        self.counters.resent_frames += 1;
        Ok(())
    }
}
