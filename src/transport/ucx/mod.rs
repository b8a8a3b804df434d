//! UCX (Unified Communication X), measured through its UCP tag-matching
//! API: the layer Open MPI's `pml ucx` and MPICH's ch4:ucx sit on, so a
//! `ucx(...)` sweep beside an `mpi:...` one shows what the MPI adds.
//!
//! One transport per transport selection a site sets with `UCX_TLS`:
//! - `ucx`: UCX's own choice (`UCX_TLS` as the environment says, else all);
//! - `ucx(tcp)`: TCP sockets only;
//! - `ucx(shm)`: shared memory (`UCX_TLS=shm`: posix and sysv segments,
//!   with cma's single copy for large messages where allowed);
//! - `ucx(posix)`: posix shared memory alone, copy in and copy out (beside
//!   `ucx(shm)`, what cma's single copy adds).
//!
//! The listening side makes a worker and describes its address (hex); the
//! measuring side makes its own, an endpoint to it, and sends its address
//! as a hello, from which the listener makes its endpoint back and answers:
//! both endpoints are wired up before any timing. Every message is one
//! `ucp_tag_send_nbx` / `ucp_tag_recv_nbx` of one tag, completed by
//! polling the worker ([`worker`]). The lanes UCX chose are read back from
//! `ucp_ep_print_info` and recorded, so a result says which path it took,
//! not which one was asked for.

pub mod library;
mod worker;

use std::io;
use std::net::IpAddr;
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};
use serde_json::{json, Value};

use self::library::{Handle, Started, TagRecvInfo};
use self::worker::Worker;
use super::{AbortHandle, ChannelOptions, Connected, Endpoint, Listener, Transport};
use crate::sys::random::{from_hex_at_most, hex};

/// The tag of every data message.
const DATA_TAG: u64 = 1;
/// The tag of the hello (the connector's address) and its answer.
const HELLO_TAG: u64 = 2;
/// Messages in flight at once in stream mode (as MPI's default window,
/// and osu_bw's).
const STREAM_WINDOW: usize = crate::transport::mpi::DEFAULT_WINDOW as usize;

/// A message of the wrong length, as an error.
fn wrong_length(got: usize, wanted: usize) -> io::Error {
    io::Error::other(format!("received {got} bytes where {wanted} were expected"))
}

/// Set in processes that run inside a lab node (the lab's own constant,
/// `lab::ENV_NODE`, is a layer above transports).
const LAB_NODE_ENV: &str = "WULF_LAB_NODE";
/// UCX's own choice without shared memory.
const NOT_SHARED_MEMORY: &str = "^shm";
/// The largest worker address wulf accepts in a hello.
const MOST_ADDRESS_BYTES: usize = 64 * 1024;

/// One UCX transport selection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ucx {
    name: &'static str,
    about: &'static str,
    /// `UCX_TLS` (None: the environment's or UCX's default).
    tls: Option<&'static str>,
    /// Whether the selection works only between processes of one host.
    local_only: bool,
    /// The transport beneath it in `wulf study layers`, if it is there.
    over: Option<&'static str>,
}

impl Ucx {
    /// UCX's own choice.
    pub const DEFAULT: Ucx = Ucx {
        name: "ucx",
        about: "UCX tag matching (UCP), the transports UCX selects itself",
        tls: None,
        local_only: false,
        over: None,
    };
    /// TCP only.
    pub const TCP: Ucx = Ucx {
        name: "ucx(tcp)",
        about: "UCX tag matching over TCP sockets (UCX_TLS=tcp)",
        tls: Some("tcp"),
        local_only: false,
        over: Some("tcp"),
    };
    /// Shared memory, with cma's single copy.
    pub const SHM: Ucx = Ucx {
        name: "ucx(shm)",
        about: "UCX tag matching over shared memory, cma for large messages (UCX_TLS=shm)",
        tls: Some("shm"),
        local_only: true,
        over: Some("shm"),
    };
    /// Posix shared memory alone.
    pub const POSIX: Ucx = Ucx {
        name: "ucx(posix)",
        about: "UCX tag matching over posix shared memory alone, copy in and out (UCX_TLS=posix)",
        tls: Some("posix"),
        local_only: true,
        over: None,
    };

