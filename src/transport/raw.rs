//! `raw`: messages as raw Ethernet frames (AF_PACKET SOCK_RAW, wulf's own
//! EtherType 0x88B5), no IP and no TCP underneath: the lean path the
//! classic studies measured against TCP/IP (GAMMA, M-VIA). Reliability is
//! the frame protocol's ([`super::frames`]); this file only opens the
//! socket on the right interface and moves frames.
//!
//! The interface is the one on the route to the peer (the measuring side,
//! or `--iface`) and the one the control connection arrived on (the peer).
//! Both must be on one Ethernet segment: frames are addressed to the
//! peer's MAC, which the peer sends in its description. Loopback has no
//! Ethernet addresses, so a local sweep is refused with a clear message;
//! measure between lab nodes (`--lab`) or machines (`--peer`).
//!
//! Plain socket calls, one frame per call (writev of the Ethernet header,
//! the protocol header and the payload, so the payload is not copied to
//! assemble the frame). A packet ring (TPACKET_V3) batches frames for
//! capture; for a ping-pong of single frames it saves no system call.

use std::io;
use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::Mutex;
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};
use serde_json::{json, Value};

use super::frames::protocol::{Params, Reliable};
use super::frames::{handshake, FrameLink, ETHERTYPE};
use super::{ChannelOptions, Connected, Listener, Transport};

/// Bytes of an Ethernet header (destination, source, type).
const ETH_HEADER_BYTES: usize = 14;
/// Receive buffer asked for (SO_RCVBUFFORCE): a window of full frames
/// with the kernel's per-frame overhead fits many times over.
const RCVBUF_BYTES: usize = 8 << 20;

/// The interface `--iface` chose for the measuring side, if any.
static IFACE: Mutex<Option<String>> = Mutex::new(None);

/// Set the interface the measuring side sends from (`--iface`); None: the
/// one on the route to the peer.
pub fn configure_iface(iface: Option<String>) {
    *IFACE.lock().unwrap_or_else(|e| e.into_inner()) = iface;
}

/// The `raw` transport.
pub struct Raw;

impl Transport for Raw {
    fn name(&self) -> &'static str {
        "raw"
    }

    fn about(&self) -> &'static str {
        "raw Ethernet frames (AF_PACKET, EtherType 0x88B5) with wulf's own reliable protocol; across a link only"
    }

    fn availability(&self) -> Result<(), String> {
        open_socket()
            .map(|_| ())
            .map_err(|e| match e.raw_os_error() {
                Some(libc::EPERM) | Some(libc::EACCES) => {
                    "needs CAP_NET_RAW (run as root or grant the capability)".to_string()
                }
                Some(libc::EAFNOSUPPORT) => "kernel built without AF_PACKET".to_string(),
                _ => format!("cannot open a packet socket: {e}"),
            })
    }

    fn local_only(&self) -> bool {
        false
    }

    fn needs_link(&self) -> bool {
        true
    }

    fn listen(&self, opts: &ChannelOptions, bind_ip: IpAddr) -> Result<Box<dyn Listener>> {
        let iface = Iface::owning(bind_ip)?;
        let link = PacketLink::open(&iface, [0; 6], opts.timeout())?;
        Ok(Box::new(RawListener {
            link,
            iface,
            own_id: fresh_id(),
            opts: opts.clone(),
        }))
    }

    fn connect(
        &self,
        description: &Value,
        opts: &ChannelOptions,
        peer_ip: IpAddr,
    ) -> Result<Connected> {
        let peer_id = description
            .get("id")
            .and_then(Value::as_u64)
            .and_then(|v| u32::try_from(v).ok())
            .context("the peer sent no frame channel identifier")?;
        let mac = description
            .get("mac")
            .and_then(Value::as_str)
            .and_then(parse_mac)
            .context("the peer sent no MAC address")?;
        let chosen = IFACE.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let iface = match chosen {
            Some(name) => Iface::named(&name)?,
            None => Iface::toward(peer_ip)?,
        };
        let mut link = PacketLink::open(&iface, mac, opts.timeout())?;
        let own_id = fresh_id();
        let mtu = handshake::connect(&mut link, own_id, peer_id, opts.timeout())
            .with_context(|| format!("no frame channel to {peer_ip} over {}", iface.name))?;
        Ok(finish(link, &iface, own_id, peer_id, mtu, opts))
    }
}

struct RawListener {
    link: PacketLink,
    iface: Iface,
    own_id: u32,
    opts: ChannelOptions,
}

impl Listener for RawListener {
    fn describe(&self) -> Value {
        json!({
            "id": self.own_id,
            "mac": format_mac(&self.iface.mac),
            "mtu_bytes": self.iface.mtu_bytes,
        })
    }

