//! What a launcher hands an agent to prove itself with: the run's one-time
//! secret, or only its own node's key.
//!
//! A node's key is an HMAC-SHA-256 of the node's name keyed by the run's
//! secret ([`node_key`]). The coordinator, which holds the secret, derives
//! the key of whatever name an agent claims and checks the agent's proof
//! with it, so an agent that holds one node's key can prove only that
//! node's name: a compromised node cannot join under another's. Launchers
//! that start each agent for a named host (local processes, ssh, a lab's
//! remote shell) hand it its node key alone ([`for_node`]); launchers
//! whose tasks share one environment or one file (srun's step, an MPI
//! job, the rendezvous file of `srun wulf matrix`) can only hand every
//! task the secret itself, from which each derives its own key.
//!
//! This sits in `exec` (not with the rest of authentication in `peer`)
//! because the launchers here hand the keys out.

use hmac::{Hmac, Mac};
use sha2::Sha256;

/// Marks a credential that is a node's key rather than the run's secret.
pub const NODE_KEY_PREFIX: &str = "node-key:";

/// The key of the node `name` in the run whose secret is `secret`, hex.
pub fn node_key(secret: &str, name: &str) -> String {
    let mut m = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("HMAC takes any key");
    // Zero bytes end each part, so no two (label, name) give one input.
    for part in ["wulf-node-key", name] {
        m.update(part.as_bytes());
        m.update(&[0]);
    }
    crate::sys::random::hex(&m.finalize().into_bytes())
}

/// The credential to hand the agent of node `name`: its key alone, marked.
pub fn for_node(secret: &str, name: &str) -> String {
    format!("{NODE_KEY_PREFIX}{}", node_key(secret, name))
}

/// The key an agent named `name` proves itself with, from the credential
/// it was handed: a node key as is (whatever name it is asked to claim,
/// it can prove only its own), or derived from the run's secret.
pub fn key_of(credential: &str, name: &str) -> String {
    match credential.strip_prefix(NODE_KEY_PREFIX) {
        Some(key) => key.to_string(),
        None => node_key(credential, name),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_keys_bind_the_secret_and_the_name() {
        let a = node_key("s", "node1");
        assert_eq!(a.len(), 64);
        assert_ne!(a, node_key("s", "node2"));
        assert_ne!(a, node_key("t", "node1"));
        // Part boundaries count.
        assert_ne!(node_key("s", "ab"), node_key("s", "a"));
        assert_eq!(key_of("s", "node1"), a);
        assert_eq!(key_of(&for_node("s", "node1"), "node1"), a);
        // A node's key stays its own, whatever name its holder claims.
        assert_eq!(key_of(&for_node("s", "node1"), "node2"), a);
        assert_ne!(
            key_of(&for_node("s", "node1"), "node2"),
            node_key("s", "node2")
        );
    }
}
