//! From measured configurations to advice a user can act on: the
//! bandwidth-delay product, the sysctls to raise, whether to set socket
//! buffers, Nagle, the segment size, and the RFC 1323 options.
//!
//! Everything here is a pure function of the runs' summaries and points and
//! of the hosts' sysctls, so it is tested on synthetic results. Advice
//! follows only from differences beyond the noise (see `bands`): a setting
//! that merely measured a little faster is reported in the tables, never
//! recommended.

use serde::{Deserialize, Serialize};

use super::bands::{Comparison, Verdict, BANDS};
use super::plan::Factor;
use super::summary::ConfigRun;
use super::sysctl::{clamps, sysctl_changes, HostSysctls, SysctlChange};
use crate::units::{format_bits_per_s, format_bytes, format_ns};

/// Window without RFC 1323 window scaling: the 16-bit window field.
pub const UNSCALED_WINDOW_BYTES: u64 = 65535;

/// The bandwidth-delay product of the path.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BandwidthDelay {
    /// Highest median throughput of any configuration, bit/s.
    pub peak_bits_per_s: f64,
    /// Configuration that reached it.
    pub peak_config: String,
    /// Size at which it did, bytes.
    pub peak_bytes: Option<u64>,
    /// Least small-message round trip of any configuration, ns (twice the
    /// median one-way time).
    pub round_trip_ns: f64,
    /// Configuration where it was measured.
    pub round_trip_config: String,
    /// Size of that message, bytes.
    pub round_trip_bytes: u64,
    /// `peak_bits_per_s / 8 * round_trip_ns / 1e9`: bytes in flight needed
    /// to keep the path full.
    pub bdp_bytes: f64,
}

/// Bandwidth-delay product in bytes of a path with this bandwidth and round
/// trip: the data that must be in flight (unacknowledged) to fill it.
pub fn bdp_bytes(bits_per_s: f64, round_trip_ns: f64) -> f64 {
    bits_per_s / 8.0 * (round_trip_ns * 1e-9)
}

/// Largest message whose round trip is a small-message round trip: up to
/// here the time is all latency (a 64-byte message is a single segment
/// on any link).
pub const SMALL_MESSAGE_MAX_BYTES: u64 = 64;

/// The bandwidth-delay product from the highest peak of any configuration
/// and the least small-message round trip of any configuration. Buffers,
/// Nagle and the MSS do not change the round trip of a message that fits
/// in one segment, and noise only ever adds time, so the least of them is
/// the best estimate of the path's own round trip. Without a size up to
/// [`SMALL_MESSAGE_MAX_BYTES`], the smallest size measured is used.
pub fn bandwidth_delay(runs: &[ConfigRun]) -> Option<BandwidthDelay> {
    let peak = runs
        .iter()
        .filter_map(|r| r.summary.peak_bits_per_s.map(|p| (r, p)))
        .max_by(|a, b| a.1.total_cmp(&b.1))?;
    let smallest = runs
        .iter()
        .filter_map(|r| r.points.first().map(|p| p.bytes))
        .min()?;
    let limit = smallest.max(SMALL_MESSAGE_MAX_BYTES);
    let (rt_run, rt_point) = runs
        .iter()
        .flat_map(|r| {
            r.points
                .iter()
                .filter(|p| p.bytes <= limit)
                .map(move |p| (r, p))
        })
        .min_by(|a, b| a.1.median_ns.total_cmp(&b.1.median_ns))?;
    // Ping-pong's one-way time is half a round trip.
    let round_trip_ns = 2.0 * rt_point.median_ns;
    Some(BandwidthDelay {
        peak_bits_per_s: peak.1,
        peak_config: peak.0.summary.config.label.clone(),
        peak_bytes: peak.0.summary.peak_bytes,
        round_trip_ns,
        round_trip_config: rt_run.summary.config.label.clone(),
        round_trip_bytes: rt_point.bytes,
        bdp_bytes: bdp_bytes(peak.1, round_trip_ns),
    })
}

