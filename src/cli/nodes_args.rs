//! The node list of commands that spread processes over nodes (`wulf npb`,
//! `wulf run`): which nodes, how many processes each, how to reach them.
//! Both commands also take `--lab`, which the node options exclude.

use std::path::PathBuf;

use clap::Args;

/// `--hosts`, `--hostfile`, `--launch` and their companions.
#[derive(Debug, Clone, Default, Args)]
pub struct NodesArgs {
    /// Nodes to spread the processes over, comma-separated; Slurm's
    /// compact syntax works (`node[01-16,20]`).
    #[arg(long, value_name = "LIST", conflicts_with_all = ["hostfile", "lab"])]
    pub hosts: Option<String>,
    /// A file naming the nodes, one per line; MPI's `slots=N` gives a
    /// node N processes.
    #[arg(long, value_name = "FILE", conflicts_with = "lab")]
    pub hostfile: Option<PathBuf>,
    /// Processes per node where the hostfile gives no `slots=` (ranks
    /// fill a node before the next, as MPI's by-slot mapping).
    #[arg(long, default_value_t = 1, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=1024))]
    pub ppn: u64,
    /// How wulf starts its own processes on the nodes: ssh, slurm,
    /// mpi:NAME (that MPI's ranks only), local (simulated nodes on this
    /// machine) or lab[:NAME]. Default:
    /// srun inside a Slurm allocation, the lab's remote shell in a lab,
    /// else ssh. MPI transports always start their ranks with their own
    /// launcher, given the same nodes.
    #[arg(long, value_name = "HOW", conflicts_with = "lab")]
    pub launch: Option<String>,
    /// Where wulf is on the nodes (default: this wulf's own path).
    #[arg(long, value_name = "PATH")]
    pub remote_wulf: Option<String>,
    /// The ssh program and its options for `--launch ssh`; BatchMode, a
    /// connect timeout and accept-new host keys are always added.
    #[arg(long, default_value = "ssh", value_name = "COMMAND")]
    pub rsh: String,
}

impl NodesArgs {
    /// Whether any node option was given.
    pub fn given(&self) -> bool {
        self.hosts.is_some() || self.hostfile.is_some() || self.launch.is_some()
    }
}
