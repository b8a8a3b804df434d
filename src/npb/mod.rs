//! NAS Parallel Benchmark kernels written for wulf from the NPB specification
//! (`shared/spec/npb.md`, NPB 3.4 figures), not ported from NPB's code.
//!
//! A kernel counts only when it passes NPB's own verification; an
//! unverified run is an error and is never reported as a speed.
//!
//! * [`rng`]: NPB's linear congruential generator, shared by the kernels;
//! * [`comm`]: the [`comm::Communicator`] trait the kernels run over, with
//!   serial and in-process (threads) backends (its own module,
//!   [`crate::comm`], shared with the collectives);
//! * [`mg`]: the MG multigrid kernel, serial and parallel;
//! * [`ep`], [`is`], [`cg`]: the EP, IS and CG kernels, likewise;
//! * [`lu`]: the LU pseudo-application (SSOR, wavefront pipeline);
//! * [`sp`]: the SP pseudo-application (ADI, multi-partition pipeline);
//! * [`ft`]: the FT kernel (3-D FFTs, all-to-all transposes);
//! * [`bt`]: the BT pseudo-application (ADI, block-tridiagonal solves over
//!   SP's multi-partition);
//! * [`Kernel`]: which kernel a run is, its process-count rule;
//! * [`outcome`]: the verified outcome every kernel reports, and the
//!   timing every kernel shares;
//! * [`crate::launch::group`]: parallel runs of separate processes over a
//!   transport (above the kernels, with the other launched jobs);
//! * [`RankJob`] / [`run_rank`]: what each rank of such a run executes;
//!   [`RankTask`]: a kernel or a collective benchmark, as groups carry it.

pub mod bt;
pub mod cg;
pub mod ep;
pub mod fault;
pub mod ft;
pub mod is;
mod kernel;
pub mod lu;
pub mod mg;
pub mod outcome;
mod rank_job;
pub mod rng;
pub mod sp;

/// The communicators the kernels run over, where the kernels' callers
/// (and older paths) find them.
pub use crate::comm;
pub use crate::result::npb_outcome::Class;
pub use kernel::{Kernel, MAX_PROCESSES};
pub use outcome::NpbOutcome;
pub use rank_job::{
    run_rank, GroupRun, RankJob, RankOutput, RankRun, RankTask, TaskOutput, TaskRun,
};

/// NPB's operation count for the CFD pseudo-applications (LU, SP, BT):
/// `iterations * (c3 n^3 + c2 n^2 + c1 n + c0)`, a cubic NPB fitted in the
/// grid side `n` (the mean side; the grids here are cubes), with the
/// coefficients `fit = [c3, c2, c1, c0]` of each benchmark.
pub(crate) fn cubic_fit_operations(iterations: usize, n_points: usize, fit: [f64; 4]) -> f64 {
    let n = n_points as f64;
    let [c3, c2, c1, c0] = fit;
    iterations as f64 * (((c3 * n + c2) * n + c1) * n + c0)
}

/// What the tests of the pseudo-applications share.
#[cfg(test)]
pub(crate) mod test_support {
    use super::*;
    use crate::comm::{Communicator, SerialComm, ThreadComm};

    /// Runs `run` of `class` serially, then on each count of `nps`
    /// threads, and holds every rank's checks to the serial values within
    /// 1e-12: a rank's points get the same operations as in a serial run.
    pub fn ranks_agree_with_serial(
        run: fn(Class, &dyn Communicator) -> anyhow::Result<NpbOutcome>,
        class: Class,
        nps: &[usize],
    ) {
        let serial = run(class, &SerialComm::new()).unwrap();
        for &np in nps {
            let outs = ThreadComm::run(np, |c| run(class, c)).unwrap();
            for out in outs {
                assert_eq!(out.nprocs, np);
                for (a, b) in out.checks.iter().zip(&serial.checks) {
                    let rel = ((a.value - b.value) / b.value).abs();
                    assert!(
                        rel < 1e-12,
                        "np {np} {}: {} vs {}",
                        a.name,
                        a.value,
                        b.value
                    );
                }
            }
        }
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
