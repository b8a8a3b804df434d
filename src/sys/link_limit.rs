//! The theoretical TCP goodput of an Ethernet link: what a perfect TCP
//! stream could carry as application payload, from the link speed and MTU.
//!
//! Pure arithmetic, so results and reports can show a measured peak as a
//! fraction of what the link allows. The header accounting is stated in the
//! result ([`LinkLimit::formula`]) because the right figure depends on what
//! limits the rate:
//!
//! * a real Ethernet wire carries, per frame, the 14-byte Ethernet header, the
//!   IP packet (at most the MTU), the 4-byte frame check sequence, an 8-byte
//!   preamble with start-of-frame delimiter and a 12-byte inter-frame gap;
//! * a shaper on a virtual link (tbf on a veth) counts only what it sees of
//!   each packet: the 14-byte Ethernet header and the IP packet.
//!
//! Of the MTU, the IP header (20 bytes for IPv4, 40 for IPv6), the TCP header
//! (20 bytes) and, when TCP timestamps are on, the 12-byte timestamp option
//! (10 bytes padded to 12) are not payload.

use serde::{Deserialize, Serialize};

/// Ethernet header: destination and source address, EtherType.
pub const ETHERNET_HEADER_BYTES: u32 = 14;
/// Ethernet frame check sequence (CRC-32).
pub const ETHERNET_FCS_BYTES: u32 = 4;
/// Preamble (7 bytes) and start-of-frame delimiter (1 byte).
pub const ETHERNET_PREAMBLE_BYTES: u32 = 8;
/// Minimum inter-frame gap: 96 bit times.
pub const ETHERNET_IFG_BYTES: u32 = 12;
/// IPv4 header without options.
pub const IPV4_HEADER_BYTES: u32 = 20;
/// IPv6 header without extension headers.
pub const IPV6_HEADER_BYTES: u32 = 40;
/// TCP header without options.
pub const TCP_HEADER_BYTES: u32 = 20;
/// TCP timestamp option (RFC 7323): 10 bytes, padded to 12 with two NOPs.
pub const TCP_TIMESTAMP_OPTION_BYTES: u32 = 12;

/// IP version of the TCP connection, which sets the IP header size.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum IpVersion {
    /// IPv4: 20-byte header.
    V4,
    /// IPv6: 40-byte header.
    V6,
}

impl IpVersion {
    /// The IP version of an address.
    pub fn of(addr: std::net::IpAddr) -> IpVersion {
        match addr {
            std::net::IpAddr::V4(_) => IpVersion::V4,
            std::net::IpAddr::V6(_) => IpVersion::V6,
        }
    }

    fn header_bytes(self) -> u32 {
        match self {
            IpVersion::V4 => IPV4_HEADER_BYTES,
            IpVersion::V6 => IPV6_HEADER_BYTES,
        }
    }

    fn name(self) -> &'static str {
        match self {
            IpVersion::V4 => "IPv4",
            IpVersion::V6 => "IPv6",
        }
    }
}

/// Which per-frame overhead limits the rate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Framing {
    /// Real Ethernet: header, FCS, preamble and inter-frame gap all take
    /// wire time.
    Ethernet,
    /// A software shaper on a virtual link: only the Ethernet header and the
    /// IP packet are counted.
    Shaper,
}

/// The TCP goodput limit of one link, with its accounting.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LinkLimit {
    /// Link (or shaper) rate in Mbit/s (10^6 bit/s).
    pub link_speed_mbit_per_s: f64,
    /// Largest IP packet.
    pub mtu_bytes: u32,
    /// IP version assumed.
    pub ip_version: IpVersion,
    /// Whether the 12-byte TCP timestamp option was counted.
    pub tcp_timestamps: bool,
    /// TCP payload in one full-sized segment (the MSS actually carried).
    pub payload_per_frame_bytes: u32,
    /// Bytes of wire time per frame on real Ethernet.
    pub ethernet_bytes_per_frame: u32,
    /// Bytes a shaper counts per frame.
    pub shaped_bytes_per_frame: u32,
    /// Goodput limit on real Ethernet.
    pub goodput_ethernet_mbit_per_s: f64,
    /// Goodput limit behind a shaper that counts header and IP packet only.
    pub goodput_shaped_mbit_per_s: f64,
    /// The computation in words and numbers, for reports.
    pub formula: String,
}

