//! Drives one sweep against a peer and assembles the result, in stages
//! that hand their product to the next:
//!
//! 1. set-up ([`connect`], then [`prepare`]): start or reach the peer,
//!    set up the data channel, pin this thread, measure the clock's cost;
//!    then the physical limits, what the budget keeps for after the
//!    points, and the link's rate the points' shares are planned against;
//! 2. measure ([`measure`]: [`super::measuring::measure_all`]): the
//!    integrity pass if asked (never mixed into timed trials), each size's
//!    repetition policy and tail pass, then the confirmation pass, all held
//!    to one deadline (the pass takes what the points left of it);
//! 3. close ([`close`]): the cache-line floor again, the settings and the
//!    link of both ends, the peer's goodbye, the wake-up probe;
//! 4. assemble ([`assemble_outcome`]): the result document, from what the
//!    stages before handed on alone (no process, no I/O).
//!
//! Any failure or an interruption while measuring stops the sweep, and the
//! points measured so far are returned in a result marked incomplete,
//! together with the error.
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

use super::assemble::{assemble, Finish, Start};
use super::budget::SweepClock;
use super::limits::{self, Limits};
use super::peer_runner::Runner;
use super::pin::Pinned;
pub use super::point::make_point;
use super::progress::Reporter;
pub use super::runner::plan_for;
use super::setup::{connect, link_of, max_bytes, prepare, Ends, Prepared};
pub use super::spec::{SweepOutcome, SweepSpec};
use crate::exec::local_peer::LocalPeer;
use crate::load::LoadRecord;
use crate::measure::loops::Pools;
use crate::peer::client::PeerSession;
use crate::peer::protocol::BlockKind;
use crate::result::{Confirmation, Definitions, LinkEfficiency, Placement, Point, WakeUp};
use crate::sys::Host;
use crate::transport::baseline::BaselineSetup;
use crate::transport::{self, Connected, Transport};

/// Largest size that gets a tail-latency pass.
pub const TAILS_MAX_BYTES: u64 = super::tails::MAX_BYTES;

/// Settings of the data channel, by name (both ends', the frame counters).
type Settings = serde_json::Map<String, serde_json::Value>;

/// Run a sweep, telling `progress` of each point as it is measured.
/// Errors before the first measurement are returned as `Err`; later ones
/// come back inside the outcome with the partial result.
pub fn run_sweep(spec: &SweepSpec, progress: &mut dyn Reporter) -> Result<SweepOutcome> {
    let started = Instant::now();
    let mut clock = SweepClock::new(started, spec.budget);
    let started_at = humantime::format_rfc3339_seconds(SystemTime::now()).to_string();
    let transport = available(spec)?;
    let mut start = Start {
        started,
        started_at,
        host: Host::probe(),
    };
    if let Some(bench) = transport.baseline(&baseline_setup(spec, &start.host)) {
        if spec.integrity_all {
            return Err(crate::error::usage(format!(
                "--integrity all checks the messages sent to a peer; {} measures in this process (use --integrity)",
                spec.transport
            )));
        }
        let bench = bench?;
        // Its threads pinned to CPUs other work keeps busy move (made
        // again on the new ones), or the result says why not.
        let (moved, note) = super::placement::for_baseline(spec, bench.helper_cpu());
        let Some(moved) = moved else {
            return super::in_process::run_baseline(spec, bench, start, clock, progress, note);
        };
        // The first one's helper thread is joined before the second starts.
        drop(bench);
        let bench = transport
            .baseline(&baseline_setup(&moved, &start.host))
            .ok_or_else(|| anyhow::anyhow!("{} stopped being a baseline", spec.transport))??;
        return super::in_process::run_baseline(&moved, bench, start, clock, progress, note);
    }
    let mut ends = connect(spec, transport.as_ref(), &mut start.host)?;
    // Ends pinned to CPUs other work keeps busy move, or the result says why not.
    let pin_note = super::placement::settle(spec, &mut ends);
    clock.mark("setup");
    let mut prepared = prepare(spec, &ends, &start.host, &mut clock);
    prepared.warnings.extend(pin_note);
    let measured = measure(
        spec,
        &mut ends,
        &mut clock,
        prepared.limits.as_ref(),
        progress,
    );
    let (closed, held) = close(spec, ends, &start, prepared, measured, &mut clock)?;
    let outcome = assemble_outcome(spec, start, closed, &mut clock);
    // The ends stay up until the result is assembled (see `Held`).
    drop(held);
    Ok(outcome)
}

/// The transport of `spec`, refused when it cannot run here.
fn available(spec: &SweepSpec) -> Result<Box<dyn Transport>> {
    // The engine measures against a peer or in process: no MPI options
    // apply (an MPI's sweeps are jobs of its own launcher, see
    // `launch::mpi`; inside such a job the registry lists the job's one).
    let options = transport::ExtraOptions::default();
    let transport = transport::resolve(&spec.transport, &options)?;
    transport.availability().map_err(|why| {
        anyhow::anyhow!("transport {} is unavailable here: {why}", spec.transport)
    })?;
    Ok(transport)
}

