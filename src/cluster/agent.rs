//! `wulf agent` (hidden): one per node, started by a launcher for a
//! coordinator. It connects back, proves it knows the run's secret, sends
//! its fingerprint, serves measurements from the other agents (the same
//! server session as `wulf serve`) and measures against them when told.
//!
//! An agent never outlives its run: it exits as soon as its control
//! connection closes or fails (the coordinator ended, was killed, or its
//! machine vanished: TCP keepalive notices within a minute), and it never
//! waits for anything without a bound.

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use super::deadline::Overruns;
use super::protocol::{
    agent_proof, random_hex, unseal_mesh, verify_coordinator, CellParts, CellReport, Claim,
    ControlChannel, Hello, Join, Order, MAX_REQUEST_BYTES, SECRET_ENV, WORKING_EVERY,
};
use super::refusal::{recv_handshake, refuse, RefusedBy};
use crate::peer::auth::Secret;
use crate::peer::server::{serve_on, LocalTransports, ServeOptions, SessionPolicy};
use crate::result::matrix::CellNet;
use crate::result::Mode;
use crate::sweep::engine::SweepSpec;
use crate::sys::net_counters::NetCounters;
use crate::transport::{ChannelOptions, WaitMode};

/// Longest message an agent's server accepts (the matrix's largest size is
/// chosen by the coordinator; this bounds what any client may ask).
const MAX_SERVE_BYTES: u64 = 1 << 30;

/// Longest data-channel timeout and session another agent may ask for.
const MAX_SERVE_TIMEOUT: Duration = Duration::from_secs(3600);

/// How long the handshake with the coordinator may take, tries included.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(30);

/// Pause before joining again after a cut handshake.
const RETRY: Duration = Duration::from_millis(200);

/// What an agent needs to start.
#[derive(Debug, Clone)]
pub struct AgentOptions {
    /// The coordinator's control addresses, tried in order.
    pub coordinator: Vec<SocketAddr>,
    /// The node name this agent stands for (its host name by default).
    pub name: String,
    /// The run's secret or this node's key alone
    /// ([`crate::exec::credentials`]; from [`SECRET_ENV`] or stdin).
    pub secret: String,
    /// Serve the other agents' sessions on this thread, when the
    /// coordinator says so ([`Order::Serve`]), instead of on a thread of
    /// their own: for channels that must be made on the thread that
    /// initialised their library (the ranks of an MPI job).
    pub serve_inline: bool,
}

/// The secret from the environment, or else the first line of stdin (how
/// remote shells hand it over: never on a command line, where `ps` on the
/// node would show it).
pub fn read_secret() -> Result<String> {
    if let Ok(s) = std::env::var(SECRET_ENV) {
        // Not passed on to anything this agent starts.
        std::env::remove_var(SECRET_ENV);
        return Ok(s);
    }
    let mut line = String::new();
    std::io::stdin()
        .read_line(&mut line)
        .context("cannot read the run's secret from stdin")?;
    let s = line.trim().to_string();
    if s.is_empty() {
        bail!("no secret: wulf agent is started by `wulf matrix`, which hands it one");
    }
    Ok(s)
}

