//! Which socket-buffer sysctls to raise, and to what.
//!
//! Two reasons to raise one, both from the method (../shared/spec/method.md):
//!
//! * **A request was clamped.** Linux doubles a requested SO_SNDBUF /
//!   SO_RCVBUF (half is for its bookkeeping) and silently clamps the request
//!   to net.core.wmem_max / rmem_max, so a grant below twice the request
//!   means the limit is below the request. Raising the limit to the request
//!   lets programs (and the next `wulf tune tcp`) get the size they ask for.
//! * **The bandwidth-delay product exceeds the buffers.** A window smaller
//!   than bandwidth x round trip caps throughput at window / round trip.
//!   Since the kernel counts its bookkeeping against the buffer, a buffer
//!   holds about half its size in data: autotuning needs a maximum
//!   (net.ipv4.tcp_rmem / tcp_wmem, third field) of at least 2 x BDP, and a
//!   program that requests the BDP itself (which Linux doubles) needs
//!   net.core.rmem_max / wmem_max of at least the BDP.
//!
//! Targets are rounded up to a power of two, and every limit is checked
//! on every host involved (the peer's sysctls come from its fingerprint).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::summary::{ConfigRun, EndSettings};
use crate::sys::TcpSysctls;
use crate::units::format_bytes;

/// Linux's defaults for tcp_rmem and tcp_wmem, used to write a complete
/// triple when the current one could not be read.
const DEFAULT_TCP_RMEM: [u64; 3] = [4096, 131072, 6291456];
const DEFAULT_TCP_WMEM: [u64; 3] = [4096, 16384, 4194304];

/// The TCP sysctls of one host taking part.
#[derive(Debug, Clone, PartialEq)]
pub struct HostSysctls {
    /// Host name.
    pub host: String,
    /// Its sysctls (from its fingerprint).
    pub sysctls: TcpSysctls,
}

/// A buffer request the kernel granted less than twice of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Clamp {
    /// Host whose kernel clamped it.
    pub host: String,
    /// `SO_SNDBUF` or `SO_RCVBUF`.
    pub option: &'static str,
    /// The sysctl that clamps it, e.g. `net.core.rmem_max`.
    pub sysctl: &'static str,
    /// Bytes requested.
    pub requested_bytes: u64,
    /// Bytes granted.
    pub granted_bytes: u64,
}

/// Whether a grant shows a clamp: Linux grants exactly twice a request
/// that is within the limit.
pub fn is_clamped(requested_bytes: u64, granted_bytes: u64) -> bool {
    granted_bytes < requested_bytes.saturating_mul(2)
}

/// Every clamped request on either end of every run (duplicates included).
pub fn clamps(runs: &[ConfigRun]) -> Vec<Clamp> {
    let mut out = Vec::new();
    for r in runs {
        for end in [&r.summary.client, &r.summary.server] {
            out.extend(end_clamps(end));
        }
    }
    out
}

fn end_clamps(e: &EndSettings) -> Vec<Clamp> {
    let mut out = Vec::new();
    let sides = [
        (
            "SO_SNDBUF",
            "net.core.wmem_max",
            e.sndbuf_requested_bytes,
            e.sndbuf_granted_bytes,
        ),
        (
            "SO_RCVBUF",
            "net.core.rmem_max",
            e.rcvbuf_requested_bytes,
            e.rcvbuf_granted_bytes,
        ),
    ];
    for (option, sysctl, req, granted) in sides {
        if let (Some(req), Some(granted)) = (req, granted) {
            if is_clamped(req, granted) {
                out.push(Clamp {
                    host: e.host.clone(),
                    option,
                    sysctl,
                    requested_bytes: req,
                    granted_bytes: granted,
                });
            }
        }
    }
    out
}

/// A sysctl to raise on one host.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SysctlChange {
    /// Host to change it on.
    pub host: String,
    /// Name, e.g. `net.core.rmem_max` or `net.ipv4.tcp_rmem`.
    pub name: String,
    /// Current value (the maximum, for the triples), if known.
    pub current_bytes: Option<u64>,
    /// Value to raise it to (the maximum, for the triples).
    pub target_bytes: u64,
    /// Why, one sentence per reason.
    pub reasons: Vec<String>,
    /// The command that does it (as root).
    pub command: String,
}

