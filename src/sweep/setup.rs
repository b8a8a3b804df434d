//! The set-up stage of a sweep against a peer: both ends connected
//! ([`connect`]), then what is known before the first point ([`prepare`]):
//! the physical limits, what the budget keeps for after the points, the
//! rate of the link the points' shares are planned against.

use std::net::SocketAddr;

use anyhow::Result;

use super::budget::SweepClock;
use super::limits::{self, Limits};
use super::pin::Pinned;
use super::spec::SweepSpec;
use crate::exec::local_peer::LocalPeer;
use crate::measure::loops::Pools;
use crate::measure::timer::clock_read_cost_ns;
use crate::peer::client::{resolve, PeerSession};
use crate::peer::protocol::Setup;
use crate::peer::DEFAULT_PORT;
use crate::result::LinkEfficiency;
use crate::sys::{same_machine, Host, IpVersion};
use crate::transport::{Connected, Transport};

/// The largest size of `spec` (1 when it has none).
pub(super) fn max_bytes(spec: &SweepSpec) -> u64 {
    spec.sizes.iter().copied().max().unwrap_or(1)
}

/// Both ends of a sweep, connected: the set-up stage's product.
pub(super) struct Ends {
    /// The peer this sweep started, if it started one.
    pub(super) local: Option<LocalPeer>,
    /// The peer's control address.
    pub(super) addr: SocketAddr,
    /// The control session with the peer.
    pub(super) session: PeerSession,
    /// The data channel.
    pub(super) conn: Connected,
    /// The buffers messages are sent from and received into.
    pub(super) pools: Pools,
    /// This thread, pinned for the sweep.
    pub(super) pinned: Pinned,
    /// The cost of reading the clock, ns.
    pub(super) timer_overhead_ns: f64,
}

/// Start or reach the peer, open the session and the data channel, pin
/// this thread and measure the clock's cost. `host` learns the interface
/// that leads to the peer.
pub(super) fn connect(
    spec: &SweepSpec,
    transport: &dyn Transport,
    host: &mut Host,
) -> Result<Ends> {
    let timeout = spec.channel.timeout();
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
        max_bytes: max_bytes(spec),
        nocache: spec.nocache,
        offset_bytes: spec.offset_bytes,
        cpu: spec.cpus.1,
        // `--load-peer`: the peer runs the same loads during the test.
        loads: (!spec.peer_loads.is_empty()).then(|| crate::load::spec_text(&spec.peer_loads)),
    };
    *host = host.clone().with_interface_for_peer(addr.ip());
    let (session, mut conn) =
        PeerSession::open(addr, transport, &setup, timeout, spec.peer_secret.as_ref())?;
    let pinned = Pinned::new(spec.cpus.0);
    let timer_overhead_ns = clock_read_cost_ns();
    let pools = Pools::new(
        conn.endpoint.as_mut(),
        max_bytes(spec),
        spec.offset_bytes,
        spec.nocache,
        host.llc_bytes,
    )?;
    Ok(Ends {
        local,
        addr,
        session,
        conn,
        pools,
        pinned,
        timer_overhead_ns,
    })
}

/// What the set-up stage knows before the first point.
pub(super) struct Prepared {
    /// Warnings so far (the channel's, the peer's, the limits').
    pub(super) warnings: Vec<String>,
    /// The physical limits the points are measured against.
    pub(super) limits: Option<Limits>,
    /// The wake-up probe's time, kept from the budget (a blocking sweep).
    pub(super) probe_ns: Option<u64>,
    /// Whether both ends' TCP timestamps are on (the link's overhead).
    pub(super) timestamps: bool,
}

/// The limits, what the budget keeps for after the points, and the rate
/// of the link the points' shares are planned against.
pub(super) fn prepare(
    spec: &SweepSpec,
    ends: &Ends,
    host: &Host,
    clock: &mut SweepClock,
) -> Prepared {
    let session = &ends.session;
    let mut warnings = ends.conn.warnings.clone();
    warnings.extend(session.warnings.iter().map(|w| format!("peer: {w}")));
    // Memory limits only mean something when both ends share this machine
    // and no network interface lies between them; host names do not tell
    // (two namespaces share one). A local peer is ours by construction.
    let on_this_machine = spec.peer.is_none() || same_machine(host, &session.host, ends.addr.ip());
    let limits = if on_this_machine && spec.limits {
        let (llc, cpu) = (host.llc_bytes, ends.pinned.cpu);
        limits::for_sweep(spec, llc, cpu, session.cpu, &mut warnings)
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
    let probe_ns = super::wake::probe_ns(spec).filter(|_| super::wake::blocks(&ends.conn.settings));
    if let Some(ns) = probe_ns {
        clock.reserve_after(ns);
    }
    // Timestamps are on a connection only when both ends enable them.
    let timestamps = [host, &session.host]
        .iter()
        .all(|h| h.tcp_sysctls.timestamps_enabled().unwrap_or(true));
    // Across a link the points' shares are planned against its rate (see
    // `link_fit`): a slow link's largest sizes may not fit the budget.
    clock.across_link = !on_this_machine;
    clock.link_bits_per_s = link_of(spec, host, ends, timestamps, None).map(|l| l.limit_bits_per_s);
    Prepared {
        warnings,
        limits,
        probe_ns,
        timestamps,
    }
}

/// The slower of the two ends' links (a shaper on either counts).
pub(super) fn link_of(
    spec: &SweepSpec,
    host: &Host,
    ends: &Ends,
    timestamps: bool,
    peak_bits_per_s: Option<f64>,
) -> Option<LinkEfficiency> {
    LinkEfficiency::for_path(
        host.interfaces.first(),
        ends.session.host.interfaces.first(),
        spec.mode,
        IpVersion::of(ends.addr.ip()),
        timestamps,
        peak_bits_per_s,
    )
}
