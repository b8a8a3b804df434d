//! Other work on this machine while an NAS combination ran: Bounanos and Fleury 2007
//! compares kernels "loaded" and "unloaded", and an "unloaded" run on a
//! machine that something else keeps busy is neither (issue 31: unloaded
//! MG runs got 25-66% of a CPU on a busy machine, with no warning).
//!
//! The machine's busy time comes from the kernel's own accounting
//! (`/proc/stat`, every CPU), this process's and its waited-for
//! children's (the ranks, an MPI launcher and its ranks) from getrusage;
//! what is left is foreign work, in CPUs over the run's wall time. wulf's
//! own loads (`--load cpu`/`memory` threads) are this process's, so they
//! never count as foreign: a loaded run is judged by the same rule.

use std::time::Instant;

use crate::load::kernel::{busy_between, StatReader, Ticks};

use crate::result::FOREIGN_CPUS_WARN;

/// A window over which foreign work is measured.
pub struct ForeignProbe {
    reader: StatReader,
    ticks: Ticks,
    own_cpu_ns: u64,
    at: Instant,
}

impl ForeignProbe {
    /// Starts the window; None where `/proc/stat` cannot be read.
    pub fn start() -> Option<ForeignProbe> {
        let mut reader = StatReader::new();
        let ticks = reader.read().ok()?;
        Some(ForeignProbe {
            reader,
            ticks,
            own_cpu_ns: own_and_children_cpu_ns(),
            at: Instant::now(),
        })
    }

    /// Ends the window: the foreign work in CPUs (at least 0), or None
    /// for a window too short to say (under 2 ticks of every CPU).
    pub fn finish(mut self) -> Option<f64> {
        let end = self.reader.read().ok()?;
        let own_ns = own_and_children_cpu_ns().saturating_sub(self.own_cpu_ns) as f64;
        let (busy_ticks, _) = busy_between(&self.ticks, &end);
        let wall_ns = self.at.elapsed().as_nanos() as f64;
        let tick_ns = self.reader.ns_per_tick();
        if wall_ns < 2.0 * tick_ns {
            return None;
        }
        let busy_ns = busy_ticks as f64 * tick_ns;
        Some(((busy_ns - own_ns) / wall_ns).max(0.0))
    }
}

/// CPU time (user and system) of this process and of its children that
/// have been waited for, ns.
fn own_and_children_cpu_ns() -> u64 {
    let of = |who| {
        let mut usage = std::mem::MaybeUninit::<libc::rusage>::uninit();
        // SAFETY: getrusage writes a full rusage into the pointer we pass.
        if unsafe { libc::getrusage(who, usage.as_mut_ptr()) } != 0 {
            return 0;
        }
        // SAFETY: getrusage succeeded, so the struct is initialised.
        let u = unsafe { usage.assume_init() };
        let ns = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1_000;
        ns(u.ru_utime) + ns(u.ru_stime)
    };
    of(libc::RUSAGE_SELF) + of(libc::RUSAGE_CHILDREN)
}

/// The warning of a run that `foreign_cpus` of other work shared the
/// machine with, if it is above [`FOREIGN_CPUS_WARN`].
pub fn warning(what: &str, foreign_cpus: f64) -> Option<String> {
    (foreign_cpus > FOREIGN_CPUS_WARN).then(|| {
        format!(
            "{what}: other work kept {foreign_cpus:.2} CPUs busy during the run (from /proc/stat, \
             less wulf's own processes): the machine was not quiet, so the rates say as much about \
             that work as about the transport; marked * in the tables"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_real_load_warns() {
        assert!(warning("x", 0.1).is_none());
        assert!(warning("mg shm np=2", 0.6).unwrap().contains("0.60 CPUs"));
    }
}
