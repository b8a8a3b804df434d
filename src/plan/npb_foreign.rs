//! Other work on this machine while an NAS combination ran: Bounanos and Fleury 2007
//! compares kernels "loaded" and "unloaded", and an "unloaded" run on a
//! machine that something else keeps busy is neither (issue 31: unloaded
//! MG runs got 25-66% of a CPU on a busy machine, with no warning).
//!
//! Foreign work is the CPU time of the processes this run did not start:
//! every process in `/proc` that is neither this wulf nor one of its
//! descendants (the ranks, an MPI launcher and its ranks and helpers), nor
//! a kernel thread: its threads' run time from their `schedstat`, exact to
//! the ns ([`foreign_ns`]), or where the kernel keeps none its own ticks and
//! those of the children it reaped ([`foreign_ticks`]), from the start of
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

use std::collections::HashMap;
use std::time::Instant;

use crate::result::FOREIGN_CPUS_WARN;

/// A process as `/proc/PID/stat` shows it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Proc {
    /// Its parent.
    pub ppid: i32,
    /// When it started (clock ticks since boot): a pid reused by another
    /// process is another process.
    pub start: u64,
    /// Its CPU time and its reaped children's (user and system), ticks.
    pub ticks: u64,
    /// A kernel thread (PF_KTHREAD).
    pub kernel: bool,
    /// Its live threads' own run time, ns, from their `schedstat` (None
    /// where one could not be read).
    pub run_ns: Option<u64>,
}

/// Every process of the machine, by pid.
pub(crate) type Procs = HashMap<i32, Proc>;

/// The kernel's flag of a kernel thread in `/proc/PID/stat`.
const PF_KTHREAD: u64 = 0x0020_0000;

/// A `/proc/PID/stat` line's process, None where it does not parse.
pub(crate) fn parse_stat(text: &str) -> Option<Proc> {
    // The command name may hold spaces and parentheses: fields follow the
    // last ')'.
    let rest = &text[text.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_ascii_whitespace().collect();
    let num = |i: usize| f.get(i).and_then(|x| x.parse::<i64>().ok());
    let ticks: i64 = [11, 12, 13, 14]
        .iter()
        .map(|&i| num(i).unwrap_or(0).max(0))
        .sum();
    Some(Proc {
        ppid: num(1)? as i32,
        start: num(19)?.max(0) as u64,
        ticks: ticks as u64,
        kernel: (num(6)? as u64 & PF_KTHREAD) != 0,
        run_ns: None,
    })
}

/// The run time, ns, of every live thread of `pid` together: the first
/// field of each `/proc/PID/task/TID/schedstat`, exact where the ticks of
/// `/proc/PID/stat` come in 10 ms steps. None where a thread's cannot be
/// read (no schedstat in this kernel).
fn run_ns_of(pid: i32) -> Option<u64> {
    let mut total = 0u64;
    for e in std::fs::read_dir(format!("/proc/{pid}/task")).ok()? {
        let path = e.ok()?.path().join("schedstat");
        let text = std::fs::read_to_string(path).ok()?;
        total += text.split_ascii_whitespace().next()?.parse::<u64>().ok()?;
    }
    Some(total)
}

/// Every process in `/proc` now (those that vanish while it reads are
/// left out).
pub(crate) fn scan() -> Procs {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Procs::new();
    };
    dir.filter_map(|e| {
        let pid: i32 = e.ok()?.file_name().to_str()?.parse().ok()?;
        let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        let mut p = parse_stat(&text)?;
        if !p.kernel {
            p.run_ns = run_ns_of(pid);
        }
        Some((pid, p))
    })
    .collect()
}

/// Whether `pid` is `me` or a descendant of it in `procs`.
pub(crate) fn ours(procs: &Procs, me: i32, mut pid: i32) -> bool {
    // Bounded: a parent chain is short, and a pid reused mid-read must
    // not loop.
    for _ in 0..256 {
        if pid == me {
            return true;
        }
        match procs.get(&pid) {
            Some(p) if p.ppid > 0 && p.ppid != pid => pid = p.ppid,
            _ => return false,
        }
    }
    false
}

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

/// The run time, ns, the processes that are not `me`'s nor kernel threads
/// took between the scans `a` and `b`, from their threads' schedstat: each
/// one's growth (a process new in `b` from 0). A process or thread that
/// ended between the scans is left out (schedstat holds no reaped time),
/// so this errs low by their last moments, never high by a tick. None
/// where a process of `b` has no reading.
pub(crate) fn foreign_ns(a: &Procs, b: &Procs, me: i32) -> Option<u64> {
    let mut total = 0u64;
    for (&pid, p) in b {
        if p.kernel || ours(b, me, pid) {
            continue;
        }
        let now = p.run_ns?;
        let before = a
            .get(&pid)
            .filter(|q| q.start == p.start)
            .and_then(|q| q.run_ns)
            .unwrap_or(0);
        total += now.saturating_sub(before);
    }
    Some(total)
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
        if let Some(ns) = foreign_ns(&self.procs, &end, me) {
            return Some(ns as f64 / wall_ns);
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
