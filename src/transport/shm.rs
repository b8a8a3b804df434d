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
//! Messages of at least [`SINGLE_COPY_MIN_BYTES`] sent from the send
//! memory this transport lends the sweep ([`Endpoint::send_memory`]) go by
//! single copy instead (see [`shm_message`]): the receiver copies them
//! once, straight out of the sender's buffer. Each end's send memory is a
//! memfd the other end opens through /proc during set-up; where it cannot
//! (a /proc that hides other processes), that direction stays on the ring.
//!
//! Layout: header (256 bytes), the server's and the client's doorbells
//! (128 bytes each), the client-to-server ring, the server-to-client ring.
//!
//! [`shm_region`]: super::shm_region
//! [`shm_ring`]: super::shm_ring
//! [`shm_message`]: super::shm_message

use std::io;
use std::os::fd::AsRawFd;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use serde_json::{json, Map, Value};

use super::shm_direct::{Lender, PeerMemory};
use super::shm_message::{self, Direct};
use super::shm_region::{Region, HEADER_BYTES, PARAMS};
use super::shm_ring::{Consumer, Geometry, Producer, INLINE_BYTES};
use super::wait::{Doorbell, Waiter};
use super::{ChannelOptions, Connected, Endpoint, Listener, SendMemory, Transport};
use std::sync::atomic::Ordering;

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

/// Messages from this size on go by single copy (when sent from the lent
/// send memory): below it the ring's copy-in/copy-out, which needs no
/// acknowledgement, is faster.
pub const SINGLE_COPY_MIN_BYTES: usize = 8 << 10;
// Chosen by measurement with --nocache, where every message comes from a
// buffer the sender last touched long ago, so neither protocol profits from
// lines left in the receiver's cache (2 vCPUs, load average about 6, fastest
// of two interleaved runs of each, half round trip): single copy vs ring
// 1.75 vs 0.78 us at 1 KiB, 2.35 vs 1.48 us at 4 KiB, 4.51 vs 6.44 us at
// 8 KiB, 6.75 vs 16.7 us at 16 KiB, 9.9 vs 40 us at 64 KiB, 66 vs 89 us at
// 1 MiB. Without --nocache the sweep resends an unchanged buffer, whose
// lines the receiver still holds from the last copy up to its L2 size;
// single copy then wins at every size from 1 KiB (0.17 vs 0.37 us at 1 KiB,
// 0.24 vs 2.5 us at 16 KiB) and can beat the c2c limit, which copies data
// the other core has just written.
// The L2 size (1 MiB here) was the other candidate for a threshold taken
// from the fingerprint; the crossover above lies far below it, at the
// cost of one extra cache-line hand-off (the acknowledgement), so a fixed
// size is used.
/// Environment variable that overrides [`SINGLE_COPY_MIN_BYTES`] on the
/// peer that creates the channel, for measuring the two protocols against
/// each other (`bench/intranode_vs_mpi.sh`); the value used is recorded.
pub const SINGLE_COPY_MIN_ENV: &str = "WULF_SHM_SINGLE_COPY_MIN_BYTES";

