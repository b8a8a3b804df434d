//! Messages between a coordinator and its agents, one JSON object per
//! line over the control framing of [`crate::peer::protocol`].
//!
//! An agent connects to the coordinator and both send [`Hello`] (the
//! version check every wulf connection starts with). Then each side proves
//! to the other that it knows the agent's node key (an HMAC of the run's
//! one-time secret and the node's name, [`crate::exec::credentials`]):
//!
//! 1. the coordinator sends a challenge ([`Order::Challenge`]);
//! 2. the agent answers with a [`Claim`]: its name, a nonce of its own and
//!    its proof ([`agent_proof`]) of both nonces;
//! 3. the coordinator derives the key of the claimed name, checks the
//!    proof, and answers with its own ([`Order::Proof`], [`coordinator_proof`])
//!    and, sealed with the node key, the key the agents use among
//!    themselves ([`seal_mesh`]);
//! 4. only then does the agent send its fingerprint ([`Join`]).
//!
//! So a process that merely found the coordinator's port cannot join; an
//! agent never tells its fingerprint to, nor measures for, a coordinator
//! that cannot prove the run's secret (a planted rendezvous file, a port
//! taken over); an agent holding one node's key cannot join under
//! another's name; and a proof overheard on the wire is worth nothing in
//! another run, for another name or in the other role. The secret and the
//! keys never cross the network in the clear and never appear on a command
//! line: launchers hand them over through the environment or stdin. After
//! the coordinator's [`Order::Welcome`] it sends [`Order`]s and the agent
//! answers each with one [`CellReport`], so results stream back cell by
//! cell instead of in one message at the end.

use serde::{Deserialize, Serialize};

use crate::result::matrix::CellNet;
use crate::result::Point;
use crate::sys::random::{from_hex, hex};
use crate::sys::Host;

pub use crate::peer::auth::random_hex;
use crate::peer::auth::Secret;
pub use crate::peer::protocol::{ControlChannel, Hello, MAX_REQUEST_BYTES};

pub use crate::exec::SECRET_ENV;

/// Longest [`Join`] line the coordinator reads: a machine's fingerprint
/// (a few kilobytes; this leaves room for hundreds of interfaces) bounds
/// what one connection may make it hold. Hellos and [`Claim`]s are held to
/// [`MAX_REQUEST_BYTES`].
pub const MAX_JOIN_BYTES: u64 = 256 << 10;

/// Agent to coordinator, answering [`Order::Challenge`]: who it is, and
/// its proof.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Claim {
    /// The node name the agent was started for.
    pub name: String,
    /// Fresh random nonce of the agent, hex: the coordinator's proof
    /// answers it.
    pub nonce: String,
    /// [`agent_proof`] with the node's key.
    pub proof: String,
}

/// Agent to coordinator, once the coordinator has proved itself: where
/// the agent serves and what machine it is.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Join {
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
    /// The coordinator's answer to a good [`Claim`]: its own proof, and
    /// the key agents measure each other with.
    Proof {
        /// [`coordinator_proof`] with the node's key.
        proof: String,
        /// The agents' common key, [`seal_mesh`]ed with the node's key.
        mesh: String,
    },
    /// Accepted (answer to a [`Join`]).
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
    /// The measuring node's kernel counters over the cell.
    #[serde(default)]
    pub net: Option<CellNet>,
    /// Not the report yet: the agent is still measuring. Sent every
    /// [`WORKING_EVERY`] while it does, so that the coordinator bounds the
    /// silence of a control connection, not the length of a cell (a
    /// lossy link may stretch a cell far beyond its budget).
    #[serde(default)]
    pub working: bool,
    /// The cell was cut at its deadline: its figures are what was
    /// measured by then.
    #[serde(default)]
    pub cut: bool,
}

/// How often a measuring agent says it is still at work.
pub const WORKING_EVERY: std::time::Duration = std::time::Duration::from_secs(2);

/// Role label in an agent's proof (see [`crate::peer::auth`]).
const AGENT_ROLE: &str = "wulf-agent";

/// Role label in the coordinator's proof: a proof is never valid in the
/// other role, so neither side can reflect the other's.
const COORDINATOR_ROLE: &str = "wulf-coordinator";

/// Label of the pad that seals the agents' common key.
const MESH_ROLE: &str = "wulf-mesh";

/// The agent's proof that it holds `key` (its node's key), for the
/// coordinator's nonce `theirs` and its own `ours`.
pub fn agent_proof(key: &str, theirs: &str, ours: &str) -> String {
    Secret::trusted(key).prove(AGENT_ROLE, ours, theirs)
}

