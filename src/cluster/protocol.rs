//! Messages between a coordinator and its agents, one JSON object per
//! line over the control framing of [`crate::peer::protocol`].
//!
//! An agent connects to the coordinator and both send [`Hello`] (the
//! version check every wulf connection starts with). The coordinator then
//! sends a challenge ([`Order::Challenge`]); the agent proves it knows the run's one-time
//! secret with an HMAC-SHA-256 of the challenge and its name ([`prove`]),
//! so a process that merely found the coordinator's port cannot join, and
//! a proof overheard on the wire is worth nothing in another run or for
//! another name. The secret itself never crosses the network or appears on
//! a command line: launchers hand it over through the environment or
//! stdin. After [`Join`], the coordinator sends [`Order`]s and the agent
//! answers each with one [`CellReport`], so results stream back cell by
//! cell instead of in one message at the end.

use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use sha2::Sha256;

use crate::result::Point;
use crate::sys::Host;

pub use crate::peer::protocol::{ControlChannel, Hello};

/// Environment variable that carries the run's secret to an agent.
pub const SECRET_ENV: &str = "WULF_AGENT_SECRET";

/// Bytes of randomness in a secret and in a challenge.
const RANDOM_BYTES: usize = 32;

/// Agent to coordinator: who it is, and its proof.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Join {
    /// The node name the agent was started for.
    pub name: String,
    /// [`prove`] of the challenge's nonce and `name`.
    pub proof: String,
    /// Where the agent's measuring server listens (`IP:PORT`).
    pub serve_address: String,
    /// The agent's machine, with the interface toward the coordinator.
    pub host: Host,
}

/// Coordinator to agent.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "order", rename_all = "lowercase", deny_unknown_fields)]
pub enum Order {
    /// Prove you know the secret (right after the Hellos).
    Challenge {
        /// Random, hex.
        nonce: String,
    },
    /// Accepted (answer to a good [`Join`]).
    Welcome,
    /// Refused, with the reason; the agent exits.
    Refused {
        /// Why.
        message: String,
    },
    /// Measure one directed cell against the server at `peer`.
    Measure {
        /// `IP:PORT` of the other agent's server.
        peer: String,
        /// Transport (`tcp`).
        via: String,
        /// Ping-pong size, bytes.
        latency_bytes: u64,
        /// Stream size, bytes.
        bandwidth_bytes: u64,
        /// Time budget of the whole cell, ms.
        budget_ms: u64,
        /// Bound of every blocking operation, ms.
        timeout_ms: u64,
    },
    /// Are you there? (answered with an empty [`CellReport`]).
    Ping,
    /// The run is over; exit.
    Bye,
}

/// Agent to coordinator: the answer to one [`Order::Measure`] or
/// [`Order::Ping`].
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CellReport {
    /// The ping-pong point.
    pub latency: Option<Point>,
    /// The stream point.
    pub bandwidth: Option<Point>,
    /// What failed, if anything.
    pub error: Option<String>,
    /// Time the agent spent on the cell, seconds (both sweeps, with their
    /// connection set-up).
    #[serde(default)]
    pub measure_s: f64,
}

/// A fresh random value, hex (secrets and challenges).
pub fn random_hex() -> std::io::Result<String> {
    use std::io::Read;
    let mut bytes = [0u8; RANDOM_BYTES];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// The proof that an agent named `name` knows `secret`, for `nonce`:
/// HMAC-SHA-256(secret, nonce ‖ 0 ‖ name), hex.
pub fn prove(secret: &str, nonce: &str, name: &str) -> String {
    mac(secret, nonce, name)
        .finalize()
        .into_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Whether `proof` is [`prove`]`(secret, nonce, name)`, compared in
/// constant time.
pub fn verify(secret: &str, nonce: &str, name: &str, proof: &str) -> bool {
    let Some(bytes) = unhex(proof) else {
        return false;
    };
    mac(secret, nonce, name).verify_slice(&bytes).is_ok()
}

fn mac(secret: &str, nonce: &str, name: &str) -> Hmac<Sha256> {
    let mut m = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("HMAC takes any key");
    m.update(nonce.as_bytes());
    m.update(&[0]);
    m.update(name.as_bytes());
    m
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) || text.len() > 256 {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proofs_bind_secret_nonce_and_name() {
        let p = prove("s3cret", "n1", "node1");
        assert_eq!(p.len(), 64);
        assert!(verify("s3cret", "n1", "node1", &p));
        assert!(!verify("other", "n1", "node1", &p));
        assert!(!verify("s3cret", "n2", "node1", &p));
        assert!(!verify("s3cret", "n1", "node2", &p));
        assert!(!verify("s3cret", "n1", "node1", "zz"));
        assert!(!verify("s3cret", "n1", "node1", ""));
    }

    #[test]
    fn random_values_differ() {
        let (a, b) = (random_hex().unwrap(), random_hex().unwrap());
        assert_eq!(a.len(), 64);
        assert_ne!(a, b);
    }
}
