//! What a command started and must end with it: the one place that owns
//! the command's child processes, labs and shared-memory regions.
//!
//! Every process wulf spawns ([`super::process`]) runs in a process group
//! of its own, registered here the moment it exists ([`group`]); a lab
//! made for one command registers its removal ([`cleanup`]) before its
//! first namespace exists. Each registration is an [`Owned`] guard, undone
//! when the code that made the thing ends it in order and drops the guard.
//!
//! A signal (SIGINT, SIGTERM, SIGHUP) goes through [`signalled`]: the first
//! sets [`super::INTERRUPTED`], so the command stops between trials, saves
//! what it measured and ends what it started through its guards, as it
//! always did. What cannot be left to that path, [`end_everything`] does:
//! every registered group is sent SIGTERM and, after a short grace,
//! SIGKILL (processes in a lab's namespaces too: they share our pid
//! namespace), every registered clean-up runs (labs removed), and this
//! process's shared-memory regions are unlinked. It runs
//!
//! * when a second signal comes (not the same one delivered twice:
//!   `timeout(1)` sends its signal to the process and to its group);
//! * from a watchdog thread [`WATCHDOG_AFTER`] after the first signal, for
//!   a command stuck in a blocking call, which then exits with 130;
//! * before a command exits after an interrupt (`main`), for anything the
//!   guards missed;
//! * at once, for commands that exit on the first signal (servers, agents).
//!
//! A group registered after [`end_everything`] began is killed at once:
//! nothing started during the shutdown outlives it.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

/// How long after the first signal the watchdog ends everything and exits,
/// whatever the command is doing: the graceful stop (the trial under way,
/// saving, ending children through their guards) has this long, and the
/// forced end fits in the 5 s a signal may take with [`FORCED_GRACE`].
pub const WATCHDOG_AFTER: Duration = Duration::from_millis(3500);

/// How long registered groups have between SIGTERM and SIGKILL when
/// everything is ended at once.
pub const FORCED_GRACE: Duration = Duration::from_millis(800);

/// A second signal within this long of the first is the same signal
/// delivered twice (`timeout` signals the process and then its group; a
/// batch system may signal both the job step and the process), not a
/// person asking again: it must not cut the graceful stop short.
pub const REPEAT_WINDOW: Duration = Duration::from_millis(500);

/// The exit code of a command ended by a signal (as by SIGINT).
pub const INTERRUPTED_EXIT: i32 = 130;

/// What is registered now.
struct Registry {
    next: u64,
    groups: Vec<(u64, i32)>,
    cleanups: Vec<(u64, Arc<dyn Fn() + Send + Sync>)>,
    /// [`end_everything`] has begun: new groups are killed on arrival.
    ending: bool,
}

static REGISTRY: Mutex<Registry> = Mutex::new(Registry {
    next: 0,
    groups: Vec::new(),
    cleanups: Vec::new(),
    ending: false,
});

/// The registry, also after a panic elsewhere held its lock: it holds
/// plain data that a panic cannot leave half-written.
fn registry() -> std::sync::MutexGuard<'static, Registry> {
    REGISTRY.lock().unwrap_or_else(|e| e.into_inner())
}

/// A registration, undone when dropped (the thing was ended in order).
#[must_use = "dropping it unregisters at once"]
#[derive(Debug)]
pub struct Owned(u64);

impl Drop for Owned {
    fn drop(&mut self) {
        let mut r = registry();
        r.groups.retain(|(id, _)| *id != self.0);
        r.cleanups.retain(|(id, _)| *id != self.0);
    }
}

/// Register the process group `pgid` (a child that leads its own group)
/// as this command's. If everything is being ended already, the group is
/// killed at once.
pub fn group(pgid: u32) -> Owned {
    let mut r = registry();
    let id = r.next;
    r.next += 1;
    let pgid = pgid as i32;
    if r.ending {
        let _ = kill(Pid::from_raw(-pgid), Signal::SIGKILL);
    }
    r.groups.push((id, pgid));
    Owned(id)
}

