//! What the measuring stages need from whoever runs the blocks (a peer,
//! a baseline in this process, a test's fake), and how one point is
//! planned from its share of the budget.

use anyhow::Result;

use crate::analysis::CauseHints;
use crate::measure::policy::{BlockRunner, PointPlan, SHORTEST_BLOCK_NS};
use crate::result::Tails;

/// What the sweep loop needs from whoever runs the blocks.
pub(super) trait SweepRunner: BlockRunner {
    /// Run the byte-checking pass for one size.
    fn integrity(&mut self, bytes: u64) -> Result<()>;
    /// Run the tail pass for one size, if this runner has one.
    fn tails(&mut self, bytes: u64, median_one_way_ns: f64) -> Result<Option<Tails>>;
    /// The thresholds the transport stated (its settings' `thresholds`),
    /// as the confirmation pass judges known steps by them
    /// ([`crate::analysis::confirm::judge_known`]); none by default.
    fn hints(&self) -> CauseHints {
        CauseHints::default()
    }
}

/// The plan of one point, given its share of the budget (`wulf
/// collective` plans its points the same way).
pub fn plan_for(point_budget_ns: u64, precision: f64, max_repeats: u64) -> PointPlan {
    PointPlan {
        budget_ns: point_budget_ns,
        precision,
        min_trials: 10,
        max_trials: 5000,
        trial_target_ns: (point_budget_ns / 25).clamp(SHORTEST_BLOCK_NS, 50_000_000),
        max_repeats,
        loaded: false,
    }
}
