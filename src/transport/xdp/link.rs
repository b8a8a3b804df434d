//! [`XdpLink`]: the frame protocol's [`FrameLink`] over an AF_XDP socket,
//! with the steering program attached for exactly as long as it lives.

use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::time::Duration;

use anyhow::{anyhow, Context, Result};
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};

use super::bpf::{self, AttachMode};
use super::socket::{XskSocket, FRAME_BYTES, KERNEL_HEADROOM_BYTES};
use crate::transport::frames::{self, aborted_error, FrameLink, ETHERTYPE};
use crate::transport::iface::Iface;
use crate::transport::wait::ABORT_CHECK_EVERY;
use crate::transport::{AbortHandle, AbortPair};

/// Bytes of an Ethernet header (destination, source, type).
const ETH_HEADER_BYTES: usize = 14;
/// The receive queue wulf's socket binds to. Frames of an EtherType no
/// RSS hash understands all hash alike and land on one queue, queue 0 in
/// practice (on a multi-queue NIC and on veth alike); a frame on another
/// queue passes to the stack and is lost, which the protocol repairs.
const QUEUE: u32 = 0;

/// How the socket and program were set up, for the result's settings.
#[derive(Debug, Clone, Copy)]
pub struct Setup {
    /// Where the program runs.
    pub attach: AttachMode,
    /// Whether the socket moves frames without copies.
    pub zero_copy: bool,
    /// The receive queue bound.
    pub queue: u32,
    /// The interface's receive queues (frames on another than `queue`
    /// miss the socket and are resent by the protocol).
    pub queues: u32,
}

/// Frames of wulf's EtherType through an AF_XDP socket on one interface.
pub struct XdpLink {
    // Field order is drop order: the program goes before the socket, so
    // no frame is steered to a socket that is closing.
    _attached: OwnedFd,
    _prog: OwnedFd,
    _map: OwnedFd,
    sock: XskSocket,
    /// Ends the waits when a server's client goes away (the session's
    /// watchdog holds the handle): the program is detached at once.
    abort: AbortPair,
    /// The Ethernet header of every frame sent: peer, own address, type.
    eth_out: [u8; ETH_HEADER_BYTES],
    /// The Ethernet header of the last frame received.
    eth_in: [u8; ETH_HEADER_BYTES],
    mtu_bytes: usize,
    setup: Setup,
}

/// The largest frame (after the Ethernet header) a UMEM frame holds: a
/// larger interface MTU is not used (the handshake agrees on the smaller).
pub const MAX_MTU_BYTES: usize = FRAME_BYTES - KERNEL_HEADROOM_BYTES - ETH_HEADER_BYTES;

/// Receive queues of interface `name` (at least 1).
fn rx_queues(name: &str) -> u32 {
    std::fs::read_dir(format!("/sys/class/net/{name}/queues"))
        .map(|d| {
            d.filter_map(|e| e.ok())
                .filter(|e| e.file_name().to_string_lossy().starts_with("rx-"))
                .count() as u32
        })
        .unwrap_or(1)
        .max(1)
}

/// What a permission error from `what` means for the user.
pub fn explain(what: &str, e: io::Error) -> anyhow::Error {
    match e.raw_os_error() {
        Some(libc::EPERM) | Some(libc::EACCES) if !e.to_string().contains("refused") => anyhow!(
            "{what}: {e}: AF_XDP needs CAP_NET_ADMIN, CAP_NET_RAW and CAP_BPF (or CAP_SYS_ADMIN)"
        ),
        _ => anyhow!("{what}: {e}"),
    }
}