/// Bits of the header's `ready` word during set-up.
const CLIENT_READS_SERVER: u32 = 1;
const SERVER_DONE: u32 = 2;
const SERVER_READS_CLIENT: u32 = 4;

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

    fn layering(&self, path: super::LayersPath) -> Option<super::Layering> {
        (path == super::LayersPath::SharedMemory).then_some(super::Layering::Bottom)
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

    fn claims_nic(&self) -> bool {
        false
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
        params[3] = single_copy_min_bytes()? as u32;
        let region = Region::create(MAGIC, params, layout.total_bytes())?;
        let lender = Lender::new()?;
        region.header().words[0].store(lender.fd() as u64, Ordering::Relaxed);
        Ok(Box::new(ShmListener {
            region,
            abort: super::AbortPair::new()?,
            layout,
            lender,
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
        let h = region.header();
        let lender = Lender::new()?;
        h.words[1].store(lender.fd() as u64, Ordering::Relaxed);
        let server = h.server_pid.load(Ordering::Relaxed);
        let peer = PeerMemory::open(server, h.words[0].load(Ordering::Relaxed)).ok();
        if peer.is_some() {
            h.ready.fetch_or(CLIENT_READS_SERVER, Ordering::Relaxed);
        }
        // Release (in attach): the peer sees the descriptor and verdict.
        region.attach();
        // Both ends have mapped it now: the name can go.
        region.unlink();
        // Whether the peer can read this end's send memory.
        let deadline = std::time::Instant::now() + opts.timeout();
        let ready = loop {
            let r = region.header().ready.load(Ordering::Acquire);
            if r & SERVER_DONE != 0 {
                break r;
            }
            if std::time::Instant::now() >= deadline {
                bail!("the peer did not finish setting up the shm channel");
            }
            // Set-up, not a timing loop.
            std::thread::sleep(Duration::from_micros(200));
        };
        let direct = Direct {
            lender,
            peer,
            peer_reads_mine: ready & SERVER_READS_CLIENT != 0,
            min_bytes: region.param(3) as usize,
        };
        finish(region, layout, opts, Side::Client, direct)
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
    /// Ends the wait for the client when the server's watchdog says so.
    abort: super::AbortPair,
    layout: Layout,
    lender: Lender,
    opts: ChannelOptions,
}

impl Listener for ShmListener {
    fn describe(&self) -> Value {
        json!({ "name": self.region.name(), "bytes": self.region.len() })
    }

    fn abort_handle(&self) -> Option<super::AbortHandle> {
        self.abort.handle()
    }

    fn accept(self: Box<Self>, timeout: Duration) -> Result<Connected> {
        let mut region = self.region;
        let abort = self.abort;
        let client = region.wait_for_attach(timeout, &|| abort.aborted())?;
        region.unlink();
        let h = region.header();
        let peer = PeerMemory::open(client, h.words[1].load(Ordering::Relaxed)).ok();
        let reads = if peer.is_some() {
            SERVER_READS_CLIENT
        } else {
            0
        };
        let ready = h.ready.fetch_or(SERVER_DONE | reads, Ordering::AcqRel);
        let direct = Direct {
            lender: self.lender,
            peer,
            peer_reads_mine: ready & CLIENT_READS_SERVER != 0,
            min_bytes: region.param(3) as usize,
        };
        finish(region, self.layout, &self.opts, Side::Server, direct)
    }
}

/// The single-copy threshold: [`SINGLE_COPY_MIN_BYTES`] or the override.
fn single_copy_min_bytes() -> Result<usize> {
    match std::env::var(SINGLE_COPY_MIN_ENV) {
        Err(_) => Ok(SINGLE_COPY_MIN_BYTES),
        Ok(v) => crate::units::parse_bytes(&v)
            .ok()
            .filter(|&b| b <= u32::MAX as u64)
            .map(|b| b as usize)
            .with_context(|| format!("{SINGLE_COPY_MIN_ENV}={v:?} is not a size below 4 GiB")),
    }
}

fn finish(
    region: Region,
    layout: Layout,
    opts: &ChannelOptions,
    side: Side,
    direct: Direct,
) -> Result<Connected> {
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
    // The pair lives in the endpoint with the waiter that watches it.
    let abort = super::AbortPair::new()?;
    // SAFETY: as above; the watch end lives in the endpoint too.
    let waiter = unsafe { waiter.with_abort(abort.watch_fd().as_raw_fd()) };
    let mut settings = Map::new();
    settings.insert("region".into(), json!(region.path()));
    settings.insert("region_bytes".into(), json!(region.len()));
    settings.insert("unlinked_once_mapped".into(), json!(true));
    settings.insert("chunk_bytes".into(), json!(layout.geo.chunk_bytes));
    settings.insert("slots".into(), json!(layout.geo.slots));
    settings.insert("inline_bytes".into(), json!(INLINE_BYTES));
    settings.insert("wait".into(), json!(opts.wait.name()));
    let (chunk, slots) = (layout.geo.chunk_bytes as u64, layout.geo.slots as u64);
    let single = direct.min_bytes as u64;
    settings.insert("single_copy_min_bytes".into(), json!(single));
    settings.insert("single_copy_sends".into(), json!(direct.peer_reads_mine));
    settings.insert("single_copy_receives".into(), json!(direct.peer.is_some()));
    let mut thresholds = vec![
        (single, format!("shm single-copy threshold ({single} B): from here the receiver copies each message once out of the sender's shared send buffer instead of through the ring (copy-in/copy-out), as MPI switches from eager to rendezvous")),
        (INLINE_BYTES as u64, format!("shm inline size ({INLINE_BYTES} B): larger messages leave the slot's header line for its data area")),
    ];
    // With single copy both ways, messages from `single` on never enter
    // the ring: its chunk and ring sizes are no cause above it (they were
    // once blamed for steps past 8 KiB that single copy made).
    let ring_carries =
        |bytes: u64| bytes < single || !direct.peer_reads_mine || direct.peer.is_none();
    if ring_carries(chunk) {
        thresholds.push((chunk, format!("shm chunk size ({chunk} B): larger messages are copied in several chunks, one slot each")));
    }
    if ring_carries(chunk * slots) {
        thresholds.push((chunk * slots, format!("shm ring size ({slots} slots x {chunk} B): larger messages wait for the reader to free slots")));
    }
    settings.insert(
        crate::result::THRESHOLDS_KEY.into(),
        crate::result::thresholds_value(&thresholds),
    );
    // Through the ring or single copy, a message is copied with memcpy.
    settings.insert(crate::result::COPIES_KEY.into(), json!(true));
    Ok(Connected {
        endpoint: Box::new(ShmEndpoint {
            tx,
            rx,
            waiter,
            direct,
            abort,
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
    direct: Direct,
    /// Ends the waiter's waits when the server's watchdog says so (the
    /// client went away in the middle of a block).
    abort: super::AbortPair,
    // Last: the mapping must outlive everything that points into it.
    _region: Region,
}

impl Endpoint for ShmEndpoint {
    fn send(&mut self, buf: &[u8]) -> io::Result<()> {
        shm_message::send(&mut self.tx, &self.direct, &self.waiter, buf)
    }

    fn recv(&mut self, buf: &mut [u8]) -> io::Result<()> {
        shm_message::recv(&mut self.rx, &mut self.direct, &self.waiter, buf)
    }

    fn exchange(&mut self, out: &[u8], inp: &mut [u8]) -> io::Result<()> {
        shm_message::exchange(
            &mut self.tx,
            &mut self.rx,
            &mut self.direct,
            &self.waiter,
            out,
            inp,
        )
    }

    fn send_memory(&mut self, bytes: usize) -> io::Result<Option<SendMemory>> {
        self.direct.lender.lend(bytes)
    }

    fn abort_handle(&self) -> Option<super::AbortHandle> {
        self.abort.handle()
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
        // A client whose peer never accepts gets an error, not a hang.
        let mut o = opts(WaitMode::Spin);
        o.timeout_ms = 100;
        let l = Shm.listen(&o, ip).unwrap();
        let e = Shm.connect(&l.describe(), &o, ip).err().unwrap();
        assert!(e.to_string().contains("setting up"), "{e}");
        // A client whose peer never answers times out instead of hanging.
        let l = Shm.listen(&o, ip).unwrap();
        let d = l.describe();
        let server = std::thread::spawn(move || l.accept(Duration::from_secs(5)).unwrap());
        let mut c = Shm.connect(&d, &o, ip).unwrap();
        let _idle = server.join().unwrap();
        let mut b = [0u8; 4];
        let e = c.endpoint.recv(&mut b).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::TimedOut);
    }

    #[test]
    fn the_ring_sizes_are_causes_only_where_the_ring_carries_the_message() {
        let ip = IpAddr::V4(Ipv4Addr::LOCALHOST);
        let o = opts(WaitMode::Yield);
        let l = Shm.listen(&o, ip).unwrap();
        let d = l.describe();
        let server = std::thread::spawn(move || l.accept(Duration::from_secs(5)).unwrap());
        let c = Shm.connect(&d, &o, ip).unwrap();
        let _s = server.join().unwrap();
        let text = c.settings[crate::result::THRESHOLDS_KEY].to_string();
        let single =
            c.settings["single_copy_sends"] == true && c.settings["single_copy_receives"] == true;
        let min = c.settings["single_copy_min_bytes"].as_u64().unwrap();
        let chunk = c.settings["chunk_bytes"].as_u64().unwrap();
        assert!(text.contains("single-copy threshold"), "{text}");
        if single && chunk >= min {
            assert!(
                !text.contains("chunk size") && !text.contains("ring size"),
                "{text}"
            );
        } else {
            assert!(text.contains("chunk size"), "{text}");
        }
    }
}
