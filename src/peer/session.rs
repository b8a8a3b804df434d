//! One client's session on a server: handshake, authentication, the
//! server's own limits, then the test, block by block.
//!
//! The server trusts nothing a client says about durations or sizes: every
//! request is checked against the [`SessionPolicy`] before anything is
//! allocated or waited on, the handshake must finish by a deadline however
//! slowly the client trickles bytes, and a [`Watchdog`] ends the session at
//! once when the client goes away or the session outlives `--max-session`.
//! The test itself, once set up, is [`super::test_run`].

use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Result};

use super::auth::{random_hex, Secret};
use super::protocol::{
    told, ControlChannel, Hello, Reply, Request, Setup, SinkAsk, MAGIC, MAX_REQUEST_BYTES,
};
use super::test_run::Test;
use super::watchdog::{Fired, Watchdog};
use crate::transport;

/// Role labels of the two proofs (see [`super::auth`]).
pub const CLIENT_ROLE: &str = "wulf-client";
/// The server's role label.
pub const SERVER_ROLE: &str = "wulf-server";

/// Longest wait for a client's next control message during a test.
const CONTROL_TIMEOUT: Duration = Duration::from_secs(30);

/// Which clients may use transports that only work within one machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LocalTransports {
    /// Clients on this machine's loopback addresses only.
    LoopbackClients,
    /// Every client (the local peer a sweep starts for itself).
    Always,
}

/// What a server lets its clients do.
#[derive(Debug, Clone)]
pub struct SessionPolicy {
    /// Largest message, bytes (`--max-size`).
    pub max_bytes: u64,
    /// Longest data-channel timeout a client may set (`--max-timeout`).
    pub max_timeout: Duration,
    /// Longest session, from the end of the handshake (`--max-session`).
    pub max_session: Duration,
    /// Time from connection to a complete set-up.
    pub handshake_limit: Duration,
    /// Who may ask for local-only transports.
    pub local_transports: LocalTransports,
    /// Whether clients may pin the server's measuring thread to a CPU.
    pub allow_pinning: bool,
    /// Whether clients may run a background load here (`--load-peer`;
    /// `wulf serve --allow-load`).
    pub allow_load: bool,
    /// Whether clients from another host may ask for the lean stacks
    /// (raw, xdp), which take a NIC's queue or send raw frames
    /// (`wulf serve --allow-lean`); loopback clients always may.
    pub allow_lean_remote: bool,
    /// Most memory a test's buffer pools may map, bytes (`--max-memory`).
    pub max_memory_bytes: u64,
    /// The shared secret clients must prove, if any.
    pub secret: Option<Secret>,
}

impl SessionPolicy {
    /// The peer a local sweep starts for itself (`--once`): its only client
    /// is the process that started it, so the client's settings stand.
    pub fn local_peer() -> SessionPolicy {
        SessionPolicy {
            max_bytes: u64::MAX,
            max_timeout: Duration::MAX,
            max_session: Duration::from_secs(100 * 365 * 24 * 3600),
            handshake_limit: Duration::from_secs(60),
            local_transports: LocalTransports::Always,
            allow_pinning: true,
            allow_load: true,
            allow_lean_remote: true,
            max_memory_bytes: u64::MAX,
            secret: None,
        }
    }
}

/// The server's slots for concurrent tests: taken after the handshake, so
/// that a client that never finishes it never blocks anyone.
#[derive(Debug, Clone)]
pub struct TestSlots {
    shared: Arc<SlotState>,
    /// Sinks running (clients' network loads): they take no test slot,
    /// so they have their own limit ([`super::sink::SinkPlaces`]).
    sinks: super::sink::SinkPlaces,
    max: usize,
}

#[derive(Debug, Default)]
struct SlotState {
    counts: Mutex<SlotCounts>,
    /// Signalled whenever a slot is given back.
    freed: Condvar,
}

#[derive(Debug, Default, Clone, Copy)]
struct SlotCounts {
    /// Slots held.
    used: usize,
    /// Of those, slots whose test is over and whose session only tears
    /// down its data channel ([`SlotGuard::ending`]).
    ending: usize,
}

/// Longest a new client waits for a slot whose test is over but whose
/// data channel is still being torn down, before it is told the server is
/// busy. The slot is kept until the channel is really gone, because the
/// next test may need what it holds (an XDP program attached to the
/// interface, an AF_XDP socket bound to its queue 0); but that teardown
/// waits in the kernel for RCU grace periods and cannot be hurried:
/// closing a packet socket took 14 ms on the development VM, detaching an
/// XDP program and closing its socket about 40 ms, the pools' memory more
/// when messages are large. A client starting its sweep right after the
/// last one ended used to arrive within that time and was turned away.
/// Bounded, so that a teardown gone wrong still ends in a clear `busy`.
const ENDING_WAIT: Duration = Duration::from_secs(2);

