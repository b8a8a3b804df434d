//! The one way wulf spawns a process, and the processes a launcher started.
//!
//! Every process wulf starts (a local peer, an agent, a remote shell, an
//! MPI launcher, a NAS rank) runs in a process group of its own: a
//! terminal's Ctrl-C reaches only the wulf that started it, which ends the
//! run in order, and one signal to the group ends a remote shell's whole
//! chain down to the process it started. Where it must not outlive its
//! parent even if that parent is killed, it is bound to die with it
//! (`PR_SET_PDEATHSIG`). Its stderr is either the terminal's or kept (the
//! last few KiB) so that the error naming a failed launch can quote it.
//! [`run_forwarding_interrupt`] runs a command in the foreground the same
//! way (a lab's node1, a study's sweeps, an MPI launcher running `wulf
//! matrix` once per host). The one exception is the remote end of a pair
//! sweep ([`crate::cluster::pair`]), whose stdin stays open as its
//! lifeline.

use std::io::{Read, Write};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

/// Most bytes kept of what one process printed on stderr.
const STDERR_KEEP_BYTES: usize = 4096;

/// How long a process group has between SIGTERM and SIGKILL when wulf
/// ends it: enough for an agent or a launcher to close its connections and
/// save what it has, short enough that an interrupted run ends promptly.
pub const KILL_GRACE: Duration = Duration::from_secs(2);

