//! Transports: one file per way of moving bytes between two processes,
//! all behind the same two traits.
//!
//! A [`Transport`] knows how to set up a data channel: the peer calls
//! [`Transport::listen`] and sends the returned description (opaque JSON) to
//! the measuring side over the control connection, which calls
//! [`Transport::connect`] with it. Both then hold an [`Endpoint`], the only
//! thing the timing loops in `measure` ever touch. Nothing outside this module
//! branches on the kind of transport: adding one means adding a file here and
//! a line in [`registry`].
//!
//! A transport whose two ends must be started by a launcher of its own (MPI)
//! says so ([`Transport::starts_both_ends`]); the launchers
//! ([`crate::launch::mpi`]) start its jobs, in which it makes endpoints
//! like any other. Across hosts (a lab's nodes) the launchers are handed a
//! [`Cluster`] and place the processes; the others measure against a peer.
//!
//! The in-process baselines (`memcpy`, `cacheline`, `c2c`, `c2c-2copy`, see
//! [`baseline`]) are
//! registered here too, so that `wulf sweep` and `wulf run` treat them like
//! any transport; they answer [`Transport::baseline`] instead of listening.

use std::io;
use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

mod abort;
pub mod baseline;
pub mod c2c;
pub mod cacheline;
pub mod cluster;
pub mod cma;
pub mod frames;
mod iface;
pub mod memcpy;
pub mod mpi;
pub mod ofi;
pub mod pvm;
pub mod raw;
pub mod shm;
mod shm_direct;
mod shm_message;
mod shm_region;
mod shm_ring;
mod sockopt;
mod stream_socket;
pub mod tcp;
pub mod tipc;
pub mod ucx;
pub mod unix;
pub mod wait;
pub mod xdp;

pub use crate::message::buffers::SendMemory;
pub use crate::result::WaitMode;
pub use abort::{AbortHandle, AbortPair};
pub use cluster::{Cluster, ClusterHost};

use crate::result::Mode;

/// One end of an established data channel. Every call either completes the
/// whole transfer or fails; each blocking step is bounded by the channel's
/// timeout, so a dead peer becomes an error, never a hang.
pub trait Endpoint: Send {
    /// Send all of `buf`.
    fn send(&mut self, buf: &[u8]) -> io::Result<()>;
    /// Receive exactly `buf.len()` bytes.
    fn recv(&mut self, buf: &mut [u8]) -> io::Result<()>;
    /// Send all of `out` while receiving exactly `inp.len()` bytes, with both
    /// directions progressing together, so that messages far larger than the
    /// channel's buffers cannot deadlock when both ends do this at once.
    fn exchange(&mut self, out: &[u8], inp: &mut [u8]) -> io::Result<()>;

    /// Send `parts` one after another, each as a message of its own (the
    /// receiver calls [`Endpoint::recv`] once per part). Byte streams may
    /// write them all with one system call.
    fn send_parts(&mut self, parts: &[&[u8]]) -> io::Result<()> {
        for part in parts {
            self.send(part)?;
        }
        Ok(())
    }

    /// Messages this end keeps in flight at once in stream mode: the timing
    /// loops hand [`Endpoint::send_stream`] and [`Endpoint::recv_stream`]
    /// this many messages per call. 1 (the default): none overlap.
    fn stream_window(&self) -> u64 {
        1
    }

    /// Stream mode: send `count` messages from `buf`, up to
    /// [`Endpoint::stream_window`] of them in flight at once; returns when
    /// all are sent.
    fn send_stream(&mut self, buf: &[u8], count: u64) -> io::Result<()> {
        for _ in 0..count {
            self.send(buf)?;
        }
        Ok(())
    }

    /// Stream mode: receive `count` messages into `buf`, each overwriting
    /// the last.
    fn recv_stream(&mut self, buf: &mut [u8], count: u64) -> io::Result<()> {
        for _ in 0..count {
            self.recv(buf)?;
        }
        Ok(())
    }

