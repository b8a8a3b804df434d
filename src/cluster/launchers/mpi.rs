//! `--launch mpi:NAME`: only the ranks of the MPI `mpi:NAME`, started by
//! its own launcher (`mpirun`, `mpiexec`), which reaches the nodes by
//! `--rsh`'s program (told as its remote shell agent). wulf's own ranks and a matrix's agents need
//! another launcher; `wulf matrix --launch mpi:NAME` runs the whole
//! command once per node under the MPI's launcher instead
//! (`crate::launch::mpi::spread::launch_once_per_host`).

use std::net::{IpAddr, SocketAddr};

use anyhow::Result;

use super::{Entry, Launcher};
use crate::cluster::nodes::{NodeSlots, Spread};
use crate::error::usage;
use crate::exec::Agents;

/// Its line in the registry: never the default.
pub const ENTRY: Entry = Entry {
    forms: &["mpi:NAME"],
    default_here: |_| false,
    allocation: || None,
    make: |name, o| {
        // `--rsh` is the MPI launcher's remote shell too (issue 35 item 4).
        let ssh = super::ssh::Ssh::new(o)?;
        Ok(Box::new(Mpi {
            transport: format!("mpi:{}", name.unwrap_or_default()),
            rsh: ssh.rsh,
            remote_wulf: o.remote_wulf.clone(),
        }))
    },
};

/// The launcher of one MPI.
pub struct Mpi {
    /// The MPI transport whose ranks it starts (`mpi:openmpi`).
    pub transport: String,
    /// How its launcher reaches the nodes: `--rsh`'s program with ssh's
    /// options that never wait for a person.
    pub rsh: Vec<String>,
    /// wulf's path on the nodes (None: this wulf's own).
    pub remote_wulf: Option<String>,
}

impl Launcher for Mpi {
    fn name(&self) -> String {
        self.transport.clone()
    }

    fn place(
        self: std::sync::Arc<Self>,
        nodes: Option<Vec<NodeSlots>>,
        _ppn: usize,
    ) -> Result<Spread> {
        let (rsh, wulf) = (self.rsh.clone(), self.remote_wulf.clone());
        Spread::over(nodes, self, rsh, wulf, None)
    }

    fn coordinator_ip(&self, hosts: &[String]) -> Result<IpAddr> {
        crate::exec::address_toward_first(hosts)
    }

    fn start(&self, _hosts: &[String], _coordinator: SocketAddr, _secret: &str) -> Result<Agents> {
        Err(usage(format!(
            "--launch {0} starts {0}'s ranks only, not wulf's agents: give ssh, slurm, local or lab",
            self.transport
        )))
    }

    fn mpi_only(&self) -> Option<&str> {
        Some(&self.transport)
    }
}
