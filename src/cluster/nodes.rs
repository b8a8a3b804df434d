//! A node list turned into the hosts processes are spread over: what
//! `wulf npb --hosts` and `wulf run --hosts` hand the transports
//! ([`crate::transport::Cluster`]), so that MPI launchers and wulf's own
//! NPB ranks place their processes on the nodes.
//!
//! A node list is names with process slots (`--hosts a,b --ppn 2`, a
//! hostfile's `slots=`); ranks fill a node's slots before the next, as
//! MPI's by-slot mapping does, and the transports see a node of k slots as
//! k hosts in a row. How wulf reaches the nodes is the same choice as for
//! `wulf matrix`'s agents ([`crate::exec`]): ssh with options that never
//! wait for a person, srun (one step per process, through a small
//! rsh-compatible script), simulated nodes on this machine, or a lab's
//! remote shell.

use std::net::IpAddr;
use std::path::Path;
use std::time::Duration;

use anyhow::{bail, Context, Result};

use super::hostlist;
use crate::exec::{check_remote_path, resolve_host, RemoteShell};
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

/// How wulf reaches the nodes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reach {
    /// Simulated nodes: processes on this machine, over loopback.
    Local,
    /// ssh (program and its options).
    Ssh(Vec<String>),
    /// srun inside a Slurm allocation.
    Slurm,
    /// The remote shell of the lab this process runs in.
    Lab,
    /// Only the ranks of the MPI `mpi:NAME`, started by its launcher
    /// (which reaches the nodes by ssh, as MPI launchers do).
    Mpi(String),
}

/// `--launch` (or its default: srun inside a Slurm allocation, the lab in
/// a lab node, else ssh) as a [`Reach`]. MPI launchers start only MPI
/// ranks: `mpi:NAME` means the ranks of that MPI alone.
pub fn reach(launch: Option<&str>, rsh: &str, in_lab: bool) -> Result<Reach> {
    let how = match launch {
        Some(h) => h.to_string(),
        None if in_lab => "lab".into(),
        None if std::env::var_os("SLURM_JOB_ID").is_some() => "slurm".into(),
        None => "ssh".into(),
    };
    Ok(match how.as_str() {
        "local" => Reach::Local,
        "slurm" => Reach::Slurm,
        "ssh" => {
            let program: Vec<String> = rsh.split_whitespace().map(str::to_string).collect();
            if program.is_empty() {
                bail!("--rsh: give a program (ssh)");
            }
            Reach::Ssh(program)
        }
        h if h == "lab" || h.starts_with("lab:") => Reach::Lab,
        h if h.starts_with("mpi:") => Reach::Mpi(h.to_string()),
        other => bail!("--launch {other}: use ssh, slurm, local, lab or lab:NAME"),
    })
}

/// The hosts to spread over, and what keeps their remote shell alive.
pub struct Spread {
    /// The hosts, a node of k slots as k hosts in a row.
    pub cluster: Cluster,
    /// How the nodes are reached, as results name it (`ssh`, `slurm`,
    /// `local`, `lab:NAME`).
    pub launch: String,
    /// The nodes and their slots, in placement order.
    pub nodes: Vec<NodeSlots>,
    /// Holds the srun script, if any.
    _dir: Option<tempfile::TempDir>,
}

/// The [`Spread`] of `nodes` reached as `reach`. `lab` is the cluster of
/// the lab this process runs in (for [`Reach::Lab`]); `nodes` None means
/// all of the lab's nodes.
pub fn spread(
    nodes: Option<Vec<NodeSlots>>,
    reach: &Reach,
    lab: Option<(Cluster, String)>,
    ppn: usize,
    remote_wulf: Option<String>,
    timeout: Duration,
) -> Result<Spread> {
    if let Some(path) = &remote_wulf {
        check_remote_path(path)?;
    }
    if let Reach::Lab = reach {
        let (lab, name) = lab.context(
            "--launch lab: run in a lab node (`wulf lab exec`), or give lab:NAME for a lab made with `wulf lab up`",
        )?;
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
        return Ok(Spread {
            cluster: Cluster {
                hosts,
                remote_wulf,
                ..lab
            },
            launch: format!("lab:{name}"),
            nodes,
            _dir: None,
        });
    }
    let nodes = nodes.context("no nodes: give --hosts or --hostfile")?;
    if nodes.is_empty() {
        bail!("the node list is empty");
    }
    let (rsh, launch, dir) = match reach {
        Reach::Local => (Vec::new(), "local", None),
        Reach::Ssh(program) => {
            let r = RemoteShell::ssh(program.clone(), String::new(), timeout);
            (r.rsh, "ssh", None)
        }
        Reach::Mpi(name) => {
            let r = RemoteShell::ssh(vec!["ssh".into()], String::new(), timeout);
            (r.rsh, name.as_str(), None)
        }
        Reach::Slurm => {
            let dir = tempfile::Builder::new()
                .prefix("wulf-srun-")
                .tempdir()
                .context("cannot make a directory for the srun script")?;
            let script = srun_script(dir.path())?;
            (vec![script], "slurm", Some(dir))
        }
        Reach::Lab => unreachable!("handled above"),
    };
    let mut hosts = Vec::new();
    for (name, slots) in &nodes {
        let address = match reach {
            Reach::Local => IpAddr::from([127, 0, 0, 1]),
            _ => resolve_host(name)?,
        };
        let h = ClusterHost {
            name: name.clone(),
            address,
        };
        hosts.extend(std::iter::repeat_n(h, *slots));
    }
    let (subnet, interface) = match reach {
        Reach::Local => ("127.0.0.0/8".to_string(), "lo".to_string()),
        _ => network_toward(hosts[0].address)?,
    };
    Ok(Spread {
        cluster: Cluster {
            hosts,
            rsh,
            subnet,
            interface,
            link_bits_per_s: None,
            remote_wulf,
        },
        launch: launch.to_string(),
        nodes,
        _dir: dir,
    })
}

/// An rsh-compatible script that runs a command on a node as a one-task
/// srun step (`--overlap`: beside the other steps of the run).
fn srun_script(dir: &Path) -> Result<String> {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join("srun-rsh");
    let text = "#!/bin/sh\nh=\"$1\"; shift\n\
                exec srun --nodes=1 --ntasks=1 --overlap --kill-on-bad-exit=1 --nodelist=\"$h\" sh -c \"$*\"\n";
    std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))?;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))?;
    Ok(path.display().to_string())
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
    fn simulated_nodes_run_here_with_their_slots() {
        let s = spread(
            Some(vec![("sim1".into(), 2), ("sim2".into(), 1)]),
            &Reach::Local,
            None,
            1,
            None,
            Duration::from_secs(5),
        )
        .unwrap();
        assert!(s.cluster.is_local());
        assert_eq!(s.cluster.host_list(3).unwrap(), "sim1:2,sim2");
        assert!(s.cluster.first(4).is_err());
        assert_eq!(s.launch, "local");
    }

    #[test]
    fn launch_choices() {
        assert_eq!(reach(Some("local"), "ssh", false).unwrap(), Reach::Local);
        assert_eq!(reach(None, "ssh", true).unwrap(), Reach::Lab);
        assert!(
            matches!(reach(Some("ssh"), "ssh -p 2", false).unwrap(), Reach::Ssh(p) if p.len() == 3)
        );
        assert_eq!(
            reach(Some("mpi:openmpi"), "ssh", false).unwrap(),
            Reach::Mpi("mpi:openmpi".into())
        );
        assert!(reach(Some("telnet"), "ssh", false).is_err());
    }
}
