//! `--load-peer`: the same background load on the remote peer, started by
//! its `wulf serve` for the length of the test and stopped when the test
//! ends (however it ends: the server's load guard drops with the session).
//!
//! The request and the peer's records pass through this process rather
//! than through every layer between the command and the peer session:
//! the command says what the peer should run ([`request`]) before the
//! sweep, the peer session sends it with its set-up and, when it closes,
//! leaves what the peer's loads achieved here ([`record`]) for the command
//! to put in the result ([`take_records`]). As with the `--cost whole`
//! calibration, one measurement runs at a time per process.

use std::sync::Mutex;

use super::{LoadRecord, LoadSpec};

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

static REQUESTED: Mutex<Vec<LoadSpec>> = Mutex::new(Vec::new());
static RECORDS: Mutex<Vec<LoadRecord>> = Mutex::new(Vec::new());

/// Ask the peers of the sweeps that follow to run `specs` (empty: none),
/// and forget any records of earlier sweeps.
pub fn request(specs: &[LoadSpec]) {
    *REQUESTED.lock().unwrap_or_else(|e| e.into_inner()) = specs.to_vec();
    RECORDS.lock().unwrap_or_else(|e| e.into_inner()).clear();
}

/// The loads the peer should run, as `--load` text; `None` for none.
pub fn requested() -> Option<String> {
    let specs = REQUESTED.lock().unwrap_or_else(|e| e.into_inner()).clone();
    (!specs.is_empty()).then(|| super::spec_text(&specs))
}

/// Keep what the peer's loads achieved.
pub fn record(records: Vec<LoadRecord>) {
    *RECORDS.lock().unwrap_or_else(|e| e.into_inner()) = records;
}

/// What the peer's loads achieved in the last sweep (empty when none ran
/// or the sweep ended before the peer could say), and forget it.
pub fn take_records() -> Vec<LoadRecord> {
    std::mem::take(&mut *RECORDS.lock().unwrap_or_else(|e| e.into_inner()))
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
