//! What a result made in the link lab records about the lab
//! (`placement.lab`): the lab, the nodes used and their links as shaped.
//! The lab itself ([`crate::lab`]) fills it in.

use serde::{Deserialize, Serialize};

/// What a result made in a lab records about it (`placement.lab`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LabPlacement {
    /// The lab's name.
    pub name: String,
    /// Node of the measuring side.
    pub client_node: String,
    /// Node of the peer, when it is in the lab.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_node: Option<String>,
    /// The links of those nodes, as configured.
    pub links: Vec<LabLink>,
    /// `hub` when the nodes share one medium (`wulf lab up --medium
    /// hub`: one budget of the link rate for every node and both
    /// directions); absent for a switch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub medium: Option<String>,
}

impl LabPlacement {
    /// One line for tables and reports: `lab t42: node1 (fe, MTU 1500)
    /// -> node2 (fe, MTU 1500)`; a group lists its nodes with commas.
    pub fn describe(&self) -> String {
        let link = |name: &str| {
            self.links
                .iter()
                .find(|l| l.node == name)
                .map(|l| format!("{name} ({}, MTU {})", l.link, l.mtu_bytes))
                .unwrap_or_else(|| name.to_string())
        };
        let nodes = match &self.server_node {
            Some(s) => format!("{} -> {}", link(&self.client_node), link(s)),
            None => self
                .links
                .iter()
                .map(|l| link(&l.node))
                .collect::<Vec<_>>()
                .join(", "),
        };
        match &self.medium {
            Some(m) => format!("lab {} ({m}): {nodes}", self.name),
            None => format!("lab {}: {nodes}", self.name),
        }
    }
}

/// One node's link in a [`LabPlacement`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LabLink {
    /// The node.
    pub node: String,
    /// The link as named (`fe`, `ge`, `600mbit`).
    pub link: String,
    /// Shaped rate, each direction, bits/s.
    pub rate_bits_per_s: u64,
    /// MTU.
    pub mtu_bytes: u32,
    /// The shaper (`htb`).
    pub shaper: String,
    /// Its bucket, bytes.
    pub burst_bytes: u64,
    /// Most bytes that cross without waiting after the link was idle.
    pub free_burst_bytes: u64,
}
