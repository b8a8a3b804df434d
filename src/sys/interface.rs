//! The network interface a measurement goes through: which one the route to
//! the peer uses, and what it is (driver, firmware, MTU, link speed, PCIe
//! slot, offloads, interrupt coalescing).
//!
//! León Carri et al. 2004 found the node deciding the result: one Gigabit NIC gave 350 to
//! 600 Mbit/s in three machines, a slow PCI bus capped it, a driver update
//! halved latency. So the interface's description goes with every network
//! result, and with it the root qdisc: a shaper on the interface (see
//! [`super::qdisc`]) is the link's real speed. Sources are sysfs, the ethtool
//! ioctl and rtnetlink; no subprocess. Whatever
//! cannot be read is `None`. All of it is per network namespace: run the
//! probe inside the namespace whose interface you want (sysfs shows the
//! namespace it was mounted in, as `ip netns exec` arranges).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::path::{Path, PathBuf};

use nix::net::if_::InterfaceFlags;
use serde::{Deserialize, Serialize};

use super::ethtool::{self, Ethtool};
use super::link_limit::{tcp_goodput_limit, Framing, IpVersion, LinkLimit};

/// Description of one network interface. Every field but the name may be
/// unknown.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct Interface {
    /// Interface name, e.g. "eth0".
    pub name: String,
    /// True for software devices with no hardware behind them (loopback,
    /// veth, bridges, tunnels): their "link speed" is nominal.
    pub is_virtual: Option<bool>,
    /// Kernel driver, e.g. "ixgbe", "virtio_net", "veth".
    pub driver: Option<String>,
    /// Driver version as the driver reports it.
    pub driver_version: Option<String>,
    /// NIC firmware version.
    pub firmware_version: Option<String>,
    /// Bus address, e.g. "0000:03:00.0" for a PCI device.
    pub bus_info: Option<String>,
    /// MTU: the largest IP packet.
    pub mtu_bytes: Option<u32>,
    /// Negotiated link speed in Mbit/s as the driver reports it (nominal for
    /// virtual devices); `None` when down or not reported. A shaper on the
    /// interface may hold traffic below it: see `shaped_rate_bits_per_s`.
    pub speed_mbit_per_s: Option<u64>,
    /// Kind of the interface's root queueing discipline as tc names it
    /// ("noqueue", "fq_codel", "tbf", "htb", ...); `None` when unreadable.
    pub qdisc: Option<String>,
    /// The rate the root qdisc lets traffic leave at, bit/s, when it is a
    /// shaper (`tbf`: its rate; `htb`: the lowest ceiling from the default
    /// class up to the root); `None` when the interface is not shaped or the
    /// rate is unknown.
    pub shaped_rate_bits_per_s: Option<u64>,
    /// "full" or "half".
    pub duplex: Option<String>,
    /// The NIC's PCIe link, when it sits on PCI Express.
    pub pcie: Option<PcieLink>,
    /// Offload settings.
    pub offloads: Offloads,
    /// Interrupt coalescing, when the driver exposes it.
    pub coalesce: Option<Coalesce>,
}

/// PCI Express link of a NIC, from sysfs.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct PcieLink {
    /// PCI address of the function.
    pub address: String,
    /// Negotiated transfer rate per lane in GT/s.
    pub current_speed_gt_per_s: Option<f64>,
    /// Negotiated number of lanes.
    pub current_width_lanes: Option<u32>,
    /// Highest transfer rate the device supports, GT/s per lane.
    pub max_speed_gt_per_s: Option<f64>,
    /// Most lanes the device supports.
    pub max_width_lanes: Option<u32>,
}

impl PcieLink {
    /// Data rate of the negotiated link per direction, in Mbit/s, after line
    /// encoding but before packet (TLP/DLLP) overhead, so an upper bound.
    pub fn current_mbit_per_s(&self) -> Option<f64> {
        pcie_mbit_per_s(self.current_speed_gt_per_s?, self.current_width_lanes?)
    }

    /// Data rate the device could reach in a slot that gave it everything.
    pub fn max_mbit_per_s(&self) -> Option<f64> {
        pcie_mbit_per_s(self.max_speed_gt_per_s?, self.max_width_lanes?)
    }
}

/// Data rate of a PCIe link after line encoding: 8b/10b up to 5 GT/s
/// (generations 1 and 2), 128b/130b up to 32 GT/s (3 to 5), and for 64 GT/s
/// (generation 6, FLIT mode) roughly 242 of 256 bytes.
fn pcie_mbit_per_s(gt_per_s: f64, lanes: u32) -> Option<f64> {
    if !gt_per_s.is_finite() || gt_per_s <= 0.0 || lanes == 0 {
        return None;
    }
    let efficiency = if gt_per_s <= 5.0 {
        8.0 / 10.0
    } else if gt_per_s <= 32.0 {
        128.0 / 130.0
    } else {
        242.0 / 256.0
    };
    Some(gt_per_s * 1000.0 * efficiency * lanes as f64)
}

