//! Drives one sweep against a peer and assembles the result.
//!
//! Order of work: start or reach the peer and set up the data channel; pin
//! this thread; measure the clock's cost; run the integrity pass if asked
//! (never mixed into timed trials); then for each size the repetition
//! policy, and the tail pass if asked. Any failure or an interruption stops
//! the sweep, and the points measured so far are returned in a result
//! marked incomplete, together with the error.
//!
//! In-process baselines (a transport whose `baseline()` answers) take the
//! same path without a peer: see [`super::in_process`]. When the peer runs
//! on this machine (the same kernel, reached through loopback: see
//! [`crate::sys::path`]), the physical limits each point is measured against
//! are taken from this run's baselines or measured first (see
//! [`super::limits`]); across a network interface, the link's limit is
//! recorded instead (see [`crate::result::LinkEfficiency`]).

use std::time::{Duration, Instant, SystemTime};

use anyhow::Result;
use serde::{Deserialize, Serialize};

pub(super) use super::assemble::{assemble, Finish, Start};
pub(super) use super::budget::SweepClock;
use super::limits;
use super::peer_runner::Runner;
pub(super) use super::pin::Pinned;
pub use super::point::make_point;
use crate::exec::local_peer::LocalPeer;
use crate::measure::loops::Pools;
use crate::measure::policy::{BlockRunner, PointPlan};
use crate::measure::timer::clock_read_cost_ns;
use crate::peer::client::{resolve, PeerSession};
use crate::peer::protocol::{BlockKind, Setup};
use crate::peer::DEFAULT_PORT;
use crate::result::{Definitions, LinkEfficiency, Mode, Placement, Point, SweepResult, Tails};
use crate::sys::{same_machine, Host, IpVersion};
use crate::transport::baseline::BaselineSetup;
use crate::transport::{self, ChannelOptions};

