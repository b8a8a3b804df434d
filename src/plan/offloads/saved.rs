//! The interface's settings as they were, on disk while `tune tcp
//! --offloads` has them changed: `/run/wulf/offloads/NETNS-IFACE.json`,
//! written before the first change and removed once they are restored.
//! A run that was killed (SIGKILL, a lost session, a crash) cannot restore
//! them itself; the next `--offloads` run on that interface finds the file
//! and restores from it before anything else, as `wulf lab down` finds a
//! lab from its state file. /run is a tmpfs: a reboot, which resets the
//! NIC's settings anyway, forgets the file too.

use std::path::PathBuf;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::result::write_atomically;
use crate::tune::offload::OffloadState;

/// Version of the saved-state file.
const SAVED_VERSION: u32 = 1;
/// Where the files live.
const DIR: &str = "/run/wulf/offloads";

/// One interface's settings before a tune session changed them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Saved {
    /// [`SAVED_VERSION`].
    pub version: u32,
    /// The interface.
    pub interface: String,
    /// The session that changed it.
    pub pid: u32,
    /// When it was saved, RFC 3339 UTC.
    pub saved_at: String,
    /// The settings to put back.
    pub before: OffloadState,
}

/// The file of `interface` in this network namespace: interface names
/// repeat across namespaces (every lab node has an eth0), the namespace's
/// inode tells them apart.
pub fn path(interface: &str) -> Result<PathBuf> {
    use std::os::unix::fs::MetadataExt;
    let netns = std::fs::metadata("/proc/self/ns/net")
        .context("cannot read this process's network namespace")?
        .ino();
    // An interface name is at most 15 bytes without '/' (the kernel's
    // rule), so it is safe as part of a file name.
    Ok(PathBuf::from(DIR).join(format!("{netns}-{interface}.json")))
}

/// Record `before` as `interface`'s settings to restore.
pub fn save(interface: &str, before: &OffloadState) -> Result<()> {
    let file = path(interface)?;
    std::fs::create_dir_all(DIR).with_context(|| format!("cannot create {DIR}"))?;
    let saved = Saved {
        version: SAVED_VERSION,
        interface: interface.to_string(),
        pid: std::process::id(),
        saved_at: humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string(),
        before: before.clone(),
    };
    let mut json = serde_json::to_vec_pretty(&saved)?;
    json.push(b'\n');
    write_atomically(&file, &json)
        .with_context(|| format!("cannot record the offloads of {interface} to restore"))
}

/// The settings a session left recorded for `interface`, if any.
pub fn load(interface: &str) -> Result<Option<Saved>> {
    let file = path(interface)?;
    let bytes = match std::fs::read(&file) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", file.display())),
    };
    let saved: Saved = serde_json::from_slice(&bytes)
        .with_context(|| format!("{} is not a saved offload state", file.display()))?;
    anyhow::ensure!(
        saved.version == SAVED_VERSION && saved.interface == interface,
        "{} is of another version or interface: remove it after checking `ethtool -k {interface}`",
        file.display()
    );
    Ok(Some(saved))
}

/// Forget `interface`'s record (its settings are back).
pub fn forget(interface: &str) {
    if let Ok(file) = path(interface) {
        let _ = std::fs::remove_file(file);
    }
}

/// Whether process `pid` still runs (another session holds the interface).
pub fn alive(pid: u32) -> bool {
    pid != std::process::id()
        && nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), None).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_is_per_namespace_and_interface() {
        let p = path("eth0").unwrap();
        let name = p.file_name().unwrap().to_str().unwrap();
        assert!(p.starts_with(DIR));
        assert!(name.ends_with("-eth0.json"), "{name}");
        assert!(
            name.split('-').next().unwrap().parse::<u64>().is_ok(),
            "{name}"
        );
    }

    #[test]
    fn a_dead_process_is_not_alive_and_this_one_holds_nothing() {
        assert!(!alive(std::process::id()));
        // Past pid_max (at most 2^22): no such process.
        assert!(!alive(4_194_304 + 1));
    }
}
