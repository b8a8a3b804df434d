//! What a verified run of an NPB kernel reports ([`NpbOutcome`]) and the
//! problem classes ([`Class`]), as rank messages and result files carry
//! them. The kernels that produce them are in [`crate::npb`].

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// An NPB problem class: the problem size and iteration count of a kernel.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    serde::Serialize,
    serde::Deserialize,
    schemars::JsonSchema,
)]
pub enum Class {
    /// Sample size, for quick tests.
    S,
    /// Workstation size.
    W,
    /// Standard test problem.
    A,
    /// Standard test problem, 4x A's work for most kernels.
    B,
    /// Standard test problem, 4x B's work for most kernels.
    C,
}

impl Class {
    /// Every class wulf implements, smallest first.
    pub const ALL: [Class; 5] = [Class::S, Class::W, Class::A, Class::B, Class::C];

    /// The class letter as NPB prints it.
    pub fn letter(self) -> char {
        match self {
            Class::S => 'S',
            Class::W => 'W',
            Class::A => 'A',
            Class::B => 'B',
            Class::C => 'C',
        }
    }
}

impl fmt::Display for Class {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.letter())
    }
}

impl FromStr for Class {
    type Err = anyhow::Error;

    fn from_str(s: &str) -> anyhow::Result<Self> {
        Class::ALL
            .into_iter()
            .find(|c| s.len() == 1 && s.eq_ignore_ascii_case(&c.letter().to_string()))
            .ok_or_else(|| {
                crate::error::usage(format!(
                    "unknown NPB class {s:?} (expected S, W, A, B or C)"
                ))
            })
    }
}

/// A verified run of an NPB kernel, as seen by every rank.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NpbOutcome {
    /// The problem class.
    pub class: Class,
    /// Number of ranks.
    pub nprocs: usize,
    /// Ranks along each axis of the kernel's process grid (MG: x, y, z;
    /// CG: columns, rows, 1; EP and IS: nprocs, 1, 1).
    pub proc_grid: [usize; 3],
    /// The communicator backend's name.
    pub backend: String,
    /// MG only: grid points per side of the finest grid.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grid_points: Option<usize>,
    /// Iterations timed (MG V-cycles, CG outer iterations, IS rankings;
    /// 1 for EP).
    pub iterations: usize,
    /// Wall time of the timed section, the maximum over ranks.
    pub time_s: f64,
    /// CPU time a rank's thread spent in the timed section, the maximum over
    /// ranks. Well below `time_s` means ranks waited: for messages, or for a
    /// CPU on a loaded machine (then `time_s` says more about the load than
    /// about the code). NaN where the platform has no thread CPU clock.
    pub cpu_time_s: f64,
    /// NPB's rate for the kernel, millions of operations per second.
    pub mop_s: f64,
    /// `mop_s` divided by the number of ranks.
    pub mop_s_per_process: f64,
    /// MG only: L2 norm of the final residual.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub norm: Option<f64>,
    /// MG only: NPB's reference value for `norm`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference_norm: Option<f64>,
    /// Largest relative error of a verified value against its reference
    /// (0 for IS, whose checks are exact).
    pub relative_error: f64,
    /// MG only: largest |r| of the final residual (NPB's uniform norm,
    /// reported only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_abs_residual: Option<f64>,
    /// EP, IS, CG: the values verified against NPB's references.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<CheckedValue>,
    /// EP only: the accepted pairs in each of the ten annuli
    /// `l <= max(|X|, |Y|) < l + 1`, as NPB prints them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub annulus_counts: Vec<u64>,
    /// Payload bytes all ranks sent to each other during the timed
    /// section (point-to-point messages as sent; a collective counts each
    /// rank's share of its data, see `comm::Counted`). Absent in results
    /// made before it was counted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sent_bytes: Option<u64>,
    /// Messages all ranks sent to each other during the timed section
    /// (a collective counts once per rank).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sent_messages: Option<u64>,
    /// Whether the run verified: always true in an outcome (an unverified
    /// run is an error), kept so that saved results say so.
    pub verified: bool,
}

/// One value a kernel verified and NPB's reference for it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CheckedValue {
    /// NPB's name of the value (`sx`, `zeta`, `partial checks`...).
    pub name: String,
    /// What the run produced.
    pub value: f64,
    /// NPB's reference.
    pub reference: f64,
}

impl NpbOutcome {
    /// Seed 001's communication rows: megabytes per second (10^6 bytes),
    /// messages per second and the mean message size in bytes, over the
    /// timed section; `None` where nothing was counted or sent.
    pub fn communication(&self) -> Option<[f64; 3]> {
        let (bytes, messages) = (self.sent_bytes? as f64, self.sent_messages? as f64);
        if messages == 0.0 || self.time_s <= 0.0 {
            return None;
        }
        Some([
            bytes / self.time_s * 1e-6,
            messages / self.time_s,
            bytes / messages,
        ])
    }
}

impl CheckedValue {
    /// A checked value.
    pub fn new(name: &str, value: f64, reference: f64) -> Self {
        CheckedValue {
            name: name.to_string(),
            value,
            reference,
        }
    }

    /// `|value - reference| / |reference|` (NaN when the value is NaN).
    pub fn relative_error(&self) -> f64 {
        (self.value - self.reference).abs() / self.reference.abs()
    }
}
