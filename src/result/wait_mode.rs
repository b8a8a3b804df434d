//! How the two ends of a shared-memory channel wait for each other
//! (`--wait`), as command lines name it and results record it. The waiting
//! itself is the transport's ([`crate::transport::wait`]).

use serde::{Deserialize, Serialize};

/// How an end waits for the other (`--wait`).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum WaitMode {
    /// Busy-poll with the CPU's pause hint.
    #[default]
    Spin,
    /// Poll, yielding the CPU between polls.
    Yield,
    /// Poll briefly, then sleep on a futex until woken.
    Block,
}

impl WaitMode {
    /// Name as typed on the command line and stored in results.
    pub fn name(self) -> &'static str {
        match self {
            WaitMode::Spin => "spin",
            WaitMode::Yield => "yield",
            WaitMode::Block => "block",
        }
    }

    /// A small number for region headers (0 is never used, so a zeroed
    /// header is recognised as unset).
    pub fn code(self) -> u32 {
        match self {
            WaitMode::Spin => 1,
            WaitMode::Yield => 2,
            WaitMode::Block => 3,
        }
    }
}

impl std::fmt::Display for WaitMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}
