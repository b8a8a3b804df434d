//! Sweeps: which sizes, how many repetitions, and the timing loops.
//!
//! * [`schedule`]: NetPIPE's size schedule and `--sizes` parsing;
//! * [`policy`]: the repetition policy (calibration, warm-up, trials until
//!   the median's confidence interval is narrow enough or the point's share
//!   of the budget is spent), written against a [`policy::BlockRunner`] so
//!   it can be tested exactly with a mock;
//! * [`loops`]: the hot loops of both ends. Nothing in them allocates,
//!   prints, logs or locks; the only calls are the endpoint's and the clock;
//! * [`buffers`]: message buffers (alignment, `--offset`, `--nocache` pools);
//! * [`timer`]: the cost of reading the clock, measured and subtracted;
//! * [`engine`]: drives a whole sweep against a peer and assembles the result;
//! * [`in_process`]: the same for the in-process baselines (no peer);
//! * [`confirm`]: the confirmation pass that measures the sizes around
//!   each candidate drop-out and switch-over again before the result is
//!   written;
//! * [`limits`]: the physical limits (memcpy bandwidth, cache-line floor)
//!   intra-node sweeps are measured against.

mod assemble;
pub mod buffers;
pub mod confirm;
pub mod engine;
pub mod in_process;
pub mod limits;
pub mod loops;
pub mod policy;
pub mod schedule;
pub mod timer;
mod whole;

/// The stop flag (see [`crate::exec::INTERRUPTED`]), where the engine
/// and older callers look for it.
pub use crate::exec::{interrupted, INTERRUPTED};