    /// Finish what this end started before it stops calling on the
    /// channel for a while (the end of a block): a channel whose sends
    /// return before the peer acknowledged them (the frame protocol) waits
    /// here, at most its timeout, until they are. The default: nothing to do.
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }

    /// The session is over and the peer holds every message it asked for
    /// (or is gone): whatever this end still keeps unacknowledged is
    /// needed by nobody, so dropping the channel must not wait to deliver
    /// it (the frame protocol's linger on drop). The default: nothing to do.
    fn abandon(&mut self) {}

    /// What a transport with a protocol of its own had to do, for the
    /// result's transport settings (the frame transports: frames sent,
    /// resent, acknowledgements, resend timeouts); None (the default):
    /// nothing to count. Asked once, after the timing loops.
    fn protocol_counters(&self) -> Option<serde_json::Value> {
        None
    }

    /// A handle that ends this channel's blocking waits from another
    /// thread (a server whose client went away); None (the default): the
    /// channel's own timeout is the only bound.
    fn abort_handle(&self) -> Option<AbortHandle> {
        None
    }

    /// The processes of the transport's own that do this end's work
    /// beside it (a daemon that relays its messages: PVM's pvmd, through
    /// which every `pvm(daemon)` message passes). Their time on a CPU
    /// during a block is the transport's work: an end kept waiting while
    /// they ran was not preempted by a neighbour, so that time is
    /// credited against the ends' run delay before a block is judged
    /// disturbed (`measure::policy::BlockTiming::disturbed`). Empty (the
    /// default): none. Asked once, when the end's buffers are set up,
    /// outside any timing loop.
    fn helper_processes(&self) -> Vec<u32> {
        Vec::new()
    }

    /// Memory of at least `bytes` bytes for this end's send buffers, lent
    /// by a transport that can pass messages sent from it without copying
    /// them in (shared memory the other end maps too, which the receiver
    /// copies from once, as from an MPI shared window). None (the
    /// default): send buffers are the caller's own private memory. Asked
    /// once per buffer pool, outside any timing loop.
    fn send_memory(&mut self, _bytes: usize) -> io::Result<Option<SendMemory>> {
        Ok(None)
    }
}

/// Options for a data channel. Each transport uses what applies to it and
/// records what it did in [`Connected::settings`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChannelOptions {
    /// Requested SO_SNDBUF in bytes (None: kernel default and autotuning).
    pub sndbuf_bytes: Option<u64>,
    /// Requested SO_RCVBUF in bytes (None: kernel default and autotuning).
    pub rcvbuf_bytes: Option<u64>,
    /// Disable Nagle's algorithm (TCP_NODELAY).
    pub nodelay: bool,
    /// Requested TCP maximum segment size in bytes (TCP_MAXSEG, set before
    /// connect and listen so the SYN advertises it); None: from the path MTU.
    #[serde(default)]
    pub mss_bytes: Option<u64>,
    /// Use IPv6 for IP transports.
    pub ipv6: bool,
    /// Bound of every blocking operation, in milliseconds.
    pub timeout_ms: u64,
    /// How shared-memory transports wait for the other end (`--wait`).
    #[serde(default)]
    pub wait: WaitMode,
    /// Socket transports poll non-blocking receives in a loop instead of
    /// sleeping in the kernel, as MPI libraries do (`--wait spin` given
    /// explicitly; `wulf npb` whenever its ranks spin).
    #[serde(default)]
    pub busy_poll: bool,
    /// The interface the frame transports (raw, xdp) send from on the
    /// measuring side (`--iface`); None: the one the route to the peer
    /// takes. This end's choice alone: never sent to the peer nor written
    /// to a result (the connection's settings name the interface used).
    #[serde(skip)]
    pub iface: Option<String>,
}

impl ChannelOptions {
    /// Options for a local channel in unit tests: Nagle off, a 5 s
    /// timeout, kernel-default buffers, the given way of waiting.
    #[cfg(test)]
    pub(crate) fn local_for_tests(wait: WaitMode) -> ChannelOptions {
        ChannelOptions {
            sndbuf_bytes: None,
            rcvbuf_bytes: None,
            nodelay: true,
            mss_bytes: None,
            ipv6: false,
            timeout_ms: 5000,
            wait,
            busy_poll: false,
            iface: None,
        }
    }

    /// The timeout as a Duration (at least 1 ms: a zero socket timeout
    /// would mean "block forever").
    pub fn timeout(&self) -> Duration {
        Duration::from_millis(self.timeout_ms.max(1))
    }
}

/// An established channel and what the transport did to set it up.
pub struct Connected {
    /// The channel.
    pub endpoint: Box<dyn Endpoint>,
    /// Settings in effect on this end (granted buffer sizes, MSS, path...).
    pub settings: serde_json::Map<String, serde_json::Value>,
    /// Things the user should know (a request the kernel clamped...).
    pub warnings: Vec<String>,
}