/// Round up to a power of two (sysctl values people recognise).
pub fn round_up_pow2(bytes: f64) -> u64 {
    (bytes.max(1.0).ceil() as u64).next_power_of_two()
}

/// Accumulates wanted changes, keeping the largest target per host and
/// sysctl and every reason.
#[derive(Default)]
struct Wanted {
    by_key: BTreeMap<(String, String), (u64, Vec<String>)>,
}

impl Wanted {
    fn want(&mut self, host: &str, name: &str, target: u64, reason: String) {
        let e = self
            .by_key
            .entry((host.to_string(), name.to_string()))
            .or_insert((0, Vec::new()));
        e.0 = e.0.max(target);
        if !e.1.contains(&reason) {
            e.1.push(reason);
        }
    }
}

/// The current value of `name` on a host: the limit for the core sysctls,
/// the maximum (third field) for the triples.
fn current(s: &TcpSysctls, name: &str) -> Option<u64> {
    match name {
        "net.core.rmem_max" => s.core_rmem_max_bytes,
        "net.core.wmem_max" => s.core_wmem_max_bytes,
        "net.ipv4.tcp_rmem" => s.tcp_rmem_bytes.map(|t| t[2]),
        "net.ipv4.tcp_wmem" => s.tcp_wmem_bytes.map(|t| t[2]),
        _ => None,
    }
}

/// The command setting `name` to `target`, keeping a triple's minimum and
/// default as they are.
fn command(s: &TcpSysctls, name: &str, target: u64) -> String {
    let triple = match name {
        "net.ipv4.tcp_rmem" => Some(s.tcp_rmem_bytes.unwrap_or(DEFAULT_TCP_RMEM)),
        "net.ipv4.tcp_wmem" => Some(s.tcp_wmem_bytes.unwrap_or(DEFAULT_TCP_WMEM)),
        _ => None,
    };
    match triple {
        Some([min, def, _]) => format!("sysctl -w {name}=\"{min} {def} {target}\""),
        None => format!("sysctl -w {name}={target}"),
    }
}