/// What a recommendation is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Topic {
    /// A kernel limit to raise.
    Sysctl,
    /// What programs should request as SO_SNDBUF / SO_RCVBUF.
    SocketBuffers,
    /// TCP_NODELAY.
    Nagle,
    /// Segment size (TCP_MAXSEG, MTU).
    Mss,
    /// RFC 1323 window scaling and timestamps.
    Rfc1323,
    /// A halted CPU's wake-up on every message, and its remedies
    /// (`--wake-up`).
    WakeUp,
}

/// One piece of advice.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Recommendation {
    /// What it is about.
    pub topic: Topic,
    /// Host to act on; null when it is advice for programs.
    pub host: Option<String>,
    /// The advice, with the measurement behind it.
    pub advice: String,
    /// Commands that carry it out (as root), if any.
    #[serde(default)]
    pub commands: Vec<String>,
}

/// RFC 1323 options of one host, from its fingerprint.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rfc1323State {
    /// Host name.
    pub host: String,
    /// net.ipv4.tcp_window_scaling.
    pub window_scaling: Option<bool>,
    /// net.ipv4.tcp_timestamps as stored (0 off, 1 on, 2 on without offset).
    pub timestamps: Option<u32>,
    /// net.ipv4.tcp_sack.
    pub sack: Option<bool>,
}

impl Rfc1323State {
    /// The state of `h`.
    pub fn of(h: &HostSysctls) -> Rfc1323State {
        Rfc1323State {
            host: h.host.clone(),
            window_scaling: h.sysctls.window_scaling,
            timestamps: h.sysctls.timestamps,
            sack: h.sysctls.sack,
        }
    }
}

fn pct(change: f64) -> String {
    format!("{:+.0}%", change * 100.0)
}

