//! The hub's shared medium (`--medium hub`): one budget of the link rate
//! for every frame any node sends, in either direction, shared fairly
//! between the sending nodes.
//!
//! # Why a class per node, not one FIFO
//!
//! The hub was once a single htb class over one byte FIFO: whichever flow
//! filled the queue first kept more of the medium, and two pairs
//! streaming at once over 6 s split 0.41/0.59, 0.85/0.15 and 0.26/0.74
//! (issue 49 item 15). The per-flow queues that would fix that (sfq,
//! fq_codel, fq, drr) are not in this kernel (it has htb, pfifo, bfifo,
//! the ingress qdisc, u32 and mirred, nothing more; skbedit is missing
//! too), so the fairness is htb's own: under one parent class at the link
//! rate, a leaf class per node, each guaranteed an equal share and
//! allowed the whole rate, each over its own FIFO (a station's transmit
//! queue). A u32 filter on the hub's device sends a frame to its sender's
//! class by its IPv4 source address; what is not IPv4 from a node (ARP,
//! IPv6 neighbour discovery) goes to one more leaf. Backlogged classes
//! borrow the parent's unused rate in turn, one quantum (one frame) each,
//! so two senders get half each whatever their queues hold: fair per
//! sending node, as the medium is shared between stations, and so per
//! flow where each node sends one.
//!
//! # What it does not model
//!
//! Collisions and back-off: a real half-duplex hub loses time to them
//! under load (Nguyen 2001 saw about 15% more latency and 10% less peak
//! than a switch), while here a frame waits in its node's queue instead.
//! The docs and the CLI's help say so.

use std::net::Ipv4Addr;

use super::shaper::ShaperParams;

/// The leaf for frames from no node's IPv4 address (ARP, IPv6).
const OTHER_CLASS: &str = "1:2";

/// The class of the node at `index` (0-based): `1:100`, `1:101`, ...
/// (hexadecimal minor numbers, as tc reads them).
fn node_class(index: usize) -> String {
    format!("1:{:x}", 0x100 + index)
}

/// The `tc` invocations (arguments after `tc -n NETNS`) that install the
/// hub's shaper on `dev` for the nodes at `addresses`: a parent class at
/// `shaper`'s rate, a leaf per node with an equal guaranteed share over
/// its own FIFO of `shaper`'s queue, one leaf for other frames, and a
/// filter per node by source address.
pub fn tc_commands(shaper: &ShaperParams, dev: &str, addresses: &[Ipv4Addr]) -> Vec<Vec<String>> {
    let rate = shaper.rate_bits_per_s;
    let frame = shaper.burst_bytes.to_string();
    let share = (rate / (addresses.len() as u64 + 1)).max(8);
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    // An htb class of `rate_bits_per_s` that may borrow up to the link's
    // rate, one frame its bucket and its turn.
    let class = |parent: &str, id: &str, rate_bits_per_s: u64| {
        let (r, ceil) = (format!("{rate_bits_per_s}bit"), format!("{rate}bit"));
        s(&[
            "class", "add", "dev", dev, "parent", parent, "classid", id, "htb", "rate", &r, "ceil",
            &ceil, "burst", &frame, "cburst", &frame, "quantum", &frame,
        ])
    };
    let mut cmds = vec![
        s(&[
            "qdisc", "replace", "dev", dev, "root", "handle", "1:", "htb", "default", "2",
        ]),
        class("1:", "1:1", rate),
    ];
    let leaves =
        std::iter::once(OTHER_CLASS.to_string()).chain((0..addresses.len()).map(node_class));
    for (k, leaf) in leaves.enumerate() {
        cmds.push(class("1:1", &leaf, share));
        let handle = format!("{:x}:", 0x10 + k);
        let limit = shaper.queue_bytes.to_string();
        cmds.push(s(&[
            "qdisc", "add", "dev", dev, "parent", &leaf, "handle", &handle, "bfifo", "limit",
            &limit,
        ]));
    }
    for (i, a) in addresses.iter().enumerate() {
        cmds.push(s(&[
            "filter",
            "add",
            "dev",
            dev,
            "parent",
            "1:",
            "protocol",
            "ip",
            "prio",
            "1",
            "u32",
            "match",
            "ip",
            "src",
            &format!("{a}/32"),
            "flowid",
            &node_class(i),
        ]));
    }
    cmds
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Three nodes: a parent at the link rate, four leaves (other frames
    /// and one per node) each guaranteed a quarter and allowed the whole
    /// rate over its own FIFO, and a filter per node to its own leaf.
    #[test]
    fn a_leaf_and_a_filter_per_node() {
        let shaper = ShaperParams::for_link(100_000_000, 1500);
        let nodes: Vec<Ipv4Addr> = (1..=3).map(|i| Ipv4Addr::new(198, 18, 0, i)).collect();
        let cmds: Vec<String> = tc_commands(&shaper, "hub0", &nodes)
            .iter()
            .map(|c| c.join(" "))
            .collect();
        let leaves: Vec<&String> = cmds.iter().filter(|c| c.contains("parent 1:1 ")).collect();
        assert_eq!(leaves.len(), 4, "{cmds:#?}");
        assert!(leaves
            .iter()
            .all(|c| c.contains("rate 25000000bit ceil 100000000bit")));
        assert_eq!(cmds.iter().filter(|c| c.contains(" bfifo ")).count(), 4);
        let handles: std::collections::HashSet<&str> = cmds
            .iter()
            .filter_map(|c| c.split(" handle ").nth(1)?.split(' ').next())
            .collect();
        assert_eq!(handles.len(), 5, "distinct qdisc handles: {cmds:#?}");
        assert!(cmds.contains(
            &"filter add dev hub0 parent 1: protocol ip prio 1 u32 match ip src 198.18.0.2/32 flowid 1:101"
                .to_string()
        ));
        assert!(cmds[0].ends_with("default 2"));
    }
}
