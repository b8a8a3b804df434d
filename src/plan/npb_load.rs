//! `--load network` for ranks spread over lab nodes (NAS runs, MPI
//! sweeps): the load runs between two nodes that hold ranks, a sender in
//! this node (where the command runs: node1 under `--lab`) and a sink in
//! another, so that its stream crosses the lab links the ranks talk over
//! (issue 30, item 3). Without it the stream would stay on this node's
//! loopback and cross none of them.
//!
//! The sink is a `wulf serve --once --allow-load` started in the other
//! node for the load alone (bound to that node's lab address, taking only
//! this node's address, no secret: the lab's network reaches nothing
//! else), and the load's stream is its sink session, exactly as with
//! `--peer`. It ends with the load: the stream and the session close, the
//! server exits, and what is left of it is killed.
//!
//! Where no such pair exists the load stays on loopback and the result
//! says so ([`crate::load::network_path_note`]): ranks on hosts reached
//! by ssh, Slurm or an MPI launcher (wulf starts no server there), or a
//! lab node list that leaves out the node this command runs in.

use std::ffi::OsString;
use std::net::{IpAddr, Ipv4Addr};
use std::time::Duration;

use anyhow::{Context, Result};

use crate::exec::local_peer::LocalPeer;
use crate::launch::RunContext;
use crate::load::{LoadSpec, NetworkTarget};
use crate::peer::protocol::{ControlChannel, SinkAsk};

/// How long the sink's server may take to listen (a fresh process in a
/// namespace, on a busy machine).
const SINK_START_TIMEOUT: Duration = Duration::from_secs(20);

/// How long the sink's server is given to exit on its own once the load
/// closed its session, before it is killed.
const SINK_EXIT_GRACE: Duration = Duration::from_secs(2);

/// Longest the sink reads, seconds (the server's own cap, an hour): the
/// load's stream is closed with the run anyway; this bounds a sink whose
/// client hangs.
const SINK_SECONDS: u64 = crate::peer::sink::MAX_SINK_SECONDS;

/// The node of `lab_nodes` that takes the sink for ranks on `rank_hosts`
/// (in rank order) sent from `here`: the first rank host that is another
/// node of the lab. None when `here` holds no rank (a stream from here
/// would cross none of the links between the ranks' nodes) or no other
/// lab node holds one.
pub fn sink_node<'a>(
    here: &str,
    rank_hosts: &'a [String],
    lab_nodes: &[String],
) -> Option<&'a str> {
    if !rank_hosts.iter().any(|h| h == here) {
        return None;
    }
    rank_hosts
        .iter()
        .find(|h| h.as_str() != here && lab_nodes.contains(h))
        .map(String::as_str)
}

/// The network load's target for `ranks` ranks placed on `ctx`'s cluster
/// from a lab node: a sink in another node holding a rank. None without a
/// network load among `loads`, outside a lab, or where [`sink_node`]
/// finds no pair (the load then runs on loopback, and the result says
/// so). An error when the sink cannot be started or refuses the load.
pub fn lab_network_target(
    ctx: &RunContext,
    ranks: usize,
    loads: &[LoadSpec],
    timeout: Duration,
) -> Result<Option<NetworkTarget>> {
    let Some(rate) = loads.iter().find_map(|l| match *l {
        LoadSpec::Network { rate_bits_per_s } => Some(rate_bits_per_s),
        _ => None,
    }) else {
        return Ok(None);
    };
    let (Some(cluster), Some(_)) = (&ctx.cluster, std::env::var_os(crate::lab::ENV_LAB)) else {
        return Ok(None);
    };
    let (st, here) = crate::lab::current()?;
    let hosts: Vec<String> = cluster
        .hosts
        .iter()
        .take(ranks.max(1))
        .map(|h| h.name.clone())
        .collect();
    let nodes: Vec<String> = st.nodes.iter().map(|n| n.name.clone()).collect();
    let Some(node) = sink_node(&here, &hosts, &nodes) else {
        return Ok(None);
    };
    let (from, to) = (st.node(&here)?.address, st.node(node)?.address);
    let peer = start_sink_server(&st, node, from, to)
        .with_context(|| format!("--load network across the lab: no sink in {node}"))?;
    let ask = SinkAsk {
        rate_bits_per_s: rate,
        seconds: SINK_SECONDS,
    };
    let sink = crate::peer::sink::open(peer.addr, None, ask, timeout)
        .with_context(|| format!("--load network across the lab: the sink in {node}"))?;
    Ok(Some(NetworkTarget {
        stream: sink.stream,
        path: format!("lab link {here} -> {node} (to {})", sink.to),
        keep: Box::new(LabSink {
            control: Some(sink.control),
            server: Some(peer),
        }),
    }))
}

/// `wulf serve` for one sink session in `node`, bound to its lab address
/// `to`, taking connections from `from` alone.
fn start_sink_server(
    st: &crate::lab::LabState,
    node: &str,
    from: Ipv4Addr,
    to: Ipv4Addr,
) -> Result<LocalPeer> {
    let exe = std::env::current_exe().context("cannot find wulf's own executable")?;
    let argv: Vec<OsString> = vec![
        exe.into(),
        "serve".into(),
        "--once".into(),
        "--announce".into(),
        "--port".into(),
        "0".into(),
        "--bind".into(),
        to.to_string().into(),
        "--allow".into(),
        from.to_string().into(),
        "--allow-load".into(),
        "--max-session".into(),
        format!("{SINK_SECONDS}s").into(),
    ];
    let mut cmd = crate::lab::command_in(st, node, &argv)?;
    // The load's client proves no secret: a secret of the environment
    // would make this server ask for one.
    cmd.env_remove("WULF_SECRET");
    LocalPeer::spawn(cmd, IpAddr::V4(to), SINK_START_TIMEOUT)
}

/// What lives as long as the load's stream: the sink's session, then its
/// server.
struct LabSink {
    control: Option<ControlChannel>,
    server: Option<LocalPeer>,
}

impl Drop for LabSink {
    fn drop(&mut self) {
        // The session first: its end ends the sink, and a `--once`
        // server exits after it.
        drop(self.control.take());
        if let Some(s) = self.server.take() {
            s.finish(SINK_EXIT_GRACE);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::sink_node;

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn the_sink_goes_to_another_node_holding_a_rank_and_only_from_one() {
        let lab = names(&["node1", "node2", "node3"]);
        let two = names(&["node1", "node2"]);
        assert_eq!(sink_node("node1", &two, &lab), Some("node2"));
        // Several ranks per node: the first other node.
        let packed = names(&["node1", "node1", "node3", "node3"]);
        assert_eq!(sink_node("node1", &packed, &lab), Some("node3"));
        // All ranks here: nothing to cross.
        assert_eq!(sink_node("node1", &names(&["node1", "node1"]), &lab), None);
        // This node holds no rank: a stream from here crosses none of the
        // ranks' paths.
        assert_eq!(sink_node("node3", &two, &lab), None);
        // A host that is not a node of the lab.
        assert_eq!(
            sink_node("node1", &names(&["node1", "elsewhere"]), &lab),
            None
        );
    }
}
