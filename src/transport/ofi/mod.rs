//! libfabric (OFI), measured through its tagged interface (FI_TAGGED) on
//! reliable-datagram endpoints (FI_EP_RDM): the layer Open MPI's `mtl ofi`
//! and MPICH's ch4:ofi sit on, so an `ofi(...)` sweep beside an `mpi:...`
//! one shows what the MPI adds.
//!
//! One transport per provider a site would name (`FI_PROVIDER`):
//! - `ofi(tcp)`: TCP sockets (RDM through the ofi_rxm utility layer);
//! - `ofi(udp)`: UDP datagrams made reliable by the ofi_rxd layer;
//! - `ofi(shm)`: shared memory between processes of one host.
//!
//! The listening side opens an endpoint and describes its address (hex);
//! the measuring side opens its own, inserts that address in its address
//! vector and sends its own address as a hello, from which the listener
//! inserts it back and answers: both ends know each other before any
//! timing. Every message is one `fi_tsend` / `fi_trecv` of one tag,
//! completed on the endpoint's completion queue ([`rdm`]). The provider,
//! endpoint type, protocol, fabric and domain libfabric chose are recorded,
//! so a result says which path it took, not which one was asked for.

mod info;
pub mod library;
mod rdm;

use std::io;
use std::net::IpAddr;
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};
use serde_json::{json, Value};

use self::rdm::RdmEndpoint;
use super::{AbortHandle, ChannelOptions, Connected, Endpoint, Listener, Transport};
use crate::sys::random::{from_hex_at_most, hex};

/// The tag of every data message.
const DATA_TAG: u64 = 1;
/// The tag of the hello (the connector's address) and its answer.
const HELLO_TAG: u64 = 2;
/// Messages in flight at once in stream mode (as MPI's default window,
/// and osu_bw's, and the `ucx` transports').
const STREAM_WINDOW: usize = crate::transport::mpi::DEFAULT_WINDOW as usize;
/// The largest endpoint address wulf accepts in a hello.
const MOST_ADDRESS_BYTES: usize = 4096;

/// One libfabric provider, as a transport.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ofi {
    name: &'static str,
    about: &'static str,
    /// The provider asked of `fi_getinfo`.
    provider: &'static str,
    /// Whether its endpoints are reached by IP address (bound to the
    /// address the channel is made on); shared memory's are not.
    over_ip: bool,
    /// The transport beneath it in `wulf study layers`, if it is there.
    over: Option<&'static str>,
}

impl Ofi {
    /// The tcp provider (RDM over ofi_rxm).
    pub const TCP: Ofi = Ofi {
        name: "ofi(tcp)",
        about: "libfabric tagged messages over its tcp provider (FI_EP_RDM via ofi_rxm)",
        provider: "tcp",
        over_ip: true,
        over: Some("tcp"),
    };
    /// The udp provider (RDM over ofi_rxd).
    pub const UDP: Ofi = Ofi {
        name: "ofi(udp)",
        about: "libfabric tagged messages over its udp provider (FI_EP_RDM via ofi_rxd)",
        provider: "udp",
        over_ip: true,
        over: None,
    };
    /// The shm provider.
    pub const SHM: Ofi = Ofi {
        name: "ofi(shm)",
        about: "libfabric tagged messages over its shm provider (shared memory, one host)",
        provider: "shm",
        over_ip: false,
        over: Some("shm"),
    };

    /// An endpoint of this provider, on `ip` where it is reached by IP.
    fn open(&self, opts: &ChannelOptions, ip: IpAddr) -> Result<RdmEndpoint> {
        let api = library::api().map_err(|e| anyhow!(e))?;
        let source = self.over_ip.then_some(ip);
        RdmEndpoint::open(api, self.provider, source, opts.wait)
            .with_context(|| format!("{}: opening a libfabric endpoint", self.name))
    }

