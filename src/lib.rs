//! wulf: what an interconnect and message-passing stack really delivers.
//!
//! The crate is one binary and a library the binary and the integration
//! tests share. Modules are cut so that each could become its own crate:
//!
//! * [`cli`]: argument parsing only;
//! * [`units`]: sizes and durations with units, shared by every command;
//! * [`transport`]: one file per transport behind one trait; nothing outside
//!   it branches on the kind of transport;
//! * [`sweep`]: size schedules, the repetition policy and the timing loops;
//! * [`peer`]: the control protocol between the measuring side and its peer;
//! * [`stats`]: pure statistics over kept trials;
//! * [`analysis`]: derived figures (n_1/2, saturation, switch-overs, drop-outs);
//! * [`report`]: exporters, pure functions from results to bytes;
//! * [`result`]: the versioned result schema and atomic file writing;
//! * [`sys`]: the machine fingerprint and OS services;
//! * [`npb`]: NAS Parallel Benchmark kernels written for wulf;
//! * [`collective`]: collective operations timed over sizes on a group of
//!   ranks (each MPI's own, or wulf's plain algorithms);
//! * [`cluster`]: wulf across many nodes: node lists, launchers, agents,
//!   the coordinator of the all-pairs matrix;
//! * [`load`]: measurement conditions: background load and the whole CPU
//!   cost (cyclesoak's soakers);
//! * [`lab`]: the link lab, emulated nodes and shaped links on one machine;
//! * [`study`]: the seeds' network studies as plans of lab sweeps, and their tables;
//! * [`tune`]: which settings make a transport fastest, and the advice;
//! * [`commands`]: one file per subcommand, gluing the above together.

pub mod analysis;
pub mod cli;
pub mod cluster;
pub mod collective;
pub mod comm;
pub mod commands;
pub mod error;
pub mod exec;
pub mod fuzzing;
pub mod lab;
pub mod launch;
pub mod load;
pub mod measure;
pub mod message;
pub mod npb;
pub mod peer;
pub mod report;
pub mod result;
pub mod stats;
pub mod study;
pub mod sweep;
pub mod sys;
pub mod transport;
pub mod tune;
pub mod units;

/// Set by commands (such as `serve`) for which a signal should end the
/// process at once rather than stop a measurement gracefully.
pub static EXIT_ON_SIGNAL: std::sync::atomic::AtomicBool =
    std::sync::atomic::AtomicBool::new(false);
