//! A node list turned into the hosts processes are spread over: what
//! `wulf npb --hosts` and `wulf run --hosts` hand the transports
//! ([`crate::transport::Cluster`]), so that MPI launchers and wulf's own
//! NPB ranks place their processes on the nodes.
//!
//! A node list is names with process slots (`--hosts a,b --ppn 2`, a
//! hostfile's `slots=`); ranks fill a node's slots before the next, as
//! MPI's by-slot mapping does, and the transports see a node of k slots as
//! k hosts in a row. How wulf reaches the nodes is the launcher's
//! ([`super::launchers`], `--launch`), the same choice as for `wulf
//! matrix`'s agents: each turns the node list into a [`Spread`].

use std::net::IpAddr;
use std::path::Path;
use std::sync::Arc;

use anyhow::{bail, Context, Result};

use super::hostlist;
use super::launchers::Launcher;
use crate::exec::resolve_host;
use crate::transport::{Cluster, ClusterHost};

/// A node's name and how many processes it takes.
pub type NodeSlots = (String, usize);

/// The node list of `--hosts` or `--hostfile`, each node with its slots
/// (the hostfile's `slots=`, else `ppn`).
pub fn node_slots(
    hosts: Option<&str>,
    hostfile: Option<&Path>,
    ppn: usize,
) -> Result<Option<Vec<NodeSlots>>> {
    if let Some(list) = hosts {
        let names = hostlist::expand(list)?;
        return Ok(Some(names.into_iter().map(|h| (h, ppn)).collect()));
    }
    if let Some(file) = hostfile {
        let named = hostlist::read_hostfile_slots(file)?;
        return Ok(Some(
            named
                .into_iter()
                .map(|(h, s)| (h, s.unwrap_or(ppn)))
                .collect(),
        ));
    }
    Ok(None)
}

/// The processes of a matrix with `ppn` per host (`--ppn`): each host
/// itself when 1, else `HOST/0` .. `HOST/ppn-1` (its local ranks), a
/// host's processes in a row.
pub fn processes(hosts: &[String], ppn: usize) -> Vec<String> {
    if ppn <= 1 {
        return hosts.to_vec();
    }
    hosts
        .iter()
        .flat_map(|h| (0..ppn).map(move |k| format!("{h}/{k}")))
        .collect()
}

/// The host a process named by [`processes`] runs on.
pub fn machine_of(process: &str) -> &str {
    process.split_once('/').map_or(process, |(host, _)| host)
}

/// The hosts of `processes`, each once, in order: what launchers reach
/// and addresses are resolved for.
pub fn machines(processes: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for p in processes {
        let m = machine_of(p);
        if out.last().map(String::as_str) != Some(m) && !out.iter().any(|x| x == m) {
            out.push(m.to_string());
        }
    }
    out
}

/// The name of a process that names itself (started by srun or mpirun)
/// as one of `ppn` on `host`: `HOST/K` with K its local rank from the
/// launcher's environment (Slurm, Open MPI, MPICH's Hydra, PMI) when
/// `ppn` > 1, else the host.
pub fn process_name(host: String, ppn: usize) -> Result<String> {
    if ppn <= 1 {
        return Ok(host);
    }
    const LOCAL_RANK: [&str; 4] = [
        "SLURM_LOCALID",
        "OMPI_COMM_WORLD_LOCAL_RANK",
        "MPI_LOCALRANKID",
        "PMI_LOCAL_RANK",
    ];
    let k = LOCAL_RANK
        .iter()
        .find_map(|v| std::env::var(v).ok())
        .with_context(|| {
            format!(
                "--ppn {ppn}: the launcher gives no local rank ({})",
                LOCAL_RANK.join(", ")
            )
        })?;
    let k: usize = k
        .trim()
        .parse()
        .with_context(|| format!("--ppn {ppn}: the local rank '{k}' is no number"))?;
    Ok(format!("{host}/{k}"))
}

/// The hosts to spread over, and what keeps their remote shell alive: what
/// a launcher's [`super::launchers::Launcher::place`] returns.
pub struct Spread {
    /// The hosts, a node of k slots as k hosts in a row.
    pub cluster: Cluster,
    /// The launcher that placed them: what the nodes allow (do they
    /// share this machine's CPUs? can an MPI's launcher reach them?) is
    /// asked of it, never of its name.
    pub launcher: Arc<dyn Launcher>,
    /// How results name that launcher (`ssh`, `slurm`, `local`,
    /// `lab:NAME`): a name to record and print only.
    pub launch_name: String,
    /// The nodes and their slots, in placement order.
    pub nodes: Vec<NodeSlots>,
    /// Holds the files the remote shell needs (srun's script), if any.
    _keep: Option<tempfile::TempDir>,
}

