//! Agents as processes on this machine (`--launch local`).

use std::net::{IpAddr, SocketAddr};
use std::process::Command;

use anyhow::Result;

use super::process::{agent_options, Process};
use super::SECRET_ENV;
use super::{agent_args, Agents, Launcher};

/// Agents as processes on this machine, over loopback: simulated nodes
/// for testing the coordinator at scale (`--launch local`).
pub struct Local {
    /// The wulf to start (this one unless `--remote-wulf` says otherwise).
    pub wulf: String,
}

impl Launcher for Local {
    fn name(&self) -> String {
        "local".into()
    }

    fn coordinator_ip(&self, _hosts: &[String]) -> Result<IpAddr> {
        Ok(IpAddr::from([127, 0, 0, 1]))
    }

    fn start(&self, hosts: &[String], coordinator: SocketAddr, secret: &str) -> Result<Agents> {
        let mut procs = Vec::with_capacity(hosts.len());
        for h in hosts {
            let mut cmd = Command::new(&self.wulf);
            // Its node's key alone: it cannot join under another name.
            cmd.args(agent_args(coordinator, Some(h)))
                .env(SECRET_ENV, super::credentials::for_node(secret, h));
            procs.push(Process::spawn(cmd, Some(h.clone()), &agent_options(None))?);
        }
        Ok(Agents::of(procs))
    }
}