/// Whether `proof` is [`agent_proof`]`(key, theirs, ours)` (`theirs` is
/// the coordinator's nonce), compared in constant time.
pub fn verify_agent(key: &str, theirs: &str, ours: &str, proof: &str) -> bool {
    Secret::trusted(key).verify(AGENT_ROLE, ours, theirs, proof)
}

/// The coordinator's proof that it holds `key` (it derives every node's
/// key from the secret), for its nonce `ours` and the agent's `theirs`.
pub fn coordinator_proof(key: &str, ours: &str, theirs: &str) -> String {
    Secret::trusted(key).prove(COORDINATOR_ROLE, ours, theirs)
}

/// Whether `proof` is [`coordinator_proof`]`(key, ours, theirs)`,
/// compared in constant time.
pub fn verify_coordinator(key: &str, ours: &str, theirs: &str, proof: &str) -> bool {
    Secret::trusted(key).verify(COORDINATOR_ROLE, ours, theirs, proof)
}

/// A fresh key for the agents to measure each other with, hex: not the
/// run's secret, which agents holding only their node's key never see.
pub fn mesh_key() -> std::io::Result<String> {
    random_hex()
}

/// `mesh` (32 bytes, hex) sealed for the agent holding `key`: XOR with an
/// HMAC of both nonces under the node's key, a one-time pad that only the
/// coordinator and that agent can make. None when `mesh` is not 32 bytes.
pub fn seal_mesh(
    key: &str,
    coordinator_nonce: &str,
    agent_nonce: &str,
    mesh: &str,
) -> Option<String> {
    let pad = mesh_pad(key, coordinator_nonce, agent_nonce)?;
    let plain = from_hex::<32>(mesh)?;
    Some(hex(&xor(&plain, &pad)))
}

/// The agents' key from what [`seal_mesh`] made, if it is well formed.
pub fn unseal_mesh(
    key: &str,
    coordinator_nonce: &str,
    agent_nonce: &str,
    sealed: &str,
) -> Option<String> {
    let pad = mesh_pad(key, coordinator_nonce, agent_nonce)?;
    let sealed = from_hex::<32>(sealed)?;
    Some(hex(&xor(&sealed, &pad)))
}

fn mesh_pad(key: &str, coordinator_nonce: &str, agent_nonce: &str) -> Option<[u8; 32]> {
    from_hex::<32>(&Secret::trusted(key).prove(MESH_ROLE, coordinator_nonce, agent_nonce))
}

fn xor(a: &[u8; 32], b: &[u8; 32]) -> [u8; 32] {
    std::array::from_fn(|i| a[i] ^ b[i])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proofs_bind_key_nonces_and_role() {
        let p = agent_proof("k1", "cn", "an");
        assert_eq!(p.len(), 64);
        assert!(verify_agent("k1", "cn", "an", &p));
        assert!(!verify_agent("k2", "cn", "an", &p));
        assert!(!verify_agent("k1", "cn2", "an", &p));
        assert!(!verify_agent("k1", "an", "cn", &p), "nonces swapped");
        assert!(!verify_agent("k1", "cn", "an", "zz"));
        assert!(!verify_agent("k1", "cn", "an", ""));
        let q = coordinator_proof("k1", "cn", "an");
        assert!(verify_coordinator("k1", "cn", "an", &q));
        assert!(!verify_coordinator("k2", "cn", "an", &q));
        // Neither proof passes for the other role (no reflection).
        assert!(!verify_coordinator("k1", "cn", "an", &p));
        assert!(!verify_agent("k1", "cn", "an", &q));
    }

    #[test]
    fn the_mesh_key_opens_only_with_the_node_key_and_nonces() {
        let mesh = mesh_key().unwrap();
        let sealed = seal_mesh("k1", "cn", "an", &mesh).unwrap();
        assert_ne!(sealed, mesh);
        assert_eq!(unseal_mesh("k1", "cn", "an", &sealed).unwrap(), mesh);
        assert_ne!(unseal_mesh("k2", "cn", "an", &sealed).unwrap(), mesh);
        assert_ne!(unseal_mesh("k1", "cn", "an2", &sealed).unwrap(), mesh);
        assert!(unseal_mesh("k1", "cn", "an", "zz").is_none());
        assert!(seal_mesh("k1", "cn", "an", "short").is_none());
    }

    #[test]
    fn random_values_differ() {
        let (a, b) = (random_hex().unwrap(), random_hex().unwrap());
        assert_eq!(a.len(), 64);
        assert_ne!(a, b);
    }
}
