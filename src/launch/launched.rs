//! The other way round: `srun -N 8 wulf matrix` or `mpirun -np 8 --map-by
//! ppr:1:node wulf matrix`. The launcher starts wulf on every node; each
//! task reads its rank and the task count from the launcher's environment
//! (Slurm, Open MPI, or any PMI launcher such as MPICH's Hydra), rank 0
//! coordinates and measures as one of the nodes, the others become agents.
//!
//! Rank 0 tells the others where it listens through a rendezvous file in
//! the working directory (launchers start every task there, and clusters
//! share it): its addresses, its port and the run's secret, readable by
//! the user alone, written atomically and removed at the end. A task takes
//! only a file that is the user's own with mode 0600 (one planted by
//! someone else would steer it to their coordinator), and even then joins
//! only a coordinator that proves the secret back
//! ([`crate::cluster::protocol`]). The file is
//! named after the job where the launcher says which job it is (Slurm's
//! job and step, Open MPI's namespace); an agent takes only a file written
//! since shortly before it started, so a stale one from an earlier run is
//! never used.

use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

use crate::cluster::agent::{self, AgentOptions};
use crate::cluster::launchers::Launcher;
use crate::cluster::nodes::{NodeSlots, Spread};
use crate::cluster::sources::{
    addresses_path, own_uid, publish, read_private, write_private, Private, RankSources,
};
use crate::exec::Agents;

/// How far before an agent's start a rendezvous file may have been written
/// (tasks of one launch start within moments of each other).
const FRESHNESS: Duration = Duration::from_secs(60);

/// This process's place in a launch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Task {
    /// 0-based rank.
    pub rank: usize,
    /// Tasks in the launch.
    pub size: usize,
    /// `srun`, `mpirun` or `pmi`.
    pub launcher: &'static str,
    /// What names this launch, when the launcher says.
    pub job: Option<String>,
}

/// The launch this process is a task of, from the environment; None when
/// not started by a launcher or as its only task.
pub fn task() -> Option<Task> {
    task_from(|k| std::env::var(k).ok())
}

/// [`task`] over any environment lookup (for tests).
pub fn task_from(env: impl Fn(&str) -> Option<String>) -> Option<Task> {
    let num = |k: &str| env(k).and_then(|v| v.trim().parse::<usize>().ok());
    let t = if let (Some(rank), Some(size)) = (num("SLURM_PROCID"), num("SLURM_NTASKS")) {
        // Only a task of a step (srun), not a shell in an allocation.
        env("SLURM_STEP_ID")?;
        Task {
            rank,
            size,
            launcher: "srun",
            job: Some(format!(
                "slurm-{}.{}",
                env("SLURM_JOB_ID")?,
                env("SLURM_STEP_ID")?
            )),
        }
    } else if let (Some(rank), Some(size)) =
        (num("OMPI_COMM_WORLD_RANK"), num("OMPI_COMM_WORLD_SIZE"))
    {
        Task {
            rank,
            size,
            launcher: "mpirun",
            job: env("PMIX_NAMESPACE")
                .or_else(|| env("OMPI_MCA_ess_base_jobid"))
                .map(|j| format!("ompi-{j}")),
        }
    } else if let (Some(rank), Some(size)) = (num("PMI_RANK"), num("PMI_SIZE")) {
        Task {
            rank,
            size,
            launcher: "pmi",
            job: env("PMI_KVSNAME").map(|j| format!("pmi-{j}")),
        }
    } else {
        return None;
    };
    (t.size > 1 && t.rank < t.size).then_some(t)
}

/// What rank 0 publishes in the rendezvous file.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Meeting {
    /// The coordinator's addresses, tried in order.
    pub addresses: Vec<SocketAddr>,
    /// The run's secret (every task derives its node's key from it).
    pub secret: String,
}

/// The rendezvous file of `task` in `dir`.
pub fn rendezvous_path(dir: &Path, task: &Task) -> PathBuf {
    // SAFETY: getuid has no preconditions and cannot fail.
    let uid = unsafe { libc::getuid() };
    let job = task
        .job
        .clone()
        .unwrap_or_else(|| format!("{}-{uid}", task.launcher));
    let safe: String = job
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    dir.join(format!(".wulf-matrix-{safe}.json"))
}

/// Rank 0's launcher: nothing to start (the launcher did), the rendezvous
/// file to write, and this node's own agent to run beside the coordinator.
pub struct FromLauncher {
    /// The launch.
    pub task: Task,
    /// Where the rendezvous file goes.
    pub file: PathBuf,
    /// This node's name.
    pub name: String,
}

