//! The run-to-run spread `wulf run --repeat N` measures and records in each
//! of its results, so that a later `wulf compare` of single runs knows how
//! far two runs of the same configuration differ on this machine.

use serde::{Deserialize, Serialize};

/// The between-run spread of one transport and mode over N repetitions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunToRun {
    /// Repetitions of the sweeps made (N, at least 2).
    pub repetitions: u32,
    /// Which of them this result is, from 1.
    pub repetition: u32,
    /// One entry per size band with sizes measured in every repetition.
    pub bands: Vec<BandSpread>,
}

/// The spread of one size band's figure over the repetitions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BandSpread {
    /// Band name as `wulf compare` prints it, e.g. `4 - 64 KiB`.
    pub band: String,
    /// Smallest size of the band.
    pub min_bytes: u64,
    /// Largest size of the band.
    pub max_bytes: u64,
    /// Sizes of the band measured in every repetition.
    pub sizes: u64,
    /// Sample standard deviation over the repetitions of ln(band figure),
    /// the figure being the geometric mean of the sizes' median times.
    pub log_sd: f64,
    /// Degrees of freedom of `log_sd` (repetitions - 1).
    pub df: u32,
    /// The noise floor this gives a comparison of one run against one run,
    /// as a fraction (0.1 = 10%): see `wulf compare`.
    pub one_run_floor_fraction: f64,
}
