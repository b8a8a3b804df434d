//! In-process baselines: measurements of what the machine itself can do,
//! with no peer and no data channel, run by the same sweep engine and
//! repetition policy as the transports and stored as ordinary results.
//!
//! A [`Transport`](super::Transport) that is a baseline returns a
//! [`Baseline`] from `Transport::baseline`; the engine then times blocks of
//! it in this process instead of starting a peer. The baselines are the
//! limits the intra-node transports are measured against:
//!
//! * `memcpy` ([`super::memcpy`]): copy bandwidth against size, the limit of
//!   any transport that copies;
//! * `cacheline` ([`super::cacheline`]): a cache line passed back and forth
//!   between the two pinned CPUs, the latency floor of any message between
//!   two processes.
//!
//! A baseline says which limit its points are ([`LimitKind`]), so that a
//! run that measured it does not measure the same limit again.

use std::io;
use std::time::Duration;

use serde_json::{Map, Value};

use super::WaitMode;
use crate::result::{Mode, Plateau, Point};
use crate::sys::CpuTime;

/// What a baseline needs to know to prepare.
#[derive(Debug, Clone)]
pub struct BaselineSetup {
    /// Pattern asked for (a baseline refuses patterns it cannot measure).
    pub mode: Mode,
    /// Largest message size of the sweep in bytes.
    pub max_bytes: u64,
    /// Rotate buffers through a pool larger than the last-level cache.
    pub nocache: bool,
    /// Buffer misalignment in bytes.
    pub offset_bytes: u64,
    /// Last-level cache size, if known.
    pub llc_bytes: Option<u64>,
    /// The caches of the machine (empty when unknown).
    pub caches: Vec<crate::sys::Cache>,
    /// CPU for a second thread, if the baseline has one.
    pub helper_cpu: Option<usize>,
    /// How a second thread and the measuring thread wait for each other.
    pub wait: WaitMode,
    /// Bound of every wait.
    pub timeout: Duration,
}

/// One block as a baseline measured it.
#[derive(Debug, Clone, Copy, Default)]
pub struct BaselineBlock {
    /// Wall time of the timed part in ns (clock read cost not subtracted).
    pub elapsed_ns: u64,
    /// CPU time of the measuring thread during the timed part.
    pub main_cpu: CpuTime,
    /// CPU time of the second thread, if any, during its timed part.
    pub helper_cpu: CpuTime,
}

/// Which physical limit a baseline's points are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LimitKind {
    /// Copy bandwidth in one process at each size (`bits_per_s`).
    MemcpyBandwidth,
    /// One-way time of a cache-line hand-off between two CPUs (`median_ns`).
    CachelineFloor,
}

/// A measurement run in this process, in blocks timed as one.
pub trait Baseline: Send {
    /// Run one untimed primer operation, then time `repeats` operations on
    /// `bytes`-byte messages.
    fn block(&mut self, bytes: u64, repeats: u64) -> io::Result<BaselineBlock>;
    /// Check that `bytes`-byte messages arrive intact (untimed).
    fn integrity(&mut self, bytes: u64) -> io::Result<()>;
    /// Settings for the result file.
    fn settings(&self) -> Map<String, Value>;
    /// CPU the second thread runs on, if there is one and it is pinned.
    fn helper_cpu(&self) -> Option<usize>;
    /// What one operation's time is, for the result's definitions.
    fn time_definition(&self) -> &'static str;
    /// The limit this baseline's points are.
    fn limit_kind(&self) -> LimitKind;
    /// Named plateaus of the curve, if the baseline has any.
    fn plateaus(&self, _points: &[Point]) -> Vec<Plateau> {
        Vec::new()
    }
}

/// The error for `listen` / `connect` on a baseline.
pub fn no_channel(name: &str) -> anyhow::Error {
    anyhow::anyhow!("{name} is an in-process baseline: it has no data channel and needs no peer")
}
