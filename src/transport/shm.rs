//! Shared memory: the two processes map one region and pass messages
//! through it by copy-in and copy-out, as the shared-memory paths of MPI
//! libraries do.
//!
//! The peer's `listen` creates the region in /dev/shm (see [`shm_region`]:
//! it is unlinked as soon as both ends have mapped it, so nothing is left
//! behind even after `kill -9`). The region holds a header, one doorbell per
//! end for `--wait block`, and one ring of chunk slots per direction (see
//! [`shm_ring`]): large messages are cut into chunks and pipelined, and
//! `exchange` moves chunks both ways in turn, so bidirectional transfers of
//! any size progress. Small messages travel inside a slot's first cache
//! line, next to its sequence number.
//!
//! Layout: header (256 bytes), the server's and the client's doorbells
//! (128 bytes each), the client-to-server ring, the server-to-client ring.
//!
//! [`shm_region`]: super::shm_region
//! [`shm_ring`]: super::shm_ring

use std::io;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use serde_json::{json, Map, Value};

use super::shm_region::{Region, HEADER_BYTES, PARAMS};
use super::shm_ring::{self, Consumer, Geometry, Producer, INLINE_BYTES};
use super::wait::{Doorbell, Waiter};
use super::{ChannelOptions, Connected, Endpoint, Listener, Transport};

/// Header magic: "wulfshm1".
const MAGIC: u64 = u64::from_le_bytes(*b"wulfshm1");

/// Chunk size: large enough that the per-chunk hand-off (a few cache-line
/// transfers) is small beside the copy, small enough that a ring in flight
/// stays in the L2 caches of both cores.
pub const CHUNK_BYTES: usize = 32 << 10;
/// Slots per ring: enough chunks in flight for copy-in and copy-out to
/// overlap without either end waiting on the other's every chunk.
pub const SLOTS: usize = 8;
// Measured against other geometries (2 vCPUs, L2 1 MiB, load average about
// 8): chunks of 16, 32, 64 and 128 KiB with 4 to 16 slots gave fastest
// trials within 6% of each other at 1 and 4 MiB, so the geometry stays. Huge
// pages for the rings are not to be had on a default Debian kernel: the
// region is shmem, and transparent huge pages for shmem are `never`
// (/sys/kernel/mm/transparent_hugepage/shmem_enabled), so MADV_HUGEPAGE
// would do nothing; MAP_HUGETLB needs pages reserved by the administrator.

const DOORBELL_BYTES: usize = std::mem::size_of::<Doorbell>();

/// Offsets inside a region of a given geometry.
#[derive(Debug, Clone, Copy)]
struct Layout {
    geo: Geometry,
}

impl Layout {
    fn server_bell(self) -> usize {
        HEADER_BYTES
    }
    fn client_bell(self) -> usize {
        HEADER_BYTES + DOORBELL_BYTES
    }
    fn ring_to_server(self) -> usize {
        HEADER_BYTES + 2 * DOORBELL_BYTES
    }
    fn ring_to_client(self) -> usize {
        self.ring_to_server() + self.geo.ring_bytes()
    }
    fn total_bytes(self) -> usize {
        self.ring_to_client() + self.geo.ring_bytes()
    }
}

/// The shared-memory transport.
pub struct Shm;

