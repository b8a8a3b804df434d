//! PVM across the nodes of a wulf lab: the listening side's pvmd (the
//! master, in the peer's node) adds the measuring side's node to its
//! virtual machine, and the measuring side enrolls with the pvmd started
//! there.
//!
//! PVM adds a host by running `$PVM_RSH HOST DPATH -s ARGS...`, where
//! DPATH is the host's `dx=` (here from the master's hostfile, whose `*`
//! line applies to hosts added later by pvm_addhosts). Both are scripts in
//! the master's private directory:
//! - the remote shell is the lab's own (`wulf lab rsh --name LAB`, which
//!   runs the words in the node's network and UTS namespaces, as the MPI
//!   launchers reach lab nodes), bounded by `timeout`: the slave pvmd
//!   forks and leaves it once it has answered, so the remote shell ends
//!   within the bound whatever happens;
//! - the slave's `dx=` sets the slave's own private directory (`PVM_TMP`,
//!   0700, named after this process) and PVM's root, then runs pvmd.
//!
//! Which host is which: every lab node has its own host name (node1,
//! node2: its UTS namespace) and /etc/hosts (`ip netns exec` binds the
//! node's), so pvmd's own gethostname/gethostbyname finds the node's lab
//! address, and the master names the added host by the measuring side's
//! address on the control connection (what `wulf lab rsh` accepts as well
//! as a node name). The tasks' direct route and the daemons' UDP traffic
//! therefore cross the lab link.
//!
//! The slave pvmd is reparented to init when it forks: it is found by its
//! private directory (`PVM_TMP` in /proc/PID/environ) and killed by both
//! sides when their channel ends, and by the next daemon start when both
//! sides were killed.

use std::ffi::{c_char, c_int, CString};
use std::net::{IpAddr, UdpSocket};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{bail, Context, Result};

use super::daemon::DIR_PREFIX;
use super::library::Api;
use crate::exec::remote_shell::{rsh_script, shell_quote};

/// The environment variable naming the lab a process runs in (the value
/// of `lab::ENV_LAB`: transport may not import lab, which imports
/// transport's Cluster; a root test checks they agree).
pub const ENV_LAB: &str = "WULF_LAB";

/// The lab this process runs in, if any.
pub fn lab_name() -> Option<String> {
    std::env::var(ENV_LAB).ok().filter(|n| !n.is_empty())
}

/// What the master pvmd needs to add a lab node: its hostfile, its
/// remote shell and the added host's private directory.
pub struct Remote {
    /// The master's hostfile (`* dx=SLAVE`), its first argument.
    pub hostfile: PathBuf,
    /// The remote shell script, the master's `PVM_RSH`.
    pub rsh: PathBuf,
    /// The added host's private directory (its pvmd's `PVM_TMP`).
    pub slave_dir: tempfile::TempDir,
}

