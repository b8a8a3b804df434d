//! Messages: what a measurement sends, independent of how it is sent.
//!
//! Below the transports in the layers (it imports none): the in-process
//! baselines, which are registered as transports, use it as much as the
//! timing loops do.
//!
//! * [`schedule`]: NetPIPE's size schedule and `--sizes` parsing;
//! * [`buffers`]: message buffers (alignment, `--offset`, `--nocache`
//!   pools), and the memory a transport may lend for them;
//! * [`pattern`]: the integrity pattern messages are filled with and
//!   checked against.

pub mod buffers;
pub mod pattern;
pub mod schedule;
