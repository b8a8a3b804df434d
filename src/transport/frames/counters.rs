//! What the frame protocol had to do, counted on each end and written
//! into every raw and xdp result (`options.transport.frame_counters`), and
//! the warning when recovering from losses took a share of the run.
//!
//! Why (issue 34): sweeps under loss ran many times their budget with only
//! a "noisy" warning; the counters say how many frames were resent and how
//! long the resend timeouts held the exchange up.

use std::time::Duration;

use serde_json::{json, Value};

/// Share of the wall time spent waiting on resend timeouts above which a
/// result warns: the figures then measure the recovery as much as the link.
pub const TIMEOUT_SHARE_WARN: f64 = 0.05;
/// Share of data frames resent above which a result warns.
pub const RESENT_SHARE_WARN: f64 = 0.01;

/// Counters of one end of a channel.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counters {
    /// Data frames sent, first copies and resends.
    pub data_frames: u64,
    /// Data frames sent again.
    pub resent_frames: u64,
    /// Acknowledgement-only frames sent.
    pub ack_frames: u64,
    /// Resend timeouts that expired.
    pub timeouts: u64,
    /// The expired timeouts' lengths added up: time spent waiting for a
    /// resend rather than moving data.
    pub timeout_wait_ns: u64,
    /// Data frames received after a gap and kept (selective repeat).
    pub held_frames: u64,
}

impl Counters {
    /// The counters as the result records them, with the round trip the
    /// protocol measured (`srtt_ns`, null before any) and its resend
    /// timeout at the end (`rto_ns`).
    pub fn to_json(&self, srtt: Option<Duration>, rto: Duration) -> Value {
        json!({
            "data_frames": self.data_frames,
            "resent_frames": self.resent_frames,
            "ack_frames": self.ack_frames,
            "timeouts": self.timeouts,
            "timeout_wait_ns": self.timeout_wait_ns,
            "held_frames": self.held_frames,
            "srtt_ns": srtt.map(|d| d.as_nanos() as u64),
            "rto_ns": rto.as_nanos() as u64,
        })
    }
}

/// The warning for a result whose end recorded `counters` (as
/// [`Counters::to_json`] wrote them) over `wall`: None when losses cost
/// little.
pub fn loss_warning(counters: &Value, wall: Duration) -> Option<String> {
    let get = |k: &str| counters[k].as_u64().unwrap_or(0);
    let (data, resent, timeouts) = (get("data_frames"), get("resent_frames"), get("timeouts"));
    let waited = Duration::from_nanos(get("timeout_wait_ns"));
    let resent_share = resent as f64 / data.max(1) as f64;
    let wait_share = waited.as_secs_f64() / wall.as_secs_f64().max(1e-9);
    if resent_share <= RESENT_SHARE_WARN && wait_share <= TIMEOUT_SHARE_WARN {
        return None;
    }
    Some(format!(
        "frame loss: this end resent {resent} of {data} data frames ({:.1}%) and waited {:.0} ms on {timeouts} resend timeouts ({:.0}% of the sweep's {:.1} s): latencies and rates include the recovery",
        100.0 * resent_share,
        waited.as_secs_f64() * 1e3,
        100.0 * wait_share,
        wall.as_secs_f64()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lossless_run_has_no_warning_and_a_lossy_one_says_what_it_cost() {
        let mut c = Counters {
            data_frames: 1000,
            resent_frames: 5,
            ..Counters::default()
        };
        let v = c.to_json(None, Duration::from_millis(1));
        assert_eq!(v["srtt_ns"], Value::Null);
        assert_eq!(v["rto_ns"], 1_000_000);
        assert_eq!(loss_warning(&v, Duration::from_secs(1)), None);
        c.resent_frames = 50;
        c.timeouts = 3;
        c.timeout_wait_ns = 300_000_000;
        let w = loss_warning(
            &c.to_json(None, Duration::from_millis(1)),
            Duration::from_secs(1),
        )
        .unwrap();
        assert!(w.contains("resent 50 of 1000") && w.contains("5.0%"), "{w}");
        assert!(w.contains("300 ms on 3 resend timeouts (30%"), "{w}");
    }
}
