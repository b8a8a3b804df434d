//! Agents as the ranks of one MPI job (`wulf matrix --via mpi:NAME`): the
//! MPI's own launcher places one rank per node, and each rank joins the
//! coordinator as that node's agent. The cells are then measured between
//! ranks over the MPI's own point-to-point calls, with the same schedule,
//! sweeps and statistics as a matrix over tcp.
//!
//! Ranks can set up MPI channels only on the thread that initialised MPI,
//! so the measured agent of a pair serves on its main thread while the
//! coordinator has it serve ([`crate::cluster::protocol::Order::Serve`]); this is
//! why such a matrix measures one directed pair per agent at a time (the
//! tournament of pairs, not the shift or multi-pair patterns, where one
//! node measures and serves at once).

use std::net::{IpAddr, SocketAddr};
use std::process::Command;
use std::time::Duration;

use anyhow::{Context, Result};

use crate::cluster::launchers::Launcher;
use crate::cluster::nodes::{NodeSlots, Spread};
use crate::exec::Agents;

/// One MPI job whose ranks are the agents.
pub struct MpiRanks {
    /// The transport (`mpi:openmpi`, `mpi:mpich(tcp)`...).
    pub via: String,
    /// The command's run context (its cluster places the job in a lab).
    pub ctx: super::RunContext,
    /// Bound of an MPI call that makes no progress in a rank.
    pub timeout: Duration,
}

impl Launcher for MpiRanks {
    fn name(&self) -> String {
        self.via.clone()
    }

    fn place(
        self: std::sync::Arc<Self>,
        _nodes: Option<Vec<NodeSlots>>,
        _ppn: usize,
    ) -> Result<Spread> {
        // Never asked: `--via` chooses it for the agents alone.
        Err(crate::error::usage(format!(
            "--via {}: the MPI's ranks are agents, not placed nodes",
            self.via
        )))
    }

    fn coordinator_ip(&self, hosts: &[String]) -> Result<IpAddr> {
        crate::exec::address_toward_first(hosts)
    }

    fn start(&self, hosts: &[String], coordinator: SocketAddr, secret: &str) -> Result<Agents> {
        let dir = tempfile::Builder::new()
            .prefix("wulf-matrix-mpi-")
            .tempdir()
            .context("cannot create a directory for the MPI job")?;
        let (argv, env) = super::mpi::spread::agent_job(
            &self.ctx,
            &self.via,
            hosts,
            dir.path(),
            coordinator,
            secret,
            self.timeout,
        )?;
        let mut cmd = Command::new(&argv[0]);
        cmd.args(&argv[1..]).envs(env);
        Agents::one_for_all(cmd, dir)
    }
}