impl Spread {
    /// `nodes` on the hosts of `cluster` (already one per slot), placed
    /// by `launcher`, which results name `launch_name`; `keep` holds the
    /// remote shell's files.
    pub fn new(
        cluster: Cluster,
        launcher: Arc<dyn Launcher>,
        launch_name: String,
        nodes: Vec<NodeSlots>,
        keep: Option<tempfile::TempDir>,
    ) -> Spread {
        Spread {
            cluster,
            launcher,
            launch_name,
            nodes,
            _keep: keep,
        }
    }

    /// `nodes` reached through the remote shell `rsh` (empty: simulated
    /// nodes, processes on this machine over loopback), placed by
    /// `launcher` (and named as it names itself): each node resolved, and
    /// the network this machine reaches the first on (what MPI libraries
    /// are held to). `keep` holds the remote shell's files. What every
    /// launcher that reaches real hosts by a remote shell shares.
    pub fn over(
        nodes: Option<Vec<NodeSlots>>,
        launcher: Arc<dyn Launcher>,
        rsh: Vec<String>,
        remote_wulf: Option<String>,
        keep: Option<tempfile::TempDir>,
    ) -> Result<Spread> {
        let nodes = nodes.context("no nodes: give --hosts or --hostfile")?;
        if nodes.is_empty() {
            bail!("the node list is empty");
        }
        let here = rsh.is_empty();
        let mut hosts = Vec::new();
        for (name, slots) in &nodes {
            let address = match here {
                true => IpAddr::from([127, 0, 0, 1]),
                false => resolve_host(name)?,
            };
            let h = ClusterHost {
                name: name.clone(),
                address,
            };
            hosts.extend(std::iter::repeat_n(h, *slots));
        }
        let (subnet, interface) = match here {
            true => ("127.0.0.0/8".to_string(), "lo".to_string()),
            false => network_toward(hosts[0].address)?,
        };
        Ok(Spread::new(
            Cluster {
                hosts,
                rsh,
                subnet,
                interface,
                link_bits_per_s: None,
                remote_wulf,
            },
            launcher.clone(),
            launcher.name(),
            nodes,
            keep,
        ))
    }
}

/// The network (CIDR) and interface this machine reaches `target` on:
/// what MPI libraries are held to (Open MPI's `btl_tcp_if_include`,
/// MPICH's `-iface`), so their ranks talk over the nodes' network.
fn network_toward(target: IpAddr) -> Result<(String, String)> {
    let local = crate::exec::local_address_toward(target)?;
    let ifaces = nix::ifaddrs::getifaddrs().context("cannot list the interfaces")?;
    for i in ifaces {
        let (Some(addr), Some(mask)) = (i.address, i.netmask) else {
            continue;
        };
        let (Some(a), Some(m)) = (addr.as_sockaddr_in(), mask.as_sockaddr_in()) else {
            continue;
        };
        if IpAddr::V4(a.ip()) == local {
            let prefix = u32::from(m.ip()).count_ones() as u8;
            let net = ipnet::Ipv4Net::new(a.ip(), prefix)?.trunc();
            return Ok((net.to_string(), i.interface_name));
        }
    }
    bail!("no IPv4 interface of this machine holds {local}, its address toward {target}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_come_from_the_hostfile_or_ppn() {
        let n = node_slots(Some("a,b[1-2]"), None, 2).unwrap().unwrap();
        assert_eq!(n, [("a".into(), 2), ("b1".into(), 2), ("b2".into(), 2)]);
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("hosts");
        std::fs::write(&f, "x slots=3\ny\n").unwrap();
        let n = node_slots(None, Some(&f), 1).unwrap().unwrap();
        assert_eq!(n, [("x".into(), 3), ("y".into(), 1)]);
        assert!(node_slots(None, None, 1).unwrap().is_none());
    }

    #[test]
    fn several_processes_per_host_are_named_by_their_host() {
        let hosts = vec!["n1".to_string(), "n2".into()];
        assert_eq!(processes(&hosts, 1), hosts);
        let p = processes(&hosts, 2);
        assert_eq!(p, ["n1/0", "n1/1", "n2/0", "n2/1"]);
        assert_eq!(machines(&p), hosts);
        assert_eq!(machine_of("n2/1"), "n2");
        assert_eq!(machine_of("n2"), "n2");
        assert_eq!(process_name("h".into(), 1).unwrap(), "h");
    }
}