impl Launcher for FromLauncher {
    fn name(&self) -> String {
        format!("{} (tasks)", self.task.launcher)
    }

    fn place(
        self: std::sync::Arc<Self>,
        _nodes: Option<Vec<NodeSlots>>,
        _ppn: usize,
    ) -> Result<Spread> {
        // Never asked: its tasks are the nodes, placed by that launcher.
        Err(crate::error::usage(format!(
            "wulf started by {} places no nodes of its own",
            self.task.launcher
        )))
    }

    fn coordinator_ip(&self, _hosts: &[String]) -> Result<IpAddr> {
        // Which of its addresses the others reach is not known here: all
        // of them are published, the secret keeps strangers out.
        Ok(IpAddr::from([0, 0, 0, 0]))
    }

    fn start(&self, _hosts: &[String], coordinator: SocketAddr, secret: &str) -> Result<Agents> {
        let mut addresses: Vec<SocketAddr> = own_addresses()
            .into_iter()
            .map(|ip| SocketAddr::new(ip, coordinator.port()))
            .collect();
        addresses.push(SocketAddr::new(
            IpAddr::from([127, 0, 0, 1]),
            coordinator.port(),
        ));
        let meeting = Meeting {
            addresses: addresses.clone(),
            secret: secret.to_string(),
        };
        write_private(&self.file, &serde_json::to_vec(&meeting)?)?;
        // This node's agent serves where it reaches the coordinator: on its
        // first network address, where the other nodes can reach it too.
        let opts = AgentOptions {
            coordinator: addresses.clone(),
            name: self.name.clone(),
            secret: secret.to_string(),
            serve_inline: false,
        };
        std::thread::spawn(move || {
            if let Err(e) = agent::run(&opts) {
                eprintln!("wulf matrix: this node's agent failed: {e:#}");
            }
        });
        Ok(Agents::none())
    }
}

impl Drop for FromLauncher {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.file);
    }
}

