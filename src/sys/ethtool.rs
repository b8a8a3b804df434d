//! The few ethtool "get" requests wulf needs, sent with the SIOCETHTOOL
//! ioctl on an ordinary socket.
//!
//! Using the ioctl directly avoids depending on the ethtool program (not
//! installed on a fresh machine) and on netlink. Only the legacy get commands
//! are used; the kernel still answers them from the modern feature bits. The
//! request goes to the network namespace of the socket, so the caller sees the
//! interfaces of its own namespace. Every failure (no such device, driver
//! without the operation, no permission) is `None`.

use std::ffi::{c_char, c_void};
use std::os::fd::{AsRawFd, OwnedFd};

use nix::sys::socket::{socket, AddressFamily, SockFlag, SockType};

// Command numbers from <linux/ethtool.h>.
const ETHTOOL_GDRVINFO: u32 = 0x03;
const ETHTOOL_GCOALESCE: u32 = 0x0e;
pub(crate) const ETHTOOL_GRXCSUM: u32 = 0x14;
pub(crate) const ETHTOOL_GTXCSUM: u32 = 0x16;
pub(crate) const ETHTOOL_GSG: u32 = 0x18;
pub(crate) const ETHTOOL_GTSO: u32 = 0x1e;
pub(crate) const ETHTOOL_GGSO: u32 = 0x23;
pub(crate) const ETHTOOL_GFLAGS: u32 = 0x25;
pub(crate) const ETHTOOL_GGRO: u32 = 0x2b;
/// Bit of the ETHTOOL_GFLAGS word meaning large receive offload is on.
pub(crate) const ETH_FLAG_LRO: u32 = 1 << 15;

/// `struct ethtool_drvinfo`, laid out as in the kernel header. Fields never
/// read are there for the layout.
#[repr(C)]
#[allow(dead_code)]
struct DrvInfoRaw {
    cmd: u32,
    driver: [u8; 32],
    version: [u8; 32],
    fw_version: [u8; 32],
    bus_info: [u8; 32],
    erom_version: [u8; 32],
    reserved2: [u8; 12],
    n_priv_flags: u32,
    n_stats: u32,
    testinfo_len: u32,
    eedump_len: u32,
    regdump_len: u32,
}

/// `struct ethtool_value`.
#[repr(C)]
struct ValueRaw {
    cmd: u32,
    data: u32,
}

/// `struct ethtool_coalesce`: the command word and 22 u32 settings, of which
/// the indices below are the ones reported.
#[repr(C)]
struct CoalesceRaw {
    words: [u32; 23],
}
const CO_RX_USECS: usize = 1;
const CO_RX_MAX_FRAMES: usize = 2;
const CO_TX_USECS: usize = 5;
const CO_TX_MAX_FRAMES: usize = 6;
const CO_ADAPTIVE_RX: usize = 10;
const CO_ADAPTIVE_TX: usize = 11;

/// Driver identification from ETHTOOL_GDRVINFO; empty strings become `None`.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct DrvInfo {
    pub driver: Option<String>,
    pub version: Option<String>,
    pub firmware: Option<String>,
    pub bus_info: Option<String>,
}

/// The interrupt-coalescing settings from ETHTOOL_GCOALESCE, raw.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CoalesceValues {
    pub rx_usecs: u32,
    pub rx_max_frames: u32,
    pub tx_usecs: u32,
    pub tx_max_frames: u32,
    pub adaptive_rx: bool,
    pub adaptive_tx: bool,
}

/// A socket to send ethtool requests through.
pub(crate) struct Ethtool {
    fd: OwnedFd,
}

impl Ethtool {
    /// Open the control socket; `None` if the kernel offers no suitable
    /// family (an inet socket, else a Unix one: both reach the generic device
    /// ioctl path).
    pub fn open() -> Option<Ethtool> {
        [
            AddressFamily::Inet,
            AddressFamily::Inet6,
            AddressFamily::Unix,
        ]
        .into_iter()
        .find_map(|f| socket(f, SockType::Datagram, SockFlag::SOCK_CLOEXEC, None).ok())
        .map(|fd| Ethtool { fd })
    }