impl XdpLink {
    /// A socket on `iface` sending to `peer_mac`, and the program that
    /// steers the frames addressed to channel `own_id` to it.
    pub fn open(iface: &Iface, peer_mac: [u8; 6], own_id: u32) -> Result<XdpLink> {
        let queues = rx_queues(&iface.name);
        let map = bpf::create_xskmap(queues).map_err(|e| explain("cannot make an XSKMAP", e))?;
        let prog = bpf::load_program(&map, own_id)
            .map_err(|e| explain("cannot load the XDP program", e))?;
        let sock = XskSocket::open(iface.index, QUEUE)
            .map_err(|e| explain(&format!("no AF_XDP socket on {}", iface.name), e))?;
        bpf::set_socket(&map, QUEUE, sock.fd())
            .map_err(|e| explain("cannot put the socket into the XSKMAP", e))?;
        // Attached last: the program steers frames only once a socket waits.
        let (attached, attach) = bpf::attach(&prog, iface.index)
            .map_err(|e| explain(&format!("cannot attach XDP to {}", iface.name), e))
            .with_context(|| format!("interface {}", iface.name))?;
        let mut eth_out = [0u8; ETH_HEADER_BYTES];
        eth_out[..6].copy_from_slice(&peer_mac);
        eth_out[6..12].copy_from_slice(&iface.mac);
        eth_out[12..].copy_from_slice(&ETHERTYPE.to_be_bytes());
        let setup = Setup {
            attach,
            zero_copy: sock.zero_copy(),
            queue: QUEUE,
            queues,
        };
        Ok(XdpLink {
            _attached: attached,
            _prog: prog,
            _map: map,
            sock,
            abort: AbortPair::new().context("cannot make the channel's abort pair")?,
            eth_out,
            eth_in: [0; ETH_HEADER_BYTES],
            mtu_bytes: iface.mtu_bytes.min(MAX_MTU_BYTES),
            setup,
        })
    }

    /// How the socket and program were set up.
    pub fn setup(&self) -> Setup {
        self.setup
    }

    /// One non-blocking receive.
    fn try_recv(&mut self, buf: &mut [u8]) -> Option<usize> {
        loop {
            let eth_in = &mut self.eth_in;
            let got = self.sock.recv(|frame| {
                let (eth, rest) = frame.split_at_checked(ETH_HEADER_BYTES)?;
                eth_in.copy_from_slice(eth);
                let n = rest.len().min(buf.len());
                buf[..n].copy_from_slice(&rest[..n]);
                Some(n)
            })?;
            // A runt (shorter than an Ethernet header) is skipped.
            if let Some(n) = got {
                return Some(n);
            }
        }
    }
}

impl FrameLink for XdpLink {
    fn mtu_bytes(&self) -> usize {
        self.mtu_bytes
    }

    fn send_frame(&mut self, header: &[u8], payload: &[u8]) -> io::Result<()> {
        // A frame that found no room is a loss like any other: the
        // protocol resends it.
        self.sock
            .send(&[&self.eth_out, header, payload])
            .map(|_| ())
    }

    fn queue_frame(&mut self, header: &[u8], payload: &[u8]) -> io::Result<()> {
        // No room: a loss like any other, as in send_frame.
        self.sock
            .queue(&[&self.eth_out, header, payload])
            .map(|_| ())
    }

    fn push_frames(&mut self) -> io::Result<()> {
        self.sock.push()
    }

    fn recv_frame(&mut self, buf: &mut [u8], wait: Option<Duration>) -> io::Result<Option<usize>> {
        if let Some(got) = self.try_recv(buf) {
            return Ok(Some(got));
        }
        self.sock.flush()?;
        let Some(wait) = wait else {
            return Ok(None);
        };
        // An AF_XDP socket has no blocking receive (recvmsg without
        // MSG_DONTWAIT is EOPNOTSUPP), so the wait is poll. With a wait
        // that may be late (frames::coarse_timers: a ping-pong's, a
        // receiver's) it polls the socket alone, waking at least every
        // ABORT_CHECK_EVERY to look at the abort: a second descriptor in
        // the poll cost the C ring probe 1.5-2% a message
        // (bench/lean_recv_variants.sh, ring against ring+abort). An exact
        // wait (a stream's resend timer) polls both.
        let coarse = frames::coarse_timers();
        let wait = if coarse {
            wait.min(ABORT_CHECK_EVERY)
        } else {
            wait
        };
        // Whole milliseconds, rounded up: a shorter wait would spin.
        let ms = wait.as_micros().div_ceil(1000);
        let timeout =
            PollTimeout::try_from(ms.min(i32::MAX as u128) as i32).unwrap_or(PollTimeout::MAX);
        let mut fds = [
            PollFd::new(self.sock.fd().as_fd(), PollFlags::POLLIN),
            PollFd::new(self.abort.watch_fd(), PollFlags::POLLIN),
        ];
        let polled = if coarse { &mut fds[..1] } else { &mut fds[..] };
        let ready = match poll(polled, timeout) {
            Ok(n) => n,
            Err(nix::errno::Errno::EINTR) => 1,
            Err(e) => return Err(e.into()),
        };
        let look = if coarse {
            ready == 0
        } else {
            fds[1].revents().is_some_and(|r| !r.is_empty())
        };
        if look && self.abort.aborted() {
            return Err(aborted_error());
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
