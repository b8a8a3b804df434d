//! wulf: what an interconnect and message-passing stack really delivers.
//!
//! The crate is one binary and a library the binary and the integration
//! tests share. Modules are cut so that each could become its own crate,
//! and they form layers: a module imports only modules below it (see
//! `ARCHITECTURE.md`; `tests/fast/architecture.rs` fails on any import cycle).
//! Bottom to top:
//!
//! * [`error`], [`stats`] (pure statistics over kept trials), [`units`]
//!   (sizes and durations with units);
//! * [`sys`]: the machine fingerprint and OS services;
//! * [`exec`]: spawning processes, the agent launchers (local, remote
//!   shell, Slurm), the local peer, the stop flag;
//! * [`message`]: size schedules, message buffers, the integrity pattern;
//! * [`load`]: measurement conditions: background load and the whole CPU
//!   cost (cyclesoak's soakers);
//! * [`result`]: the versioned result schema, every serialized type, and
//!   atomic file writing;
//! * [`analysis`]: derived figures (n_1/2, saturation, switch-overs, drop-outs);
//! * [`transport`]: one file per transport behind one trait, with the
//!   in-process baselines; nothing outside it branches on the kind of
//!   transport;
//! * [`comm`]: the communicator ranks run over (NAS kernels, collectives);
//! * [`lab`]: the link lab, emulated nodes and shaped links on one machine;
//! * [`measure`]: the timing loops and the repetition policy;
//! * [`tune`]: which settings make a transport fastest, and the advice;
//! * [`peer`]: the control protocol between the measuring side and its peer;
//! * [`study`]: published network studies as plans of lab sweeps, and their tables;
//! * [`sweep`]: a whole sweep against a peer or in process, and its result;
//! * [`cluster`]: wulf across many nodes: node lists, agents, the
//!   coordinator of the all-pairs matrix;
//! * [`collective`]: collective operations timed over sizes on a group of
//!   ranks (each MPI's own, or wulf's plain algorithms);
//! * [`npb`]: NAS Parallel Benchmark kernels written for wulf;
//! * [`launch`]: jobs started through launchers: groups of ranks, MPI
//!   jobs, wulf started by a launcher;
//! * [`cli`]: argument parsing only;
//! * [`report`]: exporters, pure functions from results to bytes;
//! * [`plan`]: what a run does (a run, a cluster run, a loaded pair, a
//!   NAS or collective plan), one file per plan, below the commands;
//! * [`commands`]: one file per subcommand: arguments in, a plan called,
//!   results out.

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
pub mod plan;
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
