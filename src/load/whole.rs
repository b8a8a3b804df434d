//! `--cost whole`: the calibration in force for this process, and the
//! figures recorded per sweep point and per NAS run.
//!
//! The command calibrates once, before any peer or rank starts, and makes
//! the calibration active; the sweep engine then runs soakers around its
//! points (see `sweep::whole`). A sweep measured in other processes (an
//! MPI job's rank 0) finds the calibration in the environment variable
//! [`CALIBRATION_ENV`], which the launched processes inherit.

use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use super::soaker::{Calibration, Lost, Snapshot, Soaker};

/// Environment variable carrying the active calibration (JSON) to
/// processes wulf starts.
pub const CALIBRATION_ENV: &str = "WULF_SOAK_CALIBRATION";

static ACTIVE: Mutex<Option<Calibration>> = Mutex::new(None);

/// Make `cal` the calibration of this process and of the processes it
/// starts from now on.
pub fn activate(cal: &Calibration) {
    *ACTIVE.lock().unwrap_or_else(|e| e.into_inner()) = Some(cal.clone());
    if let Ok(json) = serde_json::to_string(cal) {
        std::env::set_var(CALIBRATION_ENV, json);
    }
}

/// The active calibration, if `--cost whole` is on (here or in the wulf
/// that started this process).
pub fn active() -> Option<Calibration> {
    if let Some(c) = ACTIVE.lock().unwrap_or_else(|e| e.into_inner()).clone() {
        return Some(c);
    }
    let json = std::env::var(CALIBRATION_ENV).ok()?;
    serde_json::from_str(&json).ok()
}

/// The whole CPU cost of one sweep point or one NAS run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WholeCpu {
    /// CPU time the soakers lost over the measured blocks, all CPUs, ns.
    pub cpu_ns: f64,
    /// Wall time the soakers were read over, ns.
    pub wall_ns: u64,
    /// `cpu_ns` as a share of all soaked CPUs over `wall_ns` (0..=1).
    pub machine_share: f64,
    /// Sweep points: whole CPU per byte that crossed the channel, ns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ns_per_byte: Option<f64>,
    /// Sweep points: whole CPU per message, ns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ns_per_message: Option<f64>,
    /// Sweep points: getrusage's figure for the same blocks (both ends'
    /// measuring threads), ns per byte.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub getrusage_ns_per_byte: Option<f64>,
    /// `ns_per_byte / getrusage_ns_per_byte`: how much more the machine
    /// spent than getrusage saw (1 = it saw everything).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub whole_over_getrusage: Option<f64>,
}

impl WholeCpu {
    /// From lost capacity over `ncpu` soaked CPUs, without per-byte figures.
    pub fn from_lost(lost: Lost, ncpu: usize) -> WholeCpu {
        WholeCpu {
            cpu_ns: lost.cpu_ns,
            wall_ns: lost.wall_ns,
            machine_share: lost.share(ncpu),
            ns_per_byte: None,
            ns_per_message: None,
            getrusage_ns_per_byte: None,
            whole_over_getrusage: None,
        }
    }
}

/// Soakers running for the length of one NAS run (or any span of work).
pub struct Span {
    soaker: Soaker,
    cal: Calibration,
    from: Snapshot,
}

impl Span {
    /// Start soakers with the active calibration; None when `--cost whole`
    /// is off or soakers cannot start.
    pub fn start() -> Option<Span> {
        let cal = active()?;
        let soaker = Soaker::start(&cal.cpus).ok()?;
        let from = soaker.snapshot();
        Some(Span { soaker, cal, from })
    }

    /// Stop, and the whole CPU the span used.
    pub fn finish(self) -> WholeCpu {
        let lost = Lost::between(&self.cal, &self.from, &self.soaker.snapshot());
        WholeCpu::from_lost(lost, self.cal.cpus.len())
    }
}