/// Register `f` to run when everything is ended at once (a lab's
/// removal). It must be safe to run while the code that registered it is
/// still running, and more than once.
pub fn cleanup(f: impl Fn() + Send + Sync + 'static) -> Owned {
    let mut r = registry();
    let id = r.next;
    r.next += 1;
    r.cleanups.push((id, Arc::new(f)));
    Owned(id)
}

/// The registered groups, for tests and `wulf` itself.
pub fn groups() -> Vec<i32> {
    registry().groups.iter().map(|(_, g)| *g).collect()
}

/// End everything this command started: SIGTERM every registered group
/// and every live descendant of this process, SIGKILL what is left after
/// `grace`, run the registered clean-ups, unlink this process's
/// shared-memory regions. Bounded by `grace` plus the clean-ups (a lab's
/// removal: a few `ip` commands).
pub fn end_everything(grace: Duration) {
    let (groups, cleanups) = {
        let mut r = registry();
        r.ending = true;
        let groups: Vec<i32> = r.groups.iter().map(|(_, g)| *g).collect();
        let cleanups: Vec<_> = r.cleanups.iter().map(|(_, f)| Arc::clone(f)).collect();
        (groups, cleanups)
    };
    // Descendants that left their group (MPICH hydra's remote shells) and
    // short tools never registered (`ip`, `tc`) are found in the tree.
    let strays = super::process::descendants(std::process::id() as i32);
    signal_all(&groups, &strays, Signal::SIGTERM);
    let deadline = Instant::now() + grace;
    while Instant::now() < deadline && any_alive(&groups, &strays) {
        std::thread::sleep(Duration::from_millis(20));
    }
    signal_all(&groups, &strays, Signal::SIGKILL);
    for f in &cleanups {
        f();
    }
    remove_own_regions();
}

fn signal_all(groups: &[i32], pids: &[i32], signal: Signal) {
    for &g in groups {
        let _ = kill(Pid::from_raw(-g), signal);
    }
    for &p in pids {
        let _ = kill(Pid::from_raw(p), signal);
    }
}

/// Whether any group has a member, or any pid a process (zombies count:
/// a probe cannot tell them apart, and they run nothing, so at worst the
/// wait lasts its grace).
fn any_alive(groups: &[i32], pids: &[i32]) -> bool {
    groups
        .iter()
        .any(|&g| kill(Pid::from_raw(-g), None).is_ok() && !only_zombies(g))
        || pids.iter().any(|&p| kill(Pid::from_raw(p), None).is_ok())
}

/// Whether every member of group `pgid` is a zombie (from /proc).
fn only_zombies(pgid: i32) -> bool {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return false;
    };
    !dir.flatten().take(100_000).any(|e| {
        let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else {
            return false;
        };
        // pid (comm) state ppid pgrp ...: comm may hold spaces.
        let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
        let f: Vec<&str> = rest.split_whitespace().take(3).collect();
        f.len() == 3 && f[0] != "Z" && f[2].parse() == Ok(pgid)
    })
}

