//! The TCP-related sysctls that decide socket buffer sizes and TCP options,
//! read from /proc/sys.
//!
//! Seeds 000 and 002 show socket buffers and RFC 1323 options changing TCP
//! throughput by up to 2x, so a result must say what they were. Several of
//! these are per network namespace: the values are those of the namespace the
//! probing process runs in.

use serde::{Deserialize, Serialize};

/// TCP and socket-buffer sysctls. Every field is `None` when unreadable.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TcpSysctls {
    /// net.core.rmem_default: receive buffer of a socket that sets none.
    #[serde(default)]
    pub core_rmem_default_bytes: Option<u64>,
    /// net.core.rmem_max: the clamp on SO_RCVBUF requests.
    #[serde(default)]
    pub core_rmem_max_bytes: Option<u64>,
    /// net.core.wmem_default: send buffer of a socket that sets none.
    #[serde(default)]
    pub core_wmem_default_bytes: Option<u64>,
    /// net.core.wmem_max: the clamp on SO_SNDBUF requests.
    #[serde(default)]
    pub core_wmem_max_bytes: Option<u64>,
    /// net.ipv4.tcp_rmem: minimum, default and maximum of TCP receive-buffer
    /// autotuning.
    #[serde(default)]
    pub tcp_rmem_bytes: Option<[u64; 3]>,
    /// net.ipv4.tcp_wmem: minimum, default and maximum of TCP send-buffer
    /// autotuning.
    #[serde(default)]
    pub tcp_wmem_bytes: Option<[u64; 3]>,
    /// net.ipv4.tcp_congestion_control, e.g. "cubic".
    #[serde(default)]
    pub congestion_control: Option<String>,
    /// net.ipv4.tcp_timestamps as the kernel stores it: 0 off, 1 on with a
    /// random per-connection offset, 2 on without. Kept raw so no setting is
    /// lost; see [`TcpSysctls::timestamps_enabled`].
    #[serde(default)]
    pub timestamps: Option<u32>,
    /// net.ipv4.tcp_window_scaling (RFC 1323 window scaling).
    #[serde(default)]
    pub window_scaling: Option<bool>,
    /// net.ipv4.tcp_sack (selective acknowledgements).
    #[serde(default)]
    pub sack: Option<bool>,
}

impl TcpSysctls {
    /// Read the sysctls of the current network namespace.
    pub fn probe() -> TcpSysctls {
        TcpSysctls {
            core_rmem_default_bytes: read_u64("net/core/rmem_default"),
            core_rmem_max_bytes: read_u64("net/core/rmem_max"),
            core_wmem_default_bytes: read_u64("net/core/wmem_default"),
            core_wmem_max_bytes: read_u64("net/core/wmem_max"),
            tcp_rmem_bytes: read("net/ipv4/tcp_rmem").and_then(|s| parse_triple(&s)),
            tcp_wmem_bytes: read("net/ipv4/tcp_wmem").and_then(|s| parse_triple(&s)),
            congestion_control: read("net/ipv4/tcp_congestion_control").filter(|s| !s.is_empty()),
            timestamps: read("net/ipv4/tcp_timestamps").and_then(|s| s.parse().ok()),
            window_scaling: read_u64("net/ipv4/tcp_window_scaling").map(|v| v != 0),
            sack: read_u64("net/ipv4/tcp_sack").map(|v| v != 0),
        }
    }

    /// Whether TCP timestamps are on (any non-zero mode), which costs 12 bytes
    /// of every segment's payload room; `None` when unknown.
    pub fn timestamps_enabled(&self) -> Option<bool> {
        self.timestamps.map(|t| t != 0)
    }

    /// True when nothing at all could be read (no /proc/sys).
    pub fn is_unknown(&self) -> bool {
        *self == TcpSysctls::default()
    }
}

fn read(name: &str) -> Option<String> {
    std::fs::read_to_string(format!("/proc/sys/{name}"))
        .ok()
        .map(|s| s.trim().to_string())
}

fn read_u64(name: &str) -> Option<u64> {
    read(name)?.parse().ok()
}

/// Parse "4096\t131072\t6291456" (tcp_rmem and tcp_wmem format).
fn parse_triple(s: &str) -> Option<[u64; 3]> {
    let mut it = s.split_whitespace().map(|f| f.parse::<u64>().ok());
    let v = [it.next()??, it.next()??, it.next()??];
    it.next().is_none().then_some(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn triples_parse() {
        assert_eq!(
            parse_triple("4096\t131072\t6291456\n"),
            Some([4096, 131072, 6291456])
        );
        assert_eq!(parse_triple("1 2"), None);
        assert_eq!(parse_triple("1 2 3 4"), None);
        assert_eq!(parse_triple("1 x 3"), None);
    }

    #[test]
    fn unknown_is_default() {
        assert!(TcpSysctls::default().is_unknown());
        assert_eq!(TcpSysctls::default().timestamps_enabled(), None);
    }
}
