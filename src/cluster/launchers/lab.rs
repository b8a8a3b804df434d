//! `--launch lab` (the default in a lab node) and `--launch lab:NAME`: the
//! nodes of the lab this process runs in, reached by its remote shell
//! (`wulf lab rsh`, which runs a command in a node). Given `lab:NAME`
//! outside that lab, the command runs again in the lab's first node
//! ([`Launcher::lab_to_enter`]).

use std::net::{IpAddr, SocketAddr};

use anyhow::{Context, Result};

use super::{Entry, Launcher};
use crate::cluster::nodes::{NodeSlots, Spread};
use crate::error::usage;
use crate::exec::{remote_shell, Agents};
use crate::transport::Cluster;

/// Its line in the registry: the default in a lab node.
pub const ENTRY: Entry = Entry {
    forms: &["lab", "lab:NAME"],
    default_here: |o| o.in_lab,
    allocation: || None,
    make: |name, o| {
        let named = name.map(str::to_string);
        if named.is_none() && std::env::var_os(crate::lab::ENV_LAB).is_none() {
            return Err(usage(
                "--launch lab: run in a lab node (`wulf lab exec`), give --lab SPEC, or lab:NAME \
                 for a lab made with `wulf lab up`",
            ));
        }
        Ok(Box::new(Lab {
            named,
            remote_wulf: o.remote_wulf.clone(),
        }))
    },
};

/// The nodes of a lab.
pub struct Lab {
    /// The lab `lab:NAME` names, if given so.
    pub named: Option<String>,
    /// wulf's path on the nodes (None: this wulf's own).
    pub remote_wulf: Option<String>,
}

impl Lab {
    /// The lab this process runs in, as a cluster seen from its node,
    /// and the lab's name.
    fn here(&self) -> Result<(Cluster, String)> {
        let (st, node) = crate::lab::current()?;
        Ok((crate::lab::cluster(&st, &node)?, st.name))
    }
}

impl Launcher for Lab {
    fn name(&self) -> String {
        let lab = std::env::var(crate::lab::ENV_LAB).ok();
        format!(
            "lab:{}",
            lab.or(self.named.clone()).unwrap_or_else(|| "lab".into())
        )
    }

    fn place(
        self: std::sync::Arc<Self>,
        nodes: Option<Vec<NodeSlots>>,
        ppn: usize,
    ) -> Result<Spread> {
        let (lab, name) = self.here()?;
        let nodes =
            nodes.unwrap_or_else(|| lab.hosts.iter().map(|h| (h.name.clone(), ppn)).collect());
        let mut hosts = Vec::new();
        for (name_wanted, slots) in &nodes {
            let h = lab
                .hosts
                .iter()
                .find(|h| &h.name == name_wanted)
                .with_context(|| {
                    format!(
                        "{name_wanted} is not a node of lab {name} (its nodes: {})",
                        lab.hosts
                            .iter()
                            .map(|h| h.name.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    )
                })?;
            hosts.extend(std::iter::repeat_n(h.clone(), *slots));
        }
        let cluster = Cluster {
            hosts,
            remote_wulf: self.remote_wulf.clone(),
            ..lab
        };
        Ok(Spread::new(
            cluster,
            self,
            format!("lab:{name}"),
            nodes,
            None,
        ))
    }

    fn coordinator_ip(&self, hosts: &[String]) -> Result<IpAddr> {
        crate::exec::address_toward_first(hosts)
    }

    fn start(&self, hosts: &[String], coordinator: SocketAddr, secret: &str) -> Result<Agents> {
        let wulf = super::agent_wulf(&self.remote_wulf)?;
        let (lab, _) = self.here()?;
        remote_shell::start_agents(&lab.rsh, &wulf, hosts, coordinator, secret)
    }

    fn lab_to_enter(&self) -> Option<&str> {
        self.named.as_deref()
    }

    fn in_lab(&self) -> bool {
        true
    }

    fn shares_cpus(&self) -> bool {
        true
    }
}