/// "64 KiB - 1 MiB +20% (5 of 6 sizes)" for each comparison.
fn list(cs: &[&Comparison]) -> String {
    cs.iter()
        .map(|c| {
            let n = match c.verdict {
                Verdict::Worse => c.sizes_worse,
                _ => c.sizes_better,
            };
            format!(
                "{} {} ({n} of {} sizes)",
                c.band,
                pct(c.change),
                c.sizes_compared
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Labels of the runs varying `factor`.
fn labels_of(runs: &[ConfigRun], factor: Factor) -> Vec<(String, &ConfigRun)> {
    runs.iter()
        .filter(|r| r.summary.config.factor == factor)
        .map(|r| (r.summary.config.label.clone(), r))
        .collect()
}

fn with<'a>(cs: &'a [Comparison], label: &str, v: Verdict) -> Vec<&'a Comparison> {
    cs.iter()
        .filter(|c| c.config == label && c.verdict == v)
        .collect()
}

/// Advice on fixed socket buffers.
fn buffer_advice(runs: &[ConfigRun], cs: &[Comparison]) -> Vec<Recommendation> {
    let configs = labels_of(runs, Factor::Buffers);
    if configs.is_empty() {
        return Vec::new();
    }
    let mut out = Vec::new();
    // For each band, the buffer configuration with the largest gain beyond
    // the noise, if any.
    for band in BANDS.iter().map(|b| b.label) {
        let best = configs
            .iter()
            .flat_map(|(l, r)| {
                with(cs, l, Verdict::Better)
                    .into_iter()
                    .map(move |c| (c, *r))
            })
            .filter(|(c, _)| c.band == band)
            .max_by(|a, b| a.0.change.total_cmp(&b.0.change));
        if let Some((c, r)) = best {
            let size = r.summary.config.buffer_bytes.unwrap_or(0);
            out.push(Recommendation {
                topic: Topic::SocketBuffers,
                host: None,
                advice: format!(
                    "For messages of {band}, buffers of {} were {} faster than the kernel \
                     default, beyond the noise ({} of {} sizes): programs sending such messages \
                     should set SO_SNDBUF and SO_RCVBUF to {} bytes on both ends before \
                     connecting or listening (MPI libraries over TCP have a setting for it).",
                    format_bytes(size),
                    pct(c.change),
                    c.sizes_better,
                    c.sizes_compared,
                    size
                ),
                commands: Vec::new(),
            });
        }
    }
    let losers: Vec<String> = configs
        .iter()
        .filter_map(|(l, _)| {
            let w = with(cs, l, Verdict::Worse);
            (!w.is_empty()).then(|| format!("{l}: {}", list(&w)))
        })
        .collect();
    if !losers.is_empty() {
        out.push(Recommendation {
            topic: Topic::SocketBuffers,
            host: None,
            advice: format!(
                "Fixed buffers slower than the kernel default beyond the noise: {}. \
                 Setting SO_SNDBUF or SO_RCVBUF turns Linux's buffer autotuning off for \
                 that socket; avoid these sizes.",
                losers.join("; ")
            ),
            commands: Vec::new(),
        });
    }
    if out.is_empty() {
        out.push(Recommendation {
            topic: Topic::SocketBuffers,
            host: None,
            advice: "No fixed buffer size differed from the kernel default (autotuning) \
                     beyond the noise in any size band: leave SO_SNDBUF and SO_RCVBUF unset."
                .into(),
            commands: Vec::new(),
        });
    }
    out
}

/// Advice on Nagle's algorithm from the `nagle on` configuration.
fn nagle_advice(runs: &[ConfigRun], cs: &[Comparison]) -> Vec<Recommendation> {
    labels_of(runs, Factor::Nagle)
        .into_iter()
        .map(|(l, _)| {
            let worse = with(cs, &l, Verdict::Worse);
            let better = with(cs, &l, Verdict::Better);
            let also = if better.is_empty() {
                String::new()
            } else {
                format!(" (it was faster for {})", list(&better))
            };
            let advice = if !worse.is_empty() {
                format!(
                    "Disable Nagle's algorithm (set TCP_NODELAY) in message-passing programs: \
                     with it on, messages ran slower beyond the noise: {}{also}. Nagle holds \
                     back a message's last partial segment until the previous one is \
                     acknowledged, and the receiver delays that acknowledgement.",
                    list(&worse)
                )
            } else if !better.is_empty() {
                format!(
                    "Nagle's algorithm on was faster beyond the noise for {}: programs sending \
                     such messages in one direction may leave TCP_NODELAY unset; request-response \
                     traffic should still set it.",
                    list(&better)
                )
            } else {
                "Nagle's algorithm on and off measured the same within the noise in every \
                 size band: no change needed (TCP_NODELAY remains the safe choice for \
                 request-response traffic)."
                    .into()
            };
            Recommendation {
                topic: Topic::Nagle,
                host: None,
                advice,
                commands: Vec::new(),
            }
        })
        .collect()
}

/// Advice on the segment size from the `mss` configurations.
fn mss_advice(runs: &[ConfigRun], cs: &[Comparison]) -> Vec<Recommendation> {
    let own = runs
        .iter()
        .find(|r| r.summary.config.factor == Factor::Baseline)
        .and_then(|r| r.summary.client.mss_bytes)
        .map(|m| format!(" ({m} B)"))
        .unwrap_or_default();
    labels_of(runs, Factor::Mss)
        .into_iter()
        .map(|(l, r)| {
            let requested = r.summary.config.mss_bytes.unwrap_or(0);
            // The connection's MSS excludes TCP options (12 bytes of
            // timestamps), so it is what a segment really carries.
            let what = match r.summary.client.mss_bytes {
                Some(m) => format!("Segments of {m} B (TCP_MAXSEG {requested})"),
                None => format!("Segments of TCP_MAXSEG {requested}"),
            };
            let worse = with(cs, &l, Verdict::Worse);
            let better = with(cs, &l, Verdict::Better);
            let advice = if !worse.is_empty() && !better.is_empty() {
                format!(
                    "{what} were faster than the path's own{own} for {} but slower for {}, \
                     beyond the noise: no segment size is best for every message; leave the \
                     MSS to the MTU.",
                    list(&better),
                    list(&worse)
                )
            } else if !worse.is_empty() {
                format!(
                    "{what} were slower than the path's own{own} beyond the noise: {}. Segment \
                     size matters on this path: keep the largest MTU every NIC and switch on \
                     it supports (jumbo frames where possible).",
                    list(&worse)
                )
            } else if !better.is_empty() {
                format!(
                    "{what} were faster than the path's own{own} beyond the noise: {}. Programs \
                     may set TCP_MAXSEG to it; check the NIC's offloads (TSO, GRO) and \
                     interrupt coalescing, which usually explain this.",
                    list(&better)
                )
            } else {
                format!("{what} made no difference beyond the noise: leave the MSS to the MTU.")
            };
            Recommendation {
                topic: Topic::Mss,
                host: None,
                advice,
                commands: Vec::new(),
            }
        })
        .collect()
}

/// Advice on RFC 1323 options for one host.
fn rfc1323_advice(s: &Rfc1323State, bdp: Option<&BandwidthDelay>) -> Option<Recommendation> {
    let mut advice = Vec::new();
    let mut commands = Vec::new();
    if s.window_scaling == Some(false) {
        let cap = bdp
            .map(|b| {
                format!(
                    ", capping TCP at {} on this path's {} round trip",
                    format_bits_per_s(
                        UNSCALED_WINDOW_BYTES as f64 * 8.0 / (b.round_trip_ns * 1e-9)
                    ),
                    format_ns(b.round_trip_ns)
                )
            })
            .unwrap_or_default();
        advice.push(format!(
            "RFC 1323 window scaling is off: no window can exceed 64 KiB{cap}, whatever the \
             buffers. Turn it on."
        ));
        commands.push("sysctl -w net.ipv4.tcp_window_scaling=1".to_string());
    }
    if s.timestamps == Some(0) {
        advice.push(
            "RFC 1323 timestamps are off: TCP loses its per-segment round-trip measurement and \
             its protection against wrapped sequence numbers (PAWS), which a fast link wraps \
             in seconds. Turn them on (they cost 12 bytes per segment)."
                .to_string(),
        );
        commands.push("sysctl -w net.ipv4.tcp_timestamps=1".to_string());
    }
    if s.sack == Some(false) {
        advice.push("Selective acknowledgements (SACK) are off: a lost segment costs a whole window. Turn them on.".to_string());
        commands.push("sysctl -w net.ipv4.tcp_sack=1".to_string());
    }
    (!advice.is_empty()).then(|| Recommendation {
        topic: Topic::Rfc1323,
        host: Some(s.host.clone()),
        advice: advice.join(" "),
        commands,
    })
}

/// A sysctl change as a recommendation.
fn sysctl_advice(c: &SysctlChange) -> Recommendation {
    let now = c
        .current_bytes
        .map(|b| format!(" (now {b})"))
        .unwrap_or_default();
    Recommendation {
        topic: Topic::Sysctl,
        host: Some(c.host.clone()),
        advice: format!(
            "Raise {}{now} to {}: {}.",
            c.name,
            c.target_bytes,
            c.reasons.join("; ")
        ),
        commands: vec![c.command.clone()],
    }
}

/// Every recommendation, most actionable first: kernel limits, buffers,
/// Nagle, segment size, RFC 1323 options.
pub fn recommend(
    runs: &[ConfigRun],
    comparisons: &[Comparison],
    bdp: Option<&BandwidthDelay>,
    hosts: &[HostSysctls],
) -> Vec<Recommendation> {
    let mut out: Vec<Recommendation> =
        sysctl_changes(&clamps(runs), bdp.map(|b| b.bdp_bytes), hosts)
            .iter()
            .map(sysctl_advice)
            .collect();
    out.extend(buffer_advice(runs, comparisons));
    out.extend(nagle_advice(runs, comparisons));
    out.extend(mss_advice(runs, comparisons));
    out.extend(super::wake::wake_advice(runs, comparisons));
    out.extend(
        hosts
            .iter()
            .filter_map(|h| rfc1323_advice(&Rfc1323State::of(h), bdp)),
    );
    out
}

#[cfg(test)]
#[path = "recommend_tests.rs"]
mod tests;
