//! NAS Parallel Benchmark kernels written for wulf from the NPB specification
//! (`shared/spec/npb.md`, NPB 3.4 figures), not ported from NPB's code.
//!
//! A kernel counts only when it passes NPB's own verification; an
//! unverified run is an error and is never reported as a speed.
//!
//! * [`rng`]: NPB's linear congruential generator, shared by the kernels;
//! * [`comm`]: the [`comm::Communicator`] trait the kernels run over, with
//!   serial and in-process (threads) backends;
//! * [`mg`]: the MG multigrid kernel, serial and parallel;
//! * [`ep`], [`is`], [`cg`]: the EP, IS and CG kernels, likewise;
//! * [`Kernel`]: which kernel a run is, its process-count rule;
//! * [`outcome`]: the verified outcome every kernel reports, and the
//!   timing every kernel shares;
//! * [`group`]: parallel runs of separate processes over a transport;
//! * [`RankJob`] / [`run_rank`]: what each rank of such a run executes;
//!   [`RankTask`]: a kernel or a collective benchmark, as groups carry it.

pub mod cg;
pub mod comm;
pub mod ep;
pub mod fault;
pub mod group;
pub mod is;
mod kernel;
pub mod mg;
pub mod outcome;
mod rank_job;
pub mod rng;

pub use kernel::{Kernel, MAX_PROCESSES};
pub use outcome::NpbOutcome;
pub use rank_job::{
    run_rank, GroupRun, RankJob, RankOutput, RankRun, RankTask, TaskOutput, TaskRun,
};

use std::fmt;
use std::str::FromStr;

/// An NPB problem class: the problem size and iteration count of a kernel.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
pub enum Class {
    /// Sample size, for quick tests.
    S,
    /// Workstation size.
    W,
    /// Standard test problem.
    A,
    /// Standard test problem, 4x A's work for most kernels.
    B,
    /// Standard test problem, 4x B's work for most kernels.
    C,
}

impl Class {
    /// Every class wulf implements, smallest first.
    pub const ALL: [Class; 5] = [Class::S, Class::W, Class::A, Class::B, Class::C];

    /// The class letter as NPB prints it.
    pub fn letter(self) -> char {
        match self {
            Class::S => 'S',
            Class::W => 'W',
            Class::A => 'A',
            Class::B => 'B',
            Class::C => 'C',
        }
    }
}

impl fmt::Display for Class {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.letter())
    }
}

impl FromStr for Class {
    type Err = anyhow::Error;

    fn from_str(s: &str) -> anyhow::Result<Self> {
        Class::ALL
            .into_iter()
            .find(|c| s.len() == 1 && s.eq_ignore_ascii_case(&c.letter().to_string()))
            .ok_or_else(|| {
                crate::error::usage(format!(
                    "unknown NPB class {s:?} (expected S, W, A, B or C)"
                ))
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn class_letters_round_trip() {
        for c in Class::ALL {
            assert_eq!(c.to_string().parse::<Class>().unwrap(), c);
            assert_eq!(c.to_string().to_lowercase().parse::<Class>().unwrap(), c);
        }
        assert!("D".parse::<Class>().is_err());
        assert!("SW".parse::<Class>().is_err());
    }
}