/// A data channel the peer has prepared and is waiting on.
pub trait Listener: Send {
    /// What the measuring side needs to connect (address, port, path...).
    fn describe(&self) -> serde_json::Value;
    /// Wait for the measuring side to connect, at most `timeout`.
    fn accept(self: Box<Self>, timeout: Duration) -> anyhow::Result<Connected>;
    /// A handle that ends [`Listener::accept`] early from another thread;
    /// None (the default): only the timeout ends it.
    fn abort_handle(&self) -> Option<AbortHandle> {
        None
    }
    /// Accept the data connection only from `ip`, the address of the
    /// authenticated control connection (a server calls it before
    /// [`Listener::accept`]). The default ignores it: transports whose
    /// channel is not reached by address (local-only ones, offered to
    /// loopback clients alone) or that do not check it yet.
    fn expect_peer(&mut self, _ip: IpAddr) {}
}

/// A kind of transport.
pub trait Transport: Send + Sync {
    /// Name as typed on the command line.
    fn name(&self) -> &'static str;
    /// One-line description for `--help` and `wulf run`.
    fn about(&self) -> &'static str;
    /// Whether this transport can work on this machine, with the reason
    /// when it cannot.
    fn availability(&self) -> Result<(), String>;
    /// Whether both ends must be on the same host.
    fn local_only(&self) -> bool;
    /// Whether a channel takes a NIC's queue or sends raw frames (raw,
    /// xdp): a server offers such a transport to clients on other hosts
    /// only when started with `--allow-lean`. A security policy, so every
    /// transport answers (no default): a new frame transport is never
    /// offered to strangers by omission.
    fn claims_nic(&self) -> bool;
    /// Whether it is one of the lean stacks Linux ships beside TCP/IP (raw
    /// frames with wulf's own protocol, AF_XDP, TIPC): what `wulf study
    /// lean-stacks` compares with tcp. False (the default).
    fn lean_stack(&self) -> bool {
        false
    }
    /// Whether the two ends must be on two hosts joined by an Ethernet
    /// link (raw frames have no loopback path): `wulf run` skips such a
    /// transport when it measures against a local peer. False (the default).
    fn needs_link(&self) -> bool {
        false
    }
    /// Peer side: prepare a channel. `bind_ip` is the address the control
    /// connection arrived on.
    fn listen(&self, opts: &ChannelOptions, bind_ip: IpAddr) -> anyhow::Result<Box<dyn Listener>>;
    /// Measuring side: connect to the channel the peer described.
    /// `peer_ip` is the peer's address on the control connection.
    fn connect(
        &self,
        description: &serde_json::Value,
        opts: &ChannelOptions,
        peer_ip: IpAddr,
    ) -> anyhow::Result<Connected>;
    /// For in-process baselines: the measurement to run instead of a peer.
    /// Transports return `None` (the default).
    fn baseline(
        &self,
        _setup: &baseline::BaselineSetup,
    ) -> Option<anyhow::Result<Box<dyn baseline::Baseline>>> {
        None
    }
    /// Pattern measured when none is given (`wulf run` uses it).
    fn default_mode(&self) -> Mode {
        Mode::Pingpong
    }
    /// Message sizes measured when `--sizes` is not given; `None` for the
    /// default schedule. `perturb` is false with `--no-perturb`.
    fn default_sizes(&self, _perturb: bool) -> Option<Vec<u64>> {
        None
    }
    /// Whether this transport can carry messages between processes (every
    /// transport but the in-process baselines): the NAS kernels run over
    /// those.
    fn links_processes(&self) -> bool {
        true
    }
    /// How many other processes one process can link to over this
    /// transport, when that is limited (PVM: one, as it enrolls a whole
    /// process): group runs take it only when named, with at most that
    /// many + 1 processes. None (the default): no limit.
    fn links_per_process(&self) -> Option<usize> {
        None
    }
    /// For an in-process baseline: which physical limit of the machine it
    /// measures, so that reports draw it as a limit on the transports'
    /// charts rather than as one more curve. None (the default).
    fn limit_kind(&self) -> Option<baseline::LimitKind> {
        None
    }
    /// Share of `wulf run`'s per-transport budget this one gets (baselines
    /// are quick references and get less).
    fn run_budget_fraction(&self) -> f64 {
        1.0
    }