impl Transport for Shm {
    fn name(&self) -> &'static str {
        "shm"
    }

    fn about(&self) -> &'static str {
        "shared memory, copy-in/copy-out through pipelined rings (same host only)"
    }

    fn availability(&self) -> Result<(), String> {
        Region::create(MAGIC, [0; PARAMS], HEADER_BYTES)
            .map(drop)
            .map_err(|e| format!("{e:#}"))
    }

    fn local_only(&self) -> bool {
        true
    }

    fn listen(
        &self,
        opts: &ChannelOptions,
        _bind_ip: std::net::IpAddr,
    ) -> Result<Box<dyn Listener>> {
        let geo = Geometry::new(CHUNK_BYTES, SLOTS).map_err(anyhow::Error::msg)?;
        let layout = Layout { geo };
        let mut params = [0u32; PARAMS];
        params[0] = geo.chunk_bytes as u32;
        params[1] = geo.slots as u32;
        params[2] = opts.wait.code();
        let region = Region::create(MAGIC, params, layout.total_bytes())?;
        Ok(Box::new(ShmListener {
            region,
            layout,
            opts: opts.clone(),
        }))
    }

    fn connect(
        &self,
        description: &Value,
        opts: &ChannelOptions,
        _peer_ip: std::net::IpAddr,
    ) -> Result<Connected> {
        let name = description
            .get("name")
            .and_then(Value::as_str)
            .context("the peer sent no shared memory name")?;
        let mut region = Region::open(name, MAGIC)?;
        let geo = Geometry::new(region.param(0) as usize, region.param(1) as usize)
            .map_err(|e| anyhow::anyhow!("shared memory {}: {e}", region.path()))?;
        let layout = Layout { geo };
        if layout.total_bytes() != region.len() {
            bail!(
                "shared memory {} is {} bytes, its layout needs {}",
                region.path(),
                region.len(),
                layout.total_bytes()
            );
        }
        if region.param(2) != opts.wait.code() {
            bail!("the peer set up another --wait mode than this end");
        }
        region.attach();
        // Both ends have mapped it now: the name can go.
        region.unlink();
        finish(region, layout, opts, Side::Client)
    }
}

/// Which end of the region this process is.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Side {
    Server,
    Client,
}

struct ShmListener {
    region: Region,
    layout: Layout,
    opts: ChannelOptions,
}

impl Listener for ShmListener {
    fn describe(&self) -> Value {
        json!({ "name": self.region.name(), "bytes": self.region.len() })
    }

    fn accept(self: Box<Self>, timeout: Duration) -> Result<Connected> {
        let mut region = self.region;
        region.wait_for_attach(timeout)?;
        region.unlink();
        finish(region, self.layout, &self.opts, Side::Server)
    }
}

fn finish(region: Region, layout: Layout, opts: &ChannelOptions, side: Side) -> Result<Connected> {
    let base = region.base();
    let (tx, rx, mine, theirs) = match side {
        Side::Client => (
            layout.ring_to_server(),
            layout.ring_to_client(),
            layout.client_bell(),
            layout.server_bell(),
        ),
        Side::Server => (
            layout.ring_to_client(),
            layout.ring_to_server(),
            layout.server_bell(),
            layout.client_bell(),
        ),
    };
    // SAFETY: every offset lies inside the region (total_bytes was checked
    // against its length), is a multiple of 64 from a page-aligned base,
    // and the region (zeroed at creation) lives in the endpoint as long as
    // the producer, consumer and waiter that point into it. Each ring has
    // exactly one producer (this end or the other) and one consumer.
    let (tx, rx, waiter) = unsafe {
        (
            Producer::new(base.add(tx), layout.geo),
            Consumer::new(base.add(rx), layout.geo),
            Waiter::new(
                opts.wait,
                opts.timeout(),
                base.add(mine) as *const Doorbell,
                base.add(theirs) as *const Doorbell,
            ),
        )
    };
    let mut settings = Map::new();
    settings.insert("region".into(), json!(region.path()));
    settings.insert("region_bytes".into(), json!(region.len()));
    settings.insert("unlinked_once_mapped".into(), json!(true));
    settings.insert("chunk_bytes".into(), json!(layout.geo.chunk_bytes));
    settings.insert("slots".into(), json!(layout.geo.slots));
    settings.insert("inline_bytes".into(), json!(INLINE_BYTES));
    settings.insert("wait".into(), json!(opts.wait.name()));
    let (chunk, slots) = (layout.geo.chunk_bytes as u64, layout.geo.slots as u64);
    settings.insert(
        super::THRESHOLDS_KEY.into(),
        super::thresholds_value(&[
            (INLINE_BYTES as u64, format!("shm inline size ({INLINE_BYTES} B): larger messages leave the slot's header line for its data area")),
            (chunk, format!("shm chunk size ({chunk} B): larger messages are copied in several chunks, one slot each")),
            (chunk * slots, format!("shm ring size ({slots} slots x {chunk} B): larger messages wait for the reader to free slots")),
        ]),
    );
    Ok(Connected {
        endpoint: Box::new(ShmEndpoint {
            tx,
            rx,
            waiter,
            _region: region,
        }),
        settings,
        warnings: Vec::new(),
    })
}

