//! Letting agents into a matrix: who may connect, how many at once, and
//! the coordinator's side of the handshake ([`super::protocol`]).
//!
//! The coordinator's port is open to the network before anyone has proved
//! anything, so admission costs a bounded amount whatever arrives, as for
//! `wulf serve` ([`crate::peer::server`], whose admission this reuses):
//!
//! * only the expected hosts' addresses may connect: those the host names
//!   resolve to, and this machine's own (local agents, an agent beside the
//!   coordinator); any other connection is told so in one line and closed
//!   before a byte of it is read ([`super::refusal`]).
//!   Tasks of `srun` or `mpirun`, which name themselves, are not known
//!   beforehand: each publishes its addresses in a private file of the
//!   user's ([`super::sources`]) before it connects, and a connection from
//!   an address not yet known has those files read again (at most every
//!   [`REREAD_EVERY`]; a task refused before its file was seen tries
//!   again). Where hosts cannot all be resolved (a name only the remote
//!   shell knows), no address is refused: the secret and the limits
//!   below still hold;
//! * at most [`MAX_PENDING`] connections plus one per expected agent are
//!   in their handshake (until the agent has proved itself), at most
//!   [`MAX_PENDING_PER_SOURCE`] from one address (one per expected agent
//!   more on loopback, where simulated agents all come from), a newcomer
//!   ending the oldest of its own source (or of the heaviest): a flood
//!   costs a bounded number of threads and descriptors, and cannot lock
//!   out agents from other addresses;
//! * every read of a handshake is bounded in size (a Hello or a claim a few
//!   kilobytes, a fingerprint [`super::protocol::MAX_JOIN_BYTES`]) and all
//!   of it by one deadline, so a trickle cannot hold a place longer;
//! * a failed accept (out of file descriptors) is a pause, not the end of
//!   the run: places free up as handshakes end.

use std::net::{IpAddr, TcpListener, TcpStream};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use super::coordinator::{MatrixPlan, Member};
use super::protocol::{
    coordinator_proof, random_hex, seal_mesh, verify_agent, Claim, ControlChannel, Hello, Join,
    Order, MAX_JOIN_BYTES, MAX_REQUEST_BYTES,
};
use super::refusal::{recv_handshake, refuse, Lingering, RefusedBy};
use crate::exec::credentials::node_key;
use crate::exec::Agents;
use crate::peer::server::{
    Admission, Pending, ENDED_FOR_A_NEWER, MAX_PENDING, MAX_PENDING_PER_SOURCE,
};
use crate::result::matrix::MatrixNode;
use crate::sys::path::plain_ip;

/// Pause after a failed accept (out of descriptors), so that a lasting
/// failure neither spins nor ends the run.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);

/// Shortest time between two readings of the tasks' addresses files, so
/// that a flood from unknown addresses cannot make the coordinator read
/// files in a loop.
const REREAD_EVERY: Duration = Duration::from_millis(100);

/// Longest node name an agent may claim, in bytes.
const MAX_NAME_BYTES: usize = 255;

/// Refused source addresses named in a missing node's error.
const SHOWN_REFUSALS: usize = 4;

/// The run's keys, as the handshakes need them.
#[derive(Clone)]
pub(super) struct Keys {
    /// The run's secret: every node's key derives from it.
    pub secret: String,
    /// The agents' common key, sealed to each agent in its handshake.
    pub mesh: String,
}

/// An agent that completed its handshake.
type Joined = (Claim, Join, ControlChannel);

