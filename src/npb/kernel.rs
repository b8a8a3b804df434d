//! Which NPB kernel a run is: the one place that maps a kernel to its
//! code, its process-count rule and its problem description, so that the
//! command, the rank processes and the MPI workers need not know them.

use std::fmt;
use std::str::FromStr;

use anyhow::Result;
use serde::{Deserialize, Serialize};

use super::mg::{Decomposition, MgParams};
use super::{bt, cg, ep, ft, is, lu, sp, Class, NpbOutcome};
use crate::comm::{Communicator, Counted};
use crate::error::usage;

/// Largest process count the command line accepts for one kernel run.
pub const MAX_PROCESSES: usize = 1024;

/// An NPB kernel wulf implements.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, Default,
)]
#[serde(rename_all = "lowercase")]
pub enum Kernel {
    /// Conjugate gradient on a random sparse matrix: small reductions along
    /// process rows and a transpose exchange, latency-bound.
    Cg,
    /// Embarrassingly parallel Gaussian pairs: one final reduction.
    Ep,
    /// Integer sort: one large all-to-all of keys per iteration.
    Is,
    /// Multigrid: nearest-neighbour ghost exchanges of every size.
    #[default]
    Mg,
    /// LU (SSOR): a wavefront pipeline of small messages, one per z plane
    /// and neighbour, plus ghost exchanges.
    Lu,
    /// SP (ADI): scalar pentadiagonal line solves pipelined over NPB's
    /// multi-partition (square process counts), plus face exchanges.
    Sp,
    /// FT: 3-D FFTs; one all-to-all transpose of the whole grid per
    /// time step, bandwidth-bound.
    Ft,
    /// BT (ADI): block-tridiagonal line solves (5x5 blocks) pipelined
    /// over SP's multi-partition (square process counts), plus face
    /// exchanges.
    Bt,
}

impl Kernel {
    /// Every kernel, in NPB's alphabetical order.
    pub const ALL: [Kernel; 8] = [
        Kernel::Bt,
        Kernel::Cg,
        Kernel::Ep,
        Kernel::Ft,
        Kernel::Is,
        Kernel::Lu,
        Kernel::Mg,
        Kernel::Sp,
    ];

    /// The lower-case name used on the command line and in result files.
    pub fn name(self) -> &'static str {
        match self {
            Kernel::Cg => "cg",
            Kernel::Ep => "ep",
            Kernel::Is => "is",
            Kernel::Mg => "mg",
            Kernel::Lu => "lu",
            Kernel::Sp => "sp",
            Kernel::Ft => "ft",
            Kernel::Bt => "bt",
        }
    }

    /// Fails with a usage error (exit 2), before any process starts, when
    /// the kernel cannot run `class` on `np` processes; the message names
    /// the counts it can use.
    pub fn check_process_count(self, class: Class, np: usize) -> Result<()> {
        let upper = self.name().to_uppercase();
        if np == 0 {
            return Err(usage(format!("NPB {upper} needs at least one process")));
        }
        match self {
            // Any count: batches of pairs are dealt out as evenly as they go.
            Kernel::Ep => Ok(()),
            Kernel::Mg => {
                let levels = MgParams::of(class).levels;
                Decomposition::new(np, 0)
                    .and_then(|d| d.lowest_distributed_level(levels).map(|_| ()))
                    .map_err(|e| usage(format!("{e:#} (MG runs on 1, 2, 4, 8, ... processes)")))
            }
            // NPB's MPI rules: powers of two only.
            Kernel::Is | Kernel::Cg if !np.is_power_of_two() => Err(usage(format!(
                "NPB {upper} runs on a power-of-two number of processes (1, 2, 4, 8, ...), not {np}"
            ))),
            Kernel::Cg => cg::check_process_count(class, np),
            Kernel::Is => Ok(()),
            // A 2-D process grid as square as the count allows, every block
            // at least 3 points a side.
            Kernel::Lu => lu::check_process_count(class, np),
            // NPB's multi-partition: a square count.
            Kernel::Sp => sp::check_process_count(class, np),
            // Slabs: the count must divide the y rows and z planes.
            Kernel::Ft => ft::check_process_count(class, np),
            // SP's multi-partition: a square count.
            Kernel::Bt => bt::check_process_count(class, np),
        }
    }

    /// Runs the kernel of `class` on this rank of `comm` (every rank must
    /// call it) and verifies it; an unverified run is an error. What the
    /// ranks send in the timed section is counted ([`Counted`]) for the
    /// outcome's communication figures.
    pub fn run(self, class: Class, comm: &dyn Communicator) -> Result<NpbOutcome> {
        let counted = Counted::new(comm);
        let comm: &dyn Communicator = &counted;
        match self {
            Kernel::Cg => cg::run_cg(class, comm),
            Kernel::Ep => ep::run_ep(class, comm),
            Kernel::Is => is::run_is(class, comm),
            Kernel::Mg => super::mg::run_mg(class, comm),
            Kernel::Lu => lu::run_lu(class, comm),
            Kernel::Sp => sp::run_sp(class, comm),
            Kernel::Ft => ft::run_ft(class, comm),
            Kernel::Bt => bt::run_bt(class, comm),
        }
    }

    /// The problem of `class` in a few words, for table headings.
    pub fn problem(self, class: Class) -> String {
        match self {
            Kernel::Cg => cg::CgParams::of(class).describe(),
            Kernel::Ep => ep::EpParams::of(class).describe(),
            Kernel::Is => is::IsParams::of(class).describe(),
            Kernel::Mg => {
                let p = MgParams::of(class);
                format!("{}^3 grid, {} iterations", p.n_points, p.iterations)
            }
            Kernel::Lu => lu::LuParams::of(class).describe(),
            Kernel::Sp => sp::SpParams::of(class).describe(),
            Kernel::Ft => ft::FtParams::of(class).describe(),
            Kernel::Bt => bt::params::of(class).describe(),
        }
    }
}

impl fmt::Display for Kernel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Kernel {
    type Err = anyhow::Error;

    fn from_str(s: &str) -> Result<Self> {
        Kernel::ALL
            .into_iter()
            .find(|k| s.eq_ignore_ascii_case(k.name()))
            .ok_or_else(|| {
                usage(format!(
                    "unknown NPB kernel {s:?} (expected bt, cg, ep, ft, is, lu, mg or sp)"
                ))
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn process_count_rules_name_the_counts_a_kernel_can_use() {
        for np in [1, 3, 5, 6, 7] {
            Kernel::Ep.check_process_count(Class::S, np).unwrap();
        }
        for k in [Kernel::Is, Kernel::Cg, Kernel::Mg] {
            k.check_process_count(Class::S, 4).unwrap();
            let e = k.check_process_count(Class::S, 3).unwrap_err();
            assert_eq!(crate::error::exit_code_of(&e), 2, "{e:#}");
            assert!(format!("{e:#}").contains("1, 2, 4, 8"), "{e:#}");
        }
        let e = Kernel::Ep.check_process_count(Class::S, 0).unwrap_err();
        assert_eq!(crate::error::exit_code_of(&e), 2);
    }

    #[test]
    fn names_round_trip() {
        for k in Kernel::ALL {
            assert_eq!(k.name().parse::<Kernel>().unwrap(), k);
            assert_eq!(k.to_string(), k.name());
        }
        assert!("dt".parse::<Kernel>().is_err());
    }
}
