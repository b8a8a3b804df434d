//! The run context: what one command runs with, built once by the command
//! from its arguments and handed down to everything that places or starts
//! processes (see ARCHITECTURE.md, "No process globals").
//!
//! Before it, the cluster to spread over and the MPI options were process
//! globals set by the command and read deep below; two commands in one
//! process (the tests, `wulf run`'s parts) could see each other's. Now a
//! lookup of a transport or a placement takes the context it is for. What
//! is still process-wide is documented where it lives: the stop flag
//! ([`crate::exec::INTERRUPTED`], set by the Ctrl-C handler) and caches of
//! facts about the machine (MPI installations found, the limits measured).

use std::sync::Arc;

use crate::cluster::launchers::Launcher;
use crate::transport::cluster::Cluster;
use crate::transport::{self, ExtraOptions, Transport};

/// What one command runs with.
#[derive(Debug, Clone, Default)]
pub struct RunContext {
    /// Options only some transports use (`--mpi`, `--mpi-arg`, `--window`).
    pub transports: ExtraOptions,
    /// The hosts processes are spread over, one per host (`--lab`'s nodes,
    /// `--hosts`, a Slurm allocation); None: everything on this host.
    pub cluster: Option<Cluster>,
    /// How the nodes are reached (`--launch`, parsed once by
    /// [`crate::cluster::launchers::parse`]); None: no node list.
    pub launcher: Option<Arc<dyn Launcher>>,
}

impl RunContext {
    /// A context with these transport options and no cluster.
    pub fn with_transports(transports: ExtraOptions) -> RunContext {
        RunContext {
            transports,
            cluster: None,
            launcher: None,
        }
    }

    /// The transport called `name`, if wulf knows it here.
    pub fn find(&self, name: &str) -> Option<Box<dyn Transport>> {
        transport::find(name, &self.transports)
    }

    /// Every transport wulf knows here, in `wulf run`'s order.
    pub fn registry(&self) -> Vec<Box<dyn Transport>> {
        transport::registry(&self.transports)
    }

    /// Names of all transports, for error messages.
    pub fn names(&self) -> Vec<&'static str> {
        transport::names(&self.transports)
    }

    /// The transport called `name`, or a usage error that lists the known
    /// ones.
    pub fn find_or_usage(&self, name: &str) -> anyhow::Result<Box<dyn Transport>> {
        transport::resolve(name, &self.transports)
    }

    /// The MPI transport whose ranks alone the launcher starts
    /// (`--launch mpi:NAME`), if it is an MPI's launcher.
    pub fn mpi_only(&self) -> Option<&str> {
        self.launcher.as_deref().and_then(|l| l.mpi_only())
    }

    /// Whether processes are spread over several hosts.
    pub fn spread(&self) -> bool {
        self.cluster.is_some()
    }
}
