//! What defines a sweep and what it comes back with: the one type every
//! stage of a sweep reads ([`SweepSpec`]) and the outcome ([`SweepOutcome`]).
//!
//! It imports nothing else of `sweep`, so the stages (setup, measuring,
//! the confirmation pass, the limits, assembling) depend on it and never
//! on the engine that strings them together.

use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::result::{Mode, SweepResult};
use crate::transport::ChannelOptions;

/// Everything that defines a sweep (serialisable, so a transport that
/// launches its own processes can hand it to them).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SweepSpec {
    /// Transport name.
    pub transport: String,
    /// Pattern.
    pub mode: Mode,
    /// Message sizes, ascending.
    pub sizes: Vec<u64>,
    /// Total time budget for the timed points.
    pub budget: Duration,
    /// Target relative half-width of the median's confidence interval.
    pub precision: f64,
    /// Rotate buffers through a pool larger than the last-level cache.
    pub nocache: bool,
    /// Buffer misalignment in bytes.
    pub offset_bytes: u64,
    /// Run a byte-checking validation pass first.
    pub integrity: bool,
    /// Also stamp and check every timed message (`--integrity all`; only
    /// where the sweep runs against a peer, see `measure::checked`).
    #[serde(default)]
    pub integrity_all: bool,
    /// Run per-message tail-latency passes (sizes up to 64 KiB).
    pub tails: bool,
    /// Measure the memory limits and the cache-line floor beside the
    /// points when both ends share this machine. False for a matrix's
    /// cells: nobody reads a cell's limits, and their spinning copies and
    /// hand-offs contended with the other cells of a round (32 at once
    /// in a local matrix of 64 agents) on the CPUs being measured.
    pub limits: bool,
    /// Data channel options (buffers, Nagle, family, timeout).
    pub channel: ChannelOptions,
    /// CPU for this end and for the peer; None: not pinned.
    pub cpus: (Option<usize>, Option<usize>),
    /// The user named the CPUs (`--cpus`): the ends stay on them even when
    /// other work keeps them busy ([`super::placement`]).
    #[serde(default)]
    pub cpus_given: bool,
    /// Remote peer `HOST[:PORT]`; None: start a local peer.
    pub peer: Option<String>,
    /// The shared secret to prove to the remote peer (and it to us); never
    /// written anywhere.
    #[serde(skip)]
    pub peer_secret: Option<crate::peer::auth::Secret>,
    /// The command line, for the record.
    pub command_line: Vec<String>,
    /// The whole-CPU-cost setup (`--cost whole` or `soak`), measured by the
    /// command before any peer or rank started; None: not asked for. It
    /// travels with the spec, so an MPI job's rank 0 measures with it too.
    #[serde(default)]
    pub whole: Option<crate::load::whole::WholeSetup>,
    /// Loads the remote peer runs during the sweep (`--load-peer`; empty:
    /// none). Not written to an MPI job's file: MPI sweeps take no peer.
    #[serde(skip)]
    pub peer_loads: Vec<crate::load::LoadSpec>,
    /// When to stop whatever the budget: the sweep ends at this instant
    /// and keeps the trials measured by then (a point with some is kept,
    /// marked noisy; later sizes are left out). A matrix's cell on a lossy
    /// link is cut so, and the matrix keeps its `--budget`. None: no
    /// deadline.
    #[serde(skip)]
    pub deadline: Option<Instant>,
    /// Measured under a load the user asked for (`--load`, `--load-peer`):
    /// the loaded figure, every block, stays the headline (see
    /// [`crate::measure::policy`]'s clean blocks).
    #[serde(default)]
    pub loaded: bool,
    /// Probe a blocking sweep's smallest size with spinning ends after it
    /// (`wulf sweep`, `wulf run`: see [`super::wake`]).
    #[serde(default)]
    pub wake_probe: bool,
}

impl SweepSpec {
    /// A sweep of `transport` in `mode` over `sizes` within `budget`, its
    /// data channel `channel`: the default precision, none of the optional
    /// passes (byte checks, tail passes, buffers rotated past the cache),
    /// the limits measured, neither end pinned, a local peer, no deadline,
    /// not loaded, no wake-up probe, and this process's command line for
    /// the record. Callers set what differs with struct update syntax.
    pub fn new(
        transport: &str,
        mode: Mode,
        sizes: Vec<u64>,
        budget: Duration,
        channel: ChannelOptions,
    ) -> SweepSpec {
        SweepSpec {
            transport: transport.into(),
            mode,
            sizes,
            budget,
            precision: crate::measure::policy::SWEEP_PRECISION,
            nocache: false,
            offset_bytes: 0,
            integrity: false,
            integrity_all: false,
            tails: false,
            limits: true,
            channel,
            cpus: (None, None),
            cpus_given: false,
            peer: None,
            peer_secret: None,
            command_line: std::env::args().collect(),
            whole: None,
            peer_loads: Vec::new(),
            deadline: None,
            loaded: false,
            wake_probe: false,
        }
    }

    /// A ping-pong sweep of `transport` over `sizes` for unit tests (1 s,
    /// 2%, spinning waits); tests change the fields they are about.
    #[cfg(test)]
    pub(crate) fn for_tests(transport: &str, sizes: Vec<u64>) -> SweepSpec {
        SweepSpec {
            command_line: vec![],
            ..SweepSpec::new(
                transport,
                Mode::Pingpong,
                sizes,
                Duration::from_secs(1),
                ChannelOptions::local_for_tests(crate::transport::WaitMode::Spin),
            )
        }
    }
}

/// A finished or cut-short sweep.
pub struct SweepOutcome {
    /// The result (complete or not).
    pub result: SweepResult,
    /// Why the sweep stopped early, if it did.
    pub error: Option<anyhow::Error>,
    /// What the remote peer's loads achieved (`--load-peer`; empty when
    /// none ran or the sweep ended before the peer could say).
    pub peer_loads: Vec<crate::load::LoadRecord>,
}