/// Accept and authenticate agents until every host has joined, every
/// launch has exited, or the timeout passes; name the missing hosts.
pub(super) fn admit(
    plan: &MatrixPlan,
    listener: TcpListener,
    keys: &Keys,
    agents: &mut Agents,
    nodes: &mut Vec<MatrixNode>,
    members: &mut Vec<Member>,
) -> Result<()> {
    let n = plan.expected;
    let named_by_agents = plan.hosts.is_empty();
    // Starting a thousand remote shells takes time of its own.
    let wait = plan.timeout.max(Duration::from_secs(10)) + Duration::from_millis(20 * n as u64);
    let began = Instant::now();
    let deadline = began + wait;
    let machines = crate::cluster::nodes::machines(&plan.hosts);
    let mut sources = expected_sources(&machines, listener.local_addr()?.ip(), plan.timeout);
    let mut rank_sources = plan.rank_sources.clone().filter(|_| named_by_agents);
    let mut reread: Option<Instant> = None;
    if let Some(r) = rank_sources.as_mut() {
        let mut ips = own_addresses();
        ips.extend(r.read_new());
        sources = Some(ips);
        reread = Some(Instant::now());
    }
    listener.set_nonblocking(true)?;
    // As many places as agents are expected at once (they all start
    // together), on top of `wulf serve`'s; simulated agents all come from
    // loopback, real ones each from its own address.
    let per_source = if listener.local_addr()?.ip().is_loopback() {
        n + MAX_PENDING_PER_SOURCE
    } else {
        // `--ppn`: several agents from each host's address at once.
        MAX_PENDING_PER_SOURCE + n / machines.len().max(1)
    };
    let pending = Arc::new(
        Pending::with_limits(MAX_PENDING + n, per_source)
            .with_refusal(super::refusal::line(ENDED_FOR_A_NEWER)),
    );
    let (tx, rx) = mpsc::channel::<Joined>();
    // Agents that refused this coordinator, and why (a handshake thread's
    // last word), for the missing nodes' errors.
    let (told_tx, told_rx) = mpsc::channel::<String>();
    let mut told: Vec<String> = Vec::new();
    let mut lingering = Lingering::default();
    let mut joined = 0;
    let mut refused: Vec<IpAddr> = Vec::new();
    let mut accept_error: Option<String> = None;
    let mut exited_since: Option<Instant> = None;
    while joined < n && Instant::now() < deadline {
        if crate::sweep::interrupted() {
            break;
        }
        match listener.accept() {
            Ok((stream, who)) => {
                let ip = plain_ip(who.ip());
                if let (Some(s), Some(r)) = (sources.as_mut(), rank_sources.as_mut()) {
                    if !s.contains(&ip) && reread.is_none_or(|t| t.elapsed() >= REREAD_EVERY) {
                        s.extend(r.read_new().into_iter().map(plain_ip));
                        reread = Some(Instant::now());
                    }
                }
                if sources.as_ref().is_some_and(|s| !s.contains(&ip)) {
                    if !refused.contains(&ip) && refused.len() < SHOWN_REFUSALS {
                        refused.push(ip);
                    }
                    // Told why, nothing read, no thread.
                    lingering.refuse(
                        stream,
                        &format!("{ip} is not an address of this run's hosts"),
                    );
                    continue;
                }
                let ends = (&tx, &told_tx);
                start_handshake(stream, ip, &pending, keys, plan.timeout, ends);
                continue;
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(e) => {
                // Out of descriptors (a flood, a low ulimit) or a
                // connection reset before it was accepted: both pass.
                accept_error.get_or_insert_with(|| e.to_string());
                std::thread::sleep(ACCEPT_BACKOFF);
            }
        }
        lingering.tend();
        while let Ok(why) = told_rx.try_recv() {
            if told.len() < SHOWN_REFUSALS && !told.contains(&why) {
                told.push(why);
            }
        }
        while let Ok((claim, join, ch)) = rx.try_recv() {
            let known = nodes.iter().position(|x| x.name == claim.name);
            let i = match known {
                Some(i) => i,
                None if named_by_agents && nodes.len() < n => {
                    nodes.push(MatrixNode::named(&claim.name));
                    members.push(Member {
                        ch: None,
                        serve_address: String::new(),
                    });
                    nodes.len() - 1
                }
                None => {
                    let why = format!("'{}' is not a node of this run", claim.name);
                    refuse_joined(&mut lingering, ch, &why);
                    continue;
                }
            };
            if members[i].ch.is_some() {
                let why = format!(
                    "{} has already joined: run one task per node (srun \
                     --ntasks-per-node=1, mpirun --map-by ppr:1:node), or give --ppn N \
                     for N per node",
                    claim.name
                );
                refuse_joined(&mut lingering, ch, &why);
                continue;
            }
            let mut ch = ch;
            let _ = ch.send(&Order::Welcome);
            members[i] = Member {
                ch: Some(ch),
                serve_address: join.serve_address.clone(),
            };
            nodes[i].address = Some(join.serve_address);
            nodes[i].host = Some(join.host);
            joined += 1;
        }
        // Every launch has ended: nobody else can join (after a moment
        // for connections already made). Tasks started by a launcher the
        // user ran (srun, mpirun) are no launches of ours: the wait is
        // theirs in full, or a task slower to start than a second was
        // named missing.
        if !named_by_agents && agents.all_exited() {
            let since = *exited_since.get_or_insert_with(Instant::now);
            if since.elapsed() > Duration::from_secs(1) {
                break;
            }
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    // Less than `wait` when every launch ended first.
    let waited = began.elapsed();
    let mut also = String::new();
    if !refused.is_empty() {
        let shown: Vec<String> = refused.iter().map(IpAddr::to_string).collect();
        also.push_str(&format!(
            "; connections from {} were refused: not an address of the hosts",
            shown.join(", ")
        ));
    }
    if let Some(e) = &accept_error {
        also.push_str(&format!("; accepting connections failed at times: {e}"));
    }
    for why in &told {
        also.push_str(&format!("; {why}"));
    }
    for (i, m) in members.iter().enumerate() {
        if m.ch.is_none() {
            let why = agents.why_missing(&plan.hosts[i]);
            nodes[i].error = Some(format!(
                "did not join within {:.0}s: {why}{also}",
                waited.as_secs_f64()
            ));
        }
    }
    if named_by_agents {
        // The tasks that never joined have no name (they would have told
        // it): each is a node of its own in the result, so the partial
        // result says how many of how many joined, and why not.
        for k in nodes.len()..n {
            nodes.push(MatrixNode {
                name: format!("~task {}", k + 1),
                address: None,
                host: None,
                error: Some(format!(
                    "did not join within {:.0}s: one of the {n} tasks the launcher started{also}",
                    waited.as_secs_f64()
                )),
                machine: None,
            });
            members.push(Member {
                ch: None,
                serve_address: String::new(),
            });
        }
        // Node order by name, as a host list would give it.
        let mut both: Vec<(MatrixNode, Member)> = nodes.drain(..).zip(members.drain(..)).collect();
        both.sort_by(|a, b| a.0.name.cmp(&b.0.name));
        for (node, member) in both {
            nodes.push(node);
            members.push(member);
        }
    }
    Ok(())
}

/// Refuse an agent that completed its handshake (from the accept loop:
/// its connection lingers there).
fn refuse_joined(lingering: &mut Lingering, ch: ControlChannel, why: &str) {
    if let Ok(s) = ch.stream().try_clone() {
        lingering.refuse(s, why);
    }
}

/// Take a handshake place for `stream` and run its handshake on a thread
/// of its own; a good agent is sent on `tx`, an agent's refusal of this
/// coordinator on `told`. Without a place or a thread (out of descriptors
/// or memory) the connection is closed.
fn start_handshake(
    stream: TcpStream,
    ip: IpAddr,
    pending: &Arc<Pending>,
    keys: &Keys,
    timeout: Duration,
    (tx, told): (&mpsc::Sender<Joined>, &mpsc::Sender<String>),
) {
    let Some(admission) = Pending::admit(pending, &stream, ip, false) else {
        return;
    };
    let Ok(nonce) = random_hex() else {
        return;
    };
    let (tx, told) = (tx.clone(), told.clone());
    let keys = keys.clone();
    // A real agent probes its machine mid-handshake: give it time, but
    // never more than this in all, however it trickles.
    let deadline = Instant::now() + timeout.max(Duration::from_secs(30));
    let spawned = std::thread::Builder::new()
        .name("wulf-admit".into())
        .spawn(
            move || match handshake(&stream, &keys, &nonce, deadline, admission) {
                Ok(j) => {
                    let _ = tx.send(j);
                }
                Err(e) => {
                    if let Some(r) = e.downcast_ref::<RefusedBy>() {
                        let _ = told.send(format!("an agent from {ip} {r}"));
                    }
                }
            },
        );
    // On failure the closure, with the stream and the place, is dropped.
    let _ = spawned;
}

/// The coordinator's side of an agent's handshake: Hellos, the challenge,
/// the agent's claim (a wrong proof is refused here), the coordinator's
/// proof with the agents' key, and the agent's fingerprint.
/// The place among handshakes is given back once the agent has proved
/// itself (or failed): only the unauthenticated part is held to it.
fn handshake(
    stream: &TcpStream,
    keys: &Keys,
    nonce: &str,
    deadline: Instant,
    admission: Admission,
) -> Result<Joined> {
    stream.set_nonblocking(false)?;
    let left = deadline.saturating_duration_since(Instant::now());
    stream.set_write_timeout(Some(left.max(Duration::from_millis(1))))?;
    super::agent::keepalive(stream)?;
    let mut ch = ControlChannel::new(stream.try_clone()?)?;
    ch.send(&Hello::ours())?;
    let hello: Hello = recv_handshake(&mut ch, deadline, MAX_REQUEST_BYTES)?;
    if hello.tool_version != Hello::ours().tool_version {
        refuse(
            &mut ch,
            format!(
                "the coordinator runs wulf {}, this agent runs wulf {}",
                Hello::ours().tool_version,
                hello.tool_version
            ),
        );
        bail!("agent of wulf {}", hello.tool_version);
    }
    ch.send(&Order::Challenge {
        nonce: nonce.to_string(),
    })?;
    let claim: Claim = recv_handshake(&mut ch, deadline, MAX_REQUEST_BYTES)?;
    if claim.name.is_empty() || claim.name.len() > MAX_NAME_BYTES {
        refuse(
            &mut ch,
            format!("a node name has 1 to {MAX_NAME_BYTES} bytes"),
        );
        bail!("a node name of {} bytes", claim.name.len());
    }
    // The key of the name claimed: an agent holding another node's key
    // (or none) cannot make this proof.
    let key = node_key(&keys.secret, &claim.name);
    if !verify_agent(&key, nonce, &claim.nonce, &claim.proof) {
        refuse(&mut ch, "wrong secret");
        bail!("{} sent a wrong proof", claim.name);
    }
    // Proved: no longer a stranger's connection.
    drop(admission);
    let mesh = seal_mesh(&key, nonce, &claim.nonce, &keys.mesh).context("a malformed key")?;
    ch.send(&Order::Proof {
        proof: coordinator_proof(&key, nonce, &claim.nonce),
        mesh,
    })?;
    let join: Join = recv_handshake(&mut ch, deadline, MAX_JOIN_BYTES)?;
    // Orders may be far apart; the rounds set their own read timeouts.
    stream.set_write_timeout(None)?;
    Ok((claim, join, ch))
}

/// The addresses agents may connect from, or None where any may (see the
/// module notes): the hosts' resolved addresses and this machine's own.
fn expected_sources(hosts: &[String], listen: IpAddr, limit: Duration) -> Option<Vec<IpAddr>> {
    if hosts.is_empty() {
        return None;
    }
    let mut ips = own_addresses();
    if listen.is_loopback() {
        // Only this machine can reach a loopback address: local agents.
        return Some(ips);
    }
    // Names resolve on a thread, so that a slow resolver costs at most
    // `limit` and then only the address check.
    let (tx, rx) = mpsc::channel();
    let names = hosts.to_vec();
    std::thread::spawn(move || {
        use std::net::ToSocketAddrs;
        let mut out = Vec::new();
        for h in names {
            match (h.as_str(), 0).to_socket_addrs() {
                Ok(addrs) => out.extend(addrs.map(|a| plain_ip(a.ip()))),
                Err(_) => {
                    let _ = tx.send(None);
                    return;
                }
            }
        }
        let _ = tx.send(Some(out));
    });
    let resolved = rx.recv_timeout(limit.max(Duration::from_secs(1))).ok()??;
    ips.extend(resolved);
    Some(ips)
}

/// Every address of this machine's interfaces, loopback included.
fn own_addresses() -> Vec<IpAddr> {
    let mut out: Vec<IpAddr> = vec![IpAddr::from([127, 0, 0, 1])];
    if let Ok(addrs) = nix::ifaddrs::getifaddrs() {
        for i in addrs {
            let Some(a) = i.address else { continue };
            if let Some(v4) = a.as_sockaddr_in() {
                out.push(IpAddr::V4(v4.ip()));
            } else if let Some(v6) = a.as_sockaddr_in6() {
                out.push(plain_ip(IpAddr::V6(v6.ip())));
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_agents_may_connect_from_this_machine_alone() {
        let s = expected_sources(
            &["sim1".into()],
            IpAddr::from([127, 0, 0, 1]),
            Duration::ZERO,
        )
        .unwrap();
        assert!(s.contains(&IpAddr::from([127, 0, 0, 1])));
        assert!(!s.contains(&IpAddr::from([127, 0, 0, 9])));
        assert!(!s.contains(&IpAddr::from([192, 0, 2, 1])));
        // Agents that name themselves: no address known beforehand.
        assert!(expected_sources(&[], IpAddr::from([0, 0, 0, 0]), Duration::ZERO).is_none());
        // Hosts given by address resolve to themselves.
        let s = expected_sources(
            &["192.0.2.7".into()],
            IpAddr::from([192, 0, 2, 1]),
            Duration::from_secs(1),
        )
        .unwrap();
        assert!(s.contains(&IpAddr::from([192, 0, 2, 7])));
        assert!(!s.contains(&IpAddr::from([192, 0, 2, 8])));
    }
}