/// Offload switches. `None` when the driver does not answer.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct Offloads {
    /// TCP segmentation offload.
    pub tso: Option<bool>,
    /// Generic segmentation offload.
    pub gso: Option<bool>,
    /// Generic receive offload.
    pub gro: Option<bool>,
    /// Large receive offload.
    pub lro: Option<bool>,
    /// Receive checksum offload.
    pub rx_checksum: Option<bool>,
    /// Transmit checksum offload.
    pub tx_checksum: Option<bool>,
    /// Scatter-gather.
    pub scatter_gather: Option<bool>,
}

/// Interrupt coalescing: how long, or for how many frames, the NIC waits
/// before interrupting. It trades latency for CPU.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct Coalesce {
    /// Receive delay in microseconds.
    pub rx_usecs: u32,
    /// Receive frames per interrupt.
    pub rx_max_frames: u32,
    /// Transmit delay in microseconds.
    pub tx_usecs: u32,
    /// Transmit frames per interrupt.
    pub tx_max_frames: u32,
    /// Adaptive receive coalescing on.
    pub adaptive_rx: bool,
    /// Adaptive transmit coalescing on.
    pub adaptive_tx: bool,
}

impl Interface {
    /// The TCP goodput limit of this interface's link for full-sized segments,
    /// when its effective speed ([`Interface::effective_speed_mbit_per_s`])
    /// and MTU are known. See [`super::link_limit`].
    pub fn link_limit(&self, ip_version: IpVersion, tcp_timestamps: bool) -> Option<LinkLimit> {
        tcp_goodput_limit(
            self.effective_speed_mbit_per_s()?,
            self.mtu_bytes?,
            ip_version,
            tcp_timestamps,
        )
    }

    /// True when a shaper, not the link, sets the speed traffic leaves at: a
    /// shaped rate below the nominal speed, or any shaped rate on a virtual
    /// device (whose nominal speed is only a label).
    pub fn is_shaped(&self) -> bool {
        let Some(shaped) = self.shaped_rate_bits_per_s else {
            return false;
        };
        match (self.is_virtual, self.speed_mbit_per_s) {
            (Some(false), Some(nominal)) => (shaped as f64) < nominal as f64 * 1e6,
            _ => true,
        }
    }

    /// The speed that limits traffic leaving through this interface, Mbit/s:
    /// the shaper's rate when it is the slower ([`Interface::is_shaped`]),
    /// else the nominal link speed.
    pub fn effective_speed_mbit_per_s(&self) -> Option<f64> {
        match self.shaped_rate_bits_per_s {
            Some(r) if self.is_shaped() => Some(r as f64 / 1e6),
            _ => self.speed_mbit_per_s.map(|s| s as f64),
        }
    }

    /// The framing that applies to this interface: a shaper, or a virtual
    /// device, has no preamble or gap, only what the shaper counts (MTU + 14
    /// per frame).
    pub fn framing(&self) -> Framing {
        if self.is_shaped() {
            return Framing::Shaper;
        }
        match self.is_virtual {
            Some(true) => Framing::Shaper,
            _ => Framing::Ethernet,
        }
    }

    /// This interface as seen by traffic arriving on it: an egress shaper
    /// (tbf, htb) does not slow what comes in, so its rate is left out.
    pub fn without_shaper(&self) -> Interface {
        Interface {
            shaped_rate_bits_per_s: None,
            ..self.clone()
        }
    }
}

/// The route the kernel would use to reach a peer: the interface and whether
/// it is the loopback device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    /// Interface name.
    pub interface: String,
    /// True when the interface is the loopback device: the peer's address is
    /// one of this network namespace's own.
    pub loopback: bool,
}

/// The interface the kernel would use to reach `addr`, by name (see
/// [`route_for_peer`]).
pub fn interface_for_peer(addr: IpAddr) -> Option<String> {
    route_for_peer(addr).map(|r| r.interface)
}

/// The route the kernel would use to reach `addr`.
///
/// A connected UDP socket makes the kernel choose a route and a source
/// address without sending anything; the interface holding that source
/// address is the one. A peer that is one of this host's own addresses is
/// reached through loopback whatever interface carries the address. `None`
/// when there is no route, or for an IPv6 link-local peer (which needs a
/// scope this signature cannot carry).
pub fn route_for_peer(addr: IpAddr) -> Option<Route> {
    route_for(addr, true)
}