    fn accept(mut self: Box<Self>, timeout: Duration) -> Result<Connected> {
        let (peer_id, mtu) = handshake::accept(&mut self.link, self.own_id, timeout)
            .with_context(|| format!("no frames from the measuring side on {}", self.iface.name))?;
        Ok(finish(
            self.link,
            &self.iface,
            self.own_id,
            peer_id,
            mtu,
            &self.opts,
        ))
    }
}

/// The channel both ends make once the handshake is done.
fn finish(
    link: PacketLink,
    iface: &Iface,
    own_id: u32,
    peer_id: u32,
    mtu: usize,
    opts: &ChannelOptions,
) -> Connected {
    let rcvbuf = link.rcvbuf_bytes();
    let channel = Reliable::new(
        link,
        Params {
            own_id,
            peer_id,
            mtu_bytes: mtu,
            timeout: opts.timeout(),
            busy_poll: opts.busy_poll,
        },
    );
    let mut settings = serde_json::Map::new();
    settings.insert("interface".into(), json!(iface.name));
    settings.insert("ethertype".into(), json!(format!("0x{ETHERTYPE:04x}")));
    settings.insert("mtu_bytes".into(), json!(mtu));
    settings.insert("frame_payload_bytes".into(), json!(channel.chunk_bytes()));
    settings.insert("window_frames".into(), json!(channel.window_frames()));
    settings.insert("rcvbuf_bytes".into(), json!(rcvbuf));
    settings.insert("busy_poll".into(), json!(opts.busy_poll));
    settings.insert(
        super::THRESHOLDS_KEY.into(),
        super::periodic_threshold_value(channel.chunk_bytes() as u64, "one more frame (MTU)"),
    );
    Connected {
        endpoint: Box::new(channel),
        settings,
        warnings: Vec::new(),
    }
}

/// A random, non-zero channel identifier.
fn fresh_id() -> u32 {
    fastrand::u32(1..)
}

/// An Ethernet interface: name, index, address, MTU.
struct Iface {
    name: String,
    index: i32,
    mac: [u8; 6],
    mtu_bytes: usize,
}

