//! One file per subcommand: each turns parsed arguments into work by
//! calling a plan (`crate::plan`: what a run does) and the measuring,
//! analysing and exporting modules, and decides what goes to the terminal
//! and to files. No command imports another: what two commands share is
//! a plan (`tests/fast/architecture.rs` checks it).

pub mod collective;
pub mod compare;
pub mod completions;
pub mod hpl;
pub mod info;
pub mod lab;
pub mod matrix;
pub mod npb;
pub mod report;
pub mod run;
pub mod serve;
pub mod study;
pub mod sweep;
pub mod tune;
pub mod worker;
