//! Pre-authentication penalties of `wulf serve`: the memory of which
//! sources hold handshake places without ever finishing a handshake.
//!
//! Evicting the oldest handshake ([`super::admission`]) bounds what a flood
//! costs, but alone it cannot tell a client from an attacker: with idle
//! connections from 40 addresses reconnecting as fast as they are dropped,
//! a good client's place was taken by the next arrivals within a
//! millisecond (0 of 8 sweeps got in). What tells them apart is history:
//! an attacker's connections end unauthenticated hundreds of times a
//! second, a client's almost never. So every handshake that ends without
//! authenticating (closed, garbage, a wrong secret, the handshake deadline,
//! or ended to make room) is a *strike* against its source, and a source
//! with [`STRIKES_TO_PENALIZE`] recent strikes is *penalized*: while the
//! server is under pressure its new connections are refused at once, and
//! its places are the first ended for others (sshd's PerSourcePenalties
//! answer the same attack the same way).
//!
//! A source is an IPv4 address, or an IPv6 /64: one host commonly holds a
//! whole /64, so counting IPv6 addresses whole would give one attacker
//! unlimited sources (sshd's PerSourceNetBlockSize defaults, 32 and 64).
//! The table is bounded ([`MAX_SOURCES`]); a penalty lapses
//! [`penalty_for`] after the last strike, so an address that stops
//! attacking (or a client behind the same NAT) is served again.
//!
//! History also says who is a client: a source whose handshake succeeded
//! within [`KNOWN_FOR`] is *known* ([`Penalties::vouch`]), and strangers
//! end a known source's handshake only when every place is a known one's.
//! Without it a client's next connection was one more stranger: a matrix
//! agent whose ping-pong and message-rate sweeps had got in was ended at
//! its bandwidth sweep's handshake, preempted for a few hundred
//! milliseconds on a loaded 2-vCPU host while 120 idle connections from
//! 120 addresses reconnected around it (a CI run, issue 45).

use std::collections::HashMap;
use std::net::{IpAddr, Ipv6Addr};
use std::time::{Duration, Instant};

/// Strikes within a penalty's span that make a source penalized: a client
/// whose first one or two attempts were ended under an attack is not
/// penalized for them; an attacker reaches it within milliseconds.
pub const STRIKES_TO_PENALIZE: u32 = 3;

/// The longest a penalty lasts after its source's last strike.
pub const MAX_PENALTY: Duration = Duration::from_secs(60);

/// How long a source stays known after its last successful handshake.
pub const KNOWN_FOR: Duration = Duration::from_secs(600);

/// Sources remembered at once; beyond it, the penalty closest to its end
/// is forgotten first (an attack from more addresses than this is met by
/// the eviction rule alone).
pub const MAX_SOURCES: usize = 4096;

/// How long a source with `strikes` recent strikes stays marked after its
/// last one: a second per strike, up to [`MAX_PENALTY`], so a persistent
/// attacker stays penalized and a brief mistake is forgotten in seconds.
pub fn penalty_for(strikes: u32) -> Duration {
    Duration::from_secs(u64::from(strikes)).min(MAX_PENALTY)
}

/// The source a connection from `ip` is counted under: an IPv4 address
/// (an IPv4-mapped IPv6 address is its IPv4 one), or an IPv6 /64.
pub fn source_of(ip: IpAddr) -> IpAddr {
    match crate::sys::path::plain_ip(ip) {
        IpAddr::V6(v6) => {
            let prefix = u128::from(v6) & !((1u128 << 64) - 1);
            IpAddr::V6(Ipv6Addr::from(prefix))
        }
        v4 => v4,
    }
}

/// One source's record.
#[derive(Debug, Clone, Copy)]
struct Record {
    strikes: u32,
    last_strike: Instant,
    /// When a handshake from it last succeeded.
    last_ok: Option<Instant>,
}

impl Record {
    fn lapses_at(&self) -> Instant {
        self.last_strike + penalty_for(self.strikes)
    }

    fn known_until(&self) -> Option<Instant> {
        self.last_ok.map(|t| t + KNOWN_FOR)
    }

    /// When nothing is left to remember of it.
    fn forgotten_at(&self) -> Instant {
        self.known_until()
            .map_or(self.lapses_at(), |k| k.max(self.lapses_at()))
    }
}

/// Strikes by source, bounded in size.
#[derive(Debug, Default)]
pub struct Penalties {
    by_source: HashMap<IpAddr, Record>,
}

impl Penalties {
    /// A handshake from `source` (already [`source_of`]) ended without
    /// authenticating at `now`.
    pub fn strike(&mut self, source: IpAddr, now: Instant) {
        if let Some(r) = self.by_source.get_mut(&source) {
            // A lapsed record starts again from one strike.
            r.strikes = if now >= r.lapses_at() {
                1
            } else {
                r.strikes.saturating_add(1)
            };
            r.last_strike = now;
            return;
        }
        self.insert(
            source,
            Record {
                strikes: 1,
                last_strike: now,
                last_ok: None,
            },
            now,
        );
    }

    /// A handshake from `source` succeeded at `now`: its strikes are
    /// cleared and it is known for [`KNOWN_FOR`].
    pub fn vouch(&mut self, source: IpAddr, now: Instant) {
        if let Some(r) = self.by_source.get_mut(&source) {
            r.strikes = 0;
            r.last_ok = Some(now);
            return;
        }
        self.insert(
            source,
            Record {
                strikes: 0,
                last_strike: now,
                last_ok: Some(now),
            },
            now,
        );
    }

