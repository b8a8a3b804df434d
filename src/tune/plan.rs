//! Which configurations `wulf tune tcp` measures, and how the time budget is
//! shared between them.
//!
//! The design is one factor at a time from a baseline: the baseline is what
//! `wulf sweep tcp` does by default (kernel buffers with autotuning,
//! TCP_NODELAY set, the MSS the path gives); every other configuration
//! changes exactly one thing from it. A full factorial design (7 buffer sizes
//! x 2 Nagle settings x 3 MSS values = 42 sweeps) would leave each sweep
//! about a second of a one-minute budget, too little for intervals narrow
//! enough to tell settings apart; one factor at a time needs 10 sweeps
//! (plus the baseline again at the end, to bound drift) and still answers
//! the questions a user asks (which buffer, Nagle or not, which segment
//! size).

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::result::WaitMode;
use crate::transport::ChannelOptions;
use crate::units::format_bytes;

/// Fixed socket buffer sizes tried (seeds 000 and 002 used 64 KB to 512 KB
/// and recommended 256 KB; 1 MiB and 4 MiB cover today's faster links).
pub const BUFFER_SIZES_BYTES: [u64; 6] =
    [64 << 10, 128 << 10, 256 << 10, 512 << 10, 1 << 20, 4 << 20];

/// MTUs whose MSS is tried when it is below the path's own: standard
/// Ethernet and the usual jumbo frame (Farrell and Ong 2003 tried 1500 to 9000).
pub const STANDARD_MTUS_BYTES: [u64; 2] = [1500, 9000];

/// IPv4 plus TCP header bytes without options.
const HEADERS_V4_BYTES: u64 = 40;
/// IPv6 plus TCP header bytes without options.
const HEADERS_V6_BYTES: u64 = 60;

/// Which factor a configuration varies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Factor {
    /// The baseline every other configuration is compared with.
    Baseline,
    /// A fixed SO_SNDBUF and SO_RCVBUF on both ends.
    Buffers,
    /// Nagle's algorithm left on (TCP_NODELAY not set).
    Nagle,
    /// A requested maximum segment size (TCP_MAXSEG).
    Mss,
    /// An offload or interrupt-coalescing setting of the interface
    /// (`--offloads`, see `tune::offload`).
    Offload,
    /// A remedy against a halted CPU's wake-up on every message
    /// (`--wake-up`, see `tune::wake`).
    WakeUp,
}

/// One configuration of the data channel.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TuneConfig {
    /// Short name, e.g. `default`, `buffers 256 KiB`, `nagle on`, `mss 1460`.
    pub label: String,
    /// The factor this configuration changes from the baseline.
    pub factor: Factor,
    /// SO_SNDBUF and SO_RCVBUF requested on both ends, bytes; null: the
    /// kernel's default with autotuning.
    pub buffer_bytes: Option<u64>,
    /// Whether TCP_NODELAY is set (Nagle's algorithm off).
    pub nodelay: bool,
    /// TCP_MAXSEG requested on both ends, bytes; null: from the path MTU.
    pub mss_bytes: Option<u64>,
    /// The interface setting changed (`--offloads`); absent: none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offload: Option<super::offload::OffloadChange>,
    /// The wake-up remedy applied (`--wake-up`, tune schema 3); absent:
    /// none, the ends' receives block.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wake: Option<super::wake::WakeRemedy>,
}

impl TuneConfig {
    /// The baseline: kernel buffers, TCP_NODELAY, the path's MSS.
    pub fn baseline() -> TuneConfig {
        TuneConfig {
            label: "default".into(),
            factor: Factor::Baseline,
            buffer_bytes: None,
            nodelay: true,
            mss_bytes: None,
            offload: None,
            wake: None,
        }
    }

    /// The baseline again, measured last to bound the machine's drift
    /// over the session (see `tune::baseline`).
    pub fn baseline_repeat() -> TuneConfig {
        TuneConfig {
            label: "default (repeat)".into(),
            ..TuneConfig::baseline()
        }
    }

    /// `base` with this configuration's buffers, Nagle and MSS applied,
    /// and its ends spinning for the `wake: spin` remedy (the others are
    /// the machine's settings, made by the command).
    pub fn apply(&self, base: &ChannelOptions) -> ChannelOptions {
        let spin = self.wake == Some(super::wake::WakeRemedy::Spin);
        ChannelOptions {
            sndbuf_bytes: self.buffer_bytes,
            rcvbuf_bytes: self.buffer_bytes,
            nodelay: self.nodelay,
            mss_bytes: self.mss_bytes,
            busy_poll: base.busy_poll || spin,
            wait: if spin { WaitMode::Spin } else { base.wait },
            ..base.clone()
        }
    }

