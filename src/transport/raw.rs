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
//! A ping-pong's frame is sent with one `send`, a window of frames with
//! one `sendmmsg` ([`batch`]); frames are received with `recvmmsg`, a
//! wait blocking in it ([`recv`]), so a ping-pong message costs a `send`
//! and a blocking receive as in plain C, plus one look that finds nothing.

mod batch;
mod recv;

use std::io;
use std::net::IpAddr;
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd};
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};
use serde_json::{json, Value};

use super::frames::protocol::{Params, Reliable};
use super::frames::{aborted_error, handshake, FrameLink, ETHERTYPE};
use super::iface::{describe_listener, FramePeer, Iface};
use super::{AbortHandle, AbortPair, ChannelOptions, Connected, Listener, Transport};

/// Bytes of an Ethernet header (destination, source, type).
const ETH_HEADER_BYTES: usize = 14;

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

    fn claims_nic(&self) -> bool {
        true
    }

    fn lean_stack(&self) -> bool {
        true
    }

    fn needs_link(&self) -> bool {
        true
    }

    fn listen(&self, opts: &ChannelOptions, bind_ip: IpAddr) -> Result<Box<dyn Listener>> {
        let iface = Iface::owning(bind_ip)?;
        let link = PacketLink::open(&iface, [0; 6], opts)?;
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
        let FramePeer {
            id: peer_id,
            mac,
            iface,
        } = FramePeer::from_description(description, peer_ip, opts.iface.as_deref())?;
        let mut link = PacketLink::open(&iface, mac, opts)?;
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
        describe_listener(self.own_id, &self.iface, self.iface.mtu_bytes)
    }

    fn abort_handle(&self) -> Option<AbortHandle> {
        self.link.abort_handle()
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
    let rcvbuf_bytes = link.rx.rcvbuf_bytes();
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
    settings.insert("rcvbuf_requested_bytes".into(), json!(recv::RCVBUF_BYTES));
    settings.insert("rcvbuf_granted_bytes".into(), json!(rcvbuf_bytes));
    settings.insert("rx_batch_frames".into(), json!(recv::BATCH_FRAMES));
    settings.insert("busy_poll".into(), json!(opts.busy_poll));
    settings.insert(
        crate::result::THRESHOLDS_KEY.into(),
        crate::result::periodic_threshold_value(
            channel.chunk_bytes() as u64,
            "one more frame (MTU)",
        ),
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
    rx: recv::RxBatch,
    /// Ends the waits when a server's client goes away (the session's
    /// watchdog holds the handle), as a shut-down socket ends tcp's.
    abort: AbortPair,
    /// The Ethernet header of every frame sent: peer, own address, type.
    eth_out: [u8; ETH_HEADER_BYTES],
    /// The Ethernet header of the last frame received.
    eth_in: [u8; ETH_HEADER_BYTES],
    mtu_bytes: usize,
    /// Frames queued to leave together ([`batch`]).
    batch: batch::Batch,
    /// The test hook [`FAULT_VAR`]: data frames still to receive before
    /// their first payload byte is flipped (None: no fault).
    fault_countdown: Option<u64>,
    /// The protocol spins on looks (`--wait spin`) and never asks the
    /// link to wait: every look must look.
    busy_poll: bool,
    /// The last call sent one frame (a ping-pong's message, an ack).
    sent_one: bool,
}

/// A test hook: `flip-payload:N` flips the first payload byte of every
/// data frame this end receives from the Nth on (after the link's checks,
/// as a link without checksums would deliver them), to show that
/// `--integrity all` catches a corrupted frame wherever it lands (every
/// block's untimed first message included). Read once when the link opens; nothing else
/// changes when it is unset.
pub const FAULT_VAR: &str = "WULF_FRAME_FAULT";

/// The frame number [`FAULT_VAR`] asks to corrupt, if any.
fn fault_countdown() -> Option<u64> {
    let v = std::env::var(FAULT_VAR).ok()?;
    v.strip_prefix("flip-payload:")?.parse().ok()
}

impl PacketLink {
    /// A socket bound to `iface` sending to `peer_mac`.
    fn open(iface: &Iface, peer_mac: [u8; 6], opts: &ChannelOptions) -> Result<PacketLink> {
        let timeout = opts.timeout();
        let fd = open_socket().map_err(|e| match e.raw_os_error() {
            Some(libc::EPERM) | Some(libc::EACCES) => anyhow!("raw frames need CAP_NET_RAW: {e}"),
            _ => anyhow!("cannot open a packet socket: {e}"),
        })?;
        let sock = socket2::SockRef::from(&fd);
        sock.set_write_timeout(Some(timeout))?;
        let rx = recv::RxBatch::new(&fd, ETH_HEADER_BYTES + iface.mtu_bytes).map_err(|e| {
            anyhow!(
                "cannot set up a packet socket's receive buffer on {}: {e}",
                iface.name
            )
        })?;
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
            rx,
            abort: AbortPair::new()?,
            eth_out,
            eth_in: [0; ETH_HEADER_BYTES],
            mtu_bytes: iface.mtu_bytes,
            batch: batch::Batch::new(ETH_HEADER_BYTES + iface.mtu_bytes),
            fault_countdown: fault_countdown(),
            busy_poll: opts.busy_poll,
            sent_one: false,
        })
    }

    /// One frame already received, if the batch holds one (no system call).
    fn try_recv(&mut self, buf: &mut [u8]) -> Option<usize> {
        let eth_in = &mut self.eth_in;
        let n = self
            .rx
            .take(|frame| {
                let (eth, rest) = frame.split_at_checked(ETH_HEADER_BYTES)?;
                eth_in.copy_from_slice(eth);
                let n = rest.len().min(buf.len());
                buf[..n].copy_from_slice(&rest[..n]);
                Some(n)
            })
            .flatten()?;
        if self.fault_countdown.is_some() {
            self.inject_fault(&mut buf[..n]);
        }
        Some(n)
    }

    /// [`FAULT_VAR`]: count data frames, flip a byte from the chosen one on.
    #[cold]
    fn inject_fault(&mut self, frame: &mut [u8]) {
        let Some((h, payload)) = super::frames::header::Header::decode(frame) else {
            return;
        };
        if h.kind != super::frames::header::Kind::Data || payload.is_empty() {
            return;
        }
        match self.fault_countdown {
            Some(0) | Some(1) => {
                frame[super::frames::header::HEADER_BYTES] ^= 0x01;
                self.fault_countdown = Some(0);
            }
            Some(k) => self.fault_countdown = Some(k - 1),
            None => {}
        }
    }
}

