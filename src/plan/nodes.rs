//! `--hosts`, `--hostfile` and `--launch` of the commands that spread
//! processes over nodes (`wulf npb`, `wulf run`): into a named lab first,
//! else the hosts every later NPB run or MPI job is placed on.

use std::time::Duration;

use anyhow::Result;

use crate::cli::NodesArgs;
use crate::cluster::launchers;
use crate::cluster::nodes::{node_slots, Spread};
use crate::error::usage;
use crate::launch::RunContext;
use crate::result::{NpbNodeSlots, NpbNodes};

/// What the node options asked for.
pub enum Nodes {
    /// The command ran again in node1 of a named lab; its exit code.
    Relayed(i32),
    /// Processes go on these nodes (None: no node option, all here); the
    /// run context has their cluster and launcher.
    Here(Option<Box<Spread>>),
}

/// Act on the node options: relay into the lab `--launch lab:NAME` names,
/// or the nodes to spread over, whose cluster and launcher go in `ctx`;
/// with none, inside a batch job (a Slurm allocation), its nodes by its
/// launcher (srun).
/// Bad lists, unknown hosts and launchers are usage errors, before
/// anything starts; so is `--launch mpi:NAME` with other transports in
/// `via`.
pub fn prepare(
    ctx: &mut RunContext,
    n: &NodesArgs,
    via: Option<&[String]>,
    in_lab: bool,
    timeout: Duration,
) -> Result<Nodes> {
    // Inside a batch job (`salloc -N 4 wulf npb mg`) with no node option:
    // the job's nodes, reached by its launcher (srun). Not as one task of
    // a launcher: there each task is a rank already.
    let from_allocation;
    let n = match launchers::allocation() {
        Some((list, launch))
            if !n.given() && !in_lab && crate::launch::launched::task().is_none() =>
        {
            from_allocation = NodesArgs {
                hosts: Some(list),
                launch: Some(launch.into()),
                ..n.clone()
            };
            &from_allocation
        }
        _ => n,
    };
    if !n.given() {
        return Ok(Nodes::Here(None));
    }
    let bad = |e: anyhow::Error| usage(format!("{e:#}"));
    let launcher = launchers::parse(
        n.launch.as_deref(),
        &launchers::Options {
            rsh: n.rsh.clone(),
            remote_wulf: n.remote_wulf.clone(),
            timeout,
            // In a lab node (`wulf lab exec`), the lab's nodes are the
            // default.
            in_lab: in_lab || std::env::var_os(crate::lab::ENV_LAB).is_some(),
        },
    )?;
    if let (Some(m), Some(via)) = (launcher.mpi_only(), via) {
        if let Some(other) = via.iter().find(|v| v.as_str() != m) {
            return Err(usage(format!(
                "--launch {m} starts {m}'s ranks only, not {other}'s: give ssh, slurm, local or \
                 lab for wulf's own ranks"
            )));
        }
    }
    if let Some(name) = launcher.lab_to_enter() {
        if !in_lab {
            return Ok(Nodes::Relayed(crate::lab::between::run_in_named_lab(name)?));
        }
    }
    let ppn = n.ppn as usize;
    let list = node_slots(n.hosts.as_deref(), n.hostfile.as_deref(), ppn).map_err(bad)?;
    let s = launcher.clone().place(list, ppn).map_err(bad)?;
    ctx.cluster = Some(s.cluster.clone());
    ctx.launcher = Some(launcher);
    Ok(Nodes::Here(Some(Box::new(s))))
}

/// What an NPB result records about the nodes.
pub fn npb_nodes(s: &Spread) -> NpbNodes {
    NpbNodes {
        launch: s.launch_name.clone(),
        hosts: s
            .nodes
            .iter()
            .map(|(name, slots)| NpbNodeSlots {
                name: name.clone(),
                slots: *slots,
            })
            .collect(),
    }
}