    /// File name of this configuration's result, e.g.
    /// `tcp-pingpong-buffers-256-KiB.json`.
    pub fn file_name(&self) -> String {
        let stem: Vec<String> = self
            .label
            .split(|c: char| !c.is_ascii_alphanumeric())
            .filter(|w| !w.is_empty())
            .map(str::to_string)
            .collect();
        format!("tcp-pingpong-{}.json", stem.join("-"))
    }
}

/// The MSS values worth trying on a path whose MTU is `path_mtu_bytes`:
/// those of the standard MTUs below it. TCP_MAXSEG can only lower the MSS
/// the path allows, so on a 1500-byte path there is nothing to try; with
/// the MTU unknown, every standard value is tried (the grant is recorded).
pub fn mss_candidates(path_mtu_bytes: Option<u64>, ipv6: bool) -> Vec<u64> {
    let headers = if ipv6 {
        HEADERS_V6_BYTES
    } else {
        HEADERS_V4_BYTES
    };
    STANDARD_MTUS_BYTES
        .iter()
        .filter(|&&mtu| path_mtu_bytes.is_none_or(|path| mtu < path))
        .map(|mtu| mtu - headers)
        .collect()
}

/// Every configuration: the baseline first (the others are compared with
/// it, so it must be measured even when the budget runs short), one factor
/// changed at a time (`offloads` last but one, see `tune::offload`), and
/// the baseline again last.
pub fn plan(mss_values_bytes: &[u64], offloads: &[TuneConfig]) -> Vec<TuneConfig> {
    let mut out = vec![TuneConfig::baseline()];
    for &b in &BUFFER_SIZES_BYTES {
        out.push(TuneConfig {
            label: format!("buffers {}", format_bytes(b)),
            factor: Factor::Buffers,
            buffer_bytes: Some(b),
            ..TuneConfig::baseline()
        });
    }
    out.push(TuneConfig {
        label: "nagle on".into(),
        factor: Factor::Nagle,
        nodelay: false,
        ..TuneConfig::baseline()
    });
    for &m in mss_values_bytes {
        out.push(TuneConfig {
            label: format!("mss {m}"),
            factor: Factor::Mss,
            mss_bytes: Some(m),
            ..TuneConfig::baseline()
        });
    }
    out.extend_from_slice(offloads);
    out.push(TuneConfig::baseline_repeat());
    out
}

/// Budget of the next configuration: what is left of `total` after
/// `elapsed`, shared equally by the `remaining` configurations (this one
/// included). Start-up costs outside each sweep's own budget (starting the
/// peer, the handshake) are thereby taken from the later configurations
/// rather than overrunning the total. Never less than `floor`, so a late
/// configuration still gets a few trials per size.
pub fn next_budget(
    total: Duration,
    elapsed: Duration,
    remaining: usize,
    floor: Duration,
) -> Duration {
    let left = total.saturating_sub(elapsed);
    (left / remaining.max(1) as u32).max(floor)
}

/// What the next configuration of a session gets (issue 35 item 5: a
/// 4 s budget over the default sizes took 127 s, each sweep costing far
/// more than its budget: the connection, the warm-up and the fewest
/// trials of every size).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    /// Measure it within this budget.
    Measure(Duration),
    /// Leave it out: what is left of the budget is kept for the baseline's
    /// repeat, which the comparisons need.
    Skip,
}

/// The next configuration's share: what is left of `total` after
/// `elapsed`, shared by the `remaining` configurations (this one
/// included), less `overhead` (what a configuration was seen to cost
/// beyond its budget, once known: see [`overhead`]), never below `floor`.
/// The first and the last (the baseline and its repeat) are always
/// measured; another is skipped when measuring it would leave too little
/// for the repeat, so the session ends near its budget, or, when the
/// budget is shorter than three configurations' least cost, after the
/// baseline, one configuration (which tells that cost) and the repeat.
pub fn next_config(
    total: Duration,
    elapsed: Duration,
    (index, count): (usize, usize),
    overhead: Option<Duration>,
    floor: Duration,
) -> Next {
    let remaining = count.saturating_sub(index).max(1);
    let left = total.saturating_sub(elapsed);
    let always = index == 0 || index + 1 >= count;
    let Some(overhead) = overhead else {
        return Next::Measure(next_budget(total, elapsed, remaining, floor));
    };
    if !always && left < (floor + overhead) * 2 {
        return Next::Skip;
    }
    Next::Measure(
        next_budget(total, elapsed, remaining, floor)
            .saturating_sub(overhead)
            .max(floor),
    )
}

