//! The `confirmation` block of a result: the sizes around each candidate
//! event (drop-out or switch-over) measured again with fresh trials after
//! the sweep, and which events that fresh evidence confirmed.
//!
//! An optional block of schema version 1 (as `link` and `limits`): files
//! without it read as before, and their events count as unconfirmed.

use serde::{Deserialize, Serialize};

/// The confirmation pass of one sweep.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Confirmation {
    /// Share of the sweep's budget kept for the pass, seconds.
    pub budget_s: f64,
    /// Wall time the pass took, seconds.
    pub wall_s: f64,
    /// Each size measured again, ascending.
    pub points: Vec<RemeasuredPoint>,
    /// Every candidate event of the first pass and its verdict.
    pub events: Vec<CheckedEvent>,
}

/// A size measured again: the fresh trials' median and its interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RemeasuredPoint {
    /// Message size.
    pub bytes: u64,
    /// Fresh trials kept.
    pub trials: u64,
    /// Median of the fresh trials, ns per operation.
    pub median_ns: f64,
    /// Lower bound of the 95% confidence interval of that median.
    pub ci_low_ns: f64,
    /// Upper bound of the 95% confidence interval of that median.
    pub ci_high_ns: f64,
    /// The interval did not reach the precision target in its budget.
    pub noisy: bool,
    /// Fresh trials set aside as a slow mode: the size's trials split in
    /// two clusters and the figures above are of the fast one
    /// ([`crate::analysis::confirm::fast_mode`]); 0 when they did not
    /// split (and in files written before this field).
    #[serde(default)]
    pub slow_trials: u64,
}

/// One candidate event and whether the fresh trials confirmed it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CheckedEvent {
    /// `dropout` or `switchover`.
    pub kind: String,
    /// First size of the event (a switch-over: the first size of the new
    /// segment).
    pub from_bytes: u64,
    /// Last size of the event (a switch-over: the same as `from_bytes`).
    pub to_bytes: u64,
    /// Whether the analysis of the curve with the fresh trials in place of
    /// the first ones finds the same event again.
    pub confirmed: bool,
    /// The event's edges, each judged on its own
    /// ([`crate::analysis::confirm::edges`]): a drop-out's start and end,
    /// a switch-over's own (its verdict the event's). Absent in files
    /// written before this field.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub edges: Vec<CheckedEdge>,
}

/// One edge of a candidate event: a size where the curve changes level.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CheckedEdge {
    /// First size of the new level.
    pub bytes: u64,
    /// `slower` (time rises beyond what the size explains) or `faster`
    /// (time falls, or grows less) from this size on.
    pub direction: String,
    /// Whether the fresh trials either side of it show it.
    pub confirmed: bool,
}
