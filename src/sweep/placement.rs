//! Pinned ends on CPUs that other work keeps busy (issue 44).
//!
//! A sweep pins its two ends to CPUs 0 and 1 by default. When other work
//! keeps those CPUs busy, a pinned end waits there for it: on the busy
//! 2-vCPU VM beside `stress-ng --cpu 2` (load 9-11) a tcp 8 B sweep read
//! 0.41-0.59 ms pinned against 8-16 us with `--no-pin`. Spinning ends are
//! the other way round: unpinned they may share one CPU and spin against
//! each other, so shm 8 B read 0.03-21 ms with `--no-pin` against 0.4-350
//! us pinned (`bench/pinned_busy.sh`). So once the ends are up, and before
//! the first point, the CPUs' busy time is read from `/proc/stat` over
//! [`READING_SPAN`] (the ends are idle then: what it shows is other work),
//! and when an end's CPU was busy for at least [`BUSY_SHARE`] of it:
//!
//! * the ends **move** to the least busy CPUs when enough of them are free;
//! * else ends that **block** between messages (sockets that do not
//!   busy-poll, `--wait block`) are **unpinned**: woken, each takes
//!   whichever CPU frees first;
//! * else (spinning ends, or CPUs named with `--cpus`) they stay, and the
//!   result says why.
//!
//! The in-process baselines (`memcpy`, `cacheline`, `c2c`) are placed
//! the same way before they measure ([`for_baseline`]): their threads spin,
//! so they move when enough CPUs are free and otherwise stay, said.
//!
//! wulf's own loads (`--load`, the soakers of `--cost whole`) are a
//! condition the user asked for: their CPUs are left as they are.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::load::kernel::KernelBaseline;

/// A CPU that other work kept busy for at least this share of the
/// reading is busy: an end pinned there waits for that work.
pub const BUSY_SHARE: f64 = 0.5;
/// How long the CPUs' busy time is read before the points.
pub const READING_SPAN: Duration = Duration::from_millis(100);
/// A reading serves the sweeps that start within this long of it: `wulf
/// run`'s sweeps come one after the other, 2.3-2.6 s apart on the 2-vCPU
/// VM, so 2 s made each of its ~22 sweeps read again (about 2 s of a 50 s
/// run); 3 s lets one reading serve the next sweep, while a load that
/// starts later is still seen within two sweeps.
const READING_REUSE: Duration = Duration::from_secs(3);

/// Each CPU's busy share (CPU, 0 to 1) over a reading.
pub type Shares = Vec<(usize, f64)>;

/// The last reading and when it ended, reused by the sweeps that follow it
/// closely.
static LAST: Mutex<Option<(Instant, Shares)>> = Mutex::new(None);

/// Where the ends go.
#[derive(Debug, Clone, PartialEq)]
pub enum Decision {
    /// Where they are (their CPUs are not busy, or nothing can be done).
    Stay,
    /// To these CPUs (this end's, the peer's).
    Move(usize, Option<usize>),
    /// Unpinned.
    Unpin,
}

/// What to do with ends pinned to `ends` (this end's CPU, the peer's when
/// it runs here), given each CPU's busy share `busy` (CPU, share), whether
/// the ends block between messages and whether the user named the CPUs;
/// with the note for the result, if any.
pub fn decide(
    ends: (Option<usize>, Option<usize>),
    busy: &[(usize, f64)],
    blocking: bool,
    given: bool,
) -> (Decision, Option<String>) {
    let pinned: Vec<usize> = [ends.0, ends.1].into_iter().flatten().collect();
    let share = |c: usize| busy.iter().find(|(x, _)| *x == c).map_or(0.0, |(_, s)| *s);
    let hot: Vec<usize> = pinned
        .iter()
        .copied()
        .filter(|&c| share(c) >= BUSY_SHARE)
        .collect();
    if hot.is_empty() {
        return (Decision::Stay, None);
    }
    let named = hot
        .iter()
        .map(|&c| format!("CPU {c} {:.0}%", share(c) * 100.0))
        .collect::<Vec<_>>()
        .join(", ");
    let span_ms = READING_SPAN.as_millis();
    if given {
        return (
            Decision::Stay,
            Some(format!(
                "the ends are pinned as --cpus asks, but other work kept {named} busy over the \
                 {span_ms} ms before the points: the figures include waiting for that work \
                 (--no-pin lets the ends move)"
            )),
        );
    }
    let mut free: Vec<(usize, f64)> = busy
        .iter()
        .copied()
        .filter(|&(_, s)| s < BUSY_SHARE)
        .collect();
    free.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
    if free.len() >= pinned.len() {
        // A pinned CPU that is free keeps its end; the others take the
        // least busy of the rest.
        let mut spare = free.iter().map(|f| f.0).filter(|c| !pinned.contains(c));
        let mut to = |c: usize| {
            if hot.contains(&c) {
                spare.next()
            } else {
                Some(c)
            }
        };
        let a = ends.0.and_then(&mut to);
        let b = ends.1.and_then(&mut to);
        if let Some(a) = a {
            return (Decision::Move(a, b), None);
        }
    }
    if blocking {
        return (
            Decision::Unpin,
            Some(format!(
                "the ends were not pinned: other work kept {named} busy over the {span_ms} ms \
                 before the points and no other CPU was free; ends that block between messages \
                 would wait there for that work, unpinned each takes whichever CPU frees first \
                 (--cpus pins them anyway)"
            )),
        );
    }
    (
        Decision::Stay,
        Some(format!(
            "the ends stay pinned although other work kept {named} busy over the {span_ms} ms \
             before the points (no other CPU was free): the figures include waiting for that \
             work; spinning ends are kept apart, as unpinned they may share one CPU and spin \
             against each other (--no-pin lets them move)"
        )),
    )
}

