//! The pvmd3 daemon of one channel: started by the listening side in a
//! private directory (its `PVM_TMP`, mode 0700, named after this process),
//! halted and removed when the channel ends.
//!
//! A pvmd started by hand stays in the foreground and prints the path of
//! its socket once it is ready: that line, read within the channel's
//! timeout, is the sign it can take tasks. It runs in its own process
//! group with a parent-death signal (SIGKILL), so a wulf killed outright
//! does not leave it running; the directory of a killed wulf (its pid
//! gone) is removed by the next daemon start.

use std::io::Read;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use super::library::INSTALL_HINT;
use super::remote::{self, Remote};
use crate::exec::process::{Options, Process};

/// Prefix of every private PVM directory wulf makes.
pub const DIR_PREFIX: &str = "wulf-pvm-";

/// Where pvmd lives in Debian's package, then what PATH offers.
const PVMD_CANDIDATES: [&str; 2] = ["/usr/lib/pvm3/lib/pvmd", "/usr/bin/pvmd"];

/// The pvmd executable and the PVM_ROOT it belongs to.
pub fn find_pvmd() -> Result<(PathBuf, PathBuf), String> {
    if let Some(root) = std::env::var_os("PVM_ROOT").map(PathBuf::from) {
        let p = root.join("lib/pvmd");
        if p.is_file() {
            return Ok((p, root));
        }
    }
    for c in PVMD_CANDIDATES {
        let p = Path::new(c);
        if p.is_file() {
            return Ok((p.to_path_buf(), PathBuf::from("/usr/lib/pvm3")));
        }
    }
    Err(format!(
        "{INSTALL_HINT}: no pvmd in /usr/lib/pvm3/lib or /usr/bin"
    ))
}

/// The daemon's environment: its private directory, PVM's root and, for
/// root (PVM refuses to run as root
/// otherwise; wulf's lab and tests run as root), PVM_ALLOW_ROOT.
pub fn environment(dir: &Path, root: &Path) -> Vec<(&'static str, String)> {
    let mut env = vec![
        ("PVM_TMP", dir.display().to_string()),
        ("PVM_ROOT", root.display().to_string()),
    ];
    if as_root() {
        env.push(("PVM_ALLOW_ROOT", "1".into()));
    }
    env
}

/// Whether wulf runs as root (PVM then needs PVM_ALLOW_ROOT).
pub fn as_root() -> bool {
    // SAFETY: getuid cannot fail.
    unsafe { libc::getuid() == 0 }
}

/// A running pvmd and its directory; dropping it halts both.
pub struct Daemon {
    process: Option<Process>,
    /// In a lab: what adds the other node (its pvmd is killed when this
    /// drops, after the master).
    pub remote: Option<Remote>,
    /// Removes the directory when dropped (after the daemon ends).
    _temp: tempfile::TempDir,
    /// The private directory (the daemon's `PVM_TMP`).
    pub dir: PathBuf,
    /// PVM_ROOT.
    pub root: PathBuf,
    /// The daemon's executable.
    pub pvmd: PathBuf,
    /// The daemon's socket, as it announced it (tasks connect to it).
    pub sock: PathBuf,
}

impl Daemon {
    /// Start a pvmd in a fresh private directory and wait, at most
    /// `timeout`, for it to be ready. In a lab (`lab`: its name) the
    /// daemon can add the other node through the lab's remote shell
    /// ([`Remote`]).
    pub fn start(timeout: Duration, lab: Option<&str>) -> Result<Daemon> {
        let (pvmd, root) = find_pvmd().map_err(anyhow::Error::msg)?;
        remove_stale_dirs(&std::env::temp_dir());
        // tempfile makes it 0700 with a random tail; the pid in the name
        // lets a later start tell a dead owner's directory.
        let temp = tempfile::Builder::new()
            .prefix(&format!("{DIR_PREFIX}{}-", std::process::id()))
            .tempdir()
            .context("cannot create a private directory for pvmd")?;
        let dir = temp.path().to_path_buf();
        // Not every tempfile version makes it 0700: the daemon's socket
        // and address file must be this user's alone.
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700))
            .with_context(|| format!("cannot make {} private", dir.display()))?;
        let env = environment(&dir, &root);
        let remote = match lab {
            Some(lab) => Some(Remote::prepare(&dir, lab, &pvmd, &env, timeout)?),
            None => None,
        };
        let mut cmd = Command::new(&pvmd);
        cmd.envs(env).current_dir(&dir);
        if let Some(r) = &remote {
            cmd.arg(&r.hostfile).env("PVM_RSH", &r.rsh);
        }
        let options = Options {
            stdout_piped: true,
            keep_stderr: true,
            // SIGKILL, never SIGTERM: a pvmd that is asked to stop sends
            // SIGTERM to every task still enrolled, and the other wulf
            // would take that for Ctrl-C.
            parent_death_signal: Some(libc::SIGKILL),
            ..Options::default()
        };
        let mut daemon = Daemon {
            process: None,
            remote,
            _temp: temp,
            dir,
            root,
            pvmd,
            sock: PathBuf::new(),
        };
        daemon.process = Some(Process::spawn(cmd, None, &options)?);
        daemon.sock = daemon.wait_ready(timeout)?;
        Ok(daemon)
    }

    /// Wait for pvmd's first line (its socket path), at most `timeout`;
    /// returns that path.
    fn wait_ready(&mut self, timeout: Duration) -> Result<PathBuf> {
        let process = self.process.as_mut().expect("started");
        let mut out = process.child.stdout.take().context("no stdout from pvmd")?;
        let deadline = Instant::now() + timeout;
        let mut line = Vec::new();
        let mut fds_ready = false;
        while Instant::now() < deadline {
            let left = deadline.saturating_duration_since(Instant::now());
            let mut fds = [nix::poll::PollFd::new(
                std::os::fd::AsFd::as_fd(&out),
                nix::poll::PollFlags::POLLIN,
            )];
            let t = nix::poll::PollTimeout::try_from(left).unwrap_or(nix::poll::PollTimeout::MAX);
            match nix::poll::poll(&mut fds, t) {
                Ok(0) => break,
                Ok(_) => {}
                Err(nix::errno::Errno::EINTR) => continue,
                Err(e) => return Err(e.into()),
            }
            let mut buf = [0u8; 256];
            let n = out.read(&mut buf)?;
            if n == 0 {
                let said = process.last_said();
                bail!("pvmd exited before it was ready: {said}");
            }
            line.extend_from_slice(&buf[..n]);
            if line.contains(&b'\n') {
                fds_ready = true;
                break;
            }
        }
        if !fds_ready {
            bail!(
                "pvmd was not ready within {}",
                humantime::format_duration(timeout)
            );
        }
        let first = String::from_utf8_lossy(&line);
        let sock = PathBuf::from(first.lines().next().unwrap_or("").trim());
        if !sock.starts_with(&self.dir) {
            bail!("pvmd announced {} outside its directory", sock.display());
        }
        // Keep reading whatever pvmd still prints, so it never blocks
        // on a full pipe (it logs to a file in its directory otherwise).
        std::thread::spawn(move || {
            let mut sink = [0u8; 256];
            while matches!(out.read(&mut sink), Ok(n) if n > 0) {}
        });
        Ok(sock)
    }

    /// Whether the daemon is still running.
    pub fn running(&mut self) -> bool {
        self.process.as_mut().is_some_and(|p| !p.has_exited())
    }

    /// The daemon's process id, if it runs.
    pub fn pid(&self) -> Option<u32> {
        self.process.as_ref().map(|p| p.child.id())
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if let Some(mut p) = self.process.take() {
            // SIGKILL: on SIGTERM pvmd would signal every task still
            // enrolled (the measuring wulf, whose endpoint may outlive
            // this one) as it halts. Its files go with the directory.
            p.end_group(nix::sys::signal::Signal::SIGKILL);
        }
        // The other node's pvmd (killed by its Drop) after the master.
        self.remote.take();
    }
}

