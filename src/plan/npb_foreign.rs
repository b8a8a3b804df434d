//! Other work on this machine while an NAS combination ran: Bounanos and Fleury 2007
//! compares kernels "loaded" and "unloaded", and an "unloaded" run on a
//! machine that something else keeps busy is neither (issue 31: unloaded
//! MG runs got 25-66% of a CPU on a busy machine, with no warning).
//!
//! Foreign work is the CPU time of the processes this run did not start:
//! every process in `/proc` that is neither this wulf nor one of its
//! descendants (the ranks, an MPI launcher and its ranks and helpers), nor
//! a kernel thread: its threads' run time from their `schedstat`, exact to
//! the ns, plus the ticks of the children it reaped in the window
//! ([`foreign_ns`]), or where the kernel keeps no schedstat its own ticks
//! and those of the children it reaped ([`foreign_ticks`]), from the start of
//! the window to its end, in CPUs over the window's wall time. Ticks come
//! in 10 ms steps per process: over a 0.12 s class S run each process
//! whose time crossed a step added 0.08 CPUs, so a few quiet daemons
//! could read as 0.3 CPUs of other work (ucx(shm) np=2 IS was so marked on
//! a quiet VM). wulf's own loads (`--load cpu`/`memory`
//! threads) are this process's, so they never count as foreign: a loaded
//! run is judged by the same rule.
//!
//! Why not `/proc/stat`'s busy time less wulf's own (getrusage of this
//! process and its waited-for children), as before: on a quiet VM with
//! nothing else running, `wulf run --quick` marked shm np=2 and ucx(tcp)
//! np=2 busy. A class S run lasts 0.05-0.2 s, over which the kernel's
//! busy ticks (sampled each 4 ms tick, printed in 10 ms units per CPU)
//! and getrusage's exact run times differ by up to a few tens of ms for
//! each busy CPU: tenths of a CPU, most where the ranks keep both CPUs
//! busy (shm's and ucx's spinning ends at np=2), and whatever
//! the kernel does for the run outside its processes (a loopback's
//! softirqs in ksoftirqd, a kworker) counted as foreign. Processes are
//! only counted here when they are someone else's.

use std::time::Instant;

use crate::result::FOREIGN_CPUS_WARN;

#[cfg(test)]
pub(crate) use crate::sys::procs::parse_stat;
pub(crate) use crate::sys::procs::{ours, scan, Proc, Procs};

/// The CPU time, ticks, the processes that are not `me`'s nor kernel
/// threads took between the scans `a` and `b`: each one's growth (a
/// process new in `b` from 0), less the time before `a` of those that
/// ended between the scans (their parent, reaping them, took their whole
/// life into its own children's time).
pub(crate) fn foreign_ticks(a: &Procs, b: &Procs, me: i32) -> u64 {
    let same = |p: &Proc, q: &Proc| p.start == q.start;
    let mut total: i64 = 0;
    for (&pid, p) in b {
        if p.kernel || ours(b, me, pid) {
            continue;
        }
        let before = a.get(&pid).filter(|q| same(p, q)).map_or(0, |q| q.ticks);
        total += p.ticks.saturating_sub(before) as i64;
    }
    for (&pid, q) in a {
        let ended = b.get(&pid).is_none_or(|p| !same(p, q));
        if ended && !q.kernel && !ours(a, me, pid) {
            total -= q.ticks as i64;
        }
    }
    total.max(0) as u64
}

/// The CPU time, ns, the processes that are not `me`'s nor kernel threads
/// took between the scans `a` and `b`: each live one's threads' run time
/// from their schedstat (its growth; a process new in `b` from 0), and
/// what the processes that ended in between ran after `a`, which comes
/// only in ticks (`tick_ns` each), through the parents that reaped them
/// (their children's time, less the ended ones' time before `a`, as
/// [`foreign_ticks`] does): a shell forking a short `date` in a loop spends
/// its time in children schedstat never sees once they are gone. None
/// where a process of `b` has no reading.
pub(crate) fn foreign_ns(a: &Procs, b: &Procs, me: i32, tick_ns: f64) -> Option<f64> {
    let same = |p: &Proc, q: &Proc| p.start == q.start;
    let mut live_ns = 0u64;
    let mut reaped_ticks: i64 = 0;
    for (&pid, p) in b {
        if p.kernel || ours(b, me, pid) {
            continue;
        }
        let before = a.get(&pid).filter(|q| same(p, q));
        live_ns += p
            .run_ns?
            .saturating_sub(before.and_then(|q| q.run_ns).unwrap_or(0));
        reaped_ticks += p
            .child_ticks
            .saturating_sub(before.map_or(0, |q| q.child_ticks)) as i64;
    }
    for (&pid, q) in a {
        let ended = b.get(&pid).is_none_or(|p| !same(p, q));
        if ended && !q.kernel && !ours(a, me, pid) {
            reaped_ticks -= q.ticks as i64;
        }
    }
    Some(live_ns as f64 + reaped_ticks.max(0) as f64 * tick_ns)
}

/// A window over which foreign work is measured.
pub struct ForeignProbe {
    procs: Procs,
    at: Instant,
}

impl ForeignProbe {
    /// Starts the window; None where `/proc` cannot be read.
    pub fn start() -> Option<ForeignProbe> {
        let procs = scan();
        (!procs.is_empty()).then(|| ForeignProbe {
            procs,
            at: Instant::now(),
        })
    }

    /// Ends the window: the foreign work in CPUs (at least 0), or None
    /// for a window too short to say (under 2 ticks).
    pub fn finish(self) -> Option<f64> {
        let end = scan();
        let wall_ns = self.at.elapsed().as_nanos() as f64;
        let tick_ns = crate::load::kernel::StatReader::new().ns_per_tick();
        if end.is_empty() || wall_ns < 2.0 * tick_ns {
            return None;
        }
        let me = std::process::id() as i32;
        // Threads' exact run times where the kernel keeps them: each
        // process's ticks may step by one (10 ms) in a window of 0.1 s.
        if let Some(ns) = foreign_ns(&self.procs, &end, me, tick_ns) {
            return Some(ns / wall_ns);
        }
        let ticks = foreign_ticks(&self.procs, &end, me);
        Some(ticks as f64 * tick_ns / wall_ns)
    }
}

/// The warning of a run that `foreign_cpus` of other work shared the
/// machine with, if it is above [`FOREIGN_CPUS_WARN`].
pub fn warning(what: &str, foreign_cpus: f64) -> Option<String> {
    (foreign_cpus > FOREIGN_CPUS_WARN).then(|| {
        format!(
            "{what}: other work kept {foreign_cpus:.2} CPUs busy during the run (the CPU time of \
             the processes wulf did not start, from /proc): the machine was not quiet, so the \
             rates say as much about that work as about the transport; marked * in the tables"
        )
    })
}

#[cfg(test)]
#[path = "npb_foreign_tests.rs"]
mod tests;