    /// The `UCX_TLS` this end sets, if any. UCX's own choice inside a lab
    /// node leaves shared memory out: the lab's nodes are namespaces of one
    /// machine, which UCX takes for one host (its system id is the
    /// machine's), so it would pick shared memory between "hosts" whose
    /// segments the other node cannot attach, and the hello never arrives.
    /// A `UCX_TLS` the user set is kept.
    fn tls(&self) -> Option<&'static str> {
        let in_lab_node = std::env::var_os(LAB_NODE_ENV).is_some();
        let user_set = std::env::var_os("UCX_TLS").is_some();
        match self.tls {
            None if in_lab_node && !user_set => Some(NOT_SHARED_MEMORY),
            tls => tls,
        }
    }

    fn settings(&self, worker: &Worker, ep: Handle) -> serde_json::Map<String, Value> {
        let mut s = serde_json::Map::new();
        s.insert("ucx_version".into(), json!(worker.api().version()));
        s.insert("ucx_tls".into(), json!(self.tls().unwrap_or("(default)")));
        let info = worker.describe_endpoint(ep);
        s.insert("ucx_lanes".into(), json!(worker::lanes_of(&info)));
        // The protocol switches of this endpoint, as the analysis's causes.
        let thresholds = worker::thresholds_of(&info);
        if !thresholds.is_empty() {
            s.insert(
                crate::result::THRESHOLDS_KEY.into(),
                crate::result::thresholds_value(&thresholds),
            );
        }
        s.insert(
            "calls".into(),
            json!("ucp_tag_send_nbx; ucp_tag_recv_nbx; ucp_worker_progress until complete"),
        );
        s
    }

    fn worker(&self, opts: &ChannelOptions) -> Result<Worker> {
        let api = library::api().map_err(|e| anyhow!(e))?;
        Worker::new(api, self.tls(), opts.wait)
            .with_context(|| format!("{}: setting up UCX", self.name))
    }
}

/// The UCX transports, listed whether or not UCX is installed (a missing
/// one explains itself).
pub(super) fn transports() -> Vec<Box<dyn Transport>> {
    vec![
        Box::new(Ucx::DEFAULT),
        Box::new(Ucx::TCP),
        Box::new(Ucx::SHM),
        Box::new(Ucx::POSIX),
    ]
}

impl Transport for Ucx {
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
        self.local_only
    }

    fn layering(&self, path: super::LayersPath) -> Option<super::Layering> {
        let here = (path == super::LayersPath::SharedMemory) == self.local_only;
        self.over.filter(|_| here).map(super::Layering::Over)
    }

    fn claims_nic(&self) -> bool {
        // UCX's TCP lanes are sockets the kernel shares like any other.
        false
    }

    fn listen(&self, opts: &ChannelOptions, _bind_ip: IpAddr) -> Result<Box<dyn Listener>> {
        let worker = self.worker(opts)?;
        let address = worker.address()?;
        Ok(Box::new(UcxListener {
            ucx: *self,
            worker,
            address,
            timeout: opts.timeout(),
        }))
    }

    fn connect(
        &self,
        description: &Value,
        opts: &ChannelOptions,
        _peer_ip: IpAddr,
    ) -> Result<Connected> {
        let theirs = description["worker_address"]
            .as_str()
            .and_then(|h| from_hex_at_most(h, MOST_ADDRESS_BYTES))
            .ok_or_else(|| anyhow!("{}: the peer sent no worker address", self.name))?;
        let worker = self.worker(opts)?;
        let ep = worker.endpoint_to(&theirs)?;
        let mut end = UcxEndpoint {
            worker,
            ep,
            timeout: opts.timeout(),
            info: TagRecvInfo::default(),
        };
        // The hello: this worker's address, answered once the listener's
        // endpoint back exists.
        let mine = end.worker.address()?;
        end.send_tagged(&mine, HELLO_TAG)
            .context("sending the hello")?;
        end.recv_tagged(&mut [], HELLO_TAG)
            .context("waiting for the hello's answer")?;
        let settings = self.settings(&end.worker, ep);
        Ok(Connected {
            endpoint: Box::new(end),
            settings,
            warnings: Vec::new(),
        })
    }
}

/// The listening side: a worker whose address the peer was given.
struct UcxListener {
    ucx: Ucx,
    worker: Worker,
    address: Vec<u8>,
    timeout: Duration,
}

impl Listener for UcxListener {
    fn describe(&self) -> Value {
        json!({ "worker_address": hex(&self.address) })
    }

    fn abort_handle(&self) -> Option<AbortHandle> {
        self.worker.abort_handle()
    }

    fn accept(self: Box<Self>, timeout: Duration) -> Result<Connected> {
        let UcxListener {
            ucx,
            mut worker,
            timeout: channel_timeout,
            ..
        } = *self;
        let mut hello = vec![0u8; MOST_ADDRESS_BYTES];
        let mut info = TagRecvInfo::default();
        let started = worker.recv(&mut hello, HELLO_TAG, &mut info);
        worker
            .complete(
                started,
                timeout,
                "waiting for the measuring side's hello",
                Some(&mut info),
            )
            .map_err(|e| anyhow!(e))?;
        hello.truncate(info.length);
        if hello.is_empty() {
            bail!("{}: the hello carried no address", ucx.name);
        }
        let ep = worker.endpoint_to(&hello)?;
        let mut end = UcxEndpoint {
            worker,
            ep,
            timeout: channel_timeout,
            info: TagRecvInfo::default(),
        };
        end.send_tagged(&[], HELLO_TAG)
            .context("answering the hello")?;
        let settings = ucx.settings(&end.worker, ep);
        Ok(Connected {
            endpoint: Box::new(end),
            settings,
            warnings: Vec::new(),
        })
    }
}