/// Run the agent to the end of its run.
pub fn run(opts: &AgentOptions) -> Result<()> {
    let deadline = Instant::now() + HANDSHAKE_TIMEOUT;
    let (mut ch, listener, secret) = loop {
        match join(opts, deadline) {
            Ok(joined) => break joined,
            // The coordinator ended the handshake before proving itself:
            // a flood of connections took this one's place. Again, soon.
            Err(e) if e.downcast_ref::<Cut>().is_some() && Instant::now() + RETRY < deadline => {
                std::thread::sleep(RETRY);
            }
            Err(e) => return Err(e),
        }
    };
    let served = serve_options(secret.clone());
    let inline = if opts.serve_inline {
        Some((listener, served))
    } else {
        std::thread::spawn(move || serve_on(listener, &served));
        None
    };
    // Orders may be far apart (other pairs' rounds); keepalive, not a read
    // timeout, tells a dead coordinator from a busy one.
    ch.stream().set_read_timeout(None)?;
    let mut overruns = Overruns::default();
    loop {
        let order: Order = match ch.recv() {
            Ok(o) => o,
            // The coordinator is gone: so is the run.
            Err(_) => return Ok(()),
        };
        let report = match order {
            Order::Measure {
                peer,
                via,
                latency_bytes,
                bandwidth_bytes,
                budget_ms,
                timeout_ms,
                parts,
            } => while_working(&ch, || {
                let before = NetCounters::read();
                let mut report = measure(
                    &secret,
                    &peer,
                    &via,
                    (latency_bytes, bandwidth_bytes),
                    parts,
                    (budget_ms, timeout_ms),
                    &mut overruns,
                );
                // The host's CPUs while it streamed, set by `measure`.
                let busy = report.net.and_then(|n| n.cpu_busy_share);
                report.net = before
                    .zip(NetCounters::read())
                    .map(|(b, a)| net_of(b.since(a)))
                    .map(|n| CellNet {
                        cpu_busy_share: busy,
                        ..n
                    });
                report
            }),
            Order::Ping => CellReport::default(),
            Order::Serve { timeout_ms } => {
                // Answered by the Ping that ends it.
                if let Some((listener, served)) = &inline {
                    serve_until_told(listener, &served.policy, &mut ch, timeout_ms);
                }
                continue;
            }
            Order::Bye | Order::Refused { .. } => return Ok(()),
            Order::Welcome | Order::Challenge { .. } | Order::Proof { .. } => continue,
        };
        if ch.send(&report).is_err() {
            return Ok(());
        }
    }
}

/// Run `work` while a thread tells the coordinator, every
/// [`WORKING_EVERY`], that this agent is still at it (on a clone of the
/// control connection; the thread is joined before `work`'s report is
/// sent, so their lines never interleave).
fn while_working<T>(ch: &ControlChannel, work: impl FnOnce() -> T) -> T {
    let Ok(stream) = ch.stream().try_clone() else {
        return work();
    };
    let (stop, stopped) = std::sync::mpsc::channel::<()>();
    let beat = std::thread::spawn(move || {
        let Ok(mut beat) = ControlChannel::new(stream) else {
            return;
        };
        let working = CellReport {
            working: true,
            ..CellReport::default()
        };
        while let Err(std::sync::mpsc::RecvTimeoutError::Timeout) =
            stopped.recv_timeout(WORKING_EVERY)
        {
            if beat.send(&working).is_err() {
                return;
            }
        }
    });
    let out = work();
    drop(stop);
    let _ = beat.join();
    out
}

/// The result's form of the kernel's counters over a cell.
fn net_of(d: NetCounters) -> CellNet {
    CellNet {
        out_segs: d.out_segs,
        retrans_segs: d.retrans_segs,
        dsack_segs: d.dsack_segs,
        interface_drops: d.interface_drops,
        cpu_busy_share: None,
    }
}

/// One attempt to join: connect, listen where the coordinator was
/// reached from, and the handshake.
fn join(opts: &AgentOptions, deadline: Instant) -> Result<(ControlChannel, TcpListener, Secret)> {
    let stream = connect_any(&opts.coordinator)?;
    keepalive(&stream)?;
    stream.set_read_timeout(Some(HANDSHAKE_TIMEOUT))?;
    stream.set_write_timeout(Some(HANDSHAKE_TIMEOUT))?;
    // Serve on the address the coordinator reached us from: the node's
    // address on the cluster network.
    let here = stream.local_addr()?.ip();
    let listener = crate::sys::control_mark::bind(SocketAddr::new(here, 0))
        .with_context(|| format!("cannot listen on {here}"))?;
    let serve_address = listener.local_addr()?;
    let mut ch = ControlChannel::new(stream)?;
    let secret = handshake(&mut ch, opts, serve_address, here, deadline)?;
    Ok((ch, listener, secret))
}

/// The connection ended before the coordinator proved itself (worth
/// another try: nothing about this machine was sent).
#[derive(Debug)]
struct Cut;

impl std::fmt::Display for Cut {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the coordinator ended the connection before proving itself")
    }
}

impl std::error::Error for Cut {}