/// One end of a shared-memory channel.
struct ShmEndpoint {
    tx: Producer,
    rx: Consumer,
    waiter: Waiter,
    // Last: the mapping must outlive everything that points into it.
    _region: Region,
}

impl Endpoint for ShmEndpoint {
    fn send(&mut self, buf: &[u8]) -> io::Result<()> {
        shm_ring::send(&mut self.tx, &self.waiter, buf)
    }

    fn recv(&mut self, buf: &mut [u8]) -> io::Result<()> {
        shm_ring::recv(&mut self.rx, &self.waiter, buf)
    }

    fn exchange(&mut self, out: &[u8], inp: &mut [u8]) -> io::Result<()> {
        shm_ring::exchange(&mut self.tx, &mut self.rx, &self.waiter, out, inp)
    }
}

#[cfg(test)]
mod tests {
    use super::super::wait::WaitMode;
    use super::*;
    use std::net::{IpAddr, Ipv4Addr};

    fn opts(wait: WaitMode) -> ChannelOptions {
        ChannelOptions::local_for_tests(wait)
    }

    #[test]
    fn listen_connect_exchange_and_unlink() {
        let ip = IpAddr::V4(Ipv4Addr::LOCALHOST);
        let o = opts(WaitMode::Yield);
        let l = Shm.listen(&o, ip).unwrap();
        let d = l.describe();
        let path = format!("/dev/shm{}", d["name"].as_str().unwrap());
        assert!(std::path::Path::new(&path).exists());
        let server = std::thread::spawn(move || {
            let mut c = l.accept(Duration::from_secs(5)).unwrap();
            let mut b = vec![0u8; 100_000];
            c.endpoint.recv(&mut b).unwrap();
            c.endpoint.send(&b).unwrap();
            let mut small = [0u8; 8];
            c.endpoint.exchange(b"fromserv", &mut small).unwrap();
            assert_eq!(&small, b"fromclie");
        });
        let mut c = Shm.connect(&d, &o, ip).unwrap();
        assert!(
            !std::path::Path::new(&path).exists(),
            "unlinked once mapped"
        );
        let msg: Vec<u8> = (0..100_000).map(|i| (i % 251) as u8).collect();
        c.endpoint.send(&msg).unwrap();
        let mut back = vec![0u8; 100_000];
        c.endpoint.recv(&mut back).unwrap();
        assert!(back == msg);
        let mut small = [0u8; 8];
        c.endpoint.exchange(b"fromclie", &mut small).unwrap();
        assert_eq!(&small, b"fromserv");
        assert_eq!(c.settings["wait"], "yield");
        server.join().unwrap();
    }

    #[test]
    fn mismatched_wait_modes_and_dead_peers_are_errors() {
        let ip = IpAddr::V4(Ipv4Addr::LOCALHOST);
        let l = Shm.listen(&opts(WaitMode::Spin), ip).unwrap();
        let e = Shm
            .connect(&l.describe(), &opts(WaitMode::Block), ip)
            .err()
            .unwrap();
        assert!(e.to_string().contains("--wait"), "{e}");
        // A client whose peer never answers times out instead of hanging.
        let mut o = opts(WaitMode::Spin);
        o.timeout_ms = 100;
        let l = Shm.listen(&o, ip).unwrap();
        let mut c = Shm.connect(&l.describe(), &o, ip).unwrap();
        let mut b = [0u8; 4];
        let e = c.endpoint.recv(&mut b).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::TimedOut);
    }
}