/// What an in-process baseline of `spec` would be set up with on `host`.
fn baseline_setup(spec: &SweepSpec, host: &Host) -> BaselineSetup {
    BaselineSetup {
        mode: spec.mode,
        max_bytes: max_bytes(spec),
        nocache: spec.nocache,
        offset_bytes: spec.offset_bytes,
        llc_bytes: host.llc_bytes,
        caches: host.caches.clone().unwrap_or_default(),
        helper_cpu: spec.cpus.1,
        wait: spec.channel.wait,
        timeout: spec.channel.timeout(),
    }
}

/// What the measuring stage measured.
struct Measured {
    /// The points, ascending sizes (those measured before any error).
    points: Vec<Point>,
    /// Why measuring stopped early, if it did.
    error: Option<anyhow::Error>,
    /// The confirmation pass, when measuring got that far.
    confirmation: Option<Confirmation>,
}

/// Every point, then the confirmation pass, against the peer.
fn measure(
    spec: &SweepSpec,
    ends: &mut Ends,
    clock: &mut SweepClock,
    limits: Option<&Limits>,
    progress: &mut dyn Reporter,
) -> Measured {
    let mut points = Vec::with_capacity(spec.sizes.len());
    let mut runner = Runner {
        session: &mut ends.session,
        ep: ends.conn.endpoint.as_mut(),
        pools: &mut ends.pools,
        mode: spec.mode,
        overhead_ns: ends.timer_overhead_ns,
        samples: Vec::new(),
        timed_kind: if spec.integrity_all {
            BlockKind::Checked
        } else {
            BlockKind::Timed
        },
        hints: crate::analysis::CauseHints::from_transport(&ends.conn.settings),
    };
    let outcome =
        super::measuring::measure_all(spec, clock, &mut runner, limits, &mut points, progress);
    let (error, confirmation) = super::confirm::split(outcome);
    Measured {
        points,
        error,
        confirmation,
    }
}

/// What the close stage hands to [`assemble_outcome`]: everything the
/// result is made of, no live end.
struct Closed {
    /// The peer's machine.
    peer_host: Host,
    /// Both ends' settings of the data channel.
    settings: Settings,
    /// Where the ends ran.
    placement: Placement,
    /// The cost of reading the clock, ns.
    timer_overhead_ns: f64,
    /// The points, their error and the confirmation pass.
    measured: Measured,
    /// Every warning so far.
    warnings: Vec<String>,
    /// The link the data crossed, if known.
    link: Option<LinkEfficiency>,
    /// Whether the points were measured against physical limits.
    limits_known: bool,
    /// Whether both ends proved the shared secret.
    authenticated: bool,
    /// What the peer's loads achieved.
    peer_loads: Vec<LoadRecord>,
    /// The wake-up probe's record and its own set-up, s.
    wake_up: Option<(WakeUp, f64)>,
}

/// What stays up until the result is assembled: the data channel, the
/// pinning, the peer process, and the session when it was not closed (a
/// sweep cut short by an error). Dropped last, as one function's locals
/// were before the stages, so the wall time recorded is the same.
/// Fields drop in the order the function's locals did (the last declared
/// first).
struct Held {
    _pools: Pools,
    _pinned: Pinned,
    _conn: Connected,
    _session: Option<PeerSession>,
    _local: Option<LocalPeer>,
}

/// The floor measured again, the warnings of the points, where the ends
/// ran and over which link, the peer's goodbye and the wake-up probe.
fn close(
    spec: &SweepSpec,
    ends: Ends,
    start: &Start,
    prepared: Prepared,
    mut measured: Measured,
    clock: &mut SweepClock,
) -> Result<(Closed, Held)> {
    let Prepared {
        mut warnings,
        mut limits,
        probe_ns,
        timestamps,
    } = prepared;
    let cpus = (ends.pinned.cpu, ends.session.cpu);
    let timer_overhead_ns = ends.timer_overhead_ns;
    after_points(
        spec,
        cpus,
        limits.as_mut(),
        &mut measured,
        &mut warnings,
        clock,
    );
    let settings = settings_of(&ends, start.started, &mut warnings);
    let (placement, link) = where_it_ran(
        spec,
        &start.host,
        &ends,
        timestamps,
        &measured.points,
        &mut warnings,
    );
    let peer_host = ends.session.host.clone();
    let authenticated = ends.session.authenticated;
    let (peer_loads, held) = say_goodbye(ends, measured.error.is_none())?;
    clock.mark("close");
    let wake_up = match (probe_ns, &measured.error, measured.points.first()) {
        (Some(ns), None, Some(p)) => {
            let probe = (ns, (p.bytes, p.median_ns));
            super::wake::run_probe(spec, probe, run_sweep, &mut warnings)
        }
        _ => None,
    };
    clock.mark("wake_probe");
    let closed = Closed {
        peer_host,
        settings,
        placement,
        timer_overhead_ns,
        measured,
        warnings,
        link,
        limits_known: limits.is_some(),
        authenticated,
        peer_loads,
        wake_up,
    };
    Ok((closed, held))
}