/// Each CPU's busy share (CPU, 0 to 1) over the last [`READING_SPAN`],
/// read now or taken from a reading of the last [`READING_REUSE`]; None
/// where `/proc/stat` cannot be read.
pub fn busy_shares() -> Option<Shares> {
    let mut last = LAST.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((at, shares)) = last.as_ref() {
        if at.elapsed() < READING_REUSE {
            return Some(shares.clone());
        }
    }
    let b = KernelBaseline::measure(READING_SPAN, false).ok()?;
    let shares: Shares = b.cpus.iter().copied().zip(b.busy_share).collect();
    *last = Some((Instant::now(), shares.clone()));
    Some(shares)
}

/// Only the CPUs this process may run on, of `shares`.
pub fn allowed(shares: Shares) -> Shares {
    match nix::sched::sched_getaffinity(nix::unistd::Pid::from_raw(0)) {
        Ok(set) => shares
            .into_iter()
            .filter(|&(c, _)| set.is_set(c).unwrap_or(false))
            .collect(),
        Err(_) => shares,
    }
}

/// Pin every thread of process `root` and its descendants that is pinned
/// to `from` alone to `to` (None: to every CPU of `all`); how many moved.
pub fn repin_tree(root: i32, from: usize, to: Option<usize>, all: &nix::sched::CpuSet) -> usize {
    let procs = crate::sys::procs::scan();
    let mut target = nix::sched::CpuSet::new();
    match to {
        Some(c) if target.set(c).is_ok() => {}
        _ => target = *all,
    }
    let mut moved = 0;
    for &pid in procs.keys() {
        if !crate::sys::procs::ours(&procs, root, pid) {
            continue;
        }
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
            continue;
        };
        for tid in tasks.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok()) {
            let t = nix::unistd::Pid::from_raw(tid);
            let only_from = nix::sched::sched_getaffinity(t).is_ok_and(|s| {
                (0..nix::sched::CpuSet::count())
                    .all(|c| s.is_set(c).unwrap_or(false) == (c == from))
            });
            if only_from && nix::sched::sched_setaffinity(t, &target).is_ok() {
                moved += 1;
            }
        }
    }
    moved
}

/// Move or unpin the ends of `spec` once they are up, as [`decide`] says
/// (this thread and a peer this sweep started); the note for the result.
pub(super) fn settle(
    spec: &super::spec::SweepSpec,
    ends: &mut super::setup::Ends,
) -> Option<String> {
    // wulf's own loads are a condition the user asked for.
    if spec.loaded || spec.whole.is_some() {
        return None;
    }
    // A remote peer's CPUs are its machine's, not this one's.
    let peer_cpu = ends.local.as_ref().and(ends.session.cpu);
    let here = (ends.pinned.cpu, peer_cpu);
    if here == (None, None) {
        return None;
    }
    // A peer this sweep did not start may still run here on the CPU it was
    // given (an MPI job's rank 1): never a CPU to move to.
    let reserved = ends.local.is_none().then_some(spec.cpus.1).flatten();
    let busy: Vec<(usize, f64)> = allowed(busy_shares()?)
        .into_iter()
        .filter(|&(c, _)| Some(c) != reserved)
        .collect();
    let blocking = super::wake::blocks(&ends.conn.settings);
    let (decision, note) = decide(here, &busy, blocking, spec.cpus_given);
    let all = ends.pinned.previous().copied().unwrap_or_else(|| {
        let mut set = nix::sched::CpuSet::new();
        for &(c, _) in &busy {
            let _ = set.set(c);
        }
        set
    });
    let (mine, theirs) = match decision {
        Decision::Stay => return note,
        Decision::Move(a, b) => (Some(a), b),
        Decision::Unpin => (None, None),
    };
    ends.pinned.repin(mine);
    if let (Some(peer), Some(from)) = (&ends.local, peer_cpu) {
        if repin_tree(peer.pid(), from, theirs, &all) > 0 {
            ends.session.cpu = theirs;
        }
    }
    note
}

#[cfg(test)]
#[path = "placement_tests.rs"]
mod tests;

/// Where an in-process baseline of `spec` runs when its measuring thread
/// (`spec.cpus.0`) or its helper thread (`helper`, None when it has none)
/// sits on a CPU other work keeps busy: `spec` with the CPUs it moves to
/// (None: it stays), and the note for the result. Its threads spin while
/// they measure, so they move only when enough CPUs are free, as spinning
/// ends do; the helper waits on a channel between blocks, so the reading
/// (taken now) does not see it.
pub(super) fn for_baseline(
    spec: &super::spec::SweepSpec,
    helper: Option<usize>,
) -> (Option<super::spec::SweepSpec>, Option<String>) {
    let here = (spec.cpus.0, helper);
    if spec.loaded || spec.whole.is_some() || here == (None, None) {
        return (None, None);
    }
    let Some(shares) = busy_shares() else {
        return (None, None);
    };
    match decide(here, &allowed(shares), false, spec.cpus_given) {
        (Decision::Move(a, b), note) => {
            let mut moved = spec.clone();
            moved.cpus = (Some(a), b.or(spec.cpus.1));
            (Some(moved), note)
        }
        (_, note) => (None, note),
    }
}