/// Remove the private directories of wulf processes that are gone (killed
/// before they could remove their own), owned by this user only.
pub fn remove_stale_dirs(tmp: &Path) {
    let Ok(entries) = std::fs::read_dir(tmp) else {
        return;
    };
    // SAFETY: getuid cannot fail.
    let uid = unsafe { libc::getuid() };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(rest) = name.to_str().and_then(|n| n.strip_prefix(DIR_PREFIX)) else {
            continue;
        };
        let Some(pid) = rest.split('-').next().and_then(|p| p.parse::<i32>().ok()) else {
            continue;
        };
        let Ok(meta) = std::fs::symlink_metadata(entry.path()) else {
            continue;
        };
        if !meta.is_dir() || meta.uid() != uid || pid <= 0 || pid_alive(pid) {
            continue;
        }
        // A lab node's pvmd outlives its master: kill it with its files.
        remote::kill_daemons_in(&entry.path());
        let _ = std::fs::remove_dir_all(entry.path());
    }
}

fn pid_alive(pid: i32) -> bool {
    // SAFETY: signal 0 only checks that the process exists.
    let r = unsafe { libc::kill(pid, 0) };
    let exists = r == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM);
    // A zombie is gone for this purpose: a killed wulf whose new parent
    // (a container's init) does not reap it still answers signal 0.
    let zombie = std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| s.rsplit_once(") ").map(|(_, rest)| rest.starts_with('Z')))
        .unwrap_or(false);
    exists && !zombie
}

/// Whether `dir` is a private PVM directory this user made (the
/// connecting side checks the peer's description before using it).
pub fn is_private_dir(dir: &Path) -> bool {
    let named = dir
        .file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.starts_with(DIR_PREFIX));
    let Ok(meta) = std::fs::symlink_metadata(dir) else {
        return false;
    };
    // SAFETY: getuid cannot fail.
    let uid = unsafe { libc::getuid() };
    named && dir.is_absolute() && meta.is_dir() && meta.uid() == uid && meta.mode() & 0o077 == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stale_directories_of_dead_owners_go_and_live_ones_stay() {
        let tmp = tempfile::tempdir().unwrap();
        // No process has pid 2^22 + 1 (above Linux's largest pid_max).
        let dead = tmp.path().join(format!("{DIR_PREFIX}4194305-abc"));
        let live = tmp
            .path()
            .join(format!("{DIR_PREFIX}{}-abc", std::process::id()));
        let other = tmp.path().join("wulf-other-1");
        for d in [&dead, &live, &other] {
            std::fs::create_dir(d).unwrap();
        }
        std::fs::write(dead.join("pvmd.0"), "x").unwrap();
        remove_stale_dirs(tmp.path());
        assert!(!dead.exists());
        assert!(live.exists() && other.exists());
    }

    #[test]
    fn only_a_0700_directory_of_this_user_with_the_prefix_is_private() {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path().join(format!("{DIR_PREFIX}1-x"));
        std::fs::create_dir(&d).unwrap();
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert!(!is_private_dir(&d));
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o700)).unwrap();
        assert!(is_private_dir(&d));
        assert!(!is_private_dir(tmp.path()));
        assert!(!is_private_dir(Path::new("relative/wulf-pvm-1-x")));
    }
}
