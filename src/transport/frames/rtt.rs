//! The resend timeout from the measured round trip, as TCP computes its
//! RTO (RFC 6298): a smoothed round trip `srtt` and its mean deviation
//! `rttvar` from one timed frame at a time, RTO = srtt + 4 rttvar, never
//! below [`RTO_MIN`], doubled on each expiry up to [`RTO_MAX`]. A frame
//! sent again is never timed (Karn: its acknowledgement may answer either
//! copy).
//!
//! Why (issue 34): a fixed 5 ms first timeout against a 50 us round trip
//! made every tail loss cost a hundred round trips.

use std::time::{Duration, Instant};

/// The timeout before any round trip was measured (RFC 6298 says 1 s for
/// the Internet; a frame link is one segment, so far less).
pub const RTO_START: Duration = Duration::from_millis(5);
/// The timeout never goes below this: a peer descheduled for a moment on
/// a busy machine must not look like a loss every time.
pub const RTO_MIN: Duration = Duration::from_millis(1);
/// Longest timeout after repeated expiries.
pub const RTO_MAX: Duration = Duration::from_millis(200);

/// Round-trip estimate and resend timeout of one channel.
#[derive(Debug, Clone, Copy)]
pub struct Rtt {
    srtt_ns: Option<u64>,
    rttvar_ns: u64,
    rto: Duration,
    /// The frame being timed and when it was sent.
    timed: Option<(u32, Instant)>,
}

impl Default for Rtt {
    fn default() -> Self {
        Rtt::new()
    }
}

impl Rtt {
    /// No measurement yet: the timeout is [`RTO_START`].
    pub fn new() -> Rtt {
        Rtt {
            srtt_ns: None,
            rttvar_ns: 0,
            rto: RTO_START,
            timed: None,
        }
    }

    /// The resend timeout now.
    pub fn rto(&self) -> Duration {
        self.rto
    }

    /// The smoothed round trip, once measured.
    pub fn srtt(&self) -> Option<Duration> {
        self.srtt_ns.map(Duration::from_nanos)
    }

    /// Whether a frame is being timed (the sender then reads no clock).
    pub fn timing(&self) -> bool {
        self.timed.is_some()
    }

    /// Frame `seq` was sent for the first time at `now`: time it.
    pub fn start(&mut self, seq: u32, now: Instant) {
        self.timed = Some((seq, now));
    }

    /// A frame was sent again: the one timed may be answered by either
    /// copy, so it is not timed.
    pub fn forget(&mut self) {
        self.timed = None;
    }

    /// The peer acknowledged everything before `ack`: a sample when that
    /// covers the timed frame. `now` is read only then (by the caller's
    /// closure), so most acknowledgements read no clock.
    pub fn acknowledged(&mut self, ack: u32, now: impl FnOnce() -> Instant) {
        let Some((seq, sent)) = self.timed else {
            return;
        };
        if !super::header::after(ack, seq) {
            return;
        }
        self.timed = None;
        let r = now().saturating_duration_since(sent).as_nanos() as u64;
        self.sample(r);
    }

    /// Take one round-trip sample of `r_ns` (RFC 6298 section 2).
    pub fn sample(&mut self, r_ns: u64) {
        match self.srtt_ns {
            None => {
                self.srtt_ns = Some(r_ns);
                self.rttvar_ns = r_ns / 2;
            }
            Some(srtt) => {
                self.rttvar_ns = (3 * self.rttvar_ns + srtt.abs_diff(r_ns)) / 4;
                self.srtt_ns = Some((7 * srtt + r_ns) / 8);
            }
        }
        self.rto = self.computed();
    }

    fn computed(&self) -> Duration {
        let srtt = self.srtt_ns.unwrap_or(0);
        Duration::from_nanos(srtt + 4 * self.rttvar_ns).clamp(RTO_MIN, RTO_MAX)
    }

    /// The timeout expired: back off (doubling, up to [`RTO_MAX`]).
    pub fn expired(&mut self) {
        self.timed = None;
        self.rto = (self.rto * 2).min(RTO_MAX);
    }

    /// New data was acknowledged after expiries: the backed-off timeout
    /// returns to the estimate (RFC 6298 5.7 keeps it until a new sample;
    /// on one segment the estimate is the better guess).
    pub fn progress(&mut self) {
        if self.srtt_ns.is_some() {
            self.rto = self.computed();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_timeout_follows_the_round_trip_with_a_floor_and_backs_off() {
        let mut r = Rtt::new();
        assert_eq!(r.rto(), RTO_START);
        // 50 us round trips: srtt + 4 rttvar is far below the floor.
        for _ in 0..20 {
            r.sample(50_000);
        }
        assert_eq!(r.rto(), RTO_MIN);
        assert_eq!(r.srtt(), Some(Duration::from_micros(50)));
        // A 2 ms first sample: 2 + 4 * 1 = 6 ms.
        let mut r = Rtt::new();
        r.sample(2_000_000);
        assert_eq!(r.rto(), Duration::from_millis(6));
        r.expired();
        assert_eq!(r.rto(), Duration::from_millis(12));
        for _ in 0..10 {
            r.expired();
        }
        assert_eq!(r.rto(), RTO_MAX);
        r.progress();
        assert_eq!(r.rto(), Duration::from_millis(6));
    }

    #[test]
    fn only_an_acknowledgement_past_the_timed_frame_samples() {
        let mut r = Rtt::new();
        let t0 = Instant::now();
        r.start(10, t0);
        r.acknowledged(10, || {
            unreachable!("frame 10 is not acknowledged by ack 10")
        });
        assert!(r.timing());
        r.acknowledged(11, || t0 + Duration::from_millis(3));
        assert!(!r.timing());
        assert_eq!(r.srtt(), Some(Duration::from_millis(3)));
        r.start(11, t0);
        r.forget();
        r.acknowledged(20, || unreachable!("a resent frame is not timed"));
    }
}
