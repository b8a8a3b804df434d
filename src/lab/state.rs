//! What a lab is, kept on disk under `/run/wulf/lab/NAME/` so the lab
//! outlives the command that made it and can always be found and removed:
//! `state.json` and one bind-mounted UTS namespace file per node.
//!
//! /run is a tmpfs: a reboot, which destroys every namespace, also forgets
//! every lab. The state is written before the first namespace is made and
//! rewritten when the lab is complete, so even a lab whose construction was
//! cut short (`kill -9`, a failed `tc`) can be removed by name.

use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use super::shaper::ShaperParams;
use super::spec::{Impairments, NodeLink};

/// Version of `state.json`.
pub const STATE_VERSION: u32 = 1;
/// Prefix of every network namespace a lab makes (`wlab-NAME-node1`,
/// `wlab-NAME-sw`): `wulf lab down --all` removes what carries it.
pub const NETNS_PREFIX: &str = "wlab-";

/// Where labs live; `WULF_LAB_DIR` moves it (tests of the state files).
pub fn root_dir() -> PathBuf {
    std::env::var_os("WULF_LAB_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/run/wulf/lab"))
}

/// One lab as made.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LabState {
    /// [`STATE_VERSION`].
    pub version: u32,
    /// The lab's name.
    pub name: String,
    /// False while the lab is being built.
    pub complete: bool,
    /// Made for one measuring command (`--lab`) and removed after it.
    pub temporary: bool,
    /// Process that made it (for telling a temporary lab whose command died).
    pub creator_pid: u32,
    /// Creation time, RFC 3339 UTC.
    pub created_at: String,
    /// The /24 of the lab inside 198.18.0.0/15, e.g. "198.18.3.0/24".
    pub subnet: String,
    /// Network namespace of the switch (the bridge).
    pub switch_netns: String,
    /// The nodes.
    pub nodes: Vec<NodeState>,
    /// Impairments on the switch.
    #[serde(default)]
    pub impairments: Impairments,
}

/// One node as made.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeState {
    /// Host name inside the node (`node1`).
    pub name: String,
    /// Its network namespace.
    pub netns: String,
    /// The bind-mounted UTS namespace that gives it its host name.
    pub uts_file: PathBuf,
    /// Its address on eth0.
    pub address: Ipv4Addr,
    /// The link asked for.
    pub link: NodeLink,
    /// The shaper on each direction.
    pub shaper: ShaperParams,
}

impl LabState {
    /// The node called `name` (`node2`), or an error listing the nodes.
    pub fn node(&self, name: &str) -> Result<&NodeState> {
        self.nodes.iter().find(|n| n.name == name).ok_or_else(|| {
            crate::error::usage(format!(
                "lab {} has no node '{name}' (it has {})",
                self.name,
                self.nodes
                    .iter()
                    .map(|n| n.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        })
    }

    /// Whether the command that made a temporary lab is gone.
    pub fn orphaned(&self) -> bool {
        self.temporary && !pid_alive(self.creator_pid)
    }
}

/// The directory of lab `name`.
pub fn lab_dir(name: &str) -> PathBuf {
    root_dir().join(name)
}

/// Write `state` atomically.
pub fn save(state: &LabState) -> Result<()> {
    let bytes = serde_json::to_vec_pretty(state)?;
    crate::result::write_atomically(&lab_dir(&state.name).join("state.json"), &bytes)
}

/// Read lab `name`.
pub fn load(name: &str) -> Result<LabState> {
    // The name becomes a path: `--name ../../x` once loaded a state file
    // from anywhere.
    super::spec::validate_name(name).map_err(crate::error::usage)?;
    let path = lab_dir(name).join("state.json");
    let text = std::fs::read_to_string(&path).map_err(|_| {
        crate::error::usage(format!(
            "no lab named '{name}' (wulf lab status lists the labs; wulf lab up makes one)"
        ))
    })?;
    serde_json::from_str(&text).with_context(|| format!("{} is damaged", path.display()))
}

/// Names of every lab with a directory, sorted.
pub fn names() -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(root_dir())
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .filter(|e| e.path().is_dir())
                .filter_map(|e| e.file_name().into_string().ok())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// Claim the directory of a new lab; an existing lab of that name is an
/// error (two commands cannot build the same lab).
pub fn claim(name: &str) -> Result<PathBuf> {
    let root = root_dir();
    std::fs::create_dir_all(&root).with_context(|| format!("cannot create {}", root.display()))?;
    let dir = lab_dir(name);
    match std::fs::create_dir(&dir) {
        Ok(()) => Ok(dir),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            Err(crate::error::usage(format!(
                "a lab named '{name}' exists: remove it with `wulf lab down --name {name}` or pick another --name"
            )))
        }
        Err(e) => Err(e).with_context(|| format!("cannot create {}", dir.display())),
    }
}

/// Hold this while choosing a new lab's subnet and until its state is
/// saved: two `wulf lab up` of different names at once both read the labs
/// before either had saved, and took the same /24. An exclusive lock on
/// a file in the labs' directory serialises them; the kernel drops it
/// when the holder exits, however it exits.
pub fn allocation_lock() -> Result<nix::fcntl::Flock<std::fs::File>> {
    let root = root_dir();
    std::fs::create_dir_all(&root).with_context(|| format!("cannot create {}", root.display()))?;
    let path = root.join(".allocation.lock");
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .with_context(|| format!("cannot open {}", path.display()))?;
    nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusive)
        .map_err(|(_, e)| anyhow::anyhow!("cannot lock {}: {e}", path.display()))
}

/// The lowest /24 in 198.18.0.0/15 no other lab uses, as its third octet
/// pair: index 0..512 maps to 198.18.0.0 ... 198.19.255.0.
pub fn free_subnet(taken: &[String]) -> Option<(Ipv4Addr, String)> {
    (0u32..512).find_map(|i| {
        let base = Ipv4Addr::new(198, 18 + (i / 256) as u8, (i % 256) as u8, 0);
        let text = format!("{base}/24");
        (!taken.contains(&text)).then_some((base, text))
    })
}

/// Subnets of every readable lab.
pub fn taken_subnets() -> Vec<String> {
    names()
        .iter()
        .filter_map(|n| load(n).ok())
        .map(|s| s.subnet)
        .collect()
}

/// Whether process `pid` exists.
pub fn pid_alive(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subnets_are_allocated_in_order() {
        let (a, t) = free_subnet(&[]).unwrap();
        assert_eq!(a, Ipv4Addr::new(198, 18, 0, 0));
        let (b, _) = free_subnet(&[t]).unwrap();
        assert_eq!(b, Ipv4Addr::new(198, 18, 1, 0));
        let all: Vec<String> = (0..256).map(|i| format!("198.18.{i}.0/24")).collect();
        assert_eq!(free_subnet(&all).unwrap().0, Ipv4Addr::new(198, 19, 0, 0));
    }
}
