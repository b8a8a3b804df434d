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

use serde::{Deserialize, Serialize};

use crate::result::Point;
use crate::sys::Host;

pub use crate::peer::auth::random_hex;
use crate::peer::auth::Secret;
pub use crate::peer::protocol::{ControlChannel, Hello};

pub use crate::exec::SECRET_ENV;

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
        /// What to measure besides the stream at `bandwidth_bytes`.
        #[serde(default)]
        parts: CellParts,
    },
    /// Serve the other agents' measuring sessions on your main thread
    /// until the next order (agents that are ranks of an MPI job, whose
    /// channels exist only on that thread); no answer of its own.
    Serve {
        /// Longest time to serve, ms.
        timeout_ms: u64,
    },
    /// Are you there? (answered with an empty [`CellReport`]; after
    /// [`Order::Serve`], it also ends the serving).
    Ping,
    /// The run is over; exit.
    Bye,
}

/// The sweeps of a cell besides its stream at `bandwidth_bytes`, which
/// every cell has.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CellParts {
    /// The ping-pong at `latency_bytes` (latency).
    pub latency: bool,
    /// A stream at `latency_bytes` (the small-message rate, as OSU's
    /// osu_mbw_mr measures it).
    pub rate: bool,
}

impl Default for CellParts {
    /// A matrix cell: latency and bandwidth.
    fn default() -> CellParts {
        CellParts {
            latency: true,
            rate: false,
        }
    }
}

impl CellParts {
    /// Only the stream at `bandwidth_bytes` (a pair's bandwidth alone,
    /// beside its bandwidth under a load pattern).
    pub const BANDWIDTH_ONLY: CellParts = CellParts {
        latency: false,
        rate: false,
    };
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
    /// The small-message stream point, when asked for.
    #[serde(default)]
    pub rate: Option<Point>,
    /// What failed, if anything.
    pub error: Option<String>,
    /// Time the agent spent on the cell, seconds (both sweeps, with their
    /// connection set-up).
    #[serde(default)]
    pub measure_s: f64,
}

/// The proof that an agent named `name` knows `secret`, for `nonce`
/// ([`Secret::prove`] in the agent's role).
pub fn prove(secret: &str, nonce: &str, name: &str) -> String {
    Secret::trusted(secret).prove(AGENT_ROLE, nonce, name)
}

/// Whether `proof` is [`prove`]`(secret, nonce, name)`, compared in
/// constant time.
pub fn verify(secret: &str, nonce: &str, name: &str, proof: &str) -> bool {
    Secret::trusted(secret).verify(AGENT_ROLE, nonce, name, proof)
}

/// Role label in an agent's proof (see [`crate::peer::auth`]).
const AGENT_ROLE: &str = "wulf-agent";

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