impl Remote {
    /// Write the scripts and the hostfile into the master's directory
    /// `dir` and make the slave's directory, for lab `lab`; the remote
    /// shell ends within `timeout`.
    pub fn prepare(
        dir: &Path,
        lab: &str,
        pvmd: &Path,
        env: &[(&'static str, String)],
        timeout: Duration,
    ) -> Result<Remote> {
        let slave_dir = tempfile::Builder::new()
            .prefix(&format!("{DIR_PREFIX}{}-node-", std::process::id()))
            .tempdir()
            .context("cannot create a private directory for the remote pvmd")?;
        std::fs::set_permissions(slave_dir.path(), std::fs::Permissions::from_mode(0o700))?;
        let wulf = std::env::current_exe().context("cannot find wulf's own executable")?;
        let secs = timeout.as_secs().max(1).to_string();
        let rsh_words: Vec<String> = vec![
            "timeout".into(),
            "-k".into(),
            "2".into(),
            secs,
            wulf.display().to_string(),
            "lab".into(),
            "rsh".into(),
            "--name".into(),
            lab.into(),
        ];
        let rsh = rsh_script(&rsh_words, dir)?;
        // The slave's environment: the master's, with its own PVM_TMP.
        let mut exports = String::new();
        for (k, v) in env {
            let v = if *k == "PVM_TMP" {
                slave_dir.path().display().to_string()
            } else {
                v.clone()
            };
            exports.push_str(&format!("{k}={}\nexport {k}\n", shell_quote(&v)));
        }
        let slave = dir.join("slave-pvmd");
        let text = format!(
            "#!/bin/sh\n{exports}cd {}\nexec {} \"$@\"\n",
            shell_quote(&slave_dir.path().display().to_string()),
            shell_quote(&pvmd.display().to_string())
        );
        std::fs::write(&slave, text)
            .with_context(|| format!("cannot write {}", slave.display()))?;
        std::fs::set_permissions(&slave, std::fs::Permissions::from_mode(0o700))?;
        let hostfile = dir.join("hostfile");
        std::fs::write(&hostfile, format!("* dx={}\n", slave.display()))
            .with_context(|| format!("cannot write {}", hostfile.display()))?;
        Ok(Remote {
            hostfile,
            rsh,
            slave_dir,
        })
    }
}

impl Drop for Remote {
    fn drop(&mut self) {
        kill_daemons_in(self.slave_dir.path());
    }
}

/// Whether `ip` is an address of this host (of this node, in a lab).
pub fn is_local(ip: IpAddr) -> bool {
    ip.is_loopback() || UdpSocket::bind((ip, 0)).is_ok()
}

/// Add the host at `ip` to the virtual machine of the task enrolled
/// through `api` (the master's), and return the socket its pvmd
/// announced in `slave_dir`.
pub fn add_host(api: &Api, ip: IpAddr, slave_dir: &Path) -> Result<PathBuf> {
    let name = CString::new(ip.to_string()).expect("an address has no NUL");
    let mut names = [name.as_ptr() as *mut c_char];
    let mut info: c_int = 0;
    // SAFETY: one valid C string, one out slot; pvm_addhosts only reads
    // the names. It returns once the remote shell and the slave pvmd
    // answered or failed (the remote shell is bounded by `timeout`).
    let added = unsafe { (api.addhosts)(names.as_mut_ptr(), 1, &mut info) };
    if added < 1 || info < 0 {
        bail!(
            "pvm_addhosts({ip}) failed (PVM error {}): the pvmd on that node did not start through the lab's remote shell",
            if info < 0 { info } else { added }
        );
    }
    slave_socket(slave_dir)
}

/// The socket the pvmd of `dir` announced in its address file
/// (`pvmd.UID`), checked to lie in `dir`.
pub fn slave_socket(dir: &Path) -> Result<PathBuf> {
    // SAFETY: getuid cannot fail.
    let uid = unsafe { libc::getuid() };
    let file = dir.join(format!("pvmd.{uid}"));
    let text = std::fs::read_to_string(&file)
        .with_context(|| format!("the remote pvmd wrote no {}", file.display()))?;
    let sock = PathBuf::from(text.trim());
    if !sock.starts_with(dir) {
        bail!(
            "the remote pvmd announced {} outside its directory",
            sock.display()
        );
    }
    Ok(sock)
}

/// SIGKILL every pvmd whose private directory (`PVM_TMP`) is `dir`;
/// returns how many there were.
pub fn kill_daemons_in(dir: &Path) -> usize {
    let pids = daemons_in(dir);
    for &pid in &pids {
        // SAFETY: signalling a process we identified by its environment.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
    pids.len()
}

/// The pvmd processes whose `PVM_TMP` is `dir`.
pub fn daemons_in(dir: &Path) -> Vec<i32> {
    let want = format!("PVM_TMP={}", dir.display());
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
            comm.trim() == "pvmd"
                && std::fs::read(format!("/proc/{pid}/environ"))
                    .is_ok_and(|env| env.split(|&b| b == 0).any(|kv| kv == want.as_bytes()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_master_gets_a_hostfile_a_bounded_lab_shell_and_a_private_slave_directory() {
        let dir = tempfile::tempdir().unwrap();
        let env = vec![
            ("PVM_TMP", dir.path().display().to_string()),
            ("PVM_ROOT", "/usr/lib/pvm3".to_string()),
        ];
        let r = Remote::prepare(
            dir.path(),
            "lab7",
            Path::new("/usr/bin/pvmd"),
            &env,
            Duration::from_secs(9),
        )
        .unwrap();
        let hosts = std::fs::read_to_string(&r.hostfile).unwrap();
        let slave = dir.path().join("slave-pvmd");
        assert_eq!(hosts, format!("* dx={}\n", slave.display()));
        let rsh = std::fs::read_to_string(&r.rsh).unwrap();
        assert!(
            rsh.contains("timeout -k 2 9 ") && rsh.contains(" lab rsh --name lab7 \"$@\""),
            "{rsh}"
        );
        // The slave's own PVM_TMP, not the master's.
        let script = std::fs::read_to_string(&slave).unwrap();
        let own = format!("PVM_TMP={}\n", r.slave_dir.path().display());
        assert!(script.contains(&own), "{script}");
        assert!(script.ends_with("exec /usr/bin/pvmd \"$@\"\n"), "{script}");
        let name = r.slave_dir.path().file_name().unwrap().to_str().unwrap();
        assert!(name.starts_with(&format!("{DIR_PREFIX}{}-node-", std::process::id())));
        assert!(super::super::daemon::is_private_dir(r.slave_dir.path()));
    }

    #[test]
    fn loopback_is_local_and_an_address_of_no_interface_here_is_not() {
        assert!(is_local("127.0.0.1".parse().unwrap()));
        // The benchmark range's last address: no lab gives it to a node.
        assert!(!is_local("198.19.255.254".parse().unwrap()));
    }

    #[test]
    fn no_daemon_runs_in_a_fresh_directory_and_an_unknown_one_has_no_socket() {
        let dir = tempfile::tempdir().unwrap();
        assert!(daemons_in(dir.path()).is_empty());
        assert_eq!(kill_daemons_in(dir.path()), 0);
        let e = slave_socket(dir.path()).unwrap_err();
        assert!(format!("{e:#}").contains("wrote no"), "{e:#}");
        // A socket named outside the directory is refused.
        // SAFETY: getuid cannot fail.
        let uid = unsafe { libc::getuid() };
        std::fs::write(dir.path().join(format!("pvmd.{uid}")), "/tmp/elsewhere.0\n").unwrap();
        assert!(slave_socket(dir.path()).is_err());
    }
}
