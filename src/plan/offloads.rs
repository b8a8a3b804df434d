//! `wulf tune tcp --offloads`: the hands on the interface. Settings are
//! changed with the `ethtool` program and read back with the ethtool ioctl
//! (`sys::describe_interface`); an [`OffloadGuard`] puts back what was
//! there when it was taken, explicitly at the end of the session and again
//! on drop, so an error or Ctrl-C (the sweep stops between trials and the
//! command unwinds normally) restores the interface too.
//!
//! Why the `ethtool` program: the netlink crates of rust-netlink (`ethtool`)
//! only read features and coalescing, and the legacy set ioctls answer a
//! refused change with a bare errno, where `ethtool` reports the driver's
//! own words ("Could not change any device features", netlink's extended
//! error), which is what a user needs to see. It is also what an
//! administrator types, so each change can be repeated by hand.
//!
//! A session that is killed outright cannot restore anything: the settings
//! before the first change are also on disk ([`saved`]) until restored,
//! and the next `--offloads` run restores them first ([`restore_leftover`]).
//! Changing them needs CAP_NET_ADMIN: without it the session is refused
//! up front ([`check_privileges`]) instead of reporting every setting as
//! not changeable.

mod saved;

use std::process::Command;
use std::time::Duration;

use anyhow::{bail, Result};

use crate::sys::describe_interface;
use crate::transport::mpi::discover::run_with_timeout;
use crate::tune::offload::{applied, restore_args, set_args, OffloadChange, OffloadState};

/// Bound of one `ethtool` run (a driver can take a while to reconfigure).
const ETHTOOL_TIMEOUT: Duration = Duration::from_secs(10);

/// The interface's state as the ethtool ioctl reads it.
pub fn read_state(interface: &str) -> OffloadState {
    let i = describe_interface(interface);
    OffloadState {
        features: i.offloads,
        coalesce: i.coalesce,
    }
}

/// Run `ethtool args...`; the error is what it printed (the driver's
/// answer) or why it could not run.
fn ethtool(args: &[String]) -> Result<String, String> {
    let out = run_with_timeout(Command::new("ethtool").args(args), ETHTOOL_TIMEOUT)?;
    let text = |b: &[u8]| String::from_utf8_lossy(b).trim().to_string();
    if out.status.success() {
        return Ok(text(&out.stdout));
    }
    let mut why: Vec<String> = [text(&out.stderr), text(&out.stdout)]
        .into_iter()
        .filter(|t| !t.is_empty())
        .collect();
    if why.is_empty() {
        why.push(format!("ethtool exited with {}", out.status));
    }
    Err(why.join("; ").replace('\n', "; "))
}

/// `ethtool --version`, to record which tool changed the settings; an
/// error when it is not installed.
pub fn ethtool_version() -> Result<String> {
    match ethtool(&["--version".to_string()]) {
        Ok(v) => Ok(v),
        Err(e) => bail!(
            "--offloads changes settings with the ethtool program, which cannot run here ({e}); \
             install it (apt-get install ethtool)"
        ),
    }
}

/// What the driver answered when asked for its coalescing, when it does
/// not expose it (`None`: it does).
pub fn coalesce_answer(interface: &str, state: &OffloadState) -> Option<String> {
    if state.coalesce.is_some() {
        return None;
    }
    Some(match ethtool(&["-c".to_string(), interface.to_string()]) {
        Ok(_) => "ethtool -c answered, but the ioctl did not".to_string(),
        Err(e) => format!("ethtool -c: {e}"),
    })
}

/// Capability bit of CAP_NET_ADMIN (linux/capability.h).
const CAP_NET_ADMIN: u32 = 12;

/// A usage error (exit 2) unless this process may change an interface's
/// settings (CAP_NET_ADMIN, which root has): otherwise every change would
/// be refused one by one and the session would measure nothing it asked.
pub fn check_privileges() -> Result<()> {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let effective = status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .and_then(|hex| u64::from_str_radix(hex.trim(), 16).ok())
        .unwrap_or(0);
    if effective & (1 << CAP_NET_ADMIN) == 0 {
        return Err(crate::error::usage(
            "--offloads changes the interface's settings, which needs CAP_NET_ADMIN: \
             run wulf tune as root (sudo), or leave --offloads out"
                .to_string(),
        ));
    }
    Ok(())
}

/// Put back what a killed session left changed on `interface` (its saved
/// state), before a new session reads the interface; a note saying so.
/// An error when another session is changing the interface now, or when
/// the old settings cannot be put back.
pub fn restore_leftover(interface: &str) -> Result<Option<String>> {
    let Some(old) = saved::load(interface)? else {
        return Ok(None);
    };
    if saved::alive(old.pid) {
        return Err(crate::error::usage(format!(
            "another `wulf tune tcp --offloads` (pid {}) is changing the offloads of {interface}",
            old.pid
        )));
    }
    let mut guard = OffloadGuard {
        interface: interface.to_string(),
        before: old.before,
        restored: false,
    };
    guard
        .restore()
        .map_err(|e| anyhow::anyhow!("cannot restore the offloads a killed session (pid {}) left changed on {interface}: {e}", old.pid))?;
    Ok(Some(format!(
        "restored the offloads of {interface} that an ended session (pid {}, {}) had left changed",
        old.pid, old.saved_at
    )))
}

/// Holds an interface's settings as they were, to put them back.
pub struct OffloadGuard {
    interface: String,
    before: OffloadState,
    restored: bool,
}

impl OffloadGuard {
    /// Remember `interface`'s state now, in memory and on disk (for the
    /// next session, should this one be killed).
    pub fn take(interface: &str) -> Result<OffloadGuard> {
        let before = read_state(interface);
        saved::save(interface, &before)?;
        Ok(OffloadGuard {
            interface: interface.to_string(),
            before,
            restored: false,
        })
    }

    /// The state when the guard was taken.
    pub fn before(&self) -> &OffloadState {
        &self.before
    }

    /// Make `change`; the state read back when the driver did it, else
    /// the driver's answer. A partial change is undone at once, so the
    /// next configuration starts from the state at start.
    pub fn apply(&mut self, change: &OffloadChange) -> Result<OffloadState, String> {
        self.restored = false;
        let answer = ethtool(&set_args(change));
        let now = read_state(&self.interface);
        let outcome = answer.and_then(|_| applied(change, &now));
        if outcome.is_err() {
            let _ = self.restore();
        }
        outcome.map(|()| now)
    }

    /// Put every setting back; the state read back, or what went wrong.
    pub fn restore(&mut self) -> Result<OffloadState, String> {
        let now = read_state(&self.interface);
        for args in restore_args(&self.interface, &self.before, &now) {
            ethtool(&args)?;
        }
        let after = read_state(&self.interface);
        if after != self.before {
            return Err(format!(
                "{} reads back differently after restoring ({:?}, was {:?})",
                self.interface, after, self.before
            ));
        }
        self.restored = true;
        saved::forget(&self.interface);
        Ok(after)
    }
}

impl Drop for OffloadGuard {
    fn drop(&mut self) {
        if !self.restored {
            if let Err(e) = self.restore() {
                eprintln!(
                    "wulf: warning: could not restore the offloads of {}: {e}",
                    self.interface
                );
            }
        }
    }
}