/// What the points leave to say (tail passes the deadline left out, a
/// slow mode, short tails), and the cache-line floor measured again after
/// a sweep that measured every point.
fn after_points(
    spec: &SweepSpec,
    cpus: limits::FloorKey,
    limits: Option<&mut Limits>,
    measured: &mut Measured,
    warnings: &mut Vec<String>,
    clock: &mut SweepClock,
) {
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
    if let (Some(l), None) = (limits, &measured.error) {
        super::floor::remeasure_after_sweep(spec, cpus, l, &mut measured.points, warnings);
        clock.mark("floor_after");
    }
    warnings.extend(limits::slow_mode_warning(spec.mode, &measured.points));
    warnings.extend(super::tails::short_tails_warning(&measured.points));
}

/// Both ends' settings of the data channel, with the frame transports'
/// counters (resends, timeouts) and a warning when recovering from losses
/// took a share of the run.
fn settings_of(ends: &Ends, started: Instant, warnings: &mut Vec<String>) -> Settings {
    let mut settings = ends.conn.settings.clone();
    if let Some(counters) = ends.conn.endpoint.protocol_counters() {
        warnings.extend(crate::transport::frames::counters::loss_warning(
            &counters,
            started.elapsed(),
        ));
        settings.insert("frame_counters".into(), counters);
    }
    settings.insert(
        "server".into(),
        serde_json::Value::Object(ends.session.settings.clone()),
    );
    settings
}

/// Where the ends ran and the link the data crossed, with what the
/// machine and a lab's shaper say about the figures.
fn where_it_ran(
    spec: &SweepSpec,
    host: &Host,
    ends: &Ends,
    timestamps: bool,
    points: &[Point],
    warnings: &mut Vec<String>,
) -> (Placement, Option<LinkEfficiency>) {
    let lab = crate::lab::placement(Some(ends.addr.ip()));
    let peak_bits_per_s = super::burst::lab_peak_bits_per_s(points, lab.as_ref());
    if let Some(iface) = host.interfaces.first() {
        warnings.extend(crate::sys::pcie_limits_link(iface));
    }
    let link = link_of(spec, host, ends, timestamps, peak_bits_per_s);
    // In a lab, say why sizes within the shaper's free burst beat the link.
    if let (Some(lab), Some(l)) = (&lab, link.as_ref()) {
        warnings.extend(crate::lab::free_burst_warning(
            lab,
            points,
            l.limit_bits_per_s,
        ));
    }
    let placement = Placement {
        client_host: host.hostname.clone(),
        client_cpu: ends.pinned.cpu,
        server_host: ends.session.host.hostname.clone(),
        server_cpu: ends.session.cpu,
        lab,
    };
    (placement, link)
}

/// End the session when every block was answered (`clean`): the peer's
/// loads' records. What must stay up comes back in [`Held`].
fn say_goodbye(ends: Ends, clean: bool) -> Result<(Vec<LoadRecord>, Held)> {
    let Ends {
        local,
        session,
        mut conn,
        pools,
        pinned,
        ..
    } = ends;
    if !clean {
        let held = Held {
            _pools: pools,
            _pinned: pinned,
            _conn: conn,
            _session: Some(session),
            _local: local,
        };
        return Ok((Vec::new(), held));
    }
    let peer_loads = session.close()?;
    // The peer answered every block, so it holds every message: this
    // end's unacknowledged frames (a final acknowledgement the link
    // lost) need no linger on drop, which would only delay the exit.
    conn.endpoint.abandon();
    if let Some(lp) = local {
        lp.finish(Duration::from_secs(2));
    }
    let held = Held {
        _pools: pools,
        _pinned: pinned,
        _conn: conn,
        _session: None,
        _local: None,
    };
    Ok((peer_loads, held))
}

/// The result document and the outcome, from what the stages before
/// handed on: no process, no I/O (testable from made-up points).
fn assemble_outcome(
    spec: &SweepSpec,
    start: Start,
    closed: Closed,
    clock: &mut SweepClock,
) -> SweepOutcome {
    let Closed {
        peer_host,
        settings,
        placement,
        timer_overhead_ns,
        measured,
        warnings,
        link,
        limits_known,
        authenticated,
        peer_loads,
        wake_up,
    } = closed;
    let mut definitions = Definitions::for_mode(spec.mode);
    if limits_known {
        definitions.efficiency = Some(Definitions::efficiency_text());
    }
    let Measured {
        points,
        error,
        confirmation,
    } = measured;
    let finish = Finish {
        peer_host: Some(peer_host),
        definitions,
        transport_settings: settings,
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
    };
    let mut result = assemble(spec, start, finish);
    result.wake_up = wake_up.map(|w| w.0);
    if spec.peer.is_some() {
        result.options.authenticated = Some(authenticated);
    }
    clock.mark("assemble");
    clock.report(&spec.transport);
    SweepOutcome {
        result,
        error,
        peer_loads,
    }
}

/// A point with `bytes` and a constant trial time, for tests elsewhere.
#[cfg(test)]
pub use super::point::test_point;

#[cfg(test)]
#[path = "engine_tests.rs"]
mod tests;
