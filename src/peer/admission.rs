//! Places for connections in their handshake: how `wulf serve` (and
//! `wulf matrix`'s coordinator) bound what unauthenticated connections
//! cost, and decide whom to end when the places run out.
//!
//! At most [`MAX_PENDING`] connections are in their handshake, at most
//! [`MAX_PENDING_PER_SOURCE`] from one source (an IPv4 address or an IPv6
//! /64, [`super::penalty::source_of`]). A newcomer beyond either limit is
//! not turned away: an older handshake is ended instead, since refusing
//! the newcomer let 16 idle connections that reconnect when dropped lock
//! every client out. Whom to end, in order:
//!
//! 1. over the per-source limit: the newcomer's own source's oldest;
//! 2. over the total: the oldest of a *penalized* source
//!    ([`super::penalty`]: one whose handshakes keep ending unauthenticated);
//! 3. else the oldest of the source holding the most places, when one
//!    holds more than one;
//! 4. else the oldest of all.
//!
//! Rules 2-4 pass over the places of *known* sources (whose handshake
//! succeeded lately, [`super::penalty::KNOWN_FOR`]) while any stranger
//! holds one. And a newcomer from a penalized source that is not known,
//! while half the places or more are taken, is refused outright (told
//! why) and ends no one. With every
//! address holding one place, rule 3 once chose the *newest* entry (the
//! last of equal maxima): the client just admitted, so 40 idle attackers
//! from 40 addresses kept 0 of 8 sweeps out. Now their reconnections are
//! struck, penalized within milliseconds and turned away, and a client's
//! handshake, which takes milliseconds, is through before anything can end
//! it. Penalties are `wulf serve`'s; the coordinator, whose agents may all
//! come from one loopback address, uses the eviction rules alone.

