//! The sizes a sweep left out because its `--budget` could not hold them
//! (a slow link: an 8 MiB round trip over 100 Mbit/s takes 1.4 s, and a
//! point needs eight of them; long trials on this machine; the deadline),
//! and the estimate that decided it.

use serde::{Deserialize, Serialize};

/// Sizes of the schedule left unmeasured so that the sweep kept its
/// budget; each would not have had its least work (two calibration blocks
/// and six trials) in what was left.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SizesLeftOut {
    /// The sizes not measured, ascending (always the largest of the schedule).
    pub sizes_bytes: Vec<u64>,
    /// The rate the estimate used, bit/s, in the unit of
    /// `points[].bits_per_s`; absent when none was known (sizes then cost
    /// their latency).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_bits_per_s: Option<f64>,
    /// Where the rate came from: `measured` (the fastest of the last three
    /// sizes measured whose transfer took at least its latency, the
    /// latency taken off) or `link` (the goodput limit of the link the
    /// data crossed, lower than what was measured); absent with the rate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_from: Option<String>,
    /// The latency the estimate used: the smallest median of the sizes
    /// measured, ns.
    pub latency_ns: f64,
    /// The least wall time the sizes left out would have taken, s.
    pub least_s: f64,
    /// What was left of the points' share of the budget when they were
    /// left out, s.
    pub left_s: f64,
    /// A `--budget` at which they would get their least work, s.
    pub budget_hint_s: f64,
    /// Why they were left out: `link` (planned against the link's rate
    /// before they were reached), `least_work` (the next size's least
    /// work, estimated from the time per operation of the sizes measured,
    /// would have ended after the deadline) or `deadline` (the deadline
    /// passed during the size before them). Absent in older files, which
    /// only left sizes out across a link.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}
