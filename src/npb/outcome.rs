//! What a verified run of any NPB kernel reports, and the timing and
//! verification steps every kernel shares.
//!
//! Every kernel times its section the same way (a barrier, wall and thread
//! CPU clocks, the maximum over ranks) and turns its figures into one
//! [`NpbOutcome`], so the result file, the tables and the rank protocol do
//! not depend on the kernel. Fields only MG has (the grid, the residual
//! norm) are optional; the other kernels list what they verified in
//! [`NpbOutcome::checks`].

use std::time::Instant;

use super::Class;
use crate::comm::{Communicator, SentTotals};
pub use crate::result::npb_outcome::{CheckedValue, NpbOutcome};
use anyhow::Result;

/// A run of EP, IS or CG whose results missed NPB's references.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("NPB {kernel} class {class} failed verification: {}", describe(.checks, *.tolerance))]
pub struct KernelVerificationFailed {
    /// The kernel (`EP`, `IS`, `CG`).
    pub kernel: &'static str,
    /// The problem class.
    pub class: Class,
    /// The values compared.
    pub checks: Vec<CheckedValue>,
    /// Largest relative error allowed.
    pub tolerance: f64,
}

fn describe(checks: &[CheckedValue], tolerance: f64) -> String {
    checks
        .iter()
        .map(|c| {
            format!(
                "{} {}, reference {} (relative error {:.3e}, allowed {tolerance:e})",
                c.name,
                checked_number(c.value),
                checked_number(c.reference),
                c.relative_error()
            )
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// A checked value as NPB prints it: counts (IS's passed checks, EP's
/// pairs) as integers, the rest with 14 significant digits.
fn checked_number(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{v:.0}")
    } else {
        format!("{v:.13e}")
    }
}

/// The values a failed verification compared, read back from the error
/// text a failing rank sent (ranks report their errors as text, whoever
/// launched them): [`KernelVerificationFailed`]'s items (`NAME VALUE,
/// reference REF (relative error E, allowed T)`, `; `-separated) and MG's
/// (`norm VALUE, reference REF, relative error E > T`). Empty when the
/// text holds no verification failure (a rank died, timed out...).
pub fn failed_checks(error: &str) -> Vec<crate::result::FailedCheck> {
    const AT: &str = "failed verification: ";
    let Some(at) = error.find(AT) else {
        return Vec::new();
    };
    error[at + AT.len()..]
        .split("; ")
        .filter_map(failed_check)
        .collect()
}

/// One item of a verification failure's text (see [`failed_checks`]).
fn failed_check(item: &str) -> Option<crate::result::FailedCheck> {
    let finite = |t: &str| t.parse::<f64>().ok().filter(|v| v.is_finite());
    // The number starting `text`, up to a space, comma or parenthesis.
    let number_at = |text: &str| {
        let end = text.find([' ', ',', ')']).unwrap_or(text.len());
        text[..end].to_string()
    };
    let after = |text: &str, key: &str| text.find(key).map(|i| number_at(&text[i + key.len()..]));
    let (left, right) = item.split_once(", reference ")?;
    let (name, value) = left.trim().rsplit_once(' ')?;
    let reference = finite(&number_at(right))?;
    let value = finite(value);
    Some(crate::result::FailedCheck {
        name: name.to_string(),
        value,
        reference,
        relative_error: after(right, "relative error ").and_then(|t| finite(&t)),
        allowed_relative_error: after(right, "allowed ")
            .or_else(|| after(right, "> "))
            .and_then(|t| finite(&t)),
    })
}

/// Fails with [`KernelVerificationFailed`] unless every check is within
/// `tolerance` (a NaN never is).
fn verify(
    kernel: &'static str,
    class: Class,
    checks: &[CheckedValue],
    tolerance: f64,
) -> Result<()> {
    // Written so that a NaN error compares false and fails.
    let all_pass = checks.iter().all(|c| c.relative_error() <= tolerance);
    if !all_pass {
        return Err(KernelVerificationFailed {
            kernel,
            class,
            checks: checks.to_vec(),
            tolerance,
        }
        .into());
    }
    Ok(())
}

/// The clocks of a timed section, started on every rank at once.
pub struct Timer {
    wall: Instant,
    cpu_s: f64,
    /// What this rank had sent when the section started.
    sent_at_start: Option<SentTotals>,
}

/// Wall and CPU time of a timed section, each the maximum over ranks.
#[derive(Debug, Clone, Copy)]
pub struct Elapsed {
    /// Wall time, seconds.
    pub wall_s: f64,
    /// Thread CPU time, seconds (NaN without a thread CPU clock).
    pub cpu_s: f64,
    /// What all ranks sent during the section, summed, where the
    /// communicator counts it.
    pub sent: Option<SentTotals>,
}

impl Timer {
    /// Waits for every rank (so the section starts together, as NPB's
    /// barrier before its timer does), then starts the clocks.
    pub fn start(comm: &dyn Communicator) -> Result<Timer> {
        comm.barrier()?;
        Ok(Timer {
            wall: Instant::now(),
            cpu_s: thread_cpu_time_s(),
            sent_at_start: comm.sent_totals(),
        })
    }

    /// Stops the clocks and takes the maximum over ranks, and the sum of
    /// what they sent (collectives, after the section).
    pub fn stop(self, comm: &dyn Communicator) -> Result<Elapsed> {
        let mut times_s = [
            self.wall.elapsed().as_secs_f64(),
            thread_cpu_time_s() - self.cpu_s,
        ];
        let sent = match (self.sent_at_start, comm.sent_totals()) {
            (Some(start), Some(end)) => Some([
                (end.bytes - start.bytes) as f64,
                (end.messages - start.messages) as f64,
            ]),
            _ => None,
        };
        comm.allreduce_max_f64(&mut times_s)?;
        let sent = match sent {
            Some(mut totals) => {
                comm.allreduce_sum_f64(&mut totals)?;
                Some(SentTotals {
                    bytes: totals[0] as u64,
                    messages: totals[1] as u64,
                })
            }
            None => None,
        };
        Ok(Elapsed {
            wall_s: times_s[0],
            cpu_s: times_s[1],
            sent,
        })
    }
}

/// How a kernel's run went, besides its checks: what [`NpbOutcome::checked`]
/// needs to compute the rates.
#[derive(Debug, Clone, Copy)]
pub struct RunShape {
    /// Ranks along each axis of the process grid.
    pub proc_grid: [usize; 3],
    /// Iterations timed.
    pub iterations: usize,
    /// The timed section's duration.
    pub elapsed: Elapsed,
    /// NPB's operation count of the timed section.
    pub operations: f64,
}

impl NpbOutcome {
    /// Verifies an EP, IS or CG run (every check within `tolerance`, else
    /// [`KernelVerificationFailed`]) and builds its outcome, with Mop/s
    /// from the operation count.
    pub fn checked(
        kernel: &'static str,
        class: Class,
        comm: &dyn Communicator,
        checks: Vec<CheckedValue>,
        tolerance: f64,
        shape: RunShape,
    ) -> Result<NpbOutcome> {
        verify(kernel, class, &checks, tolerance)?;
        let nprocs = comm.size();
        let relative_error = checks
            .iter()
            .map(CheckedValue::relative_error)
            .fold(0.0, f64::max);
        let mop_s = shape.operations / shape.elapsed.wall_s * 1e-6;
        Ok(NpbOutcome {
            class,
            nprocs,
            proc_grid: shape.proc_grid,
            backend: comm.backend_name().to_string(),
            grid_points: None,
            iterations: shape.iterations,
            time_s: shape.elapsed.wall_s,
            cpu_time_s: shape.elapsed.cpu_s,
            mop_s,
            mop_s_per_process: mop_s / nprocs as f64,
            norm: None,
            reference_norm: None,
            relative_error,
            max_abs_residual: None,
            checks,
            annulus_counts: Vec::new(),
            sent_bytes: shape.elapsed.sent.map(|s| s.bytes),
            sent_messages: shape.elapsed.sent.map(|s| s.messages),
            verified: true,
        })
    }
}

/// CPU time consumed so far by the calling thread, in seconds (NaN if the
/// clock is unavailable).
pub fn thread_cpu_time_s() -> f64 {
    use nix::time::{clock_gettime, ClockId};
    clock_gettime(ClockId::CLOCK_THREAD_CPUTIME_ID)
        .map(|t| t.tv_sec() as f64 + t.tv_nsec() as f64 * 1e-9)
        .unwrap_or(f64::NAN)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verification_rejects_nan_and_far_values() {
        let ok = [CheckedValue::new("sx", 1.0 + 0.5e-8, 1.0)];
        verify("EP", Class::S, &ok, 1e-8).unwrap();
        let far = [CheckedValue::new("sx", 1.1, 1.0)];
        let e = verify("EP", Class::S, &far, 1e-8).unwrap_err();
        assert!(e.downcast_ref::<KernelVerificationFailed>().is_some());
        assert!(e.to_string().contains("failed verification"), "{e}");
        let counts = [CheckedValue::new(
            "partial verifications passed",
            49.0,
            50.0,
        )];
        let e = verify("IS", Class::S, &counts, 0.0)
            .unwrap_err()
            .to_string();
        assert!(e.contains("passed 49, reference 50 "), "{e}");
        let nan = [CheckedValue::new("zeta", f64::NAN, 1.0)];
        assert!(verify("CG", Class::S, &nan, 1e-10).is_err());
    }

    #[test]
    fn a_failed_verification_gives_back_its_values_from_the_error_text() {
        let checks = [
            CheckedValue::new("sx", 1.234_567_890_123_4e3, 1.5e3),
            CheckedValue::new("partial verifications passed", 49.0, 50.0),
            CheckedValue::new("zeta", f64::NAN, 8.5),
        ];
        let e = verify("EP", Class::S, &checks, 1e-8).unwrap_err();
        // As the leader sees it: under the rank's and the run's contexts.
        let text = format!("{:#}", e.context("rank 0"));
        let got = failed_checks(&text);
        assert_eq!(got.len(), 3, "{got:?} from {text}");
        assert_eq!(got[0].name, "sx");
        assert_eq!(got[0].value, Some(1.234_567_890_123_4e3));
        assert_eq!(got[0].reference, 1.5e3);
        let rel = got[0].relative_error.unwrap();
        assert!(
            (rel / checks[0].relative_error() - 1.0).abs() < 1e-3,
            "{rel}"
        );
        assert_eq!(got[0].allowed_relative_error, Some(1e-8));
        assert_eq!(got[1].name, "partial verifications passed");
        assert_eq!((got[1].value, got[1].reference), (Some(49.0), 50.0));
        assert_eq!((got[2].value, got[2].relative_error), (None, None));
        // MG's own wording.
        let mg = crate::npb::mg::VerificationFailed {
            class: Class::S,
            norm: 5.3e-5,
            reference: 5.307707005734e-5,
            relative_error: 1.45e-3,
        };
        let got = failed_checks(&format!("rank 1: {mg}"));
        assert_eq!(got.len(), 1, "{got:?}");
        assert_eq!(got[0].name, "norm");
        assert_eq!(got[0].value, Some(5.3e-5));
        assert_eq!(got[0].reference, 5.307707005734e-5);
        assert_eq!(got[0].relative_error, Some(1.45e-3));
        assert!(got[0].allowed_relative_error.is_some());
        // Other failures hold no values.
        assert!(failed_checks("rank 1 stopped answering: timed out").is_empty());
    }
}