/// A task of rank above 0: wait for rank 0's rendezvous file, then serve
/// as this node's agent until the run ends. A file that is not the user's
/// own, readable by the user alone, is refused at once ([`read_fresh`]).
pub fn join(file: &Path, rank: usize, name: String, timeout: Duration) -> Result<()> {
    let started = SystemTime::now();
    // Where this task connects from, for the coordinator's address check
    // (crate::cluster::sources), before it connects; removed at the end.
    let published = addresses_path(file, rank);
    publish(&published, &own_addresses())?;
    let _published = Removed(published);
    let deadline = Instant::now() + timeout.max(Duration::from_secs(10));
    let meeting = loop {
        if let Some(m) = read_fresh(file, started)? {
            break m;
        }
        if Instant::now() > deadline {
            bail!(
                "rank 0 did not publish {} within {}s (do all tasks share this directory?)",
                file.display(),
                timeout.as_secs()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    agent::run(&AgentOptions {
        coordinator: meeting.addresses,
        name,
        secret: meeting.secret,
        serve_inline: false,
    })
}

/// A file removed when dropped.
struct Removed(PathBuf);

impl Drop for Removed {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Where the coordinator of `task` (rank 0), whose rendezvous file is
/// `file`, takes its agents' addresses from: the other tasks' addresses
/// files, written since shortly before now.
pub fn rank_sources(file: &Path, task: &Task) -> RankSources {
    let since = SystemTime::now()
        .checked_sub(FRESHNESS)
        .unwrap_or(SystemTime::UNIX_EPOCH);
    RankSources::new(
        (1..task.size).map(|k| addresses_path(file, k)).collect(),
        since,
    )
}

/// Longest rendezvous file read: a few addresses and a secret.
const MAX_MEETING_BYTES: u64 = 64 << 10;

/// Rank 0's meeting from `file`, if it is there and was written since
/// shortly before `started` (None: not yet, or a stale one). Whoever can
/// write the file decides which coordinator this rank trusts with its
/// fingerprint and measures for, so a file that is not the user's own,
/// not a regular file, or open to others (rank 0 writes it mode 0600) is
/// an error (exit 3) naming the file and what it should be, never used.
pub fn read_fresh(file: &Path, started: SystemTime) -> Result<Option<Meeting>> {
    let refuse = |why: String| {
        crate::error::peer(format!(
            "refusing the rendezvous file {}: {why}; rank 0 writes it as a regular file owned \
             by you (uid {}) with mode 0600 (remove it if it is not yours, and run again)",
            file.display(),
            own_uid()
        ))
    };
    let (bytes, written) = match read_private(file, MAX_MEETING_BYTES)
        .with_context(|| "cannot read the rendezvous file".to_string())?
    {
        Private::Missing => return Ok(None),
        Private::Refused(why) => return Err(refuse(why)),
        Private::Read(bytes, written) => (bytes, written),
    };
    if written + FRESHNESS < started {
        return Ok(None);
    }
    // Written whole by a rename, so never half there: a file that does not
    // parse is not rank 0's.
    serde_json::from_slice(&bytes)
        .map(Some)
        .map_err(|e| refuse(format!("it is not a meeting of wulf's ranks ({e})")))
}

/// This machine's non-loopback IPv4 addresses.
fn own_addresses() -> Vec<IpAddr> {
    let Ok(addrs) = nix::ifaddrs::getifaddrs() else {
        return Vec::new();
    };
    let mut out: Vec<IpAddr> = addrs
        .filter_map(|i| i.address?.as_sockaddr_in().map(|a| IpAddr::V4(a.ip())))
        .filter(|ip| !ip.is_loopback())
        .collect();
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let m: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k| m.get(k).cloned()
    }

    #[test]
    fn launchers_are_read_from_the_environment() {
        let t = task_from(env(&[
            ("SLURM_PROCID", "2"),
            ("SLURM_NTASKS", "4"),
            ("SLURM_JOB_ID", "17"),
            ("SLURM_STEP_ID", "0"),
        ]))
        .unwrap();
        assert_eq!((t.rank, t.size, t.launcher), (2, 4, "srun"));
        assert_eq!(t.job.as_deref(), Some("slurm-17.0"));
        // A shell in an allocation is not a task.
        assert!(task_from(env(&[("SLURM_PROCID", "0"), ("SLURM_NTASKS", "4")])).is_none());
        let t = task_from(env(&[
            ("OMPI_COMM_WORLD_RANK", "0"),
            ("OMPI_COMM_WORLD_SIZE", "3"),
            ("PMIX_NAMESPACE", "99@1"),
        ]))
        .unwrap();
        assert_eq!((t.rank, t.launcher), (0, "mpirun"));
        assert!(rendezvous_path(Path::new("/d"), &t).ends_with(".wulf-matrix-ompi-99_1.json"));
        let t = task_from(env(&[("PMI_RANK", "1"), ("PMI_SIZE", "2")])).unwrap();
        assert_eq!((t.launcher, t.job.as_deref()), ("pmi", None));
        // One task alone measures nothing between nodes.
        assert!(task_from(env(&[("PMI_RANK", "0"), ("PMI_SIZE", "1")])).is_none());
        assert!(task_from(env(&[])).is_none());
    }

    #[test]
    fn only_the_users_own_private_rendezvous_file_is_read() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join(".wulf-matrix-x.json");
        let now = SystemTime::now();
        assert!(read_fresh(&file, now).unwrap().is_none(), "not there yet");
        let meeting = br#"{"addresses":["127.0.0.1:9"],"secret":"s"}"#;
        write_private(&file, meeting).unwrap();
        let m = read_fresh(&file, now).unwrap().unwrap();
        assert_eq!(m.secret, "s");
        // Stale: left by an earlier run.
        let later = now + FRESHNESS + Duration::from_secs(5);
        assert!(read_fresh(&file, later).unwrap().is_none());
        // Open to others: refused, naming the file and the mode.
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
        let e = format!("{:#}", read_fresh(&file, now).unwrap_err());
        assert!(
            e.contains(".wulf-matrix-x.json") && e.contains("0644") && e.contains("0600"),
            "{e}"
        );
        // Through a symbolic link: refused.
        let link = dir.path().join("link.json");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        let e = format!("{:#}", read_fresh(&link, now).unwrap_err());
        assert!(e.contains("symbolic link"), "{e}");
        // Not a meeting.
        std::fs::write(&file, b"{}").unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert!(read_fresh(&file, now).is_err());
        // Another user's (only root can make one here).
        if own_uid() == 0 {
            write_private(&file, meeting).unwrap();
            std::os::unix::fs::chown(&file, Some(65534), Some(65534)).unwrap();
            let e = format!("{:#}", read_fresh(&file, now).unwrap_err());
            assert!(e.contains("owned by uid 65534"), "{e}");
        }
    }
}
