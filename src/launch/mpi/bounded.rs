//! `wulf matrix --launch mpi:NAME` bounded: the MPI's launcher runs the
//! whole matrix once per host, and rank 0 (which coordinates and saves the
//! result) tells the launching wulf through a file in the shared working
//! directory that it started and when it ended, with its exit code. An
//! MPI launcher waits for every rank, so ranks whose remote shell hangs
//! (ssh children left as zombies) would keep it, and the launching wulf,
//! waiting forever after rank 0 saved a partial matrix (issue 35 item 4):
//! once rank 0 ended, or when it never starts, the launcher's process
//! group is ended (SIGTERM, then SIGKILL after a grace) and a wulf error
//! names it.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use crate::error::WulfError;
use crate::exec::process::{end_process_group, exit_code, KILL_GRACE};

/// The environment variable naming rank 0's report file.
pub const DONE_ENV: &str = "WULF_LAUNCH_REPORT";

/// The launch's allowance beyond `--timeout`, given twice at most: once
/// for rank 0 to start (the launcher's connections to the nodes are
/// bounded by the timeout already, as the remote shell's ConnectTimeout;
/// this covers starting the launcher, its daemons and wulf itself), and
/// once for the launcher to exit by itself after rank 0 ended (the other
/// ranks see their coordinator gone and exit; rank 0 has saved the result
/// by then, so ending the launcher loses nothing). They were 30 s and
/// 10 s: a launch that never started took 35 s for a 5 s `--timeout`
/// (issue 49 item 16).
pub const ALLOWANCE: Duration = Duration::from_secs(5);

/// How long the launcher has to exit by itself after rank 0 ended.
const AFTER_RANK0: Duration = ALLOWANCE;

/// Beyond `--timeout`, how long rank 0 may take to start.
const START_ALLOWANCE: Duration = ALLOWANCE;

/// A fresh report path in `dir` (the working directory, shared by the
/// nodes as the rendezvous file is).
pub fn report_path(dir: &Path) -> PathBuf {
    dir.join(format!(
        ".wulf-launch-{}-{:x}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0)
    ))
}

/// Rank 0's side: "started" when it begins, then its exit code when its
/// outcome is known. Nothing when [`DONE_ENV`] is not set or the file
/// cannot be written (the launcher is then waited for as before).
pub fn report(what: &str) {
    if let Some(path) = std::env::var_os(DONE_ENV) {
        let _ = std::fs::write(path, what);
    }
}

/// Rank 0's exit code from `outcome`, reported.
pub fn report_outcome(outcome: &Result<()>) {
    let code = match outcome {
        Ok(()) => 0,
        Err(e) => crate::error::exit_code_of(e),
    };
    report(&format!("exit {code}"));
}

/// Run `cmd` (the MPI launcher named `launcher`, whose program line sets
/// [`DONE_ENV`] to `report_file`) to its end, bounded: killed when rank 0
/// has not started within `join` + [`START_ALLOWANCE`], or when it ended and the
/// launcher has not within [`AFTER_RANK0`]. Interrupts are forwarded as by
/// `run_forwarding_interrupt`. Rank 0's exit code when it reported one;
/// otherwise the launcher's failure as a wulf error naming it.
pub fn run(launcher: &str, mut cmd: Command, report_file: &Path, join: Duration) -> Result<()> {
    use std::os::unix::process::CommandExt;
    use std::sync::atomic::Ordering;
    let mut child = cmd
        .process_group(0)
        .spawn()
        .with_context(|| format!("cannot start {launcher}"))?;
    let _owned = crate::exec::owned::group(child.id());
    let _cleanup = Remove(report_file.to_path_buf());
    let started_by = Instant::now() + join + START_ALLOWANCE;
    let mut rank0_ended: Option<Instant> = None;
    let mut interrupted_at: Option<Instant> = None;
    let read = || std::fs::read_to_string(report_file).unwrap_or_default();
    let killed = loop {
        if let Some(status) = child.try_wait()? {
            break Some(status);
        }
        let said = read();
        if rank0_ended.is_none() && said.starts_with("exit") {
            rank0_ended = Some(Instant::now());
        }
        if interrupted_at.is_none() && crate::exec::INTERRUPTED.load(Ordering::Relaxed) {
            let group = nix::unistd::Pid::from_raw(child.id() as i32);
            let _ = nix::sys::signal::kill(group, nix::sys::signal::Signal::SIGINT);
            interrupted_at = Some(Instant::now());
        }
        let overdue = rank0_ended.is_some_and(|t| t.elapsed() > AFTER_RANK0)
            || (said.is_empty() && Instant::now() > started_by)
            || interrupted_at.is_some_and(|t| t.elapsed() > AFTER_RANK0);
        if overdue {
            end_process_group(&mut child, nix::sys::signal::Signal::SIGTERM, KILL_GRACE);
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let said = read();
    let rank0 = said
        .strip_prefix("exit ")
        .and_then(|c| c.trim().parse::<i32>().ok());
    match (killed, rank0) {
        (Some(status), Some(code)) if status.success() || code != 0 => relay(code),
        (Some(status), _) => Err(crate::error::peer(format!(
            "--launch {launcher}: the launcher exited with {} before rank 0 saved a result (its messages are above)",
            exit_code(status)
        ))),
        (None, Some(code)) => {
            eprintln!(
                "wulf: warning: --launch {launcher}: the launcher did not exit within {}s of rank 0 (ranks whose nodes never joined); ended it",
                AFTER_RANK0.as_secs()
            );
            relay(code)
        }
        (None, None) if said.is_empty() => Err(crate::error::peer(format!(
            "--launch {launcher}: rank 0 did not start within {}s; ended the launcher (its messages are above)",
            (join + START_ALLOWANCE).as_secs()
        ))),
        (None, None) => Err(crate::error::peer(format!(
            "--launch {launcher}: rank 0 started but the launcher was ended (interrupted) before it saved a result"
        ))),
    }
}

/// Exit with rank 0's code, without a message of ours (rank 0 spoke).
fn relay(code: i32) -> Result<()> {
    if code == 0 {
        Ok(())
    } else {
        Err(WulfError::Relayed(code).into())
    }
}

/// Removes the report file when dropped.
struct Remove(PathBuf);

impl Drop for Remove {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}