    /// Whether the processes of both ends are started by this transport's
    /// own launcher ([`crate::launch::mpi`]): a sweep across hosts then
    /// places them on the run context's [`Cluster`] instead of
    /// measuring against a `wulf serve` peer. False (the default).
    fn starts_both_ends(&self) -> bool {
        false
    }

    /// Whether this is another transport held to one of its paths (an
    /// MPI forced onto TCP, `mpi:NAME(tcp)`): lists of one backend per
    /// library (`wulf collective`'s default) leave it out. False (the
    /// default).
    fn forced_variant(&self) -> bool {
        false
    }

    /// Where it sits on `path` of `wulf study layers` (the same message
    /// through sockets or shared memory, UCX, libfabric and each MPI over
    /// them): at the bottom, or over the transport it is compared with;
    /// None (the default): not in the study on that path.
    fn layering(&self, _path: LayersPath) -> Option<Layering> {
        None
    }

    /// Whether `wulf run` and `wulf npb` measure it when not told which
    /// transports to measure (`--only`, `--via`). False for a row held to
    /// one layer beneath another library (an MPI over UCX or libfabric,
    /// `mpi:openmpi(ucx-tcp)`): `wulf study layers` measures those, and
    /// a list names them. True (the default).
    fn measured_by_default(&self) -> bool {
        true
    }

    /// Whether, spread over a [`Cluster`]'s hosts, this transport takes the
    /// same path as another one listed (an MPI's default path is held to
    /// TCP there, as its `(tcp)` variant is): `wulf run` measures that path
    /// once. False (the default).
    fn duplicate_across_hosts(&self) -> bool {
        false
    }
}

/// A path of `wulf study layers`: what carries the bytes at the bottom.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LayersPath {
    /// TCP over the loopback, both ends on this host.
    Loopback,
    /// Shared memory, both ends on this host.
    SharedMemory,
    /// TCP over a link between two lab nodes.
    Link,
}

impl LayersPath {
    /// Its name in tables and labels.
    pub fn name(self) -> &'static str {
        match self {
            LayersPath::Loopback => "loopback",
            LayersPath::SharedMemory => "shm",
            LayersPath::Link => "link",
        }
    }
}

/// Where a transport sits on a path of `wulf study layers`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layering {
    /// The bottom: the kernel's sockets or plain shared memory.
    Bottom,
    /// Over the transport of this name (its overhead is over that one).
    Over(&'static str),
}

/// Options that only some transports use (the command line's `--mpi`,
/// `--mpi-arg`, `--window`): part of the command's run context, handed to
/// the registry with every lookup ([`find`]), never stored process-wide.
#[derive(Debug, Clone, PartialEq)]
pub struct ExtraOptions {
    /// Further MPI installations: `mpi:NAME` for each (NAME, path of its mpicc).
    pub mpi: Vec<(String, PathBuf)>,
    /// Arguments for every MPI launcher, one argument each.
    pub mpi_launcher_args: Vec<String>,
    /// Messages in flight at once in stream mode, where a transport can
    /// overlap them (MPI: a window of non-blocking sends).
    pub window: u64,
}

impl Default for ExtraOptions {
    /// No further MPI, no launcher arguments, the default window.
    fn default() -> ExtraOptions {
        ExtraOptions {
            mpi: Vec::new(),
            mpi_launcher_args: Vec::new(),
            window: mpi::DEFAULT_WINDOW,
        }
    }
}

/// Every transport wulf knows with `options`, in the order `wulf run`
/// measures them.
pub fn registry(options: &ExtraOptions) -> Vec<Box<dyn Transport>> {
    let mut all = built_in();
    // Every MPI found at run time, each also forced onto TCP.
    all.extend(mpi::transports(options));
    // PVM, through its library loaded at run time where installed.
    all.extend(pvm::transports());
    // UCX, through its library loaded at run time where installed.
    all.extend(ucx::transports());
    // libfabric, likewise.
    all.extend(ofi::transports());
    all
}

/// Every transport wulf can name without probing the machine, as
/// (name, description), in the registry's order: the compiled-in ones and
/// PVM's, UCX's and libfabric's (their libraries are loaded only when a channel is made). The MPIs
/// are found at run time (`mpi:NAME`); `--help` lists them apart.
pub fn catalogue() -> Vec<(&'static str, &'static str)> {
    built_in()
        .into_iter()
        .chain(pvm::transports())
        .chain(ucx::transports())
        .chain(ofi::transports())
        .map(|t| (t.name(), t.about()))
        .collect()
}

