//! The Ethernet interface a frame transport (`raw`, `xdp`) sends from:
//! found by name (`--iface`), by an address it holds (the peer's side:
//! the address the control connection arrived on) or by the route to the
//! peer (the measuring side). Frames are addressed by MAC, so only
//! Ethernet interfaces qualify: loopback is refused with the reason.

use std::net::{IpAddr, SocketAddr, UdpSocket};

use anyhow::{anyhow, bail, Context, Result};
use serde_json::{json, Value};

/// What the listening end of a frame channel tells the connecting end
/// (its description on the control connection).
pub fn describe_listener(own_id: u32, iface: &Iface, mtu_bytes: usize) -> Value {
    json!({
        "id": own_id,
        "mac": format_mac(&iface.mac),
        "mtu_bytes": mtu_bytes,
    })
}

/// The listening end of a frame channel, as the connecting end sees it.
pub struct FramePeer {
    /// The listener's channel identifier.
    pub id: u32,
    /// The listener's MAC address.
    pub mac: [u8; 6],
    /// The interface this end sends from: `--iface`'s, or the one on the
    /// route to the peer.
    pub iface: Iface,
}

impl FramePeer {
    /// From the listener's `description`; `peer_ip` is its address on
    /// the control connection, `chosen` the interface `--iface` named for
    /// this end (None: the one on the route to the peer).
    pub fn from_description(
        description: &Value,
        peer_ip: IpAddr,
        chosen: Option<&str>,
    ) -> Result<FramePeer> {
        let id = description
            .get("id")
            .and_then(Value::as_u64)
            .and_then(|v| u32::try_from(v).ok())
            .context("the peer sent no frame channel identifier")?;
        let mac = description
            .get("mac")
            .and_then(Value::as_str)
            .and_then(parse_mac)
            .context("the peer sent no MAC address")?;
        let iface = match chosen {
            Some(name) => Iface::named(name)?,
            None => Iface::toward(peer_ip)?,
        };
        Ok(FramePeer { id, mac, iface })
    }
}

/// An Ethernet interface: name, index, address, MTU.
pub struct Iface {
    /// Its name (`eth0`).
    pub name: String,
    /// Its index.
    pub index: i32,
    /// Its MAC address.
    pub mac: [u8; 6],
    /// Its MTU, bytes after the Ethernet header.
    pub mtu_bytes: usize,
}

impl Iface {
    /// The interface called `name`, which must be Ethernet.
    pub fn named(name: &str) -> Result<Iface> {
        let sys = std::path::Path::new("/sys/class/net").join(name);
        if name.is_empty() || name.contains('/') || !sys.exists() {
            bail!("there is no network interface '{name}' here (see `ip link`)");
        }
        let read = |f: &str| -> Result<String> {
            Ok(std::fs::read_to_string(sys.join(f))
                .with_context(|| format!("cannot read {}", sys.join(f).display()))?
                .trim()
                .to_string())
        };
        // ARPHRD_ETHER (1): loopback (772) and tunnels have no MACs to address.
        let kind = read("type")?;
        if kind != "1" {
            bail!(
                "interface '{name}' is not Ethernet (ARP type {kind}): raw frames need an Ethernet link to the peer; \
                 loopback cannot carry them, so measure between lab nodes (--lab) or machines (--peer)"
            );
        }
        let mac = parse_mac(&read("address")?)
            .with_context(|| format!("interface '{name}' has no MAC address"))?;
        let mtu_bytes: usize = read("mtu")?.parse().context("unreadable MTU")?;
        let index = nix::net::if_::if_nametoindex(name)
            .with_context(|| format!("no index for interface '{name}'"))?;
        Ok(Iface {
            name: name.to_string(),
            index: index as i32,
            mac,
            mtu_bytes,
        })
    }

    /// The interface holding address `ip`.
    pub fn owning(ip: IpAddr) -> Result<Iface> {
        let addrs = nix::ifaddrs::getifaddrs().context("cannot list the interfaces")?;
        for a in addrs {
            let here = a.address.as_ref().and_then(|s| {
                s.as_sockaddr_in()
                    .map(|v4| IpAddr::V4(v4.ip()))
                    .or_else(|| s.as_sockaddr_in6().map(|v6| IpAddr::V6(v6.ip())))
            });
            if here == Some(ip) {
                return Iface::named(&a.interface_name);
            }
        }
        Err(anyhow!("no interface holds the address {ip}"))
    }

    /// The interface on the route to `peer`.
    pub fn toward(peer: IpAddr) -> Result<Iface> {
        // Connecting a UDP socket sends nothing: it only asks the routing
        // table which local address (and so which interface) leads there.
        let any: IpAddr = if peer.is_ipv4() {
            [0, 0, 0, 0].into()
        } else {
            [0u16; 8].into()
        };
        let probe = UdpSocket::bind(SocketAddr::new(any, 0))?;
        probe
            .connect(SocketAddr::new(peer, 9))
            .with_context(|| format!("no route to {peer}"))?;
        Iface::owning(probe.local_addr()?.ip())
    }
}

/// `0a:1b:...` as six bytes; None if it is not a MAC address.
pub fn parse_mac(text: &str) -> Option<[u8; 6]> {
    let mut mac = [0u8; 6];
    let mut parts = text.split(':');
    for b in &mut mac {
        *b = u8::from_str_radix(parts.next()?, 16).ok()?;
    }
    parts.next().is_none().then_some(mac)
}

/// Six bytes as `0a:1b:...`.
pub fn format_mac(mac: &[u8; 6]) -> String {
    mac.iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(":")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn macs_parse_and_print() {
        let m = parse_mac("0a:1B:ff:00:09:10").unwrap();
        assert_eq!(format_mac(&m), "0a:1b:ff:00:09:10");
        assert!(parse_mac("0a:1b:ff:00:09").is_none());
        assert!(parse_mac("0a:1b:ff:00:09:10:11").is_none());
        assert!(parse_mac("zz:1b:ff:00:09:10").is_none());
    }

    #[test]
    fn loopback_and_missing_interfaces_are_refused_clearly() {
        let e = Iface::named("lo").err().unwrap().to_string();
        assert!(e.contains("not Ethernet"), "{e}");
        let e = Iface::named("wulf-nonesuch0").err().unwrap().to_string();
        assert!(e.contains("no network interface 'wulf-nonesuch0'"), "{e}");
    }
}