impl LinkLimit {
    /// The goodput limit under the given framing.
    pub fn goodput_mbit_per_s(&self, framing: Framing) -> f64 {
        match framing {
            Framing::Ethernet => self.goodput_ethernet_mbit_per_s,
            Framing::Shaper => self.goodput_shaped_mbit_per_s,
        }
    }

    /// A measured goodput as a fraction of the limit (1.0 = at the limit).
    pub fn fraction_of_limit(&self, measured_mbit_per_s: f64, framing: Framing) -> f64 {
        measured_mbit_per_s / self.goodput_mbit_per_s(framing)
    }
}

/// The theoretical TCP goodput of a link of `link_speed_mbit_per_s` with the
/// given MTU, for full-sized segments and no loss. `None` when the speed is
/// not positive and finite or the MTU leaves no room for payload.
pub fn tcp_goodput_limit(
    link_speed_mbit_per_s: f64,
    mtu_bytes: u32,
    ip_version: IpVersion,
    tcp_timestamps: bool,
) -> Option<LinkLimit> {
    if !(link_speed_mbit_per_s.is_finite() && link_speed_mbit_per_s > 0.0) {
        return None;
    }
    let ts = if tcp_timestamps {
        TCP_TIMESTAMP_OPTION_BYTES
    } else {
        0
    };
    let headers = ip_version.header_bytes() + TCP_HEADER_BYTES + ts;
    let payload = mtu_bytes.checked_sub(headers).filter(|p| *p > 0)?;
    let shaped = ETHERNET_HEADER_BYTES + mtu_bytes;
    let ethernet = shaped + ETHERNET_FCS_BYTES + ETHERNET_PREAMBLE_BYTES + ETHERNET_IFG_BYTES;
    let goodput_ethernet = link_speed_mbit_per_s * payload as f64 / ethernet as f64;
    let goodput_shaped = link_speed_mbit_per_s * payload as f64 / shaped as f64;
    let ts_text = if tcp_timestamps {
        format!(" - {TCP_TIMESTAMP_OPTION_BYTES} timestamps")
    } else {
        String::new()
    };
    let formula = format!(
        "payload per frame = MTU {mtu_bytes} - {ip} {iph} - TCP {TCP_HEADER_BYTES}{ts_text} = {payload} B; \
         Ethernet wire per frame = {ETHERNET_HEADER_BYTES} header + {mtu_bytes} + {ETHERNET_FCS_BYTES} FCS \
         + {ETHERNET_PREAMBLE_BYTES} preamble + {ETHERNET_IFG_BYTES} inter-frame gap = {ethernet} B \
         -> {link_speed_mbit_per_s} Mbit/s x {payload}/{ethernet} = {goodput_ethernet:.2} Mbit/s; \
         shaper counting header + IP packet = {shaped} B \
         -> {link_speed_mbit_per_s} Mbit/s x {payload}/{shaped} = {goodput_shaped:.2} Mbit/s",
        ip = ip_version.name(),
        iph = ip_version.header_bytes(),
    );
    Some(LinkLimit {
        link_speed_mbit_per_s,
        mtu_bytes,
        ip_version,
        tcp_timestamps,
        payload_per_frame_bytes: payload,
        ethernet_bytes_per_frame: ethernet,
        shaped_bytes_per_frame: shaped,
        goodput_ethernet_mbit_per_s: goodput_ethernet,
        goodput_shaped_mbit_per_s: goodput_shaped,
        formula,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 0.005
    }

    #[test]
    fn fast_ethernet_standard_mtu_ipv4_with_timestamps() {
        // Payload 1500 - 20 - 20 - 12 = 1448 B.
        // Ethernet: 14 + 1500 + 4 + 8 + 12 = 1538 B on the wire per frame,
        //   100 * 1448 / 1538 = 94.1482... Mbit/s.
        // Shaper:   14 + 1500 = 1514 B per frame,
        //   100 * 1448 / 1514 = 95.6406... Mbit/s.
        // (The 94.93 sometimes quoted is 100 * 1460 / 1538, i.e. without the
        // timestamp option; see the next test. machine.md measured 95.4 Mbit/s
        // through a 100 Mbit/s tbf, just under the shaper figure.)
        let l = tcp_goodput_limit(100.0, 1500, IpVersion::V4, true).unwrap();
        assert_eq!(l.payload_per_frame_bytes, 1448);
        assert_eq!(l.ethernet_bytes_per_frame, 1538);
        assert_eq!(l.shaped_bytes_per_frame, 1514);
        assert!(close(l.goodput_ethernet_mbit_per_s, 94.15), "{l:?}");
        assert!(close(l.goodput_shaped_mbit_per_s, 95.64), "{l:?}");
        assert!(l.formula.contains("1448") && l.formula.contains("1538"));
        assert!(l.formula.contains("94.15") && l.formula.contains("95.64"));
    }

    #[test]
    fn without_timestamps() {
        // 1500 - 40 = 1460 B; 100 * 1460 / 1538 = 94.928...; 100 * 1460 / 1514
        // = 96.433...
        let l = tcp_goodput_limit(100.0, 1500, IpVersion::V4, false).unwrap();
        assert_eq!(l.payload_per_frame_bytes, 1460);
        assert!(close(l.goodput_ethernet_mbit_per_s, 94.93));
        assert!(close(l.goodput_shaped_mbit_per_s, 96.43));
        assert!(!l.formula.contains("timestamps"));
    }

    #[test]
    fn ipv6_with_timestamps() {
        // 1500 - 40 - 20 - 12 = 1428 B; 100 * 1428 / 1538 = 92.847...;
        // 100 * 1428 / 1514 = 94.319...
        let l = tcp_goodput_limit(100.0, 1500, IpVersion::V6, true).unwrap();
        assert_eq!(l.payload_per_frame_bytes, 1428);
        assert!(close(l.goodput_ethernet_mbit_per_s, 92.85));
        assert!(close(l.goodput_shaped_mbit_per_s, 94.32));
    }

    #[test]
    fn gigabit_jumbo_frames() {
        // 9000 - 52 = 8948 B; 1000 * 8948 / 9038 = 990.04...;
        // 1000 * 8948 / 9014 = 992.67...
        let l = tcp_goodput_limit(1000.0, 9000, IpVersion::V4, true).unwrap();
        assert_eq!(l.ethernet_bytes_per_frame, 9038);
        assert!(close(l.goodput_ethernet_mbit_per_s, 990.04));
        assert!(close(l.goodput_shaped_mbit_per_s, 992.68));
    }

    #[test]
    fn fractions_and_selection() {
        let l = tcp_goodput_limit(100.0, 1500, IpVersion::V4, true).unwrap();
        assert_eq!(
            l.goodput_mbit_per_s(Framing::Shaper),
            l.goodput_shaped_mbit_per_s
        );
        let f = l.fraction_of_limit(l.goodput_ethernet_mbit_per_s / 2.0, Framing::Ethernet);
        assert!((f - 0.5).abs() < 1e-12);
    }

    #[test]
    fn impossible_inputs_are_none() {
        assert!(tcp_goodput_limit(100.0, 52, IpVersion::V4, true).is_none());
        assert!(tcp_goodput_limit(100.0, 40, IpVersion::V4, false).is_none());
        assert!(tcp_goodput_limit(0.0, 1500, IpVersion::V4, true).is_none());
        assert!(tcp_goodput_limit(f64::NAN, 1500, IpVersion::V4, true).is_none());
        assert!(tcp_goodput_limit(100.0, 53, IpVersion::V4, true).is_some());
    }

    #[test]
    fn round_trips_through_json() {
        let l = tcp_goodput_limit(10_000.0, 9000, IpVersion::V6, false).unwrap();
        let back: LinkLimit = serde_json::from_str(&serde_json::to_string(&l).unwrap()).unwrap();
        // serde_json without its float_roundtrip feature may parse the last
        // bit of an f64 differently, so compare the floats with a tolerance.
        assert!((back.goodput_ethernet_mbit_per_s - l.goodput_ethernet_mbit_per_s).abs() < 1e-9);
        assert!((back.goodput_shaped_mbit_per_s - l.goodput_shaped_mbit_per_s).abs() < 1e-9);
        assert_eq!(back.payload_per_frame_bytes, l.payload_per_frame_bytes);
        assert_eq!(back.ip_version, l.ip_version);
        assert_eq!(back.formula, l.formula);
    }
}
