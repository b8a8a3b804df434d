//! The kernel's counters that name a lossy path: TCP segments sent and
//! retransmitted (/proc/net/snmp), the retransmissions the receivers
//! reported as duplicates (D-SACK, /proc/net/netstat), and the interfaces'
//! drops and errors (/sys/class/net/*/statistics).
//!
//! A retransmission is not always a loss: on a busy host a preempted
//! receiver ACKs late, the sender's tail-loss probe or RTO fires, and the
//! receiver gets the segment twice and says so with a D-SACK. Those are
//! counted apart so that a loaded machine is not read as a lossy link. Both are per network namespace, so on a
//! lab node they count that node's traffic alone; a matrix reads them
//! before and after each cell and keeps the difference.

/// Counters of this network namespace at one moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct NetCounters {
    /// TCP segments sent (`OutSegs`).
    pub out_segs: u64,
    /// TCP segments retransmitted (`RetransSegs`).
    pub retrans_segs: u64,
    /// Segments the receivers reported as received twice
    /// (`TCPDSACKRecvSegs`, or `TCPDSACKRecv` on kernels before 5.10):
    /// spurious retransmissions, not losses.
    pub dsack_segs: u64,
    /// Drops and errors of every interface but loopback, both ways.
    pub interface_drops: u64,
}

impl NetCounters {
    /// Read them now; None when /proc/net/snmp cannot be read (the
    /// interfaces' counters alone are not worth a figure).
    pub fn read() -> Option<NetCounters> {
        let snmp = std::fs::read_to_string("/proc/net/snmp").ok()?;
        let (out_segs, retrans_segs) = parse_snmp_tcp(&snmp)?;
        let netstat = std::fs::read_to_string("/proc/net/netstat").unwrap_or_default();
        Some(NetCounters {
            out_segs,
            retrans_segs,
            dsack_segs: parse_dsack_segs(&netstat).unwrap_or(0),
            interface_drops: interface_drops(),
        })
    }

    /// What happened between `self` (before) and `after`; a counter that
    /// went back (wrapped, or an interface removed) counts as zero.
    pub fn since(self, after: NetCounters) -> NetCounters {
        NetCounters {
            out_segs: after.out_segs.saturating_sub(self.out_segs),
            retrans_segs: after.retrans_segs.saturating_sub(self.retrans_segs),
            dsack_segs: after.dsack_segs.saturating_sub(self.dsack_segs),
            interface_drops: after.interface_drops.saturating_sub(self.interface_drops),
        }
    }
}

/// `OutSegs` and `RetransSegs` of the `Tcp:` lines (a header line of
/// names, then one of values).
pub fn parse_snmp_tcp(text: &str) -> Option<(u64, u64)> {
    let get = |name: &str| counter(text, "Tcp:", name);
    Some((get("OutSegs")?, get("RetransSegs")?))
}

/// The counter `name` of the `prefix` lines of /proc/net/snmp or netstat:
/// the first such line names the counters, the second holds their values.
fn counter(text: &str, prefix: &str, name: &str) -> Option<u64> {
    let mut lines = text.lines().filter(|l| l.starts_with(prefix));
    let names = lines.next()?.split_whitespace();
    let values = lines.next()?.split_whitespace();
    let i = names.clone().position(|n| n == name)?;
    values.clone().nth(i)?.parse().ok()
}

/// The D-SACKed segments of the `TcpExt:` lines: `TCPDSACKRecvSegs`
/// where the kernel counts segments, else `TCPDSACKRecv` (D-SACK blocks,
/// one per spurious retransmission in the common case).
pub fn parse_dsack_segs(text: &str) -> Option<u64> {
    counter(text, "TcpExt:", "TCPDSACKRecvSegs")
        .or_else(|| counter(text, "TcpExt:", "TCPDSACKRecv"))
}

/// Sum of rx/tx drops and errors over every interface but `lo`.
fn interface_drops() -> u64 {
    let Ok(dir) = std::fs::read_dir("/sys/class/net") else {
        return 0;
    };
    let mut sum = 0u64;
    for entry in dir.flatten() {
        if entry.file_name() == "lo" {
            continue;
        }
        for name in ["rx_dropped", "tx_dropped", "rx_errors", "tx_errors"] {
            let path = entry.path().join("statistics").join(name);
            if let Some(v) = std::fs::read_to_string(path)
                .ok()
                .and_then(|s| s.trim().parse::<u64>().ok())
            {
                sum = sum.saturating_add(v);
            }
        }
    }
    sum
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tcp_lines_of_snmp_are_read_by_name() {
        let text = "Ip: Forwarding DefaultTTL\nIp: 1 64\n\
                    Tcp: RtoAlgorithm ActiveOpens OutSegs RetransSegs InErrs\n\
                    Tcp: 1 5 1000 21 0\nUdp: InDatagrams\nUdp: 3\n";
        assert_eq!(parse_snmp_tcp(text), Some((1000, 21)));
        assert_eq!(parse_snmp_tcp("Tcp: OutSegs\n"), None);
        let before = NetCounters {
            out_segs: 10,
            retrans_segs: 5,
            dsack_segs: 1,
            interface_drops: 3,
        };
        let after = NetCounters {
            out_segs: 110,
            retrans_segs: 7,
            dsack_segs: 4,
            interface_drops: 1,
        };
        assert_eq!(
            before.since(after),
            NetCounters {
                out_segs: 100,
                retrans_segs: 2,
                dsack_segs: 3,
                interface_drops: 0
            }
        );
    }

    #[test]
    fn dsacks_are_read_in_segments_where_the_kernel_counts_them() {
        let new = "TcpExt: SyncookiesSent TCPDSACKRecv TCPDSACKRecvSegs\nTcpExt: 0 7 9\n\
                   IpExt: InNoRoutes\nIpExt: 0\n";
        assert_eq!(parse_dsack_segs(new), Some(9));
        let old = "TcpExt: SyncookiesSent TCPDSACKRecv\nTcpExt: 0 7\n";
        assert_eq!(parse_dsack_segs(old), Some(7));
        assert_eq!(parse_dsack_segs("IpExt: X\nIpExt: 1\n"), None);
        // This machine's own file is read.
        let here = std::fs::read_to_string("/proc/net/netstat").unwrap_or_default();
        if here.contains("TCPDSACKRecv") {
            assert!(parse_dsack_segs(&here).is_some());
        }
    }
}
