//! A minimal reliable message protocol over frames, shared by the lean
//! transports (`raw`, and any later frame socket such as AF_XDP).
//!
//! Raw Ethernet has no TCP under it: frames get lost (a full queue, a
//! shaper, a lossy switch), so the transports carry their own small
//! protocol. It is written once, against [`FrameLink`], and never knows
//! which socket moves the frames:
//!
//! * [`header`]: the 16-byte header every frame carries after the link's
//!   own (wulf's EtherType 0x88B5 on Ethernet);
//! * [`window`]: the send window (frames kept until acknowledged) and the
//!   receive stash (in-order data that arrived before the application
//!   asked for it);
//! * [`protocol`]: [`protocol::Reliable`], sequence numbers, cumulative
//!   acknowledgements with a bitmap of the frames held past a gap
//!   ([`reorder`]: selective acknowledgement), resends of only the missing
//!   frames, a resend timeout from the measured round trip ([`rtt`]), in-order
//!   delivery, a dead peer reported after the channel's timeout; it is an
//!   [`super::Endpoint`];
//! * [`handshake`]: how two ends learn each other's identifiers and MTU.
//!
//! Selective repeat rather than go-back-N (issue 34): with go-back-N one
//! loss resent the whole window and the receiver dropped every frame after
//! the gap, so 1% loss cost a lossless link 90% of its rate.

pub mod counters;
pub mod handshake;
pub mod header;
pub mod protocol;
pub mod reorder;
pub mod rtt;
pub mod window;

#[cfg(test)]
mod memlink;
#[cfg(test)]
mod tests;

use std::io;
use std::time::Duration;

use crate::transport::AbortHandle;

/// wulf's EtherType (IEEE 802 "local experimental 1"): frames of this
/// type are wulf's, whatever else shares the link.
pub const ETHERTYPE: u16 = 0x88B5;

/// Something that moves whole frames between two ends, unreliably: a
/// frame sent may be lost, duplicated or (on odd links) reordered, but is
/// never altered (link checksums see to that).
pub trait FrameLink: Send {
    /// Largest frame this link carries, in bytes after the link's own
    /// header (the Ethernet MTU).
    fn mtu_bytes(&self) -> usize;
    /// Send one frame made of `header` followed by `payload`. A frame the
    /// link drops (a full queue) is not an error: the protocol resends.
    fn send_frame(&mut self, header: &[u8], payload: &[u8]) -> io::Result<()>;
    /// Queue one frame to leave with the next [`FrameLink::push_frames`]:
    /// a window of frames in one system call instead of one each (issue
    /// 34: per-frame calls made raw's CPU per byte at 64 KiB 8x tcp's).
    /// The default sends at once.
    fn queue_frame(&mut self, header: &[u8], payload: &[u8]) -> io::Result<()> {
        self.send_frame(header, payload)
    }
    /// Send every frame [`FrameLink::queue_frame`] queued (the protocol
    /// calls it before it waits or returns). The default has none.
    fn push_frames(&mut self) -> io::Result<()> {
        Ok(())
    }
    /// Receive one frame into `buf`: its length, or None when nothing came.
    /// `wait` None: do not wait; Some(d): wait at most `d`.
    fn recv_frame(&mut self, buf: &mut [u8], wait: Option<Duration>) -> io::Result<Option<usize>>;
    /// Address from now on the frames sent to where the last frame
    /// received came from (the handshake's way to learn the peer).
    fn learn_peer(&mut self);
    /// A handle that ends this link's waits from another thread (a server
    /// whose client went away): every later wait fails at once. None (the
    /// default): only the channel's timeout ends a wait.
    fn abort_handle(&self) -> Option<AbortHandle> {
        None
    }
    /// Whether the abort handle was used; checked while busy-polling,
    /// where no wait in the kernel would see it.
    fn aborted(&self) -> bool {
        false
    }
}

/// Timer slack a thread that waits on a frame link asks for, ns: about a
/// scheduler tick (4 ms at HZ=250).
///
/// Why (issue 34): a link's wait ends at the protocol's next deadline,
/// the resend timer about 1 ms ahead, so each wait armed a high-resolution
/// timer earlier than the tick, and the kernel reprogrammed the timer
/// device when the wait began and again when a frame ended it. In a
/// virtual machine each reprogramming is a trap to the hypervisor: a plain
/// C receive ring waiting in `ppoll` with a 1 ms timeout answered in
/// 10.4-10.9 us one way, the same with a 4 ms or longer timeout in 4.8 us
/// (bench/lean_packet_pingpong.c, `LEAN_RING=1 LEAN_PPOLL_MS=1`). With
/// this slack the timer's latest expiry lies past the next tick, so no
/// reprogramming is needed: a frame still ends the wait at once, and a
/// deadline fires at the first tick after it. That would make a lost
/// frame's resend a few milliseconds late, so the slack is taken only by
/// a wait with at most one frame in flight (a ping-pong's, a receiver's);
/// a stream's sender waits with precise timers (on the `ge` lab at 1%
/// loss the slack everywhere doubled the resend timeouts).
pub const WAIT_SLACK_NS: u64 = 4_000_000;

/// The default timer slack of a thread, ns (the kernel's).
const DEFAULT_SLACK_NS: u64 = 50_000;

thread_local!(static COARSE: std::cell::Cell<Option<bool>> = const { std::cell::Cell::new(None) });

/// Whether the calling thread's last [`wait_timers`] asked for coarse
/// timers: a link may then wait with a timeout counted in scheduler ticks
/// (raw's blocking receive, issue 34), which is as late as the slack.
pub fn coarse_timers() -> bool {
    COARSE.with(|now| now.get() == Some(true))
}

/// Give the calling thread [`WAIT_SLACK_NS`] of timer slack (`coarse`)
/// or the default back (PR_SET_TIMERSLACK, only when it changes: a
/// thread-local remembers). It applies to this thread's later timed
/// waits, which on a measuring thread are the links' own.
pub fn wait_timers(coarse: bool) {
    COARSE.with(|now| {
        if now.get() != Some(coarse) {
            let ns = if coarse {
                WAIT_SLACK_NS
            } else {
                DEFAULT_SLACK_NS
            };
            // SAFETY: prctl with integer arguments; failure only leaves
            // the slack as it was.
            unsafe {
                libc::prctl(
                    libc::PR_SET_TIMERSLACK,
                    ns as libc::c_ulong,
                    0 as libc::c_ulong,
                    0 as libc::c_ulong,
                    0 as libc::c_ulong,
                );
            }
            now.set(Some(coarse));
        }
    });
}

/// The error a link's wait returns once its abort handle was used.
pub fn aborted_error() -> io::Error {
    io::Error::new(
        io::ErrorKind::ConnectionAborted,
        "the frame channel was ended from outside (the client went away)",
    )
}