/// End `child`'s process group (the child leads it): `signal` to the
/// group, then, if the child or any other member is still alive after
/// `grace`, SIGKILL to the group; the child is reaped. Bounded by `grace`
/// plus the reaping of a SIGKILLed child.
pub fn end_process_group(child: &mut Child, signal: nix::sys::signal::Signal, grace: Duration) {
    use nix::sys::signal::{kill, Signal};
    let group = nix::unistd::Pid::from_raw(-(child.id() as i32));
    let exited = matches!(child.try_wait(), Ok(Some(_)));
    // Descendants that left the group (MPICH hydra starts each remote
    // shell in a group of its own) are found while the tree still holds
    // them, and signalled one by one.
    let strays = if exited {
        Vec::new()
    } else {
        descendants(child.id() as i32)
    };
    for &pid in &strays {
        let _ = kill(nix::unistd::Pid::from_raw(pid), signal);
    }
    // A group outlives its leader while any member lives (a remote
    // shell's child): signal it even when the leader is gone.
    if kill(group, signal).is_err() && exited {
        return;
    }
    let deadline = Instant::now() + grace;
    let mut reaped = exited;
    while Instant::now() < deadline {
        reaped = reaped || matches!(child.try_wait(), Ok(Some(_)));
        // Signal 0 probes: ESRCH once no member of the group is left.
        if reaped && kill(group, None).is_err() {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let _ = kill(group, Signal::SIGKILL);
    for &pid in &strays {
        let _ = kill(nix::unistd::Pid::from_raw(pid), Signal::SIGKILL);
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// Every live descendant of `pid` (children, theirs, ...), from /proc;
/// at most a few thousand, read once. A pid reused between this read and
/// the signal is possible only for a process that exited in between.
pub(crate) fn descendants(pid: i32) -> Vec<i32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let parent_of: Vec<(i32, i32)> = dir
        .flatten()
        .take(100_000)
        .filter_map(|e| {
            let me: i32 = e.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(e.path().join("stat")).ok()?;
            // pid (comm) state ppid ...: comm may hold spaces.
            let rest = stat.rsplit_once(')')?.1;
            let mut f = rest.split_whitespace();
            let state = f.next()?;
            let ppid = f.next()?.parse().ok()?;
            (state != "Z").then_some((me, ppid))
        })
        .collect();
    let mut found = vec![pid];
    let mut i = 0;
    while i < found.len() {
        let p = found[i];
        found.extend(parent_of.iter().filter(|(_, pp)| *pp == p).map(|(c, _)| *c));
        i += 1;
    }
    found.remove(0);
    found
}

/// Have the process `cmd` starts get `signal` when the thread that
/// started it ends (in wulf, the process: commands spawn from their main
/// thread or a thread that outlives the child): a second line of defence
/// after [`super::owned`], for a wulf killed with SIGKILL. Its own
/// children (an MPI launcher's daemons and ranks) are not covered.
pub fn die_with_parent(cmd: &mut Command, signal: libc::c_int) {
    // SAFETY: prctl is async-signal-safe; nothing else runs in pre_exec.
    unsafe {
        cmd.pre_exec(move || {
            libc::prctl(libc::PR_SET_PDEATHSIG, signal);
            Ok(())
        });
    }
}

/// How a process is started (see the module docs).
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// A line written to its stdin, then closed (a secret through a remote
    /// shell); None: stdin is /dev/null.
    pub stdin_line: Option<String>,
    /// Its stdout is a pipe the caller reads (a local peer announcing its
    /// port); otherwise /dev/null.
    pub stdout_piped: bool,
    /// Its stderr is kept for [`Process::last_said`]; otherwise it is this
    /// process's own.
    pub keep_stderr: bool,
    /// The signal it gets when its parent dies, if any.
    pub parent_death_signal: Option<libc::c_int>,
    /// Files its stdout and stderr go to (an MPI launcher's, read back for
    /// error messages and by its ranks' relay); overrides the two above.
    pub output_files: Option<(PathBuf, PathBuf)>,
}

/// A started process.
pub struct Process {
    /// The host it is for; None: for every host (srun, an MPI launcher),
    /// or this machine.
    pub host: Option<String>,
    /// The process.
    pub child: Child,
    stderr: Arc<Mutex<Vec<u8>>>,
    /// Its group, registered as this command's until it is ended here.
    _owned: super::owned::Owned,
}

impl Process {
    /// Start `cmd` for `host` as `options` say.
    pub fn spawn(mut cmd: Command, host: Option<String>, options: &Options) -> Result<Process> {
        cmd.process_group(0)
            .stdout(if options.stdout_piped {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stderr(if options.keep_stderr {
                Stdio::piped()
            } else {
                Stdio::inherit()
            })
            .stdin(if options.stdin_line.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            });
        if let Some((out, err)) = &options.output_files {
            let create = |p: &PathBuf| {
                std::fs::File::create(p).with_context(|| format!("cannot create {}", p.display()))
            };
            cmd.stdout(create(out)?).stderr(create(err)?);
        }
        if let Some(signal) = options.parent_death_signal {
            die_with_parent(&mut cmd, signal);
        }
        let program = cmd.get_program().to_string_lossy().into_owned();
        let mut child = cmd
            .spawn()
            .with_context(|| format!("cannot start {program}"))?;
        // Registered before anything else can happen to it: a signal from
        // here on finds its group (see `super::owned`).
        let owned = super::owned::group(child.id());
        if let (Some(line), Some(mut stdin)) = (&options.stdin_line, child.stdin.take()) {
            // A dead remote shell shows up as a missing node, not here.
            let _ = writeln!(stdin, "{line}");
        }
        let stderr = Arc::new(Mutex::new(Vec::new()));
        if let Some(mut pipe) = child.stderr.take() {
            let keep = Arc::clone(&stderr);
            std::thread::spawn(move || {
                let mut buf = [0u8; 1024];
                while let Ok(n) = pipe.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    let mut k = keep.lock().unwrap_or_else(|e| e.into_inner());
                    k.extend_from_slice(&buf[..n]);
                    if k.len() > STDERR_KEEP_BYTES {
                        let cut = k.len() - STDERR_KEEP_BYTES;
                        k.drain(..cut);
                    }
                }
            });
        }
        Ok(Process {
            host,
            child,
            stderr,
            _owned: owned,
        })
    }

    /// The last line it printed on stderr, if kept ("" if none).
    pub fn last_said(&self) -> String {
        String::from_utf8_lossy(&self.stderr.lock().unwrap_or_else(|e| e.into_inner()))
            .trim()
            .lines()
            .rfind(|l| !l.trim().is_empty())
            .unwrap_or("")
            .to_string()
    }

    /// Whether it has exited (and been reaped).
    pub fn has_exited(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(Some(_)))
    }

    /// End its whole process group with `signal` (a process started
    /// through a remote shell is a grandchild; a group id is not reused
    /// while any member lives), SIGKILL the group after [`KILL_GRACE`] if
    /// any member is still there (an ssh that ignores SIGTERM, an MPI
    /// launcher waiting on its zombie children), and reap it: never
    /// blocks longer than that grace.
    pub fn end_group(&mut self, signal: nix::sys::signal::Signal) {
        end_process_group(&mut self.child, signal, KILL_GRACE);
    }

    /// Wait up to `grace` for it to exit by itself, then end its group.
    pub fn finish(&mut self, grace: Duration) {
        let deadline = Instant::now() + grace;
        while Instant::now() < deadline {
            if self.has_exited() {
                return;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        self.end_group(nix::sys::signal::Signal::SIGTERM);
    }
}

/// The processes a launcher started (one per host, or one for all), ended
/// when dropped: agents exit by themselves when the coordinator closes
/// their connections; whatever is left after a grace period is killed.
pub struct Agents {
    procs: Vec<Process>,
    /// Files the processes need while they run (an MPI job's directory),
    /// removed after they end.
    _files: Option<tempfile::TempDir>,
}

impl Agents {
    /// No processes (the launcher that started wulf started the agents).
    pub fn none() -> Agents {
        Agents::of(Vec::new())
    }

    /// The agents `procs`, one per host.
    pub fn of(procs: Vec<Process>) -> Agents {
        Agents {
            procs,
            _files: None,
        }
    }

    /// One process that starts the agents of every host (an MPI launcher),
    /// with the directory of files it needs until it ends.
    pub fn one_for_all(cmd: Command, files: tempfile::TempDir) -> Result<Agents> {
        Ok(Agents {
            procs: vec![Process::spawn(cmd, None, &agent_options(None))?],
            _files: Some(files),
        })
    }

    /// For a host that never joined: what its launch printed, or that it
    /// is still running.
    pub fn why_missing(&mut self, host: &str) -> String {
        for p in &mut self.procs {
            if p.host.as_deref().is_some_and(|h| h != host) {
                continue;
            }
            let said = p.last_said();
            return match p.child.try_wait() {
                Ok(Some(status)) => format!(
                    "its launch exited with {status}{}",
                    if said.is_empty() {
                        String::new()
                    } else {
                        format!(": {said}")
                    }
                ),
                _ if !said.is_empty() => format!("its launch said: {said}"),
                _ => "its agent did not connect back".into(),
            };
        }
        "no agent was started for it".into()
    }

    /// Whether every launched process has exited (none can join any more).
    pub fn all_exited(&mut self) -> bool {
        self.procs.iter_mut().all(Process::has_exited)
    }

    /// Wait up to `grace` for every process to exit, then kill the rest.
    pub fn finish(mut self, grace: Duration) {
        self.end(grace);
    }

    fn end(&mut self, grace: Duration) {
        let deadline = Instant::now() + grace;
        while Instant::now() < deadline && !self.all_exited() {
            std::thread::sleep(Duration::from_millis(20));
        }
        // SIGTERM every group at once, then SIGKILL what is left after
        // one shared grace: N stuck launches take one grace, not N.
        for p in &mut self.procs {
            let group = nix::unistd::Pid::from_raw(-(p.child.id() as i32));
            let _ = nix::sys::signal::kill(group, nix::sys::signal::Signal::SIGTERM);
        }
        let deadline = Instant::now() + KILL_GRACE;
        while Instant::now() < deadline && !self.all_exited() {
            std::thread::sleep(Duration::from_millis(20));
        }
        for p in &mut self.procs {
            end_process_group(
                &mut p.child,
                nix::sys::signal::Signal::SIGKILL,
                Duration::ZERO,
            );
        }
        self.procs.clear();
    }
}

impl Drop for Agents {
    fn drop(&mut self) {
        self.end(Duration::from_secs(3));
    }
}

/// How an agent (or the process that starts agents) is started: stderr
/// kept for [`Agents::why_missing`], `stdin_line` on its stdin.
pub fn agent_options(stdin_line: Option<&str>) -> Options {
    Options {
        stdin_line: stdin_line.map(str::to_string),
        stdout_piped: false,
        keep_stderr: true,
        parent_death_signal: None,
        output_files: None,
    }
}

/// Run `cmd` to its end in a process group of its own, handing it one
/// SIGINT when this process is interrupted. A terminal's Ctrl-C reaches only
/// this process, so the child gets exactly one interrupt (its first stops
/// it gracefully and saves what it measured; a second would end it at once)
/// and the same happens when only this process is signalled (a batch
/// system's SIGINT or SIGTERM).
pub fn run_forwarding_interrupt(
    cmd: &mut std::process::Command,
) -> std::io::Result<std::process::ExitStatus> {
    use std::os::unix::process::CommandExt;
    use std::sync::atomic::Ordering;
    die_with_parent(cmd, libc::SIGTERM);
    let mut child = cmd.process_group(0).spawn()?;
    let _owned = super::owned::group(child.id());
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    let mut forwarded = false;
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(status);
        }
        if !forwarded && super::INTERRUPTED.load(Ordering::Relaxed) {
            let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT);
            forwarded = true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The last of SIGINT, SIGTERM and SIGHUP this process got while
/// [`run_forwarding_signals`] runs (0: none since it was taken).
static PENDING_SIGNAL: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(0);

extern "C" fn note_signal(signal: libc::c_int) {
    // Only an atomic store: async-signal-safe.
    PENDING_SIGNAL.store(signal, std::sync::atomic::Ordering::SeqCst);
}

/// Run `cmd` to its end in a process group of its own, forwarding every
/// SIGINT, SIGTERM and SIGHUP this process gets to that group (`wulf lab
/// exec`: a batch system's SIGTERM or a closed terminal's SIGHUP must
/// reach the command, and wulf must not exit leaving it running). On a
/// terminal the group is made the foreground one while it runs, so that
/// an interactive command reads the terminal and gets its Ctrl-C. The
/// third signal forwarded is SIGKILL (a command that ignores the first
/// two). Waits for the command only: it is the user's, as long as it
/// runs (bounded by the signals that end it).
pub fn run_forwarding_signals(cmd: &mut Command) -> std::io::Result<std::process::ExitStatus> {
    use nix::sys::signal::{kill, sigaction, SaFlags, SigAction, SigHandler, SigSet, Signal};
    let forwarded = [Signal::SIGINT, Signal::SIGTERM, Signal::SIGHUP];
    let handler = SigAction::new(
        SigHandler::Handler(note_signal),
        SaFlags::SA_RESTART,
        SigSet::empty(),
    );
    PENDING_SIGNAL.store(0, std::sync::atomic::Ordering::SeqCst);
    for s in forwarded {
        // SAFETY: the handler only stores to an atomic.
        unsafe { sigaction(s, &handler) }.map_err(std::io::Error::from)?;
    }
    let mut child = cmd.process_group(0).spawn()?;
    let _owned = super::owned::group(child.id());
    let group = nix::unistd::Pid::from_raw(child.id() as i32);
    let terminal = Foreground::give(group);
    let mut sent = 0;
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break status;
        }
        let got = PENDING_SIGNAL.swap(0, std::sync::atomic::Ordering::SeqCst);
        if let Ok(signal) = Signal::try_from(got) {
            sent += 1;
            let signal = if sent >= 3 { Signal::SIGKILL } else { signal };
            let _ = kill(nix::unistd::Pid::from_raw(-group.as_raw()), signal);
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    drop(terminal);
    Ok(status)
}

/// The terminal's foreground process group handed to a child's group,
/// given back when dropped; nothing when stdin is no terminal or this
/// process is not in its foreground.
struct Foreground(Option<libc::pid_t>);

impl Foreground {
    fn give(group: nix::unistd::Pid) -> Foreground {
        use nix::sys::signal::{signal, SigHandler, Signal};
        // SAFETY: tcgetpgrp only reads fd 0's terminal state.
        let ours = unsafe { libc::tcgetpgrp(0) };
        if ours < 0 || ours != nix::unistd::getpgrp().as_raw() {
            return Foreground(None);
        }
        // A process that changes the foreground group while in the
        // background would be stopped by SIGTTOU: ignored from here on,
        // as a shell does.
        // SAFETY: SIG_IGN runs no code.
        let _ = unsafe { signal(Signal::SIGTTOU, SigHandler::SigIgn) };
        // SAFETY: tcsetpgrp only sets fd 0's foreground group.
        match unsafe { libc::tcsetpgrp(0, group.as_raw()) } {
            0 => Foreground(Some(ours)),
            _ => Foreground(None),
        }
    }
}

impl Drop for Foreground {
    fn drop(&mut self) {
        if let Some(ours) = self.0 {
            // SAFETY: as in `give`.
            unsafe { libc::tcsetpgrp(0, ours) };
        }
    }
}

/// The exit code a child's status stands for (128 + signal when killed).
pub fn exit_code(status: std::process::ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    status
        .code()
        .or_else(|| status.signal().map(|s| 128 + s))
        .unwrap_or(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stderr_is_kept_and_the_last_line_named() {
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "echo first >&2; echo; echo 'last words' >&2; exit 3"]);
        let mut p = Process::spawn(cmd, None, &agent_options(None)).unwrap();
        let status = p.child.wait().unwrap();
        assert_eq!(status.code(), Some(3));
        // The reader thread may still be draining the pipe.
        let t0 = Instant::now();
        while p.last_said() != "last words" && t0.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(p.last_said(), "last words");
    }

    #[test]
    fn the_stdin_line_arrives_and_the_group_is_ended() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("got");
        let mut cmd = Command::new("sh");
        // The shell's child (sleep) is in the same group: ending the group
        // ends both.
        cmd.arg("-c")
            .arg(format!("read x; echo \"$x\" > {}; sleep 60", out.display()));
        let mut p = Process::spawn(cmd, Some("h".into()), &agent_options(Some("s3cret"))).unwrap();
        let t0 = Instant::now();
        while std::fs::read_to_string(&out).unwrap_or_default() != "s3cret\n" {
            assert!(t0.elapsed() < Duration::from_secs(10), "no stdin line");
            std::thread::sleep(Duration::from_millis(10));
        }
        let pgid = p.child.id() as i32;
        p.finish(Duration::from_millis(50));
        assert!(p.has_exited());
        // No live member of the group is left (a zombie waiting for its
        // reaper does not count: it runs nothing).
        let t0 = Instant::now();
        while live_members(pgid) > 0 {
            assert!(t0.elapsed() < Duration::from_secs(5), "group outlived");
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    #[test]
    fn a_group_that_ignores_sigterm_is_killed_after_the_grace() {
        let dir = tempfile::tempdir().unwrap();
        let pid_file = dir.path().join("stray");
        // A member ignoring SIGTERM in the group, and a stray that left
        // it (as hydra's remote shells do) also ignoring it.
        let mut cmd = Command::new("sh");
        cmd.arg("-c").arg(format!(
            "trap '' TERM; sleep 60 & setsid sh -c 'trap \"\" TERM; echo $$ > {}; exec sleep 60' & wait",
            pid_file.display()
        ));
        let mut p = Process::spawn(cmd, None, &agent_options(None)).unwrap();
        let t0 = Instant::now();
        let stray: i32 = loop {
            if let Some(pid) = std::fs::read_to_string(&pid_file)
                .ok()
                .and_then(|s| s.trim().parse().ok())
            {
                break pid;
            }
            assert!(t0.elapsed() < Duration::from_secs(10), "no stray");
            std::thread::sleep(Duration::from_millis(10));
        };
        let pgid = p.child.id() as i32;
        let t0 = Instant::now();
        p.end_group(nix::sys::signal::Signal::SIGTERM);
        let took = t0.elapsed();
        assert!(took >= KILL_GRACE, "SIGKILL came before the grace");
        assert!(took < KILL_GRACE + Duration::from_secs(3), "not bounded");
        let t0 = Instant::now();
        while live_members(pgid) > 0 || live_members(stray) > 0 {
            assert!(t0.elapsed() < Duration::from_secs(5), "group outlived");
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Processes of group `pgid` that are not zombies, from /proc.
    fn live_members(pgid: i32) -> usize {
        std::fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .filter_map(|e| std::fs::read_to_string(e.path().join("stat")).ok())
            .filter(|stat| {
                // pid (comm) state ppid pgrp ...: comm may hold spaces.
                let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
                let f: Vec<&str> = rest.split_whitespace().collect();
                f.len() > 2 && f[2] == pgid.to_string() && f[0] != "Z"
            })
            .count()
    }
}
