//! The lab's hands on the kernel: iproute2 (`ip`, `tc`), `ethtool`,
//! util-linux (`unshare`, `nsenter`) and `nft`, run as child processes with
//! their error output carried into wulf's errors.
//!
//! The lab drives the same tools an administrator would type, so every step
//! can be reproduced and checked by hand (`ip netns`, `tc -s class show`),
//! and what `wulf lab status` shows is read back from the kernel by them.

use std::path::Path;
use std::process::{Command, Stdio};

use anyhow::{bail, Context, Result};

/// Capability bits (linux/capability.h).
const CAP_NET_ADMIN: u32 = 12;
const CAP_SYS_ADMIN: u32 = 21;

/// Run `prog args...`, failing with its stderr when it fails.
pub fn run(prog: &str, args: &[&str]) -> Result<String> {
    let out = Command::new(prog)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("cannot run {prog} (is it installed?)"))?;
    if !out.status.success() {
        bail!(
            "`{prog} {}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Run `prog args...` and ignore failure (clean-up of what may not exist).
pub fn run_quietly(prog: &str, args: &[&str]) {
    let _ = Command::new(prog)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}

/// `ip -n NETNS args...`.
pub fn ip_in(netns: &str, args: &[&str]) -> Result<String> {
    let mut v = vec!["-n", netns];
    v.extend_from_slice(args);
    run("ip", &v)
}

/// `tc -n NETNS args...`.
pub fn tc_in(netns: &str, args: &[&str]) -> Result<String> {
    let mut v = vec!["-n", netns];
    v.extend_from_slice(args);
    run("tc", &v)
}

/// `ip netns exec NETNS prog args...` (for tools without a `-n` option).
pub fn in_netns(netns: &str, prog: &str, args: &[&str]) -> Result<String> {
    let mut v = vec!["netns", "exec", netns, prog];
    v.extend_from_slice(args);
    run("ip", &v)
}

/// Network namespaces the kernel knows by name (`ip netns list`).
pub fn netns_names() -> Vec<String> {
    run("ip", &["netns", "list"])
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .collect()
}

/// Kill every process inside `netns` (what a killed `--lab` command left
/// running there), so deleting the namespace frees it for real.
pub fn kill_processes_in(netns: &str) {
    let pids = run("ip", &["netns", "pids", netns]).unwrap_or_default();
    for pid in pids
        .split_whitespace()
        .filter_map(|p| p.parse::<i32>().ok())
    {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
}

/// A clear error unless this process may build a lab: it needs
/// CAP_NET_ADMIN (namespaces, links, qdiscs) and CAP_SYS_ADMIN (the bind
/// mounts that keep namespaces alive), and the tools it drives.
pub fn check_can_build() -> Result<()> {
    let caps = effective_caps().unwrap_or(0);
    let missing: Vec<&str> = [
        (CAP_NET_ADMIN, "CAP_NET_ADMIN"),
        (CAP_SYS_ADMIN, "CAP_SYS_ADMIN"),
    ]
    .iter()
    .filter(|(bit, _)| caps & (1u64 << bit) == 0)
    .map(|(_, name)| *name)
    .collect();
    if !missing.is_empty() {
        return Err(crate::error::usage(format!(
            "the lab needs {} to make network namespaces, links and shapers: run wulf as root (sudo) or grant the capabilities",
            missing.join(" and ")
        )));
    }
    for (tool, package) in [
        ("ip", "iproute2"),
        ("tc", "iproute2"),
        ("ethtool", "ethtool"),
        ("unshare", "util-linux"),
        ("nsenter", "util-linux"),
    ] {
        if !on_path(tool) {
            return Err(crate::error::usage(format!(
                "the lab needs the `{tool}` command: apt-get install {package}"
            )));
        }
    }
    Ok(())
}

/// This process's effective capability set.
fn effective_caps() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let hex = status.lines().find_map(|l| l.strip_prefix("CapEff:"))?;
    u64::from_str_radix(hex.trim(), 16).ok()
}

/// Whether `prog` is an executable in PATH.
pub fn on_path(prog: &str) -> bool {
    std::env::var_os("PATH").is_some_and(|paths| {
        std::env::split_paths(&paths).any(|d| {
            let p = d.join(prog);
            p.is_file()
                && std::fs::metadata(&p)
                    .map(|m| std::os::unix::fs::PermissionsExt::mode(&m.permissions()) & 0o111 != 0)
                    .unwrap_or(false)
        })
    })
}

/// Make a persistent UTS namespace bound at `file` with host name `host`.
pub fn make_uts_namespace(file: &Path, host: &str) -> Result<()> {
    std::fs::File::create(file).with_context(|| format!("cannot create {}", file.display()))?;
    let arg = format!("--uts={}", file.display());
    run("unshare", &[&arg, "hostname", host]).map(|_| ())
}

/// Undo [`make_uts_namespace`]: detach the bind mount and remove the file.
pub fn remove_uts_namespace(file: &Path) {
    let _ = nix::mount::umount2(file, nix::mount::MntFlags::MNT_DETACH);
    let _ = std::fs::remove_file(file);
}

/// Whether the kernel has a queueing discipline, found by trying to add it
/// to a scratch dummy-free target: the loopback of a namespace the lab owns.
pub fn has_qdisc(netns: &str, args: &[&str]) -> bool {
    let mut v = vec!["qdisc", "add", "dev", "lo", "root"];
    v.extend_from_slice(args);
    let ok = tc_in(netns, &v).is_ok();
    if ok {
        let _ = tc_in(netns, &["qdisc", "del", "dev", "lo", "root"]);
    }
    ok
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tools_are_found_or_not() {
        assert!(on_path("sh"));
        assert!(!on_path("wulf-no-such-tool"));
    }

    #[test]
    fn failures_carry_the_tools_message() {
        let e = run("sh", &["-c", "echo boom >&2; exit 3"]).unwrap_err();
        assert!(format!("{e}").contains("boom"), "{e}");
        assert!(run("wulf-no-such-tool", &[]).is_err());
    }
}