/// What a configuration costs beyond its budget, from the `extra` costs
/// seen so far (took less given, in order): the mean of all but the
/// first, which carries the session's one-off start-up (the machine's
/// limits, measured once); unknown until a second is seen.
pub fn overhead(extra: &[Duration]) -> Option<Duration> {
    let seen = extra.get(1..).filter(|s| !s.is_empty())?;
    seen.iter().sum::<Duration>().checked_div(seen.len() as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plan_is_baseline_first_and_one_factor_at_a_time() {
        let p = plan(&[1460], &[]);
        assert_eq!(p.len(), 1 + 6 + 1 + 1 + 1);
        assert_eq!(p[0], TuneConfig::baseline());
        assert_eq!(p[p.len() - 1], TuneConfig::baseline_repeat());
        let base = TuneConfig::baseline();
        for c in &p[1..p.len() - 1] {
            let changed = [
                c.buffer_bytes != base.buffer_bytes,
                c.nodelay != base.nodelay,
                c.mss_bytes != base.mss_bytes,
            ];
            assert_eq!(changed.iter().filter(|&&x| x).count(), 1, "{c:?}");
        }
        let names: Vec<String> = p.iter().map(TuneConfig::file_name).collect();
        assert!(
            names.contains(&"tcp-pingpong-buffers-256-KiB.json".to_string()),
            "{names:?}"
        );
        let mut unique = names.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), names.len());
    }

    #[test]
    fn mss_candidates_follow_the_path_mtu() {
        assert_eq!(mss_candidates(Some(65536), false), vec![1460, 8960]);
        assert_eq!(mss_candidates(Some(9000), false), vec![1460]);
        assert_eq!(mss_candidates(Some(1500), false), Vec::<u64>::new());
        assert_eq!(mss_candidates(None, true), vec![1440, 8940]);
    }

    /// Play a session of `count` configurations, each costing `extra`
    /// beyond its budget (the first `start_up` more); its wall time and
    /// the configurations measured.
    fn play(
        total: Duration,
        count: usize,
        extra: Duration,
        start_up: Duration,
    ) -> (Duration, Vec<usize>) {
        let floor = Duration::from_millis(200);
        let (mut t, mut seen, mut measured) = (Duration::ZERO, Vec::new(), Vec::new());
        for i in 0..count {
            if let Next::Measure(b) = next_config(total, t, (i, count), overhead(&seen), floor) {
                let took = b + extra + if i == 0 { start_up } else { Duration::ZERO };
                seen.push(took - b);
                t += took;
                measured.push(i);
            }
        }
        (t, measured)
    }

    #[test]
    fn a_session_keeps_its_budget_by_leaving_configurations_out() {
        let s = Duration::from_secs;
        let ms = Duration::from_millis;
        // 8 s over 11 configurations costing 0.5 s each beyond their
        // budget, the first 3 s more (the machine's limits).
        let (t, measured) = play(s(8), 11, ms(500), s(3));
        assert!(t <= s(8).mul_f64(1.2) + s(3), "{t:?}");
        assert_eq!(
            (measured[0], *measured.last().unwrap()),
            (0, 10),
            "baseline and repeat"
        );
        assert!(measured.len() < 11, "{measured:?}");
        // Shorter than three configurations' least cost (the development
        // VM's debug build over the default sizes, 1.5 s each): the
        // baseline, one more and the repeat.
        let (t, measured) = play(s(4), 11, ms(1500), s(3));
        assert_eq!(measured, [0, 1, 10]);
        assert!(t <= (ms(200) + ms(1500)) * 3 + s(4) / 2 + s(3), "{t:?}");
        // With a cheap configuration every one is measured in its share.
        let (t, measured) = play(s(60), 11, ms(300), ms(0));
        assert_eq!(measured.len(), 11);
        assert!(t <= s(60).mul_f64(1.2) && t >= s(50), "{t:?}");
    }

    #[test]
    fn budget_is_shared_and_floored() {
        let s = Duration::from_secs;
        assert_eq!(next_budget(s(60), s(0), 10, s(1)), s(6));
        assert_eq!(next_budget(s(60), s(30), 5, s(1)), s(6));
        assert_eq!(next_budget(s(60), s(70), 2, s(1)), s(1));
    }

    #[test]
    fn apply_sets_both_buffers_and_keeps_the_rest() {
        let base = ChannelOptions {
            sndbuf_bytes: None,
            rcvbuf_bytes: None,
            nodelay: true,
            mss_bytes: None,
            ipv6: true,
            timeout_ms: 1234,
            wait: Default::default(),
            busy_poll: false,
            iface: None,
        };
        let c = &plan(&[], &[])[3];
        let o = c.apply(&base);
        assert_eq!(o.sndbuf_bytes, Some(256 << 10));
        assert_eq!(o.rcvbuf_bytes, Some(256 << 10));
        assert!(o.ipv6 && o.nodelay);
        assert_eq!(o.timeout_ms, 1234);
    }
}