    /// Send one request. `T` must be the `repr(C)` ethtool structure the
    /// command expects, with its command word set.
    fn call<T>(&self, ifname: &str, data: &mut T) -> Option<()> {
        let name = ifname.as_bytes();
        // The kernel's interface names are at most IFNAMSIZ-1 bytes plus NUL.
        if name.is_empty() || name.len() >= libc::IFNAMSIZ || name.contains(&0) {
            return None;
        }
        // SAFETY: ifreq is plain old data, so all-zero is a valid value.
        let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
        for (dst, src) in req.ifr_name.iter_mut().zip(name) {
            *dst = *src as c_char;
        }
        req.ifr_ifru.ifru_data = data as *mut T as *mut c_void as *mut c_char;
        // SAFETY: `req` names a NUL-terminated interface and points at a live
        // structure of the size the command implies; the kernel writes only
        // within it.
        let rc = unsafe { libc::ioctl(self.fd.as_raw_fd(), libc::SIOCETHTOOL as _, &mut req) };
        (rc == 0).then_some(())
    }

    /// Driver name, version, firmware version and bus address.
    pub fn drvinfo(&self, ifname: &str) -> Option<DrvInfo> {
        // SAFETY: DrvInfoRaw is plain old data; all-zero is valid.
        let mut raw: DrvInfoRaw = unsafe { std::mem::zeroed() };
        raw.cmd = ETHTOOL_GDRVINFO;
        self.call(ifname, &mut raw)?;
        Some(DrvInfo {
            driver: c_string(&raw.driver),
            version: c_string(&raw.version),
            firmware: c_string(&raw.fw_version),
            bus_info: c_string(&raw.bus_info),
        })
    }

    /// One `ethtool_value` get command (ETHTOOL_GTSO and friends).
    pub fn value(&self, ifname: &str, cmd: u32) -> Option<u32> {
        let mut raw = ValueRaw { cmd, data: 0 };
        self.call(ifname, &mut raw)?;
        Some(raw.data)
    }

    /// Interrupt coalescing, for drivers that implement it.
    pub fn coalesce(&self, ifname: &str) -> Option<CoalesceValues> {
        let mut raw = CoalesceRaw { words: [0; 23] };
        raw.words[0] = ETHTOOL_GCOALESCE;
        self.call(ifname, &mut raw)?;
        let w = raw.words;
        Some(CoalesceValues {
            rx_usecs: w[CO_RX_USECS],
            rx_max_frames: w[CO_RX_MAX_FRAMES],
            tx_usecs: w[CO_TX_USECS],
            tx_max_frames: w[CO_TX_MAX_FRAMES],
            adaptive_rx: w[CO_ADAPTIVE_RX] != 0,
            adaptive_tx: w[CO_ADAPTIVE_TX] != 0,
        })
    }
}

/// A NUL-padded C string field as a Rust string; empty or "N/A" is `None`
/// (drivers without firmware fill in "N/A").
fn c_string(bytes: &[u8]) -> Option<String> {
    let end = bytes.iter().position(|b| *b == 0).unwrap_or(bytes.len());
    let s = String::from_utf8_lossy(&bytes[..end]).trim().to_string();
    (!s.is_empty() && s != "N/A").then_some(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts_match_the_kernel() {
        // Sizes from <linux/ethtool.h>: 4 + 5*32 + 12 + 5*4 = 196.
        assert_eq!(std::mem::size_of::<DrvInfoRaw>(), 196);
        assert_eq!(std::mem::size_of::<ValueRaw>(), 8);
        assert_eq!(std::mem::size_of::<CoalesceRaw>(), 92);
    }

    #[test]
    fn c_strings() {
        assert_eq!(c_string(b"veth\0\0\0"), Some("veth".into()));
        assert_eq!(c_string(b"\0abc"), None);
        assert_eq!(c_string(b"N/A\0"), None);
        assert_eq!(c_string(b"full"), Some("full".into()));
    }

    #[test]
    fn unknown_interface_is_none() {
        let e = Ethtool::open().expect("a datagram socket");
        assert!(e.drvinfo("wulf-no-such0").is_none());
        assert!(e.value("wulf-no-such0", ETHTOOL_GTSO).is_none());
        // Names the kernel could never accept are refused before the ioctl.
        assert!(e.drvinfo("").is_none());
        assert!(e.drvinfo("a-name-much-too-long-for-linux").is_none());
    }
}