impl Iface {
    /// The interface called `name`, which must be Ethernet.
    fn named(name: &str) -> Result<Iface> {
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
    fn owning(ip: IpAddr) -> Result<Iface> {
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
    fn toward(peer: IpAddr) -> Result<Iface> {
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

fn parse_mac(text: &str) -> Option<[u8; 6]> {
    let mut mac = [0u8; 6];
    let mut parts = text.split(':');
    for b in &mut mac {
        *b = u8::from_str_radix(parts.next()?, 16).ok()?;
    }
    parts.next().is_none().then_some(mac)
}

fn format_mac(mac: &[u8; 6]) -> String {
    mac.iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(":")
}

/// A packet socket for wulf's EtherType, not yet bound.
fn open_socket() -> io::Result<OwnedFd> {
    // SAFETY: plain socket(2) call; the descriptor is owned right away.
    let fd = unsafe {
        libc::socket(
            libc::AF_PACKET,
            libc::SOCK_RAW | libc::SOCK_CLOEXEC,
            i32::from(ETHERTYPE.to_be()),
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fd is a fresh descriptor nobody else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Frames of wulf's EtherType on one interface, to one peer MAC.
struct PacketLink {
    fd: OwnedFd,
    /// The Ethernet header of every frame sent: peer, own address, type.
    eth_out: [u8; ETH_HEADER_BYTES],
    /// The Ethernet header of the last frame received.
    eth_in: [u8; ETH_HEADER_BYTES],
    mtu_bytes: usize,
}

impl PacketLink {
    /// A socket bound to `iface` sending to `peer_mac`.
    fn open(iface: &Iface, peer_mac: [u8; 6], timeout: Duration) -> Result<PacketLink> {
        let fd = open_socket().map_err(|e| match e.raw_os_error() {
            Some(libc::EPERM) | Some(libc::EACCES) => anyhow!("raw frames need CAP_NET_RAW: {e}"),
            _ => anyhow!("cannot open a packet socket: {e}"),
        })?;
        let sock = socket2::SockRef::from(&fd);
        // Root may exceed rmem_max (SO_RCVBUFFORCE); anyone else gets what
        // the limit allows.
        if setsockopt_int(&fd, libc::SO_RCVBUFFORCE, RCVBUF_BYTES).is_err() {
            let _ = sock.set_recv_buffer_size(RCVBUF_BYTES);
        }
        sock.set_write_timeout(Some(timeout))?;
        // SAFETY: sockaddr_ll is plain data; zero is a valid start.
        let mut addr: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        addr.sll_family = libc::AF_PACKET as u16;
        addr.sll_protocol = ETHERTYPE.to_be();
        addr.sll_ifindex = iface.index;
        // SAFETY: addr is a valid sockaddr_ll of the size given.
        let rc = unsafe {
            libc::bind(
                fd.as_raw_fd(),
                (&addr as *const libc::sockaddr_ll).cast(),
                std::mem::size_of::<libc::sockaddr_ll>() as u32,
            )
        };
        if rc != 0 {
            bail!(
                "cannot bind a packet socket to {}: {}",
                iface.name,
                io::Error::last_os_error()
            );
        }
        let mut eth_out = [0u8; ETH_HEADER_BYTES];
        eth_out[..6].copy_from_slice(&peer_mac);
        eth_out[6..12].copy_from_slice(&iface.mac);
        eth_out[12..].copy_from_slice(&ETHERTYPE.to_be_bytes());
        Ok(PacketLink {
            fd,
            eth_out,
            eth_in: [0; ETH_HEADER_BYTES],
            mtu_bytes: iface.mtu_bytes,
        })
    }

    fn rcvbuf_bytes(&self) -> Option<usize> {
        socket2::SockRef::from(&self.fd).recv_buffer_size().ok()
    }

    /// One non-blocking receive.
    fn try_recv(&mut self, buf: &mut [u8]) -> io::Result<Option<usize>> {
        let mut iov = [
            libc::iovec {
                iov_base: self.eth_in.as_mut_ptr().cast(),
                iov_len: ETH_HEADER_BYTES,
            },
            libc::iovec {
                iov_base: buf.as_mut_ptr().cast(),
                iov_len: buf.len(),
            },
        ];
        // SAFETY: msghdr is plain data; zero means no address, no control.
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_iov = iov.as_mut_ptr();
        msg.msg_iovlen = iov.len();
        // SAFETY: the iovecs describe eth_in and buf, borrowed mutably here.
        let n = unsafe { libc::recvmsg(self.fd.as_raw_fd(), &mut msg, libc::MSG_DONTWAIT) };
        if n < 0 {
            let e = io::Error::last_os_error();
            return match e.kind() {
                io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted => Ok(None),
                _ => Err(e),
            };
        }
        Ok((n as usize).checked_sub(ETH_HEADER_BYTES))
    }
}

fn setsockopt_int(fd: &OwnedFd, opt: libc::c_int, value: usize) -> io::Result<()> {
    let v = libc::c_int::try_from(value).unwrap_or(libc::c_int::MAX);
    // SAFETY: v lives across the call; the size matches its type.
    let rc = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            opt,
            (&v as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as u32,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

impl FrameLink for PacketLink {
    fn mtu_bytes(&self) -> usize {
        self.mtu_bytes
    }

    fn send_frame(&mut self, header: &[u8], payload: &[u8]) -> io::Result<()> {
        let iov = [
            libc::iovec {
                iov_base: self.eth_out.as_ptr() as *mut _,
                iov_len: ETH_HEADER_BYTES,
            },
            libc::iovec {
                iov_base: header.as_ptr() as *mut _,
                iov_len: header.len(),
            },
            libc::iovec {
                iov_base: payload.as_ptr() as *mut _,
                iov_len: payload.len(),
            },
        ];
        // SAFETY: the iovecs describe live buffers the kernel only reads.
        let n = unsafe { libc::writev(self.fd.as_raw_fd(), iov.as_ptr(), iov.len() as i32) };
        if n >= 0 {
            return Ok(());
        }
        let e = io::Error::last_os_error();
        match e.raw_os_error() {
            // A full queue (a shaper's, the device's) dropped the frame:
            // a loss like any other, which the protocol repairs.
            Some(libc::ENOBUFS) | Some(libc::EAGAIN) | Some(libc::EINTR) => Ok(()),
            _ => Err(e),
        }
    }

    fn recv_frame(&mut self, buf: &mut [u8], wait: Option<Duration>) -> io::Result<Option<usize>> {
        if let Some(got) = self.try_recv(buf)? {
            return Ok(Some(got));
        }
        let Some(wait) = wait else {
            return Ok(None);
        };
        let ts = libc::timespec {
            tv_sec: wait.as_secs() as libc::time_t,
            tv_nsec: wait.subsec_nanos() as libc::c_long,
        };
        let mut pfd = libc::pollfd {
            fd: self.fd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd and a valid timespec; no signal mask.
        let rc = unsafe { libc::ppoll(&mut pfd, 1, &ts, std::ptr::null()) };
        if rc < 0 {
            let e = io::Error::last_os_error();
            return if e.kind() == io::ErrorKind::Interrupted {
                Ok(None)
            } else {
                Err(e)
            };
        }
        self.try_recv(buf)
    }

    fn learn_peer(&mut self) {
        let source = &self.eth_in[6..12];
        self.eth_out[..6].copy_from_slice(source);
    }
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