    /// Whether a handshake from `source` succeeded within [`KNOWN_FOR`].
    pub fn known(&self, source: IpAddr, now: Instant) -> bool {
        self.by_source
            .get(&source)
            .and_then(Record::known_until)
            .is_some_and(|until| now < until)
    }

    fn insert(&mut self, source: IpAddr, record: Record, now: Instant) {
        if self.by_source.len() >= MAX_SOURCES {
            self.make_room(now);
        }
        self.by_source.insert(source, record);
    }

    /// Whether `source` is penalized at `now`.
    pub fn penalized(&self, source: IpAddr, now: Instant) -> bool {
        self.by_source
            .get(&source)
            .is_some_and(|r| r.strikes >= STRIKES_TO_PENALIZE && now < r.lapses_at())
    }

    /// Sources remembered (lapsed ones included until room is made).
    pub fn len(&self) -> usize {
        self.by_source.len()
    }

    /// Whether no source is remembered.
    pub fn is_empty(&self) -> bool {
        self.by_source.is_empty()
    }

    /// Forget lapsed records, or when none has lapsed the one closest to
    /// lapsing: one pass over a bounded table, only when it is full.
    fn make_room(&mut self, now: Instant) {
        self.by_source.retain(|_, r| now < r.forgotten_at());
        if self.by_source.len() < MAX_SOURCES {
            return;
        }
        let soonest = self
            .by_source
            .iter()
            .min_by_key(|(_, r)| r.forgotten_at())
            .map(|(ip, _)| *ip);
        if let Some(ip) = soonest {
            self.by_source.remove(&ip);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn ipv6_counts_by_slash_64_and_ipv4_by_address() {
        assert_eq!(source_of(ip("2001:db8:1:2:aaaa::1")), ip("2001:db8:1:2::"));
        assert_eq!(
            source_of(ip("2001:db8:1:2:ffff:ffff:ffff:ffff")),
            source_of(ip("2001:db8:1:2::7"))
        );
        assert_ne!(
            source_of(ip("2001:db8:1:3::1")),
            source_of(ip("2001:db8:1:2::1"))
        );
        assert_eq!(source_of(ip("::ffff:198.18.0.7")), ip("198.18.0.7"));
        assert_ne!(source_of(ip("198.18.0.7")), source_of(ip("198.18.0.8")));
    }

    #[test]
    fn a_source_is_penalized_after_three_strikes_and_the_penalty_lapses() {
        let mut p = Penalties::default();
        let t = Instant::now();
        let a = ip("198.18.0.1");
        p.strike(a, t);
        p.strike(a, t);
        assert!(!p.penalized(a, t), "two strikes do not penalize");
        p.strike(a, t);
        assert!(p.penalized(a, t));
        assert!(p.penalized(a, t + Duration::from_millis(2900)));
        assert!(
            !p.penalized(a, t + Duration::from_secs(3)),
            "3 strikes: 3 s"
        );
        // After it lapsed, one more strike starts again from one.
        p.strike(a, t + Duration::from_secs(4));
        assert!(!p.penalized(a, t + Duration::from_secs(4)));
        assert!(!p.penalized(ip("198.18.0.2"), t));
    }

    #[test]
    fn a_successful_handshake_clears_strikes_and_is_known_for_a_while() {
        let mut p = Penalties::default();
        let t = Instant::now();
        let a = ip("198.18.0.1");
        assert!(!p.known(a, t));
        for _ in 0..5 {
            p.strike(a, t);
        }
        assert!(p.penalized(a, t));
        p.vouch(a, t);
        assert!(!p.penalized(a, t), "its strikes are cleared");
        assert!(p.known(a, t + KNOWN_FOR - Duration::from_millis(1)));
        assert!(!p.known(a, t + KNOWN_FOR));
        assert!(!p.known(ip("198.18.0.2"), t));
        // Strikes after the vouch count again, and it stays known.
        for _ in 0..3 {
            p.strike(a, t);
        }
        assert!(p.penalized(a, t) && p.known(a, t));
    }

    #[test]
    fn the_penalty_grows_with_strikes_up_to_its_ceiling() {
        assert_eq!(penalty_for(5), Duration::from_secs(5));
        assert_eq!(penalty_for(100_000), MAX_PENALTY);
        let mut p = Penalties::default();
        let t = Instant::now();
        let a = ip("198.18.0.1");
        for _ in 0..1000 {
            p.strike(a, t);
        }
        assert!(p.penalized(a, t + MAX_PENALTY - Duration::from_millis(1)));
        assert!(!p.penalized(a, t + MAX_PENALTY));
    }

    #[test]
    fn the_table_stays_bounded_whatever_the_address_spread() {
        let mut p = Penalties::default();
        let t = Instant::now();
        for k in 0..(MAX_SOURCES as u32 + 500) {
            let a = IpAddr::V4(std::net::Ipv4Addr::from(0xC612_0000 + k));
            p.strike(a, t + Duration::from_micros(u64::from(k)));
        }
        assert!(p.len() <= MAX_SOURCES);
        // The newest sources are the ones remembered.
        let newest = IpAddr::V4(std::net::Ipv4Addr::from(
            0xC612_0000 + MAX_SOURCES as u32 + 499,
        ));
        assert!(p.by_source.contains_key(&newest));
    }
}