    fn settings(&self, end: &RdmEndpoint) -> serde_json::Map<String, Value> {
        let chosen = end.chosen();
        let api = library::api().expect("loaded: an endpoint exists");
        let wait = if end.sleeps() {
            "fi_cq_sread (the queue's wait object)"
        } else {
            "fi_cq_read polled"
        };
        let mut s = serde_json::Map::new();
        s.insert("ofi_version".into(), json!(api.version_text()));
        s.insert("ofi_provider".into(), json!(chosen.provider));
        s.insert("ofi_fabric".into(), json!(chosen.fabric));
        s.insert("ofi_domain".into(), json!(chosen.domain));
        s.insert("ofi_endpoint_type".into(), json!(chosen.endpoint_type));
        s.insert("ofi_protocol".into(), json!(chosen.protocol));
        s.insert("ofi_interface".into(), json!("tagged"));
        s.insert("ofi_max_msg_bytes".into(), json!(chosen.max_msg_bytes));
        s.insert("ofi_inject_bytes".into(), json!(chosen.inject_bytes));
        s.insert("ofi_completion".into(), json!(wait));
        s.insert(
            "calls".into(),
            json!("fi_tsend; fi_trecv; fi_cq_read until complete"),
        );
        s
    }

    /// A channel made, with what libfabric chose.
    fn connected(&self, end: OfiEndpoint) -> Connected {
        let settings = self.settings(&end.rdm);
        Connected {
            endpoint: Box::new(end),
            settings,
            warnings: Vec::new(),
        }
    }
}

/// The libfabric transports, listed whether or not libfabric is installed
/// (a missing one explains itself).
pub(super) fn transports() -> Vec<Box<dyn Transport>> {
    vec![Box::new(Ofi::TCP), Box::new(Ofi::UDP), Box::new(Ofi::SHM)]
}

impl Transport for Ofi {
    fn name(&self) -> &'static str {
        self.name
    }

    fn about(&self) -> &'static str {
        self.about
    }

    fn availability(&self) -> Result<(), String> {
        library::api().map(drop)
    }

    fn local_only(&self) -> bool {
        !self.over_ip
    }

    fn layering(&self, path: super::LayersPath) -> Option<super::Layering> {
        let here = (path == super::LayersPath::SharedMemory) != self.over_ip;
        self.over.filter(|_| here).map(super::Layering::Over)
    }

    fn claims_nic(&self) -> bool {
        // tcp and udp are the kernel's sockets, shared like any other.
        false
    }

    fn listen(&self, opts: &ChannelOptions, bind_ip: IpAddr) -> Result<Box<dyn Listener>> {
        let rdm = self.open(opts, bind_ip)?;
        let address = rdm.name()?;
        Ok(Box::new(OfiListener {
            ofi: *self,
            rdm,
            address,
            timeout: opts.timeout(),
        }))
    }

    fn connect(
        &self,
        description: &Value,
        opts: &ChannelOptions,
        peer_ip: IpAddr,
    ) -> Result<Connected> {
        let theirs = description["ofi_address"]
            .as_str()
            .and_then(|h| from_hex_at_most(h, MOST_ADDRESS_BYTES))
            .ok_or_else(|| anyhow!("{}: the peer sent no endpoint address", self.name))?;
        let source = if self.over_ip {
            crate::exec::local_address_toward(peer_ip)?
        } else {
            peer_ip
        };
        let mut rdm = self.open(opts, source)?;
        let peer = rdm.insert(&theirs)?;
        let timeout = opts.timeout();
        // The hello: this endpoint's address, answered once the listener
        // has inserted it.
        let mine = rdm.name()?;
        rdm.post_send(&mine, peer, HELLO_TAG, timeout)?;
        rdm.wait(1, 0, timeout, "sending the hello")?;
        rdm.post_recv(&mut [], HELLO_TAG, timeout)?;
        rdm.wait(0, 1, timeout, "waiting for the hello's answer")?;
        Ok(self.connected(OfiEndpoint { rdm, peer, timeout }))
    }
}