/// One end of a UCX channel: a worker and its endpoint to the other end.
struct UcxEndpoint {
    worker: Worker,
    ep: Handle,
    timeout: Duration,
    /// Where each receive's length goes (reused: nothing allocates).
    info: TagRecvInfo,
}

// SAFETY: the endpoint belongs to the worker (serialized thread mode) and
// is used only through `&mut self`.
unsafe impl Send for UcxEndpoint {}

impl UcxEndpoint {
    fn send_tagged(&mut self, buf: &[u8], tag: u64) -> io::Result<()> {
        let started = self.worker.send(self.ep, buf, tag);
        self.worker
            .complete(started, self.timeout, "ucp_tag_send_nbx", None)
    }

    fn recv_tagged(&mut self, buf: &mut [u8], tag: u64) -> io::Result<()> {
        let started = self.worker.recv(buf, tag, &mut self.info);
        self.worker.complete(
            started,
            self.timeout,
            "ucp_tag_recv_nbx",
            Some(&mut self.info),
        )?;
        self.check_length(buf.len())
    }

    /// A message shorter than asked for is an error: every message of a
    /// sweep has the size both ends agreed on. (A longer one fails inside
    /// UCX as truncated.)
    fn check_length(&self, wanted: usize) -> io::Result<()> {
        if self.info.length == wanted {
            Ok(())
        } else {
            Err(wrong_length(self.info.length, wanted))
        }
    }
}

impl Endpoint for UcxEndpoint {
    fn send(&mut self, buf: &[u8]) -> io::Result<()> {
        self.send_tagged(buf, DATA_TAG)
    }

    fn recv(&mut self, buf: &mut [u8]) -> io::Result<()> {
        self.recv_tagged(buf, DATA_TAG)
    }

    fn exchange(&mut self, out: &[u8], inp: &mut [u8]) -> io::Result<()> {
        // The receive is posted first, so that both ends' sends find a
        // receive waiting whatever their size (a rendezvous send waits for
        // one); each is then polled to completion.
        let receiving = self.worker.recv(inp, DATA_TAG, &mut self.info);
        let sending = self.worker.send(self.ep, out, DATA_TAG);
        let sent = self
            .worker
            .complete(sending, self.timeout, "ucp_tag_send_nbx", None);
        let received = self.worker.complete(
            receiving,
            self.timeout,
            "ucp_tag_recv_nbx",
            Some(&mut self.info),
        );
        sent?;
        received?;
        self.check_length(inp.len())
    }

    fn abort_handle(&self) -> Option<AbortHandle> {
        self.worker.abort_handle()
    }

    fn stream_window(&self) -> u64 {
        STREAM_WINDOW as u64
    }

    fn send_stream(&mut self, buf: &[u8], count: u64) -> io::Result<()> {
        let mut left = count;
        while left > 0 {
            let n = left.min(STREAM_WINDOW as u64) as usize;
            let mut sends = [Started::Done; STREAM_WINDOW];
            for s in &mut sends[..n] {
                *s = self.worker.send(self.ep, buf, DATA_TAG);
            }
            self.complete_window(&sends[..n], None)?;
            left -= n as u64;
        }
        Ok(())
    }

    fn recv_stream(&mut self, buf: &mut [u8], count: u64) -> io::Result<()> {
        let mut left = count;
        while left > 0 {
            let n = left.min(STREAM_WINDOW as u64) as usize;
            let mut receives = [Started::Done; STREAM_WINDOW];
            let mut infos = [TagRecvInfo::default(); STREAM_WINDOW];
            // Every message of a stream carries the same bytes (one buffer
            // sent again), so the window's receives may share one buffer.
            for (r, info) in receives[..n].iter_mut().zip(infos.iter_mut()) {
                *r = self.worker.recv(buf, DATA_TAG, info);
            }
            self.complete_window(&receives[..n], Some(&mut infos[..n]))?;
            if let Some(bad) = infos[..n].iter().find(|i| i.length != buf.len()) {
                return Err(wrong_length(bad.length, buf.len()));
            }
            left -= n as u64;
        }
        Ok(())
    }
}

impl UcxEndpoint {
    /// Complete a window of requests in order (polling progresses them
    /// all); on an error the rest are given up on before returning.
    fn complete_window(
        &mut self,
        window: &[Started],
        mut infos: Option<&mut [TagRecvInfo]>,
    ) -> io::Result<()> {
        for (k, s) in window.iter().enumerate() {
            let info = infos.as_deref_mut().map(|i| &mut i[k]);
            let what = if info.is_some() {
                "ucp_tag_recv_nbx"
            } else {
                "ucp_tag_send_nbx"
            };
            if let Err(e) = self.worker.complete(*s, self.timeout, what, info) {
                self.worker.abandon(&window[k + 1..]);
                return Err(e);
            }
        }
        Ok(())
    }
}

impl Drop for UcxEndpoint {
    fn drop(&mut self) {
        self.worker.close(self.ep);
    }
}
