//! The `link` block of a result: the measured peak against the theoretical
//! TCP goodput of the network path between the two ends.
//!
//! Each direction of the path is limited by the sending end's interface as
//! traffic leaves it, shaper included (tbf and htb shape what leaves), and
//! by the receiving end's link speed as traffic arrives (its egress shaper
//! does not slow what comes in). The peer describes its own interface, so
//! a shaper on the peer's side counts too. A sweep's throughput meets the
//! two directions according to its mode:
//!
//! * `stream`: data flows from the measuring end to the peer only: that
//!   direction's limit;
//! * `pingpong`: every message crosses there and back, and the one-way time
//!   is half the round trip, so the limit is the harmonic mean of the two
//!   directions, 2 / (1/a + 1/b): the common rate when they are equal, up to
//!   twice the slower one when the other is much faster;
//! * `bidir`: both directions at once, counted together: twice the slower.
//!
//! `limit`, `interface`, `framing` and `end` describe the bottleneck, the
//! slower direction's link (for `stream`, the one direction), so that a
//! reader sees which link and which accounting sets the figure.

use serde::{Deserialize, Serialize};

use super::Mode;
use crate::sys::{Framing, Interface, IpVersion, LinkLimit};

/// Which end of a sweep an interface belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum LinkEnd {
    /// The measuring end (A, `host`).
    Client,
    /// The peer (B, `peer_host`).
    Server,
}

/// Measured peak against the theoretical TCP goodput of the path.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LinkEfficiency {
    /// The bottleneck's interface (on the route between the ends).
    pub interface: String,
    /// The bottleneck link's goodput limit and its accounting; its speed is
    /// the shaper's rate when a shaper sets it.
    pub limit: LinkLimit,
    /// Which framing applies at the bottleneck (real Ethernet, or a shaper
    /// or virtual link counting MTU + 14 bytes per frame).
    pub framing: Framing,
    /// Goodput limit of the path for this sweep's mode, bit/s (see the
    /// module documentation); for a symmetric path in `stream` or `pingpong`
    /// mode, the bottleneck's goodput under `framing`.
    pub limit_bits_per_s: f64,
    /// `summary.peak_bits_per_s` / `limit_bits_per_s`.
    pub peak_fraction: Option<f64>,
    /// Whose interface the bottleneck is; absent in files written before
    /// the peer's interface was compared.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end: Option<LinkEnd>,
    /// The bottleneck's root qdisc when a shaper (`tbf`, `htb`) sets its
    /// speed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shaper: Option<String>,
    /// Goodput limit from the measuring end to the peer, bit/s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to_peer_bits_per_s: Option<f64>,
    /// Goodput limit from the peer to the measuring end, bit/s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from_peer_bits_per_s: Option<f64>,
}

/// One direction's limit and the link that sets it.
#[derive(Debug, Clone)]
struct Direction {
    end: LinkEnd,
    interface: String,
    shaper: Option<String>,
    limit: LinkLimit,
    framing: Framing,
    bits_per_s: f64,
}

impl Direction {
    fn of(end: LinkEnd, iface: &Interface, ip: IpVersion, timestamps: bool) -> Option<Direction> {
        let limit = iface.link_limit(ip, timestamps)?;
        let framing = iface.framing();
        let bits_per_s = limit.goodput_mbit_per_s(framing) * 1e6;
        Some(Direction {
            end,
            interface: iface.name.clone(),
            shaper: iface.qdisc.clone().filter(|_| iface.is_shaped()),
            limit,
            framing,
            bits_per_s,
        })
    }
}

/// The limit of data going from `sender` to `receiver`: the slower of the
/// sender's egress (shaper included) and the receiver's link. Ties go to the
/// sender. `None` when neither end's limit is known.
fn direction(
    sender: Option<(LinkEnd, &Interface)>,
    receiver: Option<(LinkEnd, &Interface)>,
    ip: IpVersion,
    timestamps: bool,
) -> Option<Direction> {
    let out = sender.and_then(|(e, i)| Direction::of(e, i, ip, timestamps));
    let inbound = receiver.and_then(|(e, i)| Direction::of(e, &i.without_shaper(), ip, timestamps));
    match (out, inbound) {
        (Some(o), Some(i)) if i.bits_per_s < o.bits_per_s => Some(i),
        (o, i) => o.or(i),
    }
}