/// The listening side: an endpoint whose address the peer was given.
struct OfiListener {
    ofi: Ofi,
    rdm: RdmEndpoint,
    address: Vec<u8>,
    timeout: Duration,
}

impl Listener for OfiListener {
    fn describe(&self) -> Value {
        json!({ "ofi_address": hex(&self.address) })
    }

    fn abort_handle(&self) -> Option<AbortHandle> {
        self.rdm.abort_handle()
    }

    fn accept(self: Box<Self>, timeout: Duration) -> Result<Connected> {
        let OfiListener {
            ofi,
            mut rdm,
            timeout: channel_timeout,
            ..
        } = *self;
        let mut hello = vec![0u8; MOST_ADDRESS_BYTES];
        rdm.post_recv_any(&mut hello, HELLO_TAG, timeout)?;
        rdm.wait(0, 1, timeout, "waiting for the measuring side's hello")?;
        hello.truncate(rdm.last_recv_len());
        if hello.is_empty() {
            bail!("{}: the hello carried no address", ofi.name);
        }
        let peer = rdm.insert(&hello)?;
        rdm.post_send(&[], peer, HELLO_TAG, channel_timeout)?;
        rdm.wait(1, 0, channel_timeout, "answering the hello")?;
        Ok(ofi.connected(OfiEndpoint {
            rdm,
            peer,
            timeout: channel_timeout,
        }))
    }
}

/// One end of a libfabric channel: its endpoint and the other end's
/// address in it.
struct OfiEndpoint {
    rdm: RdmEndpoint,
    peer: u64,
    timeout: Duration,
}

impl Endpoint for OfiEndpoint {
    fn send(&mut self, buf: &[u8]) -> io::Result<()> {
        self.rdm.post_send(buf, self.peer, DATA_TAG, self.timeout)?;
        self.rdm.wait(1, 0, self.timeout, "fi_tsend")
    }

    fn recv(&mut self, buf: &mut [u8]) -> io::Result<()> {
        self.rdm.post_recv(buf, DATA_TAG, self.timeout)?;
        self.rdm.wait(0, 1, self.timeout, "fi_trecv")
    }

    fn exchange(&mut self, out: &[u8], inp: &mut [u8]) -> io::Result<()> {
        // The receive first, so that both ends' sends find one waiting
        // whatever their size (a rendezvous send waits for it).
        self.rdm.post_recv(inp, DATA_TAG, self.timeout)?;
        self.rdm.post_send(out, self.peer, DATA_TAG, self.timeout)?;
        self.rdm.wait(1, 1, self.timeout, "fi_tsend and fi_trecv")
    }

    fn abort_handle(&self) -> Option<AbortHandle> {
        self.rdm.abort_handle()
    }

    fn stream_window(&self) -> u64 {
        STREAM_WINDOW as u64
    }

    fn send_stream(&mut self, buf: &[u8], count: u64) -> io::Result<()> {
        let mut left = count;
        while left > 0 {
            let n = left.min(STREAM_WINDOW as u64) as usize;
            for _ in 0..n {
                self.rdm.post_send(buf, self.peer, DATA_TAG, self.timeout)?;
            }
            self.rdm.wait(n, 0, self.timeout, "fi_tsend (a window)")?;
            left -= n as u64;
        }
        Ok(())
    }

    fn recv_stream(&mut self, buf: &mut [u8], count: u64) -> io::Result<()> {
        let mut left = count;
        while left > 0 {
            let n = left.min(STREAM_WINDOW as u64) as usize;
            // Every message of a stream carries the same bytes (one buffer
            // sent again), so the window's receives may share one buffer.
            for _ in 0..n {
                self.rdm.post_recv(buf, DATA_TAG, self.timeout)?;
            }
            self.rdm.wait(0, n, self.timeout, "fi_trecv (a window)")?;
            left -= n as u64;
        }
        Ok(())
    }
}