/// Largest size that gets a tail-latency pass.
pub const TAILS_MAX_BYTES: u64 = super::tails::MAX_BYTES;

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
    /// A ping-pong sweep of `transport` over `sizes` for unit tests (1 s,
    /// 2%, spinning waits); tests change the fields they are about.
    #[cfg(test)]
    pub(crate) fn for_tests(transport: &str, sizes: Vec<u64>) -> SweepSpec {
        SweepSpec {
            transport: transport.into(),
            mode: Mode::Pingpong,
            sizes,
            budget: Duration::from_secs(1),
            precision: 0.02,
            nocache: false,
            offset_bytes: 0,
            integrity: false,
            integrity_all: false,
            tails: false,
            limits: true,
            channel: transport::ChannelOptions::local_for_tests(transport::WaitMode::Spin),
            cpus: (None, None),
            peer: None,
            peer_secret: None,
            command_line: vec![],
            whole: None,
            peer_loads: Vec::new(),
            deadline: None,
            loaded: false,
            wake_probe: false,
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

/// Run a sweep. `on_point` is called after each point (for progress).
/// Errors before the first measurement are returned as `Err`; later ones
/// come back inside the outcome with the partial result.
pub fn run_sweep(spec: &SweepSpec, on_point: &mut dyn FnMut(&Point)) -> Result<SweepOutcome> {
    let started = Instant::now();
    let mut clock = SweepClock::new(started, spec.budget);
    let started_at = humantime::format_rfc3339_seconds(SystemTime::now()).to_string();
    // The engine measures against a peer or in process: no MPI options
    // apply (an MPI's sweeps are jobs of its own launcher, see
    // `launch::mpi`; inside such a job the registry lists the job's one).
    let options = transport::ExtraOptions::default();
    let transport = transport::resolve(&spec.transport, &options)?;
    transport.availability().map_err(|why| {
        anyhow::anyhow!("transport {} is unavailable here: {why}", spec.transport)
    })?;
    let mut host = Host::probe();
    let timeout = spec.channel.timeout();
    let max_bytes = spec.sizes.iter().copied().max().unwrap_or(1);
    let baseline_setup = BaselineSetup {
        mode: spec.mode,
        max_bytes,
        nocache: spec.nocache,
        offset_bytes: spec.offset_bytes,
        llc_bytes: host.llc_bytes,
        caches: host.caches.clone().unwrap_or_default(),
        helper_cpu: spec.cpus.1,
        wait: spec.channel.wait,
        timeout,
    };
    if let Some(bench) = transport.baseline(&baseline_setup) {
        if spec.integrity_all {
            return Err(crate::error::usage(format!(
                "--integrity all checks the messages sent to a peer; {} measures in this process (use --integrity)",
                spec.transport
            )));
        }
        let start = Start {
            started,
            started_at,
            host,
        };
        return super::in_process::run_baseline(spec, bench?, start, clock, on_point);
    }
    let (local, addr) = match &spec.peer {
        None => {
            let lp = LocalPeer::start(spec.channel.ipv6, timeout)?;
            let addr = lp.addr;
            (Some(lp), addr)
        }
        Some(p) => (None, resolve(p, DEFAULT_PORT, spec.channel.ipv6)?),
    };
    let setup = Setup {
        transport: spec.transport.clone(),
        channel: spec.channel.clone(),
        max_bytes,
        nocache: spec.nocache,
        offset_bytes: spec.offset_bytes,
        cpu: spec.cpus.1,
        // `--load-peer`: the peer runs the same loads during the test.
        loads: (!spec.peer_loads.is_empty()).then(|| crate::load::spec_text(&spec.peer_loads)),
    };
    host = host.with_interface_for_peer(addr.ip());
    let (mut session, mut conn) = PeerSession::open(
        addr,
        transport.as_ref(),
        &setup,
        timeout,
        spec.peer_secret.as_ref(),
    )?;
    let authenticated = session.authenticated;
    let pinned = Pinned::new(spec.cpus.0);
    let client_cpu = pinned.cpu;
    let timer_overhead_ns = clock_read_cost_ns();
    let mut pools = Pools::new(
        conn.endpoint.as_mut(),
        max_bytes,
        spec.offset_bytes,
        spec.nocache,
        host.llc_bytes,
    )?;

    clock.mark("setup");
    let mut warnings = conn.warnings.clone();
    warnings.extend(session.warnings.iter().map(|w| format!("peer: {w}")));
    // Memory limits only mean something when both ends share this machine
    // and no network interface lies between them; host names do not tell
    // (two namespaces share one). A local peer is ours by construction.
    let on_this_machine = spec.peer.is_none() || same_machine(&host, &session.host, addr.ip());
    let mut limits = if on_this_machine && spec.limits {
        limits::for_sweep(spec, host.llc_bytes, client_cpu, session.cpu, &mut warnings)
    } else {
        None
    };
    clock.mark("limits");
    // The floor measured again after the pass and the close come out of
    // the budget too (see `budget`).
    if limits
        .as_ref()
        .is_some_and(|l| l.floor_ns.is_some() && l.floor_measured_here)
    {
        clock.reserve_after(super::floor::remeasure_budget_ns(spec));
    }
    clock.reserve_after(super::budget::CLOSE_RESERVE_NS);
    // A blocking sweep keeps the time of its spinning probe (issue 44).
    let probe_ns = super::wake::probe_ns(spec).filter(|_| super::wake::blocks(&conn.settings));
    if let Some(ns) = probe_ns {
        clock.reserve_after(ns);
    }
    // Timestamps are on a connection only when both ends enable them.
    let timestamps = [&host, &session.host]
        .iter()
        .all(|h| h.tcp_sysctls.timestamps_enabled().unwrap_or(true));
    // Across a link the points' shares are planned against its rate (see
    // `link_fit`): a slow link's largest sizes may not fit the budget.
    clock.across_link = !on_this_machine;
    clock.link_bits_per_s = LinkEfficiency::for_path(
        host.interfaces.first(),
        session.host.interfaces.first(),
        spec.mode,
        IpVersion::of(addr.ip()),
        timestamps,
        None,
    )
    .map(|l| l.limit_bits_per_s);
    let mut points = Vec::with_capacity(spec.sizes.len());
    let mut runner = Runner {
        session: &mut session,
        ep: conn.endpoint.as_mut(),
        pools: &mut pools,
        mode: spec.mode,
        overhead_ns: timer_overhead_ns,
        samples: Vec::new(),
        timed_kind: if spec.integrity_all {
            BlockKind::Checked
        } else {
            BlockKind::Timed
        },
    };
    let (error, confirmation) = super::confirm::split(measure_all(
        spec,
        &mut clock,
        &mut runner,
        limits.as_ref(),
        &mut points,
        on_point,
    ));
    if !clock.tails_left_out.is_empty() {
        let sizes: Vec<String> = clock
            .tails_left_out
            .iter()
            .map(|&b| crate::units::format_bytes(b))
            .collect();
        warnings.push(format!(
            "tails: no tail pass at {}: the budget's deadline had passed (a larger --budget \
             measures them)",
            sizes.join(", ")
        ));
    }
    if let (Some(l), None) = (limits.as_mut(), &error) {
        super::floor::remeasure_after_sweep(
            spec,
            (client_cpu, session.cpu),
            l,
            &mut points,
            &mut warnings,
        );
        clock.mark("floor_after");
    }
    warnings.extend(limits::slow_mode_warning(spec.mode, &points));
    warnings.extend(super::tails::short_tails_warning(&points));

    let mut options_transport = conn.settings.clone();
    // The frame transports' counters (resends, timeouts), and a warning
    // when recovering from losses took a share of the run.
    if let Some(counters) = conn.endpoint.protocol_counters() {
        warnings.extend(crate::transport::frames::counters::loss_warning(
            &counters,
            started.elapsed(),
        ));
        options_transport.insert("frame_counters".into(), counters);
    }
    options_transport.insert(
        "server".into(),
        serde_json::Value::Object(session.settings.clone()),
    );
    let lab = crate::lab::placement(Some(addr.ip()));
    let peak_bits_per_s = super::burst::lab_peak_bits_per_s(&points, lab.as_ref());
    if let Some(iface) = host.interfaces.first() {
        warnings.extend(crate::sys::pcie_limits_link(iface));
    }
    // The slower of the two ends' links (a shaper on either counts).
    let link = LinkEfficiency::for_path(
        host.interfaces.first(),
        session.host.interfaces.first(),
        spec.mode,
        IpVersion::of(addr.ip()),
        timestamps,
        peak_bits_per_s,
    );
    // In a lab, say why sizes within the shaper's free burst beat the link.
    if let (Some(lab), Some(l)) = (&lab, link.as_ref()) {
        warnings.extend(crate::lab::free_burst_warning(
            lab,
            &points,
            l.limit_bits_per_s,
        ));
    }
    let placement = Placement {
        client_host: host.hostname.clone(),
        client_cpu,
        server_host: session.host.hostname.clone(),
        server_cpu: session.cpu,
        lab,
    };
    let peer_host = Some(session.host.clone());
    let mut peer_loads = Vec::new();
    if error.is_none() {
        peer_loads = session.close()?;
        // The peer answered every block, so it holds every message: this
        // end's unacknowledged frames (a final acknowledgement the link
        // lost) need no linger on drop, which would only delay the exit.
        conn.endpoint.abandon();
        if let Some(lp) = local {
            lp.finish(Duration::from_secs(2));
        }
    }
    clock.mark("close");
    let wake_up = match (probe_ns, &error, points.first()) {
        (Some(ns), None, Some(p)) => {
            super::wake::run_probe(spec, ns, (p.bytes, p.median_ns), &mut warnings)
        }
        _ => None,
    };
    clock.mark("wake_probe");
    let mut definitions = Definitions::for_mode(spec.mode);
    if limits.is_some() {
        definitions.efficiency = Some(Definitions::efficiency_text());
    }
    let mut result = assemble(
        spec,
        Start {
            started,
            started_at,
            host,
        },
        Finish {
            peer_host,
            definitions,
            transport_settings: options_transport,
            placement,
            timer_overhead_ns,
            points,
            warnings,
            link,
            error: error.as_ref(),
            confirmation,
            left_out: clock.left_out.take(),
            // The probe's set-up (its peer's start) is set-up too.
            setup_s: clock
                .phase_s("setup")
                .map(|s| s + wake_up.map_or(0.0, |w| w.1)),
        },
    );
    result.wake_up = wake_up.map(|w| w.0);
    if spec.peer.is_some() {
        result.options.authenticated = Some(authenticated);
    }
    clock.mark("assemble");
    clock.report(&spec.transport);
    Ok(SweepOutcome {
        result,
        error,
        peer_loads,
    })
}

/// What the sweep loop needs from whoever runs the blocks.
pub(super) trait SweepRunner: BlockRunner {
    /// Run the byte-checking pass for one size.
    fn integrity(&mut self, bytes: u64) -> Result<()>;
    /// Run the tail pass for one size, if this runner has one.
    fn tails(&mut self, bytes: u64, median_one_way_ns: f64) -> Result<Option<Tails>>;
}

/// The plan of one point, given its share of the budget (`wulf
/// collective` plans its points the same way).
pub fn plan_for(point_budget_ns: u64, precision: f64, max_repeats: u64) -> PointPlan {
    PointPlan {
        budget_ns: point_budget_ns,
        precision,
        min_trials: 10,
        max_trials: 5000,
        trial_target_ns: (point_budget_ns / 25).clamp(50_000, 50_000_000),
        max_repeats,
        loaded: false,
    }
}

pub(super) use super::measuring::measure_all;

/// A point with `bytes` and a constant trial time, for tests elsewhere.
#[cfg(test)]
pub use super::point::test_point;
