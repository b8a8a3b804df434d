//! A blocking sweep's small-message latency beside the same size measured
//! with spinning ends (schema version 5, issue 44): whether its waits
//! measured a CPU's wake-up rather than the transport.

use serde::{Deserialize, Serialize};

/// The sweep's smallest size, blocked and spinning.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WakeUp {
    /// The size probed (the sweep's smallest), bytes.
    pub bytes: u64,
    /// The sweep's headline at that size, its ends' waits blocking, ns.
    pub blocked_ns: f64,
    /// The same size with both ends spinning (`--wait spin`), measured by
    /// a short sweep of that size after this one, ns.
    pub spinning_ns: f64,
    /// Whether the blocked figure is more than twice the spinning one and
    /// at least 5 us above it: the blocking waits measured a CPU's wake-up
    /// (a warning says so), and `spinning_ns` is the transport's figure.
    pub dominated: bool,
}
