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