/// The interface that holds `addr`, one of this network namespace's own
/// addresses (an agent's address on a cluster network); loopback only
/// when `addr` is a loopback address.
pub fn interface_holding(addr: IpAddr) -> Option<String> {
    route_for(addr, false).map(|r| r.interface)
}

fn route_for(addr: IpAddr, own_is_loopback: bool) -> Option<Route> {
    let bind: SocketAddr = match addr {
        IpAddr::V4(_) => (Ipv4Addr::UNSPECIFIED, 0).into(),
        IpAddr::V6(_) => (Ipv6Addr::UNSPECIFIED, 0).into(),
    };
    let sock = UdpSocket::bind(bind).ok()?;
    // Port 9 (discard): any port will do, connect() on UDP sends nothing.
    sock.connect((addr, 9)).ok()?;
    let local = sock.local_addr().ok()?.ip();
    let addrs: Vec<(String, InterfaceFlags, IpAddr)> = nix::ifaddrs::getifaddrs()
        .ok()?
        .filter_map(|i| {
            let a = i.address?;
            let ip = if let Some(v4) = a.as_sockaddr_in() {
                IpAddr::V4(v4.ip())
            } else {
                IpAddr::V6(a.as_sockaddr_in6()?.ip())
            };
            Some((i.interface_name, i.flags, ip))
        })
        .collect();
    let is_loopback = |f: &InterfaceFlags| f.contains(InterfaceFlags::IFF_LOOPBACK);
    if own_is_loopback && addrs.iter().any(|(_, _, ip)| *ip == addr) {
        if let Some((name, _, _)) = addrs.iter().find(|(_, f, _)| is_loopback(f)) {
            return Some(Route {
                interface: name.clone(),
                loopback: true,
            });
        }
    }
    addrs
        .into_iter()
        .find(|(_, _, ip)| *ip == local)
        .map(|(name, flags, _)| Route {
            interface: name,
            loopback: is_loopback(&flags),
        })
}

fn net_dir(name: &str) -> PathBuf {
    Path::new("/sys/class/net").join(name)
}

fn read_trim(path: &Path) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
}

/// Describe the interface `name` in the current network namespace. An
/// interface that does not exist comes back with only its name.
pub fn describe_interface(name: &str) -> Interface {
    // A name with a path separator would escape /sys/class/net.
    if name.is_empty() || name.contains('/') || name == "." || name == ".." {
        return Interface {
            name: name.to_string(),
            ..Interface::default()
        };
    }
    let dir = net_dir(name);
    let canonical = std::fs::canonicalize(&dir).ok();
    let root = super::qdisc::root_qdisc(name);
    let ethtool = Ethtool::open();
    let et = ethtool.as_ref();
    let drv = et.and_then(|e| e.drvinfo(name)).unwrap_or_default();
    // sysfs fallback for the driver name: the device's driver symlink.
    let driver = drv.driver.clone().or_else(|| {
        std::fs::read_link(dir.join("device/driver"))
            .ok()
            .and_then(|p| p.file_name().map(|f| f.to_string_lossy().into_owned()))
    });
    let driver_version = drv.version.clone().or_else(|| {
        driver
            .as_ref()
            .and_then(|d| read_trim(&Path::new("/sys/module").join(d).join("version")))
    });
    let flag = |cmd| et.and_then(|e| e.value(name, cmd)).map(|v| v != 0);
    let offloads = Offloads {
        tso: flag(ethtool::ETHTOOL_GTSO),
        gso: flag(ethtool::ETHTOOL_GGSO),
        gro: flag(ethtool::ETHTOOL_GGRO),
        lro: et
            .and_then(|e| e.value(name, ethtool::ETHTOOL_GFLAGS))
            .map(|v| v & ethtool::ETH_FLAG_LRO != 0),
        rx_checksum: flag(ethtool::ETHTOOL_GRXCSUM),
        tx_checksum: flag(ethtool::ETHTOOL_GTXCSUM),
        scatter_gather: flag(ethtool::ETHTOOL_GSG),
    };
    let coalesce = et.and_then(|e| e.coalesce(name)).map(|c| Coalesce {
        rx_usecs: c.rx_usecs,
        rx_max_frames: c.rx_max_frames,
        tx_usecs: c.tx_usecs,
        tx_max_frames: c.tx_max_frames,
        adaptive_rx: c.adaptive_rx,
        adaptive_tx: c.adaptive_tx,
    });
    Interface {
        name: name.to_string(),
        is_virtual: canonical
            .as_ref()
            .map(|p| p.starts_with("/sys/devices/virtual")),
        driver,
        driver_version,
        firmware_version: drv.firmware,
        bus_info: drv.bus_info,
        mtu_bytes: read_trim(&dir.join("mtu")).and_then(|s| s.parse().ok()),
        speed_mbit_per_s: read_trim(&dir.join("speed")).and_then(|s| parse_speed(&s)),
        qdisc: root.as_ref().map(|q| q.kind.clone()),
        shaped_rate_bits_per_s: root
            .as_ref()
            .and_then(|q| q.rate_bytes_per_s)
            .map(|r| r.saturating_mul(8)),
        duplex: read_trim(&dir.join("duplex")).filter(|d| d == "full" || d == "half"),
        pcie: pcie_link(&dir, Path::new("/sys/devices")),
        offloads,
        coalesce,
    }
}

