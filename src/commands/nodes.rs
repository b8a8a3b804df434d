//! `--hosts`, `--hostfile` and `--launch` of the commands that spread
//! processes over nodes (`wulf npb`, `wulf run`): into a named lab first,
//! else the hosts every later NPB run or MPI job is placed on.

use std::time::Duration;

use anyhow::Result;

use crate::cli::NodesArgs;
use crate::cluster::nodes::{node_slots, reach, spread, Reach, Spread};
use crate::error::usage;
use crate::result::{NpbNodeSlots, NpbNodes};

/// What the node options asked for.
pub enum Nodes {
    /// The command ran again in node1 of a named lab; its exit code.
    Relayed(i32),
    /// Processes go on these nodes (None: no node option, all here).
    Here(Option<Box<Spread>>),
}

/// Act on the node options: relay into the lab `--launch lab:NAME` names,
/// or the nodes to spread over (the caller puts their cluster in its run
/// context);
/// with none, inside a Slurm allocation, its nodes by srun.
/// Bad lists, unknown hosts and launchers are usage errors, before
/// anything starts; so is `--launch mpi:NAME` with other transports in
/// `via`.
pub fn prepare(
    n: &NodesArgs,
    via: Option<&[String]>,
    in_lab: bool,
    timeout: Duration,
) -> Result<Nodes> {
    // Inside a Slurm allocation (`salloc -N 4 wulf npb mg`) with no node
    // option: the allocation's nodes, reached by srun. Not as one task of
    // a launcher: there each task is a rank already.
    let from_allocation;
    let n = match std::env::var("SLURM_JOB_NODELIST") {
        Ok(list) if !n.given() && !in_lab && crate::launch::launched::task().is_none() => {
            from_allocation = NodesArgs {
                hosts: Some(list),
                launch: Some("slurm".into()),
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
    // In a lab node (`wulf lab exec`), the lab's nodes are the default.
    let in_a_lab = in_lab || std::env::var_os(crate::lab::ENV_LAB).is_some();
    let how = reach(n.launch.as_deref(), &n.rsh, in_a_lab).map_err(bad)?;
    if let (Reach::Mpi(m), Some(via)) = (&how, via) {
        if let Some(other) = via.iter().find(|v| v != &m) {
            return Err(usage(format!(
                "--launch {m} starts {m}'s ranks only, not {other}'s: give ssh, slurm, local or \
                 lab for wulf's own ranks"
            )));
        }
    }
    if let Some(name) = n.launch.as_deref().and_then(|l| l.strip_prefix("lab:")) {
        if !in_lab {
            return Ok(Nodes::Relayed(crate::lab::between::run_in_named_lab(name)?));
        }
    }
    let ppn = n.ppn as usize;
    let list = node_slots(n.hosts.as_deref(), n.hostfile.as_deref(), ppn).map_err(bad)?;
    let lab = match how {
        Reach::Lab => {
            let (st, node) = crate::lab::current()?;
            Some((crate::lab::cluster(&st, &node)?, st.name))
        }
        _ => None,
    };
    let s = spread(list, &how, lab, ppn, n.remote_wulf.clone(), timeout).map_err(bad)?;
    Ok(Nodes::Here(Some(Box::new(s))))
}

/// What an NPB result records about the nodes.
pub fn npb_nodes(s: &Spread) -> NpbNodes {
    NpbNodes {
        launch: s.launch.clone(),
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