/// The agent's side of the handshake: Hellos, its claim to its name and
/// proof, the coordinator's proof (checked before anything about this
/// machine is sent), then its fingerprint. Returns the key the agents
/// measure each other with. Every read is bounded in size and time.
fn handshake(
    ch: &mut ControlChannel,
    opts: &AgentOptions,
    serve_address: SocketAddr,
    here: std::net::IpAddr,
    deadline: Instant,
) -> Result<Secret> {
    // A refusal may come instead of any message: it is said, not taken
    // for a malformed one.
    let recv_order = |ch: &mut ControlChannel| -> Result<Order> {
        recv_handshake(ch, deadline, MAX_REQUEST_BYTES)
    };
    // Until the coordinator has proved itself, a failed read or write is
    // a cut connection, tried again by the caller.
    // A refusal after the Hellos is final (a wrong secret, another
    // version) and said as the coordinator's.
    let cut = |e: anyhow::Error| match e.downcast_ref::<RefusedBy>() {
        Some(r) => anyhow::anyhow!("the coordinator {r}"),
        None => e.context(Cut),
    };
    ch.send(&Hello::ours()).map_err(cut)?;
    // Refused before the Hellos (an address not yet known, a flood of
    // handshakes): worth another try, and said if the last.
    let hello: Hello = recv_handshake(ch, deadline, MAX_REQUEST_BYTES).map_err(|e| match e
        .downcast_ref::<RefusedBy>()
    {
        Some(r) => anyhow::anyhow!("the coordinator {r}").context(Cut),
        None => e.context(Cut),
    })?;
    if hello.tool_version != Hello::ours().tool_version {
        let why = format!(
            "the coordinator runs wulf {}, this agent runs wulf {}",
            hello.tool_version,
            Hello::ours().tool_version
        );
        refuse(ch, why.clone());
        bail!(why);
    }
    let theirs = match recv_order(ch).map_err(cut)? {
        Order::Challenge { nonce } => nonce,
        Order::Refused { message } => bail!("the coordinator refused: {message}"),
        other => bail!("expected a challenge, got {other:?}"),
    };
    let key = crate::exec::credentials::key_of(&opts.secret, &opts.name);
    let ours = random_hex()?;
    ch.send(&Claim {
        name: opts.name.clone(),
        nonce: ours.clone(),
        proof: agent_proof(&key, &theirs, &ours),
    })
    .map_err(cut)?;
    let mesh = match recv_order(ch).map_err(cut)? {
        Order::Proof { proof, mesh } => {
            if !verify_coordinator(&key, &theirs, &ours, &proof) {
                // Told, so that a coordinator of another run says why this
                // node never joined; nothing about this machine is sent.
                refuse(ch, "the coordinator could not prove the run's secret");
                return Err(crate::error::peer(format!(
                    "the coordinator at {} could not prove the run's secret: not this \
                     run's coordinator; nothing was sent to it",
                    ch.stream()
                        .peer_addr()
                        .map_or_else(|_| "?".to_string(), |a| a.to_string())
                )));
            }
            unseal_mesh(&key, &theirs, &ours, &mesh)
                .context("the coordinator sent a malformed agents' key")?
        }
        Order::Refused { message } => bail!("the coordinator refused this agent: {message}"),
        other => bail!("expected the coordinator's proof, got {other:?}"),
    };
    let host = crate::sys::Host::probe().with_interface_holding(here);
    ch.send(&Join {
        serve_address: serve_address.to_string(),
        host,
    })?;
    let last = recv_order(ch).map_err(|e| match e.downcast_ref::<RefusedBy>() {
        Some(r) => anyhow::anyhow!("the coordinator {r}"),
        None => e,
    })?;
    match last {
        Order::Welcome => Ok(Secret::trusted(&mesh)),
        Order::Refused { message } => bail!("the coordinator refused this agent: {message}"),
        other => bail!("expected a welcome, got {other:?}"),
    }
}

/// Serve measuring sessions on this thread, one after another, until the
/// coordinator sends its next order (or closes the connection), at most
/// `timeout_ms`. A session's failure is the measuring agent's to report.
fn serve_until_told(
    listener: &TcpListener,
    policy: &SessionPolicy,
    ch: &mut ControlChannel,
    timeout_ms: u64,
) {
    use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
    use std::os::fd::AsFd;
    let deadline = std::time::Instant::now() + Duration::from_millis(timeout_ms);
    let control = match ch.stream().try_clone() {
        Ok(c) => c,
        Err(_) => return,
    };
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            return;
        }
        let mut fds = [
            PollFd::new(listener.as_fd(), PollFlags::POLLIN),
            PollFd::new(control.as_fd(), PollFlags::POLLIN),
        ];
        let wait =
            PollTimeout::try_from(left.min(Duration::from_secs(1))).unwrap_or(PollTimeout::MAX);
        match poll(&mut fds, wait) {
            Ok(0) | Err(nix::errno::Errno::EINTR) => continue,
            Err(_) => return,
            Ok(_) => {}
        }
        let ready = |f: &PollFd| f.revents().is_some_and(|r| !r.is_empty());
        if ready(&fds[1]) {
            // The next order (or the coordinator's end) is waiting.
            return;
        }
        if ready(&fds[0]) {
            if let Ok((stream, _)) = listener.accept() {
                let _ = crate::peer::server::session(stream, policy, None, &mut |_| {});
            }
        }
    }
}