/// The sysctl changes the clamps and the bandwidth-delay product call for
/// on `hosts` (a host missing from `hosts` is treated as all unknown).
pub fn sysctl_changes(
    clamps: &[Clamp],
    bdp_bytes: Option<f64>,
    hosts: &[HostSysctls],
) -> Vec<SysctlChange> {
    let mut w = Wanted::default();
    for c in clamps {
        w.want(
            &c.host,
            c.sysctl,
            c.requested_bytes,
            format!(
                "a {} request of {} was granted {} (an unclamped request is granted twice its size)",
                c.option,
                format_bytes(c.requested_bytes),
                format_bytes(c.granted_bytes)
            ),
        );
    }
    if let Some(bdp) = bdp_bytes.filter(|b| *b > 0.0) {
        let window = round_up_pow2(2.0 * bdp);
        let request = round_up_pow2(bdp);
        for h in hosts {
            let s = &h.sysctls;
            let checks = [
                ("net.ipv4.tcp_rmem", window, "autotuned receive buffers"),
                ("net.ipv4.tcp_wmem", window, "autotuned send buffers"),
                ("net.core.rmem_max", request, "programs that set SO_RCVBUF"),
                ("net.core.wmem_max", request, "programs that set SO_SNDBUF"),
            ];
            for (name, target, who) in checks {
                if current(s, name).is_some_and(|c| c < target) {
                    w.want(
                        &h.host,
                        name,
                        target,
                        format!(
                            "the bandwidth-delay product is {}: {who} cannot keep the path full below {}",
                            format_bytes(bdp.round() as u64),
                            format_bytes(target)
                        ),
                    );
                }
            }
        }
    }
    let unknown = TcpSysctls::default();
    w.by_key
        .into_iter()
        .filter_map(|((host, name), (target, reasons))| {
            let s = hosts
                .iter()
                .find(|h| h.host == host)
                .map_or(&unknown, |h| &h.sysctls);
            let cur = current(s, &name);
            // Already high enough (raised since the run): nothing to do.
            if cur.is_some_and(|c| c >= target) {
                return None;
            }
            Some(SysctlChange {
                command: command(s, &name, target),
                host,
                name,
                current_bytes: cur,
                target_bytes: target,
                reasons,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host(rmem_max: u64, tcp_rmem_max: u64) -> HostSysctls {
        HostSysctls {
            host: "a".into(),
            sysctls: TcpSysctls {
                core_rmem_max_bytes: Some(rmem_max),
                core_wmem_max_bytes: Some(rmem_max),
                tcp_rmem_bytes: Some([4096, 131072, tcp_rmem_max]),
                tcp_wmem_bytes: Some([4096, 16384, tcp_rmem_max]),
                ..TcpSysctls::default()
            },
        }
    }

    #[test]
    fn clamp_is_a_grant_below_twice_the_request() {
        assert!(!is_clamped(65536, 131072));
        assert!(is_clamped(4 << 20, 425984));
        assert!(is_clamped(262144, 262144));
    }

    #[test]
    fn clamped_request_raises_the_core_limit_to_the_request() {
        let c = Clamp {
            host: "a".into(),
            option: "SO_RCVBUF",
            sysctl: "net.core.rmem_max",
            requested_bytes: 4 << 20,
            granted_bytes: 425984,
        };
        // 212992 is the usual default rmem_max: 2 x 212992 = 425984 granted.
        let changes = sysctl_changes(&[c.clone(), c], None, &[host(212992, 6291456)]);
        assert_eq!(changes.len(), 1);
        let ch = &changes[0];
        assert_eq!(ch.name, "net.core.rmem_max");
        assert_eq!(ch.current_bytes, Some(212992));
        assert_eq!(ch.target_bytes, 4194304);
        assert_eq!(ch.command, "sysctl -w net.core.rmem_max=4194304");
        assert_eq!(ch.reasons.len(), 1, "duplicate reasons are merged");
        assert!(ch.reasons[0].contains("4 MiB"), "{}", ch.reasons[0]);
    }

    #[test]
    fn bdp_above_the_buffers_raises_the_autotuning_maximum() {
        // 10 Gbit/s x 100 us round trip = 1.25e9 B/s x 1e-4 s = 125000 B.
        // Autotuning needs 2 x 125000 = 250000 -> 262144; a program asking
        // for the BDP needs rmem_max >= 125000 -> 131072.
        let changes = sysctl_changes(&[], Some(125_000.0), &[host(65536, 131072)]);
        let find = |n: &str| changes.iter().find(|c| c.name == n).unwrap();
        assert_eq!(find("net.ipv4.tcp_rmem").target_bytes, 262144);
        assert_eq!(
            find("net.ipv4.tcp_rmem").command,
            "sysctl -w net.ipv4.tcp_rmem=\"4096 131072 262144\""
        );
        assert_eq!(
            find("net.ipv4.tcp_wmem").command,
            "sysctl -w net.ipv4.tcp_wmem=\"4096 16384 262144\""
        );
        assert_eq!(find("net.core.rmem_max").target_bytes, 131072);
        assert_eq!(find("net.core.wmem_max").target_bytes, 131072);
        // Ample buffers: nothing to change.
        assert!(sysctl_changes(&[], Some(125_000.0), &[host(4 << 20, 6 << 20)]).is_empty());
        // Unknown sysctls: no advice from guesses.
        let unknown = HostSysctls {
            host: "a".into(),
            sysctls: TcpSysctls::default(),
        };
        assert!(sysctl_changes(&[], Some(125_000.0), &[unknown]).is_empty());
    }

    #[test]
    fn the_larger_target_wins_and_reasons_accumulate() {
        let c = Clamp {
            host: "a".into(),
            option: "SO_RCVBUF",
            sysctl: "net.core.rmem_max",
            requested_bytes: 1 << 20,
            granted_bytes: 131072,
        };
        let changes = sysctl_changes(&[c], Some(3_000_000.0), &[host(65536, 8 << 20)]);
        let core = changes
            .iter()
            .find(|c| c.name == "net.core.rmem_max")
            .unwrap();
        assert_eq!(core.target_bytes, 4 << 20);
        assert_eq!(core.reasons.len(), 2);
    }

    #[test]
    fn powers_of_two() {
        assert_eq!(round_up_pow2(62_500.0), 65536);
        assert_eq!(round_up_pow2(65_536.0), 65536);
        assert_eq!(round_up_pow2(0.0), 1);
    }
}
