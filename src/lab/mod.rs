//! The link lab: an emulated Beowulf cluster on one machine.
//!
//! Nodes are network namespaces with their own host names, joined through
//! a bridge that plays the switch, each node's link shaped to Fast Ethernet,
//! Gigabit Ethernet or any rate, with any MTU. A lab outlives the command
//! that made it (`wulf lab up`), or lives for one measurement (`--lab`).
//!
//! * [`spec`]: what a lab is asked to be (parsing only);
//! * [`shaper`]: the shaper's parameters and why (pure);
//! * [`build`]: making and removing namespaces, links and shapers;
//! * [`state`]: the lab on disk, under `/run/wulf/lab/NAME/`;
//! * [`status`]: the lab as the kernel reports it;
//! * [`between`]: running a wulf command between two nodes of a temporary
//!   lab (what `--lab` does).
//!
//! Traffic stays in the lab: addresses come from 198.18.0.0/15 (RFC 2544's
//! benchmark range), the root namespace gets no route to them, and every
//! process that sends to them runs inside a node.

pub mod between;
pub mod build;
pub mod hub;
pub mod shaper;
pub mod spec;
pub mod state;
pub mod status;
mod system;

use std::ffi::OsString;
use std::net::IpAddr;
use std::process::Command;

use anyhow::{Context, Result};

pub use spec::{LabSpec, LinkOptions, LinkRate};
pub use state::LabState;
pub use system::check_can_build;

use crate::result::{LabLink, LabPlacement};
use crate::transport::{Cluster, ClusterHost};

/// Environment variable naming the lab a process runs in.
pub const ENV_LAB: &str = "WULF_LAB";
/// Environment variable naming the node a process runs in.
pub const ENV_NODE: &str = "WULF_LAB_NODE";
/// A node's interface to the switch (see [`build`]).
pub const NODE_INTERFACE: &str = "eth0";

/// A command that runs `argv` inside `node` of lab `st`: in the node's
/// network namespace (with /sys and /etc/hosts of the node, as `ip netns
/// exec` arranges) and its UTS namespace (its host name).
pub fn command_in(st: &LabState, node: &str, argv: &[OsString]) -> Result<Command> {
    let n = st.node(node)?;
    let mut c = Command::new("ip");
    c.args(["netns", "exec", &n.netns, "nsenter"])
        .arg(format!("--uts={}", n.uts_file.display()))
        .arg("--")
        .args(argv)
        .env(ENV_LAB, &st.name)
        .env(ENV_NODE, &n.name);
    Ok(c)
}

/// The placement of a process running in a lab node (from [`ENV_LAB`] and
/// [`ENV_NODE`]), with the node holding `peer` as the server node. `None`
/// outside a lab.
pub fn placement(peer: Option<IpAddr>) -> Option<LabPlacement> {
    let (st, node) = here()?;
    let server = peer.and_then(|ip| st.nodes.iter().find(|n| IpAddr::V4(n.address) == ip));
    let mut names = vec![node.clone()];
    names.extend(server.filter(|s| s.name != node).map(|s| s.name.clone()));
    Some(LabPlacement {
        links: links_of(&st, &names),
        medium: st.impairments.hub.then(|| "hub".to_string()),
        name: st.name,
        client_node: node,
        server_node: server.map(|s| s.name.clone()),
    })
}

/// The placement of a group of processes spread over the first `nodes`
/// nodes of [`cluster`]'s order by a process in a lab node: this node as
/// the client node, no server node, the links of every node used. `None`
/// outside a lab.
pub fn group_placement(nodes: usize) -> Option<LabPlacement> {
    let (st, node) = here()?;
    let names: Vec<String> = in_cluster_order(&st, &node)
        .take(nodes)
        .map(|n| n.name.clone())
        .collect();
    Some(LabPlacement {
        links: links_of(&st, &names),
        medium: st.impairments.hub.then(|| "hub".to_string()),
        name: st.name,
        client_node: node,
        server_node: None,
    })
}

/// Whether this process runs in a lab node (its environment names one).
pub fn in_node() -> bool {
    std::env::var_os(ENV_NODE).is_some()
}

/// The lab and node this process runs in, from the environment.
fn here() -> Option<(LabState, String)> {
    let name = std::env::var(ENV_LAB).ok()?;
    let node = std::env::var(ENV_NODE).ok()?;
    Some((state::load(&name).ok()?, node))
}

fn links_of(st: &LabState, names: &[String]) -> Vec<LabLink> {
    names
        .iter()
        .filter_map(|name| st.nodes.iter().find(|n| &n.name == name))
        .map(|n| LabLink {
            node: n.name.clone(),
            link: n.link.rate.name.clone(),
            rate_bits_per_s: n.link.rate.bits_per_s,
            mtu_bytes: n.link.mtu_bytes,
            shaper: n.shaper.qdisc.clone(),
            burst_bytes: n.shaper.burst_bytes,
            free_burst_bytes: n.shaper.free_burst_bytes,
        })
        .collect()
}