/// The first of `addrs` that answers (each tried for a few seconds: one
/// published address may be on a network this node cannot reach).
fn connect_any(addrs: &[SocketAddr]) -> Result<TcpStream> {
    let each = if addrs.len() > 1 {
        Duration::from_secs(3)
    } else {
        HANDSHAKE_TIMEOUT
    };
    let mut last = None;
    for a in addrs {
        match crate::sys::control_mark::connect(*a, each) {
            Ok(s) => return Ok(s),
            Err(e) => last = Some(format!("{a}: {e}")),
        }
    }
    bail!(
        "cannot reach the coordinator ({})",
        last.unwrap_or_else(|| "no address".into())
    )
}

/// How an agent serves the other agents' measuring sessions: as `wulf
/// serve` does, but only for clients that prove the run's one-time secret,
/// and a few at once (the schedule sends one at a time, but one step's
/// session may still be closing when the next begins).
fn serve_options(secret: Secret) -> ServeOptions {
    ServeOptions {
        bind: std::net::Ipv4Addr::UNSPECIFIED.into(),
        port: 0,
        policy: SessionPolicy {
            max_bytes: MAX_SERVE_BYTES,
            max_timeout: MAX_SERVE_TIMEOUT,
            max_session: MAX_SERVE_TIMEOUT,
            handshake_limit: HANDSHAKE_TIMEOUT,
            local_transports: LocalTransports::LoopbackClients,
            allow_pinning: false,
            // Only the run's own coordinator and agents prove the secret.
            allow_load: true,
            allow_lean_remote: true,
            max_memory_bytes: u64::MAX,
            secret: Some(secret),
        },
        allow: Vec::new(),
        max_tests: 4,
        once: false,
        announce: false,
        log: false,
    }
}

