//! Sweeps: a whole sweep over sizes, against a peer or in process.
//!
//! The sizes are [`crate::message::schedule`]'s, each point is measured by
//! [`crate::measure`]'s loops and repetition policy; this module drives
//! them over a whole schedule and assembles the result:
//!
//! * [`spec`]: what defines a sweep ([`spec::SweepSpec`]) and what it
//!   comes back with; it imports nothing else of `sweep`, so every stage
//!   reads it without depending on the engine;
//! * [`engine`]: drives a whole sweep against a peer, in stages (set-up,
//!   measuring with its confirmation pass, close, assembling) that pass
//!   their products forward;
//! * [`progress`]: the [`progress::Reporter`] a sweep tells of each point
//!   as it is measured (quiet, JSON lines; the terminal bar is the
//!   commands');
//! * [`in_process`]: the same for the in-process baselines (no peer);
//! * [`confirm`]: the confirmation pass that measures the sizes around
//!   each candidate drop-out and switch-over again before the result is
//!   written;
//! * [`limits`]: the physical limits (memcpy bandwidth, cache-line floor)
//!   intra-node sweeps are measured against;
//! * [`limits_carry`]: that table, carried into an MPI job's ranks;
//! * [`floor`]: the cache-line floor, measured before and again after a
//!   sweep (the lowest kept);
//! * [`burst`]: the peak across a shaped lab link, past its free burst.
//! * [`budget`]: the sweep's clock: `--budget` is the whole sweep's wall
//!   time, each phase timed against it;
//! * [`link_fit`]: each point's share planned from what the sizes to come
//!   cost at the link's rate, the largest left out when they cannot fit;
//! * [`measuring`]: the points and the pass held to one deadline, each
//!   size's least work estimated before it is measured;
//! * [`wake`]: whether a blocking sweep's waits measured a CPU's wake-up
//!   (its smallest size probed with spinning ends after it).

mod assemble;
pub mod budget;
#[cfg(test)]
mod budget_tests;
pub mod burst;
pub mod confirm;
#[cfg(test)]
mod deadline_tests;
pub mod engine;
pub mod floor;
pub mod in_process;
mod least_work;
pub mod limits;
pub mod limits_carry;
pub mod link_fit;
pub mod measuring;
mod peer_runner;
mod pin;
pub mod placement;
pub mod point;
pub mod progress;
mod runner;
mod setup;
pub mod spec;
pub mod tails;
pub mod wake;
mod whole;

/// The stop flag (see [`crate::exec::INTERRUPTED`]), where the engine
/// and older callers look for it.
pub use crate::exec::{interrupted, INTERRUPTED};
