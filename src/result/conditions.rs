//! The conditions a measurement ran under (issue 13): the background load
//! wulf applied and the soaker calibration behind `--cost whole`.

use serde::{Deserialize, Serialize};

use crate::load::kernel::KernelBaseline;
use crate::load::soaker::Calibration;
use crate::load::LoadRecord;

/// Background load and whole-cost calibration of one result.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Conditions {
    /// `loaded` or `unloaded` when the result is one half of
    /// `--loaded-vs-unloaded`; absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    /// The loads that ran for the whole measurement, with what they
    /// achieved; empty when unloaded.
    #[serde(default)]
    pub loads: Vec<LoadRecord>,
    /// `--load-peer` (sweep schema version 3): the same loads on the
    /// remote peer, as its `wulf serve` ran them; absent when none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub peer_loads: Vec<LoadRecord>,
    /// The soakers' idle calibration, with `--cost soak` (and with
    /// `--cost whole` in files written before the kernel method).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub soaker: Option<Calibration>,
    /// The background the kernel's whole-cost figures subtract, with
    /// `--cost whole` or `--cost soak`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel_baseline: Option<KernelBaseline>,
    /// What the whole cost covers: this machine's CPUs only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub whole_cost_scope: Option<String>,
    /// With `--cost soak` on a sweep: what the soakers changed, measured in
    /// interleaved pairs of short sweeps without and with them before the
    /// measurement (issue 30); absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub soak_perturbation: Option<crate::load::perturb::SoakPerturbation>,
}