/// The lab this process runs in, and its node: what `--in-lab` spreads
/// over. An error outside a lab node.
pub fn current() -> Result<(LabState, String)> {
    let name = std::env::var(ENV_LAB).map_err(|_| {
        crate::error::usage(
            "--in-lab: this process is not in a lab node (run it with `wulf lab exec`, or give --lab)",
        )
    })?;
    let st = state::load(&name)?;
    let node = std::env::var(ENV_NODE).unwrap_or_else(|_| "node1".into());
    st.node(&node)?;
    Ok((st, node))
}

/// The nodes starting with `first` and going round in order (node2,
/// node3, node1 for node2 of three).
fn in_cluster_order<'a>(
    st: &'a LabState,
    first: &str,
) -> impl Iterator<Item = &'a state::NodeState> {
    let start = st.nodes.iter().position(|n| n.name == first).unwrap_or(0);
    st.nodes.iter().cycle().skip(start).take(st.nodes.len())
}

/// Lab `st` seen from its node `here` as a [`Cluster`]: its nodes, `here`
/// first, reached through `wulf lab rsh` (which runs a command in a node),
/// talking over the lab subnet on [`NODE_INTERFACE`].
pub fn cluster(st: &LabState, here: &str) -> Result<Cluster> {
    let exe = std::env::current_exe().context("cannot find wulf's own executable")?;
    Ok(Cluster {
        hosts: in_cluster_order(st, here)
            .map(|n| ClusterHost {
                name: n.name.clone(),
                address: IpAddr::V4(n.address),
            })
            .collect(),
        rsh: vec![
            exe.display().to_string(),
            "lab".into(),
            "rsh".into(),
            "--name".into(),
            st.name.clone(),
        ],
        subnet: st.subnet.clone(),
        interface: NODE_INTERFACE.into(),
        link_bits_per_s: st.nodes.iter().map(|n| n.link.rate.bits_per_s).min(),
        remote_wulf: None,
    })
}

/// The warning for a result measured in a lab whose points ran faster
/// than the path's TCP goodput `limit_bits_per_s`: a token bucket lets an
/// idle link's first frames through without their serialization time, and
/// no queueing discipline of a kernel without netem, fq or hfsc can delay
/// them. `None` when no point beat the link.
pub fn free_burst_warning(
    lab: &LabPlacement,
    points: &[crate::result::Point],
    limit_bits_per_s: f64,
) -> Option<String> {
    let above: Vec<&crate::result::Point> = points
        .iter()
        .filter(|p| p.bits_per_s > limit_bits_per_s)
        .collect();
    let largest = above.iter().map(|p| p.bytes).max()?;
    let free = lab
        .links
        .iter()
        .map(|l| l.free_burst_bytes)
        .max()
        .unwrap_or(0);
    Some(format!(
        "{} of {} points ran faster than the link's {:.1} Mbit/s (largest {largest} B): after an idle link the shaper lets up to {free} B (two frames) through without their serialization time, and this kernel has no queueing discipline that can delay a frame by it (netem is missing); read the link's rate from the larger sizes",
        above.len(),
        points.len(),
        limit_bits_per_s / 1e6
    ))
}

/// A lab made for one command and removed when dropped: at the end of the
/// command, on error, after Ctrl-C, SIGTERM or SIGHUP (the command stops
/// gracefully and returns, or `exec::owned` removes it when it does not
/// within a few seconds). Only `kill -9` leaves it behind, to `wulf lab
/// down --all`.
pub struct TempLab {
    /// The lab.
    pub state: LabState,
    /// Its removal, registered as this command's before its first
    /// namespace existed: a signal that ends the command at once (a second
    /// one, or the watchdog's) removes it too (`exec::owned`).
    _owned: crate::exec::owned::Owned,
}

impl TempLab {
    /// Make a temporary lab of `nodes` nodes.
    pub fn up(nodes: usize, options: &LinkOptions) -> Result<TempLab> {
        let spec = options.for_nodes(nodes).map_err(crate::error::usage)?;
        let name = format!("t{}", std::process::id());
        // A lab of this name can only be left by a dead process whose pid
        // was reused.
        if state::load(&name).is_ok_and(|s| s.orphaned()) {
            build::remove(&name, None);
        }
        let removal = name.clone();
        let owned = crate::exec::owned::cleanup(move || build::remove(&removal, None));
        Ok(TempLab {
            state: build::up(&name, &spec, true)?,
            _owned: owned,
        })
    }
}

impl Drop for TempLab {
    fn drop(&mut self) {
        build::remove(&self.state.name, Some(&self.state));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn link(node: &str, name: &str, mtu: u32) -> LabLink {
        LabLink {
            node: node.into(),
            link: name.into(),
            rate_bits_per_s: 100_000_000,
            mtu_bytes: mtu,
            shaper: "htb".into(),
            burst_bytes: 1514,
            free_burst_bytes: 1514,
        }
    }

    #[test]
    fn placements_describe_themselves() {
        let mut p = LabPlacement {
            name: "t1".into(),
            client_node: "node1".into(),
            server_node: Some("node2".into()),
            links: vec![link("node1", "fe", 1500), link("node2", "ge", 9000)],
            medium: None,
        };
        assert_eq!(
            p.describe(),
            "lab t1: node1 (fe, MTU 1500) -> node2 (ge, MTU 9000)"
        );
        p.server_node = None;
        assert_eq!(
            p.describe(),
            "lab t1: node1 (fe, MTU 1500), node2 (ge, MTU 9000)"
        );
    }
}
