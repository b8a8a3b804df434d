//! The kernel's counters that name a lossy path: TCP segments sent and
//! retransmitted (/proc/net/snmp) and the interfaces' drops and errors
//! (/sys/class/net/*/statistics). Both are per network namespace, so on a
//! lab node they count that node's traffic alone; a matrix reads them
//! before and after each cell and keeps the difference.

/// Counters of this network namespace at one moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct NetCounters {
    /// TCP segments sent (`OutSegs`).
    pub out_segs: u64,
    /// TCP segments retransmitted (`RetransSegs`).
    pub retrans_segs: u64,
    /// Drops and errors of every interface but loopback, both ways.
    pub interface_drops: u64,
}

impl NetCounters {
    /// Read them now; None when /proc/net/snmp cannot be read (the
    /// interfaces' counters alone are not worth a figure).
    pub fn read() -> Option<NetCounters> {
        let snmp = std::fs::read_to_string("/proc/net/snmp").ok()?;
        let (out_segs, retrans_segs) = parse_snmp_tcp(&snmp)?;
        Some(NetCounters {
            out_segs,
            retrans_segs,
            interface_drops: interface_drops(),
        })
    }

    /// What happened between `self` (before) and `after`; a counter that
    /// went back (wrapped, or an interface removed) counts as zero.
    pub fn since(self, after: NetCounters) -> NetCounters {
        NetCounters {
            out_segs: after.out_segs.saturating_sub(self.out_segs),
            retrans_segs: after.retrans_segs.saturating_sub(self.retrans_segs),
            interface_drops: after.interface_drops.saturating_sub(self.interface_drops),
        }
    }
}

/// `OutSegs` and `RetransSegs` of the `Tcp:` lines (a header line of
/// names, then one of values).
pub fn parse_snmp_tcp(text: &str) -> Option<(u64, u64)> {
    let mut tcp = text.lines().filter(|l| l.starts_with("Tcp:"));
    let names: Vec<&str> = tcp.next()?.split_whitespace().collect();
    let values: Vec<&str> = tcp.next()?.split_whitespace().collect();
    let get = |name: &str| -> Option<u64> {
        let i = names.iter().position(|n| *n == name)?;
        values.get(i)?.parse().ok()
    };
    Some((get("OutSegs")?, get("RetransSegs")?))
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
            interface_drops: 3,
        };
        let after = NetCounters {
            out_segs: 110,
            retrans_segs: 7,
            interface_drops: 1,
        };
        assert_eq!(
            before.since(after),
            NetCounters {
                out_segs: 100,
                retrans_segs: 2,
                interface_drops: 0
            }
        );
    }
}
