//! `--launch local`: simulated nodes, every process on this machine over
//! loopback, for testing the coordinator and the rank groups at scale
//! without a cluster.

use std::net::{IpAddr, SocketAddr};
use std::process::Command;

use anyhow::Result;

use super::{Entry, Launcher};
use crate::cluster::nodes::{NodeSlots, Spread};
use crate::exec::process::{agent_options, Process};
use crate::exec::{agent_args, credentials, Agents, SECRET_ENV};

/// Its line in the registry: never the default.
pub const ENTRY: Entry = Entry {
    forms: &["local"],
    default_here: |_| false,
    allocation: || None,
    make: |_, o| {
        Ok(Box::new(Local {
            remote_wulf: o.remote_wulf.clone(),
        }))
    },
};

/// Simulated nodes: processes on this machine.
pub struct Local {
    /// The wulf the simulated nodes run (`--remote-wulf`; None: this one).
    pub remote_wulf: Option<String>,
}

impl Launcher for Local {
    fn name(&self) -> String {
        "local".into()
    }

    fn place(
        self: std::sync::Arc<Self>,
        nodes: Option<Vec<NodeSlots>>,
        _ppn: usize,
    ) -> Result<Spread> {
        // No remote shell: each rank runs here through `sh -c`.
        let wulf = self.remote_wulf.clone();
        Spread::over(nodes, self, Vec::new(), wulf, None)
    }

    fn shares_cpus(&self) -> bool {
        true
    }

    fn mpi_can_reach(&self) -> bool {
        false
    }

    fn coordinator_ip(&self, _hosts: &[String]) -> Result<IpAddr> {
        Ok(IpAddr::from([127, 0, 0, 1]))
    }

    fn start(&self, hosts: &[String], coordinator: SocketAddr, secret: &str) -> Result<Agents> {
        let wulf = super::agent_wulf(&self.remote_wulf)?;
        let mut procs = Vec::with_capacity(hosts.len());
        for h in hosts {
            let mut cmd = Command::new(&wulf);
            // Its node's key alone: it cannot join under another name.
            cmd.args(agent_args(coordinator, Some(h)))
                .env(SECRET_ENV, credentials::for_node(secret, h));
            procs.push(Process::spawn(cmd, Some(h.clone()), &agent_options(None))?);
        }
        Ok(Agents::of(procs))
    }
}
