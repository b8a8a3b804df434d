//! `--launch slurm` (the default inside a Slurm allocation): agents as the
//! tasks of one `srun` step; ranks as one-task srun steps, through a
//! small rsh-compatible script.

use std::net::{IpAddr, SocketAddr};
use std::path::Path;
use std::process::Command;

use anyhow::{Context, Result};

use super::{Entry, Launcher};
use crate::cluster::nodes::{NodeSlots, Spread};
use crate::exec::process::{agent_options, Process};
use crate::exec::{agent_args, Agents, SECRET_ENV};

/// Its line in the registry: the default inside an allocation.
pub const ENTRY: Entry = Entry {
    forms: &["slurm"],
    default_here: |_| std::env::var_os("SLURM_JOB_ID").is_some(),
    allocation: || std::env::var("SLURM_JOB_NODELIST").ok(),
    make: |_, o| {
        Ok(Box::new(Slurm {
            remote_wulf: o.remote_wulf.clone(),
        }))
    },
};

/// Nodes of a Slurm allocation, reached by srun.
pub struct Slurm {
    /// wulf's path on the nodes (None: this wulf's own).
    pub remote_wulf: Option<String>,
}

impl Launcher for Slurm {
    fn name(&self) -> String {
        "slurm".into()
    }

    fn place(
        self: std::sync::Arc<Self>,
        nodes: Option<Vec<NodeSlots>>,
        _ppn: usize,
    ) -> Result<Spread> {
        let dir = tempfile::Builder::new()
            .prefix("wulf-srun-")
            .tempdir()
            .context("cannot make a directory for the srun script")?;
        let script = srun_script(dir.path())?;
        let wulf = self.remote_wulf.clone();
        Spread::over(nodes, self, vec![script], wulf, Some(dir))
    }

    fn coordinator_ip(&self, hosts: &[String]) -> Result<IpAddr> {
        crate::exec::address_toward_first(hosts)
    }

    /// One task per node, each naming itself after its node
    /// (SLURMD_NODENAME); srun passes the environment, and with it the
    /// secret.
    fn start(&self, hosts: &[String], coordinator: SocketAddr, secret: &str) -> Result<Agents> {
        let wulf = super::agent_wulf(&self.remote_wulf)?;
        // `hosts` are processes, `HOST/K` with several per node (`--ppn`).
        let machines = crate::cluster::nodes::machines(hosts);
        let ppn = hosts.len() / machines.len().max(1);
        let mut cmd = Command::new("srun");
        cmd.arg(format!("--nodes={}", machines.len()))
            .arg(format!("--ntasks={}", hosts.len()))
            .arg(format!("--ntasks-per-node={ppn}"))
            .arg(format!("--nodelist={}", machines.join(",")))
            .env(super::PPN_ENV, ppn.to_string())
            .arg("--kill-on-bad-exit=0")
            .arg(&wulf)
            .args(agent_args(coordinator, None))
            .env(SECRET_ENV, secret);
        Ok(Agents::of(vec![Process::spawn(
            cmd,
            None,
            &agent_options(None),
        )?]))
    }
}

/// An rsh-compatible script that runs a command on a node as a one-task
/// srun step (`--overlap`: beside the other steps of the run).
fn srun_script(dir: &Path) -> Result<String> {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join("srun-rsh");
    let text = "#!/bin/sh\nh=\"$1\"; shift\n\
                exec srun --nodes=1 --ntasks=1 --overlap --kill-on-bad-exit=1 --nodelist=\"$h\" sh -c \"$*\"\n";
    std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))?;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))?;
    Ok(path.display().to_string())
}