/// sysfs `speed`: Mbit/s, or -1 (printed signed or as 4294967295 by older
/// kernels) when unknown.
fn parse_speed(s: &str) -> Option<u64> {
    let v: i64 = s.parse().ok()?;
    (v > 0 && v != u32::MAX as i64).then_some(v as u64)
}

/// "8.0 GT/s PCIe" (or "8 GT/s", or "Unknown") as GT/s.
fn parse_link_speed(s: &str) -> Option<f64> {
    let v: f64 = s.split_whitespace().next()?.parse().ok()?;
    (v > 0.0).then_some(v)
}

/// The PCIe link of the first PCI device above the interface's device node.
/// A virtio NIC's node is a child of its PCI function, hence the walk; it
/// stops at the first PCI device so a bridge's link is never reported as the
/// NIC's. `None` for conventional PCI (no link attributes) and for devices
/// not on PCI. `devices_root` is /sys/devices except in tests.
fn pcie_link(net_dir: &Path, devices_root: &Path) -> Option<PcieLink> {
    let mut dev = std::fs::canonicalize(net_dir.join("device")).ok()?;
    // Compare canonical paths: `dev` is one.
    let root = std::fs::canonicalize(devices_root).ok()?;
    let pci = loop {
        let subsystem = std::fs::read_link(dev.join("subsystem")).ok();
        if subsystem.is_some_and(|s| s.ends_with("bus/pci")) {
            break dev;
        }
        if !dev.pop() || !dev.starts_with(&root) {
            return None;
        }
    };
    let read = |f: &str| read_trim(&pci.join(f));
    let link = PcieLink {
        address: pci.file_name()?.to_string_lossy().into_owned(),
        current_speed_gt_per_s: read("current_link_speed").and_then(|s| parse_link_speed(&s)),
        current_width_lanes: read("current_link_width")
            .and_then(|s| s.parse().ok())
            .filter(|w| *w > 0),
        max_speed_gt_per_s: read("max_link_speed").and_then(|s| parse_link_speed(&s)),
        max_width_lanes: read("max_link_width")
            .and_then(|s| s.parse().ok())
            .filter(|w| *w > 0),
    };
    let any = link.current_speed_gt_per_s.is_some()
        || link.current_width_lanes.is_some()
        || link.max_speed_gt_per_s.is_some()
        || link.max_width_lanes.is_some();
    any.then_some(link)
}

/// A warning when the NIC's negotiated PCIe link carries less than its
/// network link, as León Carri et al. 2004 found with a Gigabit NIC on a slow bus. `None`
/// when the bus is fast enough or either figure is unknown.
pub fn pcie_limits_link(iface: &Interface) -> Option<String> {
    let pcie = iface.pcie.as_ref()?;
    let bus = pcie.current_mbit_per_s()?;
    let net = iface.speed_mbit_per_s? as f64;
    if bus >= net {
        return None;
    }
    let mut msg = format!(
        "{}: the NIC's PCIe link ({} GT/s x{}, about {:.0} Mbit/s after encoding) is slower \
         than its {:.0} Mbit/s network link; the bus, not the network, caps throughput",
        iface.name,
        pcie.current_speed_gt_per_s.unwrap_or(0.0),
        pcie.current_width_lanes.unwrap_or(0),
        bus,
        net
    );
    if let Some(max) = pcie.max_mbit_per_s().filter(|m| *m > bus) {
        msg.push_str(&format!(
            " (the device supports {} GT/s x{}, about {:.0} Mbit/s: it sits in a slower slot \
             or trained down)",
            pcie.max_speed_gt_per_s.unwrap_or(0.0),
            pcie.max_width_lanes.unwrap_or(0),
            max
        ));
    }
    Some(msg)
}

#[cfg(test)]
#[path = "interface_tests.rs"]
mod tests;