use std::collections::VecDeque;
use std::net::{IpAddr, Shutdown, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use super::penalty::{source_of, Penalties};

/// Connections in their handshake at once; a newcomer beyond it ends an
/// older handshake.
pub const MAX_PENDING: usize = 16;

/// Connections in their handshake at once from one source; a newcomer
/// beyond it ends that source's oldest handshake.
pub const MAX_PENDING_PER_SOURCE: usize = 4;

/// Why a handshake was ended by the server (the message it is told).
pub const ENDED_FOR_A_NEWER: &str = "too many connections in their handshake: \
     this one, the oldest of its address (or of the busiest), was ended to admit a newer one";

/// What a penalized source's connection is told when refused.
pub const REFUSED_PENALIZED: &str = "too many connections in their handshake, \
     and connections from this address keep ending without authenticating: \
     refused for now; try again in a few seconds";

/// One connection in its handshake.
struct Entry {
    id: u64,
    source: IpAddr,
    handle: TcpStream,
}

/// The connections in their handshake, oldest first, and the strikes of
/// their sources.
#[derive(Default)]
pub struct Pending {
    entries: Mutex<VecDeque<Entry>>,
    next_id: AtomicU64,
    /// Places in all and per source, when not [`MAX_PENDING`] and
    /// [`MAX_PENDING_PER_SOURCE`].
    limits: Option<(usize, usize)>,
    /// The line an ended handshake is told (its protocol's error message);
    /// None: `wulf serve`'s [`super::protocol::Reply::Error`].
    refusal: Option<Vec<u8>>,
    /// Strikes by source; None: no penalties (the coordinator).
    penalties: Option<Mutex<Penalties>>,
}

impl Pending {
    /// `wulf serve`'s places: the default limits, with penalties.
    pub fn for_server() -> Pending {
        Pending {
            penalties: Some(Mutex::new(Penalties::default())),
            ..Pending::default()
        }
    }

    /// Handshake places with other limits than `wulf serve`'s: `total` in
    /// all, `per_source` from one address (a coordinator expecting many
    /// agents at once, all of them from this machine's loopback when
    /// simulated), without penalties.
    pub fn with_limits(total: usize, per_source: usize) -> Pending {
        Pending {
            limits: Some((total.max(1), per_source.max(1))),
            ..Pending::default()
        }
    }

    /// The same, telling an ended handshake `line` (a whole message of the
    /// protocol spoken on these connections, newline included) instead of
    /// `wulf serve`'s error reply.
    pub fn with_refusal(self, line: Vec<u8>) -> Pending {
        Pending {
            refusal: Some(line),
            ..self
        }
    }

    /// What an ended handshake is told.
    fn refusal_line(&self, why: &str) -> Vec<u8> {
        if let Some(l) = &self.refusal {
            return l.clone();
        }
        let mut l = serde_json::to_vec(&super::protocol::Reply::Error {
            message: why.to_string(),
        })
        .unwrap_or_default();
        l.push(b'\n');
        l
    }

    fn limits(&self) -> (usize, usize) {
        self.limits.unwrap_or((MAX_PENDING, MAX_PENDING_PER_SOURCE))
    }

    fn penalized(&self, source: IpAddr, now: Instant) -> bool {
        self.penalties
            .as_ref()
            .is_some_and(|p| lock(p).penalized(source, now))
    }

    fn known(&self, source: IpAddr, now: Instant) -> bool {
        self.penalties
            .as_ref()
            .is_some_and(|p| lock(p).known(source, now))
    }

    fn strike(&self, source: IpAddr) {
        if let Some(p) = &self.penalties {
            lock(p).strike(source, Instant::now());
        }
    }

    fn vouch(&self, source: IpAddr) {
        if let Some(p) = &self.penalties {
            lock(p).vouch(source, Instant::now());
        }
    }

    /// Take a place for `stream` from `ip`, ending an older handshake when
    /// a limit is reached (see the module notes); `None` when the newcomer
    /// is refused (a penalized source under pressure, told why) or no
    /// handle to it can be made (out of descriptors): the caller drops the
    /// stream, which closes it.
    pub fn admit(
        pending: &Arc<Pending>,
        stream: &TcpStream,
        ip: IpAddr,
        log: bool,
    ) -> Option<Admission> {
        let source = source_of(ip);
        let now = Instant::now();
        let (max, per_source) = pending.limits();
        let mut entries = lock(&pending.entries);
        let penalized = |s: IpAddr| pending.penalized(s, now);
        let known = |s: IpAddr| pending.known(s, now);
        if penalized(source) && !known(source) && entries.len() >= max.div_ceil(2) {
            drop(entries);
            tell_and_close(stream, &pending.refusal_line(REFUSED_PENALIZED));
            if log {
                eprintln!("wulf serve: refused {ip}: its handshakes keep ending unauthenticated");
            }
            return None;
        }
        let handle = stream.try_clone().ok()?;
        let victim = choose_victim(&entries, source, (max, per_source), &penalized, &known);
        if let Some(k) = victim.and_then(|k| entries.remove(k)) {
            pending.strike(k.source);
            tell_and_close(&k.handle, &pending.refusal_line(ENDED_FOR_A_NEWER));
            if log {
                eprintln!(
                    "wulf serve: ended a handshake from {} to admit a newer one",
                    k.source
                );
            }
        }
        let id = pending.next_id.fetch_add(1, Ordering::Relaxed);
        entries.push_back(Entry { id, source, handle });
        Some(Admission(Some((Arc::clone(pending), id))))
    }

    /// Give back place `id`; `authenticated` false strikes its source
    /// (unless the place was already ended to admit another, which struck
    /// it then).
    fn release(&self, id: u64, authenticated: bool) {
        let mut entries = lock(&self.entries);
        let Some(k) = entries.iter().position(|e| e.id == id) else {
            return;
        };
        let source = entries[k].source;
        entries.remove(k);
        drop(entries);
        if authenticated {
            self.vouch(source);
        } else {
            self.strike(source);
        }
    }
}

/// The position of the handshake to end for a newcomer from `source`
/// (module notes, rules 1-4); None while there is room.
fn choose_victim(
    entries: &VecDeque<Entry>,
    source: IpAddr,
    (max, per_source): (usize, usize),
    penalized: &dyn Fn(IpAddr) -> bool,
    known: &dyn Fn(IpAddr) -> bool,
) -> Option<usize> {
    let count = |s: IpAddr| entries.iter().filter(|e| e.source == s).count();
    if count(source) >= per_source {
        return entries.iter().position(|e| e.source == source);
    }
    if entries.len() < max {
        return None;
    }
    // Known sources' places are ended only when no stranger holds one.
    let any_stranger = entries.iter().any(|e| !known(e.source));
    let endable = |e: &Entry| !any_stranger || !known(e.source);
    if let Some(k) = entries
        .iter()
        .position(|e| endable(e) && penalized(e.source))
    {
        return Some(k);
    }
    // The oldest entry of the source holding the most places; among
    // equals the first found, which is the oldest (never the newest: that
    // is the client just admitted).
    let mut heaviest: Option<(usize, usize)> = None;
    for (k, e) in entries.iter().enumerate().filter(|(_, e)| endable(e)) {
        let n = count(e.source);
        if heaviest.is_none_or(|(_, most)| n > most) {
            heaviest = Some((k, n));
        }
    }
    heaviest.map(|(k, _)| k)
}

/// Send `line` without waiting (a line fits the send buffer, and a full
/// one means a client that reads nothing anyway), then close, so that the
/// session's next read fails at once and its thread ends.
fn tell_and_close(stream: &TcpStream, line: &[u8]) {
    let _ = socket2::SockRef::from(stream).send_with_flags(line, libc::MSG_DONTWAIT);
    let _ = stream.shutdown(Shutdown::Write);
    let _ = stream.shutdown(Shutdown::Both);
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// A connection's place among those in their handshake, given back once:
/// by [`Admission::authenticated`] when its handshake succeeded, or when
/// dropped, which counts as a handshake that ended without authenticating.
pub struct Admission(Option<(Arc<Pending>, u64)>);

impl Admission {
    /// The handshake is over and succeeded (or the server answered it,
    /// `busy`, say): the place is given back with no strike.
    pub fn authenticated(&mut self) {
        self.give_back(true);
    }

    /// The handshake ended: `ok` says whether it succeeded.
    pub fn give_back(&mut self, ok: bool) {
        if let Some((p, id)) = self.0.take() {
            p.release(id, ok);
        }
    }
}

impl Drop for Admission {
    fn drop(&mut self) {
        self.give_back(false);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    /// A pair of connected loopback streams (the server's end first).
    fn pair(l: &TcpListener) -> (TcpStream, TcpStream) {
        let c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        (l.accept().unwrap().0, c)
    }

    fn ip(k: u32) -> IpAddr {
        IpAddr::V4(std::net::Ipv4Addr::from(0x7f00_0000 + k))
    }

    /// The lockout of issue 45: with every address holding one place, the
    /// newest entry (a client just admitted) was the one ended.
    #[test]
    fn with_one_place_per_address_the_client_just_admitted_survives_the_next_arrival() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let p = Arc::new(Pending::with_limits(4, 4));
        let mut keep = Vec::new();
        for k in 2..6 {
            let (s, c) = pair(&l);
            keep.push((Pending::admit(&p, &s, ip(k), false).unwrap(), s, c));
        }
        // The table is full; a client arrives and ends the oldest.
        let (s, c) = pair(&l);
        let client = Pending::admit(&p, &s, ip(1), false).unwrap();
        let client_id = client.0.as_ref().unwrap().1;
        let (s2, c2) = pair(&l);
        let _next = Pending::admit(&p, &s2, ip(7), false).unwrap();
        let ids: Vec<u64> = lock(&p.entries).iter().map(|e| e.id).collect();
        assert!(ids.contains(&client_id), "the client was ended: {ids:?}");
        drop((client, s, c, c2, keep));
    }

    #[test]
    fn a_penalized_source_is_refused_under_pressure_and_ended_first() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let p = Arc::new(Pending::for_server());
        let bad = ip(9);
        for _ in 0..3 {
            let (s, _c) = pair(&l);
            drop(Pending::admit(&p, &s, bad, false).unwrap()); // ended unauthenticated
        }
        // Room: even a penalized source is admitted while under half full.
        let (s, _c) = pair(&l);
        let held = Pending::admit(&p, &s, bad, false).unwrap();
        let mut keep = Vec::new();
        for k in 20..(20 + MAX_PENDING as u32 - 1) {
            let (s, c) = pair(&l);
            keep.push((Pending::admit(&p, &s, ip(k), false).unwrap(), s, c));
        }
        assert_eq!(lock(&p.entries).len(), MAX_PENDING);
        // Over half full: the penalized source is turned away at once.
        let (s, mut c) = pair(&l);
        assert!(Pending::admit(&p, &s, bad, false).is_none());
        drop(s);
        let mut told = String::new();
        std::io::Read::read_to_string(&mut c, &mut told).unwrap();
        assert!(
            told.contains("keep ending without authenticating"),
            "{told}"
        );
        // Full: a good newcomer ends the penalized place, not a good one.
        let (s, c) = pair(&l);
        keep.push((Pending::admit(&p, &s, ip(40), false).unwrap(), s, c));
        let held_id = held.0.as_ref().unwrap().1;
        assert!(!lock(&p.entries).iter().any(|e| e.id == held_id));
        assert_eq!(lock(&p.entries).len(), MAX_PENDING);
    }

    /// A known client (one of its handshakes succeeded) preempted in its
    /// next handshake while strangers keep arriving: they end one another,
    /// not it (issue 45; a CI run ended a matrix agent's third sweep so).
    #[test]
    fn strangers_end_one_another_before_a_known_clients_handshake() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let p = Arc::new(Pending::for_server());
        let client = ip(1);
        let (s, _c) = pair(&l);
        Pending::admit(&p, &s, client, false)
            .unwrap()
            .authenticated();
        // Its next handshake is the oldest of a full table of strangers.
        let (s, c) = pair(&l);
        let held = Pending::admit(&p, &s, client, false).unwrap();
        let held_id = held.0.as_ref().unwrap().1;
        let mut keep = Vec::new();
        for k in 100..(100 + 3 * MAX_PENDING as u32) {
            let (s, c) = pair(&l);
            if let Some(a) = Pending::admit(&p, &s, ip(k), false) {
                keep.push((a, s, c));
            }
        }
        let entries = lock(&p.entries);
        assert!(
            entries.iter().any(|e| e.id == held_id),
            "the client was ended"
        );
        assert_eq!(entries.len(), MAX_PENDING);
        drop(entries);
        drop((held, s, c, keep));
    }

    #[test]
    fn an_authenticated_client_is_never_struck() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let p = Arc::new(Pending::for_server());
        for _ in 0..10 {
            let (s, _c) = pair(&l);
            Pending::admit(&p, &s, ip(1), false)
                .unwrap()
                .authenticated();
        }
        assert!(!p.penalized(ip(1), Instant::now()));
        assert!(lock(&p.entries).is_empty());
    }
}
