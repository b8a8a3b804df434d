//! `xdp`: messages as Ethernet frames through AF_XDP sockets, wulf's own
//! EtherType 0x88B5, no IP and no TCP: frames go between the driver's
//! rings (or, in copy mode, the kernel's earliest receive hook) and memory
//! shared with user space, past the socket layer `raw` still crosses.
//! Reliability is the frame protocol's ([`super::frames`]), the same as
//! raw's; only the link under it differs.
//!
//! * [`bpf`]: the steering XDP program (raw eBPF instructions, no clang)
//!   and the bpf(2) calls that load it and attach it through a BPF link,
//!   which detaches it when the run ends however it ends;
//! * [`socket`]: the AF_XDP socket, its UMEM and rings;
//! * [`link`]: [`link::XdpLink`], the [`super::frames::FrameLink`] over both.
//!
//! The result records how it ran: `xdp_mode` `copy` or `zero-copy` (veth
//! has no zero-copy), `xdp_attach` `native` (in the driver) or `skb` (the
//! generic hook, where the driver cannot run XDP, e.g. veth at MTU 9000
//! without multi-buffer programs). A UMEM frame is one page, so frames
//! carry at most 3826 bytes: a larger MTU is not used.
//!
//! Copy-mode sends go straight to the device (dev_direct_xmit), past the
//! interface's qdisc: in a lab, the node's uplink shaper does not see
//! them; the switch port's shaper toward the peer still does.

pub mod bpf;
pub mod link;
pub mod socket;

use std::net::IpAddr;
use std::time::Duration;

use anyhow::{Context, Result};
use serde_json::{json, Value};

use super::frames::protocol::{Params, Reliable};
use super::frames::{handshake, FrameLink, ETHERTYPE};
use super::iface::{describe_listener, FramePeer, Iface};
use super::{ChannelOptions, Connected, Listener, Transport};
use link::XdpLink;

/// The `xdp` transport.
pub struct Xdp;

/// Why AF_XDP cannot be used here, if it cannot: a socket, a map and the
/// program are made and dropped again (nothing is attached).
fn probe() -> Result<(), String> {
    let needs = "needs CAP_NET_ADMIN, CAP_NET_RAW and CAP_BPF (or CAP_SYS_ADMIN): run as root or grant the capabilities";
    let denied = |e: &std::io::Error| matches!(e.raw_os_error(), Some(libc::EPERM | libc::EACCES));
    match socket::open_socket() {
        Ok(_) => {}
        Err(e) if denied(&e) => return Err(needs.to_string()),
        Err(e) if e.raw_os_error() == Some(libc::EAFNOSUPPORT) => {
            return Err("kernel built without AF_XDP".to_string())
        }
        Err(e) => return Err(format!("cannot open an AF_XDP socket: {e}")),
    }
    let map = match bpf::create_xskmap(1) {
        Ok(m) => m,
        Err(e) if denied(&e) => return Err(needs.to_string()),
        Err(e) => return Err(format!("cannot make an XSKMAP: {e}")),
    };
    match bpf::load_program(&map, 1) {
        Ok(_) => Ok(()),
        Err(e) if e.raw_os_error() == Some(libc::EPERM) => Err(needs.to_string()),
        Err(e) => Err(format!("cannot load the XDP program: {e}")),
    }
}

impl Transport for Xdp {
    fn name(&self) -> &'static str {
        "xdp"
    }

    fn about(&self) -> &'static str {
        "Ethernet frames through AF_XDP sockets (EtherType 0x88B5) with wulf's own reliable protocol; across a link only"
    }

    fn availability(&self) -> Result<(), String> {
        probe()
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
        probe().map_err(|why| anyhow::anyhow!("xdp is unavailable: {why}"))?;
        let iface = Iface::owning(bind_ip)?;
        let own_id = fastrand::u32(1..);
        let link = XdpLink::open(&iface, [0; 6], own_id)?;
        Ok(Box::new(XdpListener {
            link,
            iface,
            own_id,
            opts: opts.clone(),
        }))
    }

    fn connect(
        &self,
        description: &Value,
        opts: &ChannelOptions,
        peer_ip: IpAddr,
    ) -> Result<Connected> {
        // `--iface` (the channel options') applies here too.
        let peer = FramePeer::from_description(description, peer_ip, opts.iface.as_deref())?;
        let own_id = fastrand::u32(1..);
        let mut link = XdpLink::open(&peer.iface, peer.mac, own_id)?;
        let mtu = handshake::connect(&mut link, own_id, peer.id, opts.timeout())
            .with_context(|| format!("no AF_XDP channel to {peer_ip} over {}", peer.iface.name))?;
        Ok(channel(
            link,
            &peer.iface.name,
            [own_id, peer.id],
            mtu,
            opts,
        ))
    }
}

struct XdpListener {
    link: XdpLink,
    iface: Iface,
    own_id: u32,
    opts: ChannelOptions,
}

impl Listener for XdpListener {
    fn describe(&self) -> Value {
        describe_listener(self.own_id, &self.iface, self.link.mtu_bytes())
    }

    fn abort_handle(&self) -> Option<crate::transport::AbortHandle> {
        use crate::transport::frames::FrameLink;
        self.link.abort_handle()
    }

    fn accept(mut self: Box<Self>, timeout: Duration) -> Result<Connected> {
        let (peer_id, mtu) = handshake::accept(&mut self.link, self.own_id, timeout)
            .with_context(|| format!("no frames from the measuring side on {}", self.iface.name))?;
        let ids = [self.own_id, peer_id];
        Ok(channel(self.link, &self.iface.name, ids, mtu, &self.opts))
    }
}

/// The reliable channel over `link` once the handshake agreed on `mtu`;
/// `ids` are this end's and the peer's identifiers.
fn channel(
    link: XdpLink,
    iface: &str,
    ids: [u32; 2],
    mtu: usize,
    opts: &ChannelOptions,
) -> Connected {
    let setup = link.setup();
    let reliable = Reliable::new(
        link,
        Params {
            own_id: ids[0],
            peer_id: ids[1],
            mtu_bytes: mtu,
            timeout: opts.timeout(),
            busy_poll: opts.busy_poll,
        },
    );
    let chunk = reliable.chunk_bytes();
    let threshold = crate::result::periodic_threshold_value(chunk as u64, "one more frame (MTU)");
    let mode = if setup.zero_copy { "zero-copy" } else { "copy" };
    let settings = [
        ("interface", json!(iface)),
        ("ethertype", json!(format!("0x{ETHERTYPE:04x}"))),
        ("mtu_bytes", json!(mtu)),
        ("frame_payload_bytes", json!(chunk)),
        ("window_frames", json!(reliable.window_frames())),
        ("busy_poll", json!(opts.busy_poll)),
        ("xdp_mode", json!(mode)),
        ("xdp_attach", json!(setup.attach.name())),
        ("rx_queue", json!(setup.queue)),
        ("rx_queues", json!(setup.queues)),
        (crate::result::THRESHOLDS_KEY, threshold),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    Connected {
        endpoint: Box::new(reliable),
        settings,
        warnings: Vec::new(),
    }
}
