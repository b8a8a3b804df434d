//! Hosts to spread processes over, one process per host: what `--lab`
//! hands the transports (the lab's nodes, its remote shell and subnet) so
//! that MPI launchers and wulf's own NPB ranks place their processes on
//! separate nodes, and their traffic crosses the emulated links.
//!
//! Nothing here knows about labs: a [`Cluster`] is a list of hosts, an
//! rsh-compatible remote shell that reaches them, and the network they
//! must talk over. Each transport turns it into what it needs (MPI:
//! launcher arguments; wulf's own transports: rank processes started
//! through the remote shell, bound to the hosts' addresses).

use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result};

/// One host of a [`Cluster`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterHost {
    /// Its name, as the remote shell and the other hosts resolve it.
    pub name: String,
    /// Its address on the cluster's network.
    pub address: IpAddr,
}

/// Hosts to spread processes over, in rank order: process i runs on host
/// i. A host listed k times in a row takes k processes (its slots: how
/// `wulf npb --hosts a,b --ppn 4` places 8 ranks). In a lab the first
/// host is the one this process runs on; on a node list (`--hosts`) this
/// process may be on none of them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cluster {
    /// The hosts.
    pub hosts: Vec<ClusterHost>,
    /// An rsh-compatible remote shell, program and leading arguments:
    /// `RSH... HOST WORDS...` runs `sh -c "WORDS..."` on HOST. Empty: the
    /// hosts are simulated on this machine (`--launch local`), commands
    /// run here.
    pub rsh: Vec<String>,
    /// The network every process must talk over, as CIDR (198.18.3.0/24):
    /// libraries that would pick any interface are held to it.
    pub subnet: String,
    /// The interface on that network, named the same on every host.
    pub interface: String,
    /// The slowest host's link rate, bits/s, when known (a lab's shaped
    /// links): what bounds how long a given amount of traffic must take.
    pub link_bits_per_s: Option<u64>,
    /// Where wulf is on the hosts, when not at this wulf's own path
    /// (`--remote-wulf`).
    pub remote_wulf: Option<String>,
}

impl Cluster {
    /// The first `n` hosts, or an error when there are fewer.
    pub fn first(&self, n: usize) -> Result<&[ClusterHost]> {
        self.hosts.get(..n).with_context(|| {
            format!(
                "{n} processes need {n} process slots, but the nodes given have only {} \
                 (one per node; more with --ppn or a hostfile's slots=)",
                self.hosts.len()
            )
        })
    }

    /// The hosts of the first `n` processes for an MPI launcher,
    /// comma-separated, a host with several processes as `name:count`
    /// (`node1:2,node2:2`), which Open MPI's `--host` and MPICH's
    /// `-hosts` both read as slots.
    pub fn host_list(&self, n: usize) -> Result<String> {
        let mut runs: Vec<(&str, usize)> = Vec::new();
        for h in self.first(n)? {
            match runs.last_mut() {
                Some((name, k)) if *name == h.name => *k += 1,
                _ => runs.push((&h.name, 1)),
            }
        }
        Ok(runs
            .iter()
            .map(|(name, k)| match k {
                1 => name.to_string(),
                k => format!("{name}:{k}"),
            })
            .collect::<Vec<_>>()
            .join(","))
    }

    /// Whether the hosts are simulated on this machine (no remote shell).
    pub fn is_local(&self) -> bool {
        self.rsh.is_empty()
    }

    /// A command that runs `argv` on host `i` through the remote shell
    /// (here, through `sh -c`, when the hosts are simulated), built by
    /// [`crate::exec::remote_shell::command_on`].
    pub fn command_on(&self, i: usize, argv: &[String]) -> Result<Command> {
        let host = &self.first(i + 1)?[i];
        Ok(crate::exec::remote_shell::command_on(
            &self.rsh, &host.name, argv,
        ))
    }

    /// The remote shell as one executable script in `dir`
    /// ([`crate::exec::remote_shell::rsh_script`]).
    pub fn rsh_script(&self, dir: &Path) -> Result<PathBuf> {
        crate::exec::remote_shell::rsh_script(&self.rsh, dir)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn two() -> Cluster {
        Cluster {
            hosts: ["node1", "node2"]
                .iter()
                .enumerate()
                .map(|(i, n)| ClusterHost {
                    name: n.to_string(),
                    address: format!("198.18.0.{}", i + 1).parse().unwrap(),
                })
                .collect(),
            rsh: vec!["/x y/wulf".into(), "lab".into(), "rsh".into()],
            subnet: "198.18.0.0/24".into(),
            interface: "eth0".into(),
            link_bits_per_s: Some(100_000_000),
            remote_wulf: None,
        }
    }

    #[test]
    fn hosts_and_commands() {
        let c = two();
        assert_eq!(c.host_list(2).unwrap(), "node1,node2");
        assert!(c.first(3).is_err());
        let mut slots = c.clone();
        slots.hosts = [0, 0, 1, 1].iter().map(|&i| c.hosts[i].clone()).collect();
        assert_eq!(slots.host_list(3).unwrap(), "node1:2,node2");
        assert_eq!(slots.host_list(4).unwrap(), "node1:2,node2:2");
        let cmd = c
            .command_on(1, &["/a b/wulf".into(), "npb-rank".into()])
            .unwrap();
        let args: Vec<String> = cmd
            .get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        assert_eq!(cmd.get_program(), "/x y/wulf");
        assert_eq!(args, ["lab", "rsh", "node2", "'/a b/wulf' npb-rank"]);
    }
}