/// The transports compiled into wulf, without looking for an MPI (no
/// probe of the machine).
fn built_in() -> Vec<Box<dyn Transport>> {
    vec![
        Box::new(cacheline::Cacheline),
        Box::new(memcpy::Memcpy),
        Box::new(c2c::C2c::SINGLE),
        Box::new(c2c::C2c::TWO_COPY),
        Box::new(tcp::Tcp),
        Box::new(unix::Unix),
        Box::new(shm::Shm),
        Box::new(cma::Cma),
        Box::new(raw::Raw),
        Box::new(xdp::Xdp),
        Box::new(tipc::Tipc),
    ]
}

/// The physical limit the transport called `name` measures, if it is one
/// of the in-process baselines. Answered from the built-in transports
/// alone, so a report drawn from result files never probes the machine
/// for MPIs (one `wulf report` once made 36 path probes for mpicc and
/// mpirun, and its HTML depended on what was installed where it was
/// drawn). Given as the result file's [`crate::result::LimitRole`]: the
/// sweep stores it (schema version 4), and a report falls back on this
/// for older files.
pub fn limit_kind_of(name: &str) -> Option<crate::result::LimitRole> {
    use crate::result::LimitRole;
    let kind = built_in()
        .into_iter()
        .find(|t| t.name() == name)
        .and_then(|t| t.limit_kind())?;
    Some(match kind {
        baseline::LimitKind::MemcpyBandwidth => LimitRole::MemcpyBandwidth,
        baseline::LimitKind::CachelineFloor => LimitRole::CachelineFloor,
        baseline::LimitKind::C2cSingleCopy => LimitRole::C2cSingleCopy,
        baseline::LimitKind::C2cTwoCopy => LimitRole::C2cTwoCopy,
    })
}

/// The transport called `name` with `options`, if wulf knows it.
pub fn find(name: &str, options: &ExtraOptions) -> Option<Box<dyn Transport>> {
    registry(options).into_iter().find(|t| t.name() == name)
}

/// The transport called `name` with `options`, resolved once by whoever
/// names it (a command, the sweep engine), or the usage error that lists
/// the known ones.
pub fn resolve(name: &str, options: &ExtraOptions) -> anyhow::Result<Box<dyn Transport>> {
    find(name, options).ok_or_else(|| {
        crate::error::usage(format!(
            "unknown transport '{name}' (known: {})",
            names(options).join(", ")
        ))
    })
}

/// Names of all transports with `options`, for error messages.
pub fn names(options: &ExtraOptions) -> Vec<&'static str> {
    registry(options).iter().map(|t| t.name()).collect()
}

/// The transports available here that cross a network, one per stack:
/// every transport that is not local-only, each MPI by its TCP-forced
/// variant only (between hosts its default path is TCP too, so both would
/// measure the same stack). What a study across lab nodes compares.
pub fn network_paths(options: &ExtraOptions) -> Vec<String> {
    let all: Vec<Box<dyn Transport>> = registry(options)
        .into_iter()
        // A row that repeats another across hosts (an MPI's layer rows,
        // held to ob1 over TCP there) is left out before it is probed.
        .filter(|t| !t.local_only() && !t.duplicate_across_hosts())
        .filter(|t| t.availability().is_ok())
        .collect();
    let names: Vec<&str> = all.iter().map(|t| t.name()).collect();
    names
        .iter()
        .filter(|n| !names.contains(&format!("{n}(tcp)").as_str()))
        .map(|n| n.to_string())
        .collect()
}

#[cfg(test)]
mod limit_role_tests {
    /// Old result files are read through a frozen table of baseline names
    /// in `result`: today's baselines must agree with it, or a report of
    /// an old file would draw a limit as a transport.
    #[test]
    fn every_built_in_baseline_agrees_with_the_frozen_table() {
        let baselines: Vec<_> = super::built_in()
            .into_iter()
            .filter_map(|t| Some((t.name(), super::limit_kind_of(t.name())?)))
            .collect();
        assert_eq!(baselines.len(), 4, "{baselines:?}");
        for (name, role) in baselines {
            assert_eq!(
                crate::result::LimitRole::of_old_baseline(name),
                Some(role),
                "{name}"
            );
        }
        assert_eq!(crate::result::LimitRole::of_old_baseline("tcp"), None);
    }
}