impl FrameLink for PacketLink {
    fn mtu_bytes(&self) -> usize {
        self.mtu_bytes
    }

    fn send_frame(&mut self, header: &[u8], payload: &[u8]) -> io::Result<()> {
        self.sent_one = true;
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

    fn queue_frame(&mut self, header: &[u8], payload: &[u8]) -> io::Result<()> {
        if self.batch.full() {
            self.batch.send(&self.fd)?;
        }
        self.batch.put(&[&self.eth_out, header, payload]);
        Ok(())
    }

    fn push_frames(&mut self) -> io::Result<()> {
        if self.batch.queued() == 1 {
            // One frame (a ping-pong's): a plain send.
            self.sent_one = true;
            self.batch.send_one(&self.fd)
        } else {
            self.batch.send(&self.fd)
        }
    }

    fn recv_frame(&mut self, buf: &mut [u8], wait: Option<Duration>) -> io::Result<Option<usize>> {
        if let Some(got) = self.try_recv(buf) {
            return Ok(Some(got));
        }
        let Some(wait) = wait else {
            if std::mem::take(&mut self.sent_one) && !self.busy_poll {
                // Right after one frame left, the answer is not here yet
                // (it is a round trip away): say nothing waits without a
                // system call. The protocol then waits, which receives
                // at once what did come (issue 34: the look cost 1-3%).
                return Ok(None);
            }
            self.rx.fill(self.fd.as_fd(), recv::Block::No)?;
            return Ok(self.try_recv(buf));
        };
        self.sent_one = false;
        if super::frames::coarse_timers() {
            // Block in the receive itself (the cheap wake-up), waking at
            // least every recv::ABORT_CHECK_EVERY to look at the abort.
            self.rx.set_timeout(&self.fd, wait)?;
            if self.rx.fill(self.fd.as_fd(), recv::Block::Timed)? == 0 && self.abort.aborted() {
                return Err(aborted_error());
            }
        } else {
            // An exact deadline (a stream's resend timer): ppoll's timer.
            if recv::poll_wait(self.fd.as_fd(), self.abort.watch_fd(), wait)?
                && self.abort.aborted()
            {
                return Err(aborted_error());
            }
            self.rx.fill(self.fd.as_fd(), recv::Block::No)?;
        }
        Ok(self.try_recv(buf))
    }

    fn abort_handle(&self) -> Option<AbortHandle> {
        self.abort.handle()
    }

    fn aborted(&self) -> bool {
        self.abort.aborted()
    }

    fn learn_peer(&mut self) {
        let source = &self.eth_in[6..12];
        self.eth_out[..6].copy_from_slice(source);
    }
}