/// One directed cell: the parts asked for (a ping-pong at
/// `latency_bytes`, a stream at `latency_bytes`), then a stream at
/// `bandwidth_bytes`, each an ordinary sweep of one size against the agent
/// at `peer`. The budget is shared in the weights 1 (ping-pong), 1 (small
/// stream) and 2 (large stream): a cell of the two usual parts gives a
/// third and two thirds.
fn measure(
    secret: &Secret,
    peer: &str,
    via: &str,
    (latency_bytes, bandwidth_bytes): (u64, u64),
    parts: CellParts,
    (budget_ms, timeout_ms): (u64, u64),
    overruns: &mut Overruns,
) -> CellReport {
    let started = std::time::Instant::now();
    let mut report = CellReport::default();
    let weights = f64::from(u8::from(parts.latency)) + f64::from(u8::from(parts.rate)) + 2.0;
    // A lossy link stretches a cell far past its budget (18-50 s for 2 s),
    // and the matrix keeps its `--budget` only if the cell stops and keeps
    // what it measured: each part ends by a deadline, its share of the
    // budget times DEADLINE_BUDGETS plus what setting a sweep up costs
    // this agent ([`Overruns::allowance`]: a loaded host's cells are slow to
    // start, not lossy).
    let mut run = |mode: Mode, bytes: u64, weight: f64| -> Result<Part> {
        let share = Duration::from_millis(budget_ms).mul_f64(weight / weights);
        let mut spec = cell_spec(
            peer,
            via,
            mode,
            bytes,
            share.as_secs_f64() * 1e3,
            timeout_ms,
        );
        spec.peer_secret = Some(secret.clone());
        let begun = Instant::now();
        let deadline = begun + share.mul_f64(DEADLINE_BUDGETS) + overruns.allowance();
        spec.deadline = Some(deadline);
        let outcome = super::deadline::sweep_past_the_door(&spec, deadline)?;
        overruns.push(begun.elapsed().saturating_sub(share));
        if let Some(e) = outcome.error {
            return Err(e);
        }
        let point = outcome.result.points.into_iter().next();
        let past = std::time::Instant::now() >= deadline;
        match point {
            // A point stopped by the deadline before it converged.
            Some(p) => Ok((past && p.noisy, Some(p))),
            None if past => Ok((true, None)),
            None => anyhow::bail!("the sweep measured nothing"),
        }
    };
    if parts.latency {
        match run(Mode::Pingpong, latency_bytes, 1.0) {
            Ok((cut, p)) => (report.cut, report.latency) = (report.cut || cut, p),
            Err(e) => report.error = Some(format!("latency: {e:#}")),
        }
    }
    if parts.rate && report.error.is_none() {
        match run(Mode::Stream, latency_bytes, 1.0) {
            Ok((cut, p)) => (report.cut, report.rate) = (report.cut || cut, p),
            Err(e) => report.error = Some(format!("message rate: {e:#}")),
        }
    }
    if report.error.is_none() {
        // How busy the whole host was while the stream ran: whether the
        // host rather than the link may have set it (issue 35 item 3).
        let mut stat = crate::load::kernel::StatReader::new();
        let before = stat.read().ok();
        match run(Mode::Stream, bandwidth_bytes, 2.0) {
            Ok((cut, p)) => (report.cut, report.bandwidth) = (report.cut || cut, p),
            Err(e) => report.error = Some(format!("bandwidth: {e:#}")),
        }
        let busy = before
            .zip(stat.read().ok())
            .and_then(|(b, a)| crate::load::kernel::busy_share(&b, &a));
        report.net = Some(CellNet {
            cpu_busy_share: busy,
            ..CellNet::default()
        });
    }
    report.measure_s = started.elapsed().as_secs_f64();
    report
}

/// A part of a cell: whether its deadline cut it, and its point (none
/// when cut before its first trial).
type Part = (bool, Option<crate::result::Point>);

/// How many times its budget a cell may take before its parts are cut
/// (the engine's fewest trials and a block under way come on top).
const DEADLINE_BUDGETS: f64 = 1.25;

fn cell_spec(
    peer: &str,
    via: &str,
    mode: Mode,
    bytes: u64,
    budget_ms: f64,
    timeout_ms: u64,
) -> SweepSpec {
    let channel = ChannelOptions {
        sndbuf_bytes: None,
        rcvbuf_bytes: None,
        nodelay: true,
        mss_bytes: None,
        ipv6: peer.starts_with('['),
        timeout_ms,
        // Agents share nodes' CPUs with the system; nothing is pinned.
        wait: WaitMode::Block,
        busy_poll: false,
        iface: None,
    };
    let budget = Duration::from_secs_f64(budget_ms.max(1.0) / 1e3);
    SweepSpec {
        limits: false,
        peer: Some(peer.to_string()),
        ..SweepSpec::new(via, mode, vec![bytes], budget, channel)
    }
}

/// TCP keepalive on the control connection: a coordinator whose machine
/// vanished (no FIN ever comes) is noticed within about a minute.
pub(super) fn keepalive(stream: &TcpStream) -> Result<()> {
    let ka = socket2::TcpKeepalive::new()
        .with_time(Duration::from_secs(15))
        .with_interval(Duration::from_secs(5))
        .with_retries(6);
    socket2::SockRef::from(stream).set_tcp_keepalive(&ka)?;
    Ok(())
}

/// The agent's side of the handshake over `stream`, connected to a
/// coordinator, by `within` (the entry point of the fuzz target
/// `agent_session`, [`crate::fuzzing::agent_session`]: a coordinator's
/// messages in any order and shape must end it with an error, never a
/// panic or a wait beyond the deadline). Nothing is served.
pub fn handshake_on(stream: TcpStream, opts: &AgentOptions, within: Duration) -> Result<()> {
    let here = stream.local_addr()?.ip();
    // Never listened on: the handshake only announces it.
    let serve_address = SocketAddr::new(here, 9);
    let mut ch = ControlChannel::new(stream)?;
    handshake(&mut ch, opts, serve_address, here, Instant::now() + within).map(|_| ())
}
