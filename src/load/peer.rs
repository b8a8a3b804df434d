//! `--load-peer`: the same background load on the remote peer, started by
//! its `wulf serve` for the length of the test and stopped when the test
//! ends (however it ends: the server's load guard drops with the session).
//!
//! The request travels with the sweep (its spec's `peer_loads`, sent in
//! the peer session's set-up), and what the peer's loads achieved comes
//! back with the sweep's outcome when the session closes: no state is kept
//! in this process. This file holds the server's side: the limit it
//! enforces on what a client may ask for.

use super::LoadSpec;

/// Most load threads per CPU a server runs for a client: a client may
/// load the server, not make it unusable.
pub const MAX_PEER_THREADS_PER_CPU: usize = 4;

/// Refuse a load with more threads of one kind than
/// [`MAX_PEER_THREADS_PER_CPU`] per CPU of a server with `ncpu` CPUs.
pub fn check_allowed(specs: &[LoadSpec], ncpu: usize) -> anyhow::Result<()> {
    let most = MAX_PEER_THREADS_PER_CPU * ncpu.max(1);
    for s in specs {
        if let LoadSpec::Cpu { threads: Some(n) } | LoadSpec::Memory { threads: Some(n) } = *s {
            anyhow::ensure!(
                n <= most,
                "a load of {n} threads exceeds this server's limit of {most} \
                 ({MAX_PEER_THREADS_PER_CPU} per CPU)"
            );
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_server_refuses_more_threads_than_its_limit() {
        let ok = super::super::parse_loads("cpu:8,memory:8,network").unwrap();
        assert!(check_allowed(&ok, 2).is_ok());
        let many = super::super::parse_loads("cpu:9").unwrap();
        let e = check_allowed(&many, 2).unwrap_err();
        assert!(e.to_string().contains("limit of 8"), "{e}");
    }
}