impl TestSlots {
    /// At most `max` tests at once.
    pub fn new(max: usize) -> TestSlots {
        TestSlots {
            shared: Arc::new(SlotState::default()),
            sinks: Default::default(),
            max,
        }
    }

    /// A slot, if one is free, or becomes free by `deadline` while the
    /// test holding it is over and only tears down (see [`ENDING_WAIT`]);
    /// a slot held by a running test is never waited for.
    fn take(&self, deadline: Instant) -> Option<SlotGuard> {
        let mut counts = lock(&self.shared.counts);
        loop {
            if counts.used < self.max {
                counts.used += 1;
                return Some(SlotGuard {
                    shared: Arc::clone(&self.shared),
                    ending: AtomicBool::new(false),
                });
            }
            let now = Instant::now();
            if counts.ending == 0 || now >= deadline {
                return None;
            }
            counts = self
                .shared
                .freed
                .wait_timeout(counts, deadline - now)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }
}

fn lock(m: &Mutex<SlotCounts>) -> std::sync::MutexGuard<'_, SlotCounts> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// A test slot, given back when dropped.
pub(super) struct SlotGuard {
    shared: Arc<SlotState>,
    ending: AtomicBool,
}

impl SlotGuard {
    /// The test is over (the client said goodbye, went away or failed):
    /// what is left is tearing down, and a client arriving meanwhile waits
    /// for the slot instead of being turned away.
    pub(super) fn ending(&self) {
        if !self.ending.swap(true, Ordering::AcqRel) {
            lock(&self.shared.counts).ending += 1;
        }
    }
}

impl Drop for SlotGuard {
    fn drop(&mut self) {
        let mut counts = lock(&self.shared.counts);
        counts.used -= 1;
        if *self.ending.get_mut() {
            counts.ending -= 1;
        }
        drop(counts);
        self.shared.freed.notify_all();
    }
}

/// Serve one client on an accepted control connection, start to end. `slots`
/// None: no limit (a local peer). `admitted` is called once the handshake is
/// over, with whether it succeeded (or was answered, `busy`): the server
/// counts connections still in their handshake, and strikes the sources of
/// those that end unauthenticated.
pub fn session(
    stream: TcpStream,
    policy: &SessionPolicy,
    slots: Option<&TestSlots>,
    admitted: &mut dyn FnMut(bool),
) -> Result<()> {
    let started = Instant::now();
    stream.set_read_timeout(Some(CONTROL_TIMEOUT))?;
    stream.set_write_timeout(Some(CONTROL_TIMEOUT))?;
    let local_ip = stream.local_addr()?.ip();
    let client_ip = stream.peer_addr()?.ip();
    let deadline = started + policy.handshake_limit;
    let dog = Watchdog::start(&stream, deadline, policy.max_session)?;
    let mut ch = ControlChannel::new(stream)?;
    // Every error of the handshake is told to the client before the
    // connection ends (a line it could not decode once closed it without
    // a word), and the connection is closed gently so that it reads it;
    // all of it while the handshake's place is still held.
    let got = handshake(&mut ch, policy, slots, deadline)
        .map_err(|e| tell(&mut ch, e, dog.fired(), policy));
    admitted(got.is_ok());
    let (setup, slot) = match got {
        Ok(Some(Opened::Test(setup, slot))) => (setup, slot),
        Ok(Some(Opened::Sink(ask, _place))) => {
            dog.handshake_done();
            return super::sink::serve(
                &mut ch,
                &ask,
                policy.max_session,
                local_ip,
                client_ip,
                &dog,
            )
            .map_err(|e| tell(&mut ch, e, dog.fired(), policy));
        }
        Ok(None) => return Ok(()),
        Err(e) => return Err(e),
    };
    dog.handshake_done();
    let test = Test {
        policy,
        // A server offers the built-in transports and the MPIs found by
        // default (it takes no --mpi).
        transport: transport::find(&setup.transport, &Default::default()),
        setup: &setup,
        local_ip,
        client_ip,
        dog: &dog,
        slot: slot.as_ref(),
    };
    let outcome = test.run(&mut ch);
    // The slot is free before the connection lingers for the error line.
    drop(slot);
    outcome.map_err(|e| tell(&mut ch, e, dog.fired(), policy))
}

/// The error `e` that ends a session, explained ([`explain`]) and told to
/// the client unless it went away or was told already; the connection is
/// then closed so that the client reads it
/// ([`ControlChannel::close_after_error`]).
fn tell(
    ch: &mut ControlChannel,
    e: anyhow::Error,
    fired: Option<Fired>,
    policy: &SessionPolicy,
) -> anyhow::Error {
    let e = explain(e, fired, policy);
    if fired != Some(Fired::ClientGone) {
        if !told(&e) {
            let _ = ch.send(&Reply::Error {
                message: format!("{e:#}"),
            });
        }
        ch.close_after_error();
    }
    e
}

/// The error to report when the watchdog ended the session (the client gone: and where it was).
fn explain(e: anyhow::Error, fired: Option<Fired>, policy: &SessionPolicy) -> anyhow::Error {
    match fired {
        None => e,
        Some(Fired::ClientGone) => anyhow::anyhow!("the client went away (then: {e:#})"),
        Some(Fired::HandshakeDeadline) => anyhow::anyhow!(
            "the client did not finish its handshake within {}",
            humantime::format_duration(policy.handshake_limit)
        ),
        Some(Fired::SessionDeadline) => anyhow::anyhow!(
            "the session reached this server's --max-session of {}",
            humantime::format_duration(policy.max_session)
        ),
    }
}

/// What a client's handshake opened.
enum Opened {
    /// A test: its set-up and the test slot it holds.
    Test(Setup, Option<SlotGuard>),
    /// A sink for the client's network load (`--load network` with
    /// `--peer`): no test slot, so the test it loads can still run; its
    /// place among the server's sinks (None: a local peer's, unlimited).
    Sink(SinkAsk, Option<super::sink::SinkPlace>),
}

/// Hellos, authentication, then a test slot and the set-up, or a sink.
/// Ok(None): the client was told the server is busy.
fn handshake(
    ch: &mut ControlChannel,
    policy: &SessionPolicy,
    slots: Option<&TestSlots>,
    deadline: Instant,
) -> Result<Option<Opened>> {
    ch.send(&Hello::ours())?;
    let hello: Hello = ch.recv_by(deadline, MAX_REQUEST_BYTES)?;
    let ours = Hello::ours();
    if hello.magic != MAGIC || hello.tool_version != ours.tool_version {
        let message = format!(
            "version mismatch: the client runs wulf {}, this server runs wulf {}",
            hello.tool_version, ours.tool_version
        );
        return Err(ch.refuse(message));
    }
    let our_nonce = random_hex()?;
    ch.send(&Reply::Challenge {
        nonce: our_nonce.clone(),
        secret_required: policy.secret.is_some(),
    })?;
    let (their_nonce, proof, sink) = match ch.recv_by(deadline, MAX_REQUEST_BYTES)? {
        Request::Auth { nonce, proof, sink } => (nonce, proof, sink),
        other => bail!("expected the client's authentication, got {}", name(&other)),
    };
    let server_proof = match &policy.secret {
        None => None,
        Some(secret) => {
            let refusal = match &proof {
                None => Some("this server requires a shared secret: give the client --secret-file FILE or WULF_SECRET"),
                Some(p) if !secret.verify(CLIENT_ROLE, &their_nonce, &our_nonce, p) => {
                    Some("authentication failed: the client's secret is not this server's")
                }
                Some(_) => None,
            };
            if let Some(message) = refusal {
                return Err(ch.refuse(message).context("refused"));
            }
            Some(secret.prove(SERVER_ROLE, &our_nonce, &their_nonce))
        }
    };
    if let Some(ask) = sink {
        let place = super::sink::admit(ch, policy.allow_load, slots.map(|s| &s.sinks))?;
        ch.send(&Reply::Welcome {
            proof: server_proof,
        })?;
        return Ok(Some(Opened::Sink(ask, place)));
    }
    let slot = match slots {
        None => None,
        Some(s) => match s.take(deadline.min(Instant::now() + ENDING_WAIT)) {
            Some(g) => Some(g),
            None => {
                ch.send(&Reply::Busy)?;
                return Ok(None);
            }
        },
    };
    ch.send(&Reply::Welcome {
        proof: server_proof,
    })?;
    let setup = match ch.recv_by(deadline, MAX_REQUEST_BYTES)? {
        Request::Setup(s) => s,
        other => bail!("expected a setup, got {}", name(&other)),
    };
    Ok(Some(Opened::Test(setup, slot)))
}

/// A request's name for error messages (never its contents, which a
/// hostile client chose).
pub(super) fn name(r: &Request) -> &'static str {
    match r {
        Request::Auth { .. } => "an authentication",
        Request::Setup(_) => "a setup",
        Request::Block { .. } => "a block",
        Request::StopLoads => "a request to stop the load",
        Request::Bye => "a goodbye",
    }
}