/// Shared-memory regions are named `/dev/shm/wulf-PID-TAG` by the process
/// that made them (`transport::shm_region`): this process's, and those of
/// processes that no longer exist (children just killed), are unlinked.
fn remove_own_regions() {
    let Ok(dir) = std::fs::read_dir("/dev/shm") else {
        return;
    };
    let me = std::process::id() as i32;
    for e in dir.flatten().take(100_000) {
        let name = e.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix("wulf-"))
            .and_then(|rest| rest.split('-').next())
            .and_then(|p| p.parse::<i32>().ok())
        else {
            continue;
        };
        let dead = matches!(
            kill(Pid::from_raw(pid), None),
            Err(nix::errno::Errno::ESRCH)
        );
        if pid == me || dead {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

/// When the first signal came.
static FIRST_SIGNAL: OnceLock<Instant> = OnceLock::new();

/// What a signal (SIGINT, SIGTERM, SIGHUP) does; called from the signal
/// handling thread (not a signal handler: it may lock and spawn).
/// `exit_at_once`: the command ends on the first signal (a server, an
/// agent). See the module docs.
pub fn signalled(exit_at_once: bool) {
    if exit_at_once {
        end_everything(FORCED_GRACE);
        std::process::exit(INTERRUPTED_EXIT);
    }
    let now = Instant::now();
    if FIRST_SIGNAL.set(now).is_ok() {
        super::INTERRUPTED.store(true, Ordering::Relaxed);
        start_watchdog();
    } else if FIRST_SIGNAL
        .get()
        .is_some_and(|first| now.duration_since(*first) >= REPEAT_WINDOW)
    {
        end_everything(FORCED_GRACE);
        std::process::exit(INTERRUPTED_EXIT);
    }
}

/// After [`WATCHDOG_AFTER`], end everything and exit, unless the command
/// has ended by then (its exit ends this thread).
fn start_watchdog() {
    let started = std::thread::Builder::new()
        .name("wulf-watchdog".into())
        .spawn(|| {
            std::thread::sleep(WATCHDOG_AFTER);
            eprintln!(
                "wulf: still running {} s after the signal: ending what it started",
                WATCHDOG_AFTER.as_secs_f64()
            );
            end_everything(FORCED_GRACE);
            std::process::exit(INTERRUPTED_EXIT);
        });
    if started.is_err() {
        // No thread to wait with: end everything now rather than risk a
        // command stuck with its children running.
        end_everything(FORCED_GRACE);
        std::process::exit(INTERRUPTED_EXIT);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::CommandExt;

    #[test]
    fn a_registration_is_undone_when_dropped() {
        let a = group(4_000_000);
        let b = cleanup(|| {});
        assert!(groups().contains(&4_000_000));
        drop(a);
        assert!(!groups().contains(&4_000_000));
        let id = b.0;
        drop(b);
        assert!(registry().cleanups.iter().all(|(i, _)| *i != id));
    }

    #[test]
    fn regions_of_the_dead_are_named_by_their_pid() {
        // A region of a pid that cannot exist is removed; another's kept.
        let dead = "/dev/shm/wulf-2147483000-testtag";
        let other = "/dev/shm/notwulf-1-x";
        if std::fs::write(dead, b"x").is_err() {
            return; // no /dev/shm here
        }
        std::fs::write(other, b"x").unwrap();
        remove_own_regions();
        assert!(!std::path::Path::new(dead).exists());
        assert!(std::path::Path::new(other).exists());
        let _ = std::fs::remove_file(other);
    }

    #[test]
    fn groups_that_ignore_sigterm_are_killed() {
        use std::io::BufRead;
        // `ready` once the trap is set and the sleep (which inherits the
        // ignored SIGTERM) started.
        let mut child = std::process::Command::new("sh")
            .args(["-c", "trap '' TERM; sleep 60 & echo ready; wait"])
            .stdout(std::process::Stdio::piped())
            .process_group(0)
            .spawn()
            .unwrap();
        let mut line = String::new();
        let out = child.stdout.take().unwrap();
        std::io::BufReader::new(out).read_line(&mut line).unwrap();
        assert_eq!(line.trim(), "ready");
        let pgid = child.id() as i32;
        // Only the group is ended here, not the rest of this test binary's
        // children: the other tests' processes are not this one's.
        let t0 = Instant::now();
        signal_all(&[pgid], &[], Signal::SIGTERM);
        std::thread::sleep(Duration::from_millis(200));
        assert!(any_alive(&[pgid], &[]), "SIGTERM is ignored");
        signal_all(&[pgid], &[], Signal::SIGKILL);
        let _ = child.wait();
        while any_alive(&[pgid], &[]) {
            assert!(t0.elapsed() < Duration::from_secs(5), "group outlived");
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}