impl LinkEfficiency {
    /// The efficiency of a sweep in `mode` whose data crossed `client`'s
    /// interface on the measuring end and `server`'s on the peer (either
    /// unknown: `None`). `None` when no end's limit is known (no speed or
    /// MTU: loopback, say).
    pub fn for_path(
        client: Option<&Interface>,
        server: Option<&Interface>,
        mode: Mode,
        ip_version: IpVersion,
        tcp_timestamps: bool,
        peak_bits_per_s: Option<f64>,
    ) -> Option<LinkEfficiency> {
        let c = client.map(|i| (LinkEnd::Client, i));
        let s = server.map(|i| (LinkEnd::Server, i));
        let to_peer = direction(c, s, ip_version, tcp_timestamps)?;
        let from_peer = direction(s, c, ip_version, tcp_timestamps)?;
        let (a, b) = (to_peer.bits_per_s, from_peer.bits_per_s);
        let slower = if b < a { &from_peer } else { &to_peer };
        let (limit_bits_per_s, bottleneck) = match mode {
            Mode::Stream => (a, &to_peer),
            Mode::Pingpong => (2.0 / (1.0 / a + 1.0 / b), slower),
            Mode::Bidir => (2.0 * slower.bits_per_s, slower),
        };
        Some(LinkEfficiency {
            interface: bottleneck.interface.clone(),
            limit: bottleneck.limit.clone(),
            framing: bottleneck.framing,
            limit_bits_per_s,
            peak_fraction: peak_bits_per_s.map(|p| p / limit_bits_per_s),
            end: Some(bottleneck.end),
            shaper: bottleneck.shaper.clone(),
            to_peer_bits_per_s: Some(a),
            from_peer_bits_per_s: Some(b),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn veth(name: &str, shaped_mbit: Option<u64>) -> Interface {
        Interface {
            name: name.into(),
            is_virtual: Some(true),
            mtu_bytes: Some(1500),
            speed_mbit_per_s: Some(10_000),
            qdisc: Some(
                if shaped_mbit.is_some() {
                    "htb"
                } else {
                    "noqueue"
                }
                .into(),
            ),
            shaped_rate_bits_per_s: shaped_mbit.map(|m| m * 1_000_000),
            ..Interface::default()
        }
    }

    fn path(c: &Interface, s: Option<&Interface>, mode: Mode) -> LinkEfficiency {
        LinkEfficiency::for_path(Some(c), s, mode, IpVersion::V4, true, Some(90e6)).unwrap()
    }

    /// 100 Mbit/s behind a shaper: 100 * 1448 / 1514 Mbit/s of goodput.
    const SHAPED_100: f64 = 100e6 * 1448.0 / 1514.0;
    /// A veth's nominal 10000 Mbit/s, counted as a shaper would.
    const NOMINAL_10G: f64 = 10_000e6 * 1448.0 / 1514.0;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-6 * b
    }

    #[test]
    fn a_shaper_on_the_peer_is_the_bottleneck() {
        let c = veth("wva", None);
        let s = veth("wvb", Some(100));
        let l = path(&c, Some(&s), Mode::Pingpong);
        assert_eq!(l.end, Some(LinkEnd::Server));
        assert_eq!(l.interface, "wvb");
        assert_eq!(l.shaper.as_deref(), Some("htb"));
        assert_eq!(l.limit.link_speed_mbit_per_s, 100.0);
        assert_eq!(l.framing, Framing::Shaper);
        assert!(close(l.to_peer_bits_per_s.unwrap(), NOMINAL_10G));
        assert!(close(l.from_peer_bits_per_s.unwrap(), SHAPED_100));
        // Only the way back is shaped: a ping-pong may go up to twice as
        // fast as the shaper alone.
        let harmonic = 2.0 / (1.0 / NOMINAL_10G + 1.0 / SHAPED_100);
        assert!(close(l.limit_bits_per_s, harmonic), "{l:?}");
        assert!(close(l.peak_fraction.unwrap(), 90e6 / harmonic));
        // A stream only sends to the peer: its egress shaper holds ACKs.
        let l = path(&c, Some(&s), Mode::Stream);
        assert!(close(l.limit_bits_per_s, NOMINAL_10G));
        assert_eq!((l.end, l.shaper), (Some(LinkEnd::Client), None));
        // Both ways at once: twice the slower direction.
        let l = path(&c, Some(&s), Mode::Bidir);
        assert!(close(l.limit_bits_per_s, 2.0 * SHAPED_100));
        assert_eq!(l.end, Some(LinkEnd::Server));
    }

    #[test]
    fn both_ends_shaped_alike_give_the_shaper_rate() {
        let c = veth("wva", Some(100));
        let s = veth("wvb", Some(100));
        for mode in [Mode::Pingpong, Mode::Stream] {
            let l = path(&c, Some(&s), mode);
            assert!(close(l.limit_bits_per_s, SHAPED_100), "{mode}: {l:?}");
            // Ties go to the measuring end.
            assert_eq!(l.end, Some(LinkEnd::Client));
            assert_eq!(l.limit.link_speed_mbit_per_s, 100.0);
        }
        // A shaper on the measuring end only, slower than the peer's.
        let s = veth("wvb", Some(1000));
        let l = path(&c, Some(&s), Mode::Stream);
        assert!(close(l.limit_bits_per_s, SHAPED_100));
        assert_eq!(l.end, Some(LinkEnd::Client));
    }

    #[test]
    fn a_real_link_limits_both_directions() {
        let nic = |name: &str, mbit| Interface {
            name: name.into(),
            is_virtual: Some(false),
            mtu_bytes: Some(1500),
            speed_mbit_per_s: Some(mbit),
            ..Interface::default()
        };
        // A 10 GbE client talking to a Gigabit server: both ways 1 Gbit/s.
        let (c, s) = (nic("eth0", 10_000), nic("eth1", 1000));
        let gige = 1000e6 * 1448.0 / 1538.0;
        let l = path(&c, Some(&s), Mode::Pingpong);
        assert!(close(l.limit_bits_per_s, gige), "{l:?}");
        assert_eq!(
            (l.end, l.framing),
            (Some(LinkEnd::Server), Framing::Ethernet)
        );
        let l = path(&c, Some(&s), Mode::Stream);
        assert!(close(l.limit_bits_per_s, gige));
        // Peer's interface unknown (its host block has none): the client's.
        let l = path(&s, None, Mode::Pingpong);
        assert!(close(l.limit_bits_per_s, gige));
        assert_eq!(l.interface, "eth1");
        // Nothing known: no block.
        let lo = Interface {
            name: "lo".into(),
            mtu_bytes: Some(65536),
            ..Interface::default()
        };
        assert_eq!(
            LinkEfficiency::for_path(Some(&lo), None, Mode::Pingpong, IpVersion::V4, true, None),
            None
        );
    }

    /// Blocks written before the ends were compared still load.
    #[test]
    fn old_link_blocks_load() {
        let l = path(&veth("eth0", None), None, Mode::Pingpong);
        let mut v = serde_json::to_value(&l).unwrap();
        let m = v.as_object_mut().unwrap();
        for k in [
            "end",
            "shaper",
            "to_peer_bits_per_s",
            "from_peer_bits_per_s",
        ] {
            m.remove(k);
        }
        let back: LinkEfficiency = serde_json::from_value(v).unwrap();
        assert_eq!((back.end, back.to_peer_bits_per_s), (None, None));
        assert!(serde_json::to_string(&l)
            .unwrap()
            .contains("\"end\":\"client\""));
    }
}
