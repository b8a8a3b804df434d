//! Agents as the tasks of one `srun` step (`--launch slurm`, chosen inside
//! an allocation).

use std::net::{IpAddr, SocketAddr};
use std::process::Command;

use anyhow::{Context, Result};

use super::process::{agent_options, Process};
use super::SECRET_ENV;
use super::{agent_args, resolve_host, Agents, Launcher};

/// Agents as the tasks of one `srun` step, one task per node; each names
/// itself after its node (SLURMD_NODENAME). srun passes the environment,
/// and with it the secret.
pub struct Slurm {
    /// wulf's path on the nodes.
    pub remote_wulf: String,
}

impl Launcher for Slurm {
    fn name(&self) -> String {
        "slurm".into()
    }

    fn coordinator_ip(&self, hosts: &[String]) -> Result<IpAddr> {
        let first = hosts.first().context("no hosts")?;
        super::local_address_toward(resolve_host(first)?)
    }

    fn start(&self, hosts: &[String], coordinator: SocketAddr, secret: &str) -> Result<Agents> {
        let mut cmd = Command::new("srun");
        cmd.arg(format!("--nodes={}", hosts.len()))
            .arg(format!("--ntasks={}", hosts.len()))
            .arg("--ntasks-per-node=1")
            .arg(format!("--nodelist={}", hosts.join(",")))
            .arg("--kill-on-bad-exit=0")
            .arg(&self.remote_wulf)
            .args(agent_args(coordinator, None))
            .env(SECRET_ENV, secret);
        Ok(Agents::of(vec![Process::spawn(
            cmd,
            None,
            &agent_options(None),
        )?]))
    }
}
