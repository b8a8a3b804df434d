//! The launchers: how wulf reaches the nodes (`--launch`) and starts its
//! processes on them. One trait, [`Launcher`], covers both things a
//! launcher is asked for:
//!
//! * placing a node list ([`Launcher::place`]): the hosts and slots that
//!   wulf's own NAS and collective ranks, and MPI jobs, are spread over,
//!   with the remote shell that starts a rank on a host (the
//!   [`crate::transport::Cluster`] of a [`Spread`]);
//! * starting `wulf matrix`'s agents on the nodes
//!   ([`Launcher::coordinator_ip`], [`Launcher::start`]).
//!
//! One file per launcher: [`local`] (simulated nodes on this machine),
//! [`ssh`] (`--rsh`'s program with options that never wait for a person),
//! [`lab`] (the remote shell of the lab this process runs in), [`slurm`]
//! (srun inside an allocation) and [`mpi`] (`mpi:NAME`: only that MPI's
//! ranks, by its own launcher). `--launch` is parsed once, by [`parse`],
//! against [`REGISTRY`]; a command keeps the launcher in its run context.
//! A launcher that cannot do one of the two (an MPI's launcher starts no
//! agents of wulf's) answers with a usage error that says why.
//!
//! The launchers here live in the cluster layer, not in [`crate::exec`],
//! because they need what lies above starting a process: the node list
//! and its [`Spread`], the lab's state, the transports' `Cluster`. The
//! coordinator ([`super::coordinator`]) takes any [`Launcher`]; so do the
//! two that are no `--launch` choice, started by a command itself
//! (`crate::launch::mpi_ranks::MpiRanks`, `--via mpi:NAME`, and
//! `crate::launch::launched::FromLauncher`, wulf started by srun or
//! mpirun).

pub mod lab;
pub mod local;
pub mod mpi;
pub mod slurm;
pub mod ssh;

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};

use super::nodes::{NodeSlots, Spread};
use crate::error::usage;
use crate::exec::Agents;

/// The environment variable that tells an agent started by a launcher
/// that names no agent (srun) how many processes per node were started
/// (`--ppn`): it then names itself `HOST/K`, K its local rank.
pub const PPN_ENV: &str = "WULF_PPN";

/// A way of reaching nodes and starting wulf's processes on them.
pub trait Launcher: Send + Sync {
    /// How results name it (`local`, `ssh`, `slurm`, `lab:NAME`,
    /// `mpi:NAME`).
    fn name(&self) -> String;

    /// The hosts that `nodes` (each with its slots) are spread over, and
    /// the remote shell that starts a process on each; None: the
    /// launcher's own nodes (a lab's, each with `ppn` slots), or the usage
    /// error that asks for a node list. The [`Spread`] keeps the launcher.
    fn place(self: Arc<Self>, nodes: Option<Vec<NodeSlots>>, ppn: usize) -> Result<Spread>;

    /// The address a matrix's coordinator listens on, reachable from every
    /// one of `hosts`.
    fn coordinator_ip(&self, hosts: &[String]) -> Result<IpAddr>;

    /// Start one `wulf agent` per host of `hosts`, each connecting back to
    /// `coordinator`, with the run's `secret` (or its node's key, see
    /// [`crate::exec::credentials`]) never on a command line.
    fn start(&self, hosts: &[String], coordinator: SocketAddr, secret: &str) -> Result<Agents>;

    /// The MPI transport (`mpi:NAME`) whose ranks alone this launcher
    /// starts, if it is an MPI's launcher: wulf's own ranks and agents
    /// need another.
    fn mpi_only(&self) -> Option<&str> {
        None
    }

    /// The lab made with `wulf lab up` that the command must run in
    /// (`--launch lab:NAME`): outside it, the command runs again in its
    /// first node.
    fn lab_to_enter(&self) -> Option<&str> {
        None
    }

    /// Whether its nodes are the lab this process runs in (`--launch
    /// lab`): a command it is handed to runs as in a lab node (`--in-lab`),
    /// and an MPI's launcher reaches those nodes through the lab's remote
    /// shell. False (the default).
    fn in_lab(&self) -> bool {
        false
    }

    /// Whether the processes it places share this machine's CPUs
    /// (simulated nodes, a lab's namespaces): more ranks than CPUs then
    /// measure the sharing. False (the default): real nodes have their own.
    fn shares_cpus(&self) -> bool {
        false
    }

    /// Whether an MPI's own launcher can start ranks on its nodes (not on
    /// simulated ones, which are names on this machine). True (the
    /// default).
    fn mpi_can_reach(&self) -> bool {
        true
    }
}

impl std::fmt::Debug for dyn Launcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Launcher({})", self.name())
    }
}

/// What every launcher is made from: the options that go with `--launch`.
#[derive(Debug, Clone)]
pub struct Options {
    /// `--rsh`: the ssh program and its options (`ssh -i KEY -p 2222`).
    pub rsh: String,
    /// `--remote-wulf`: where wulf is on the nodes (None: this wulf's own
    /// path, as clusters share their file systems).
    pub remote_wulf: Option<String>,
    /// Bound of connecting to a node (ssh's `ConnectTimeout`).
    pub timeout: Duration,
    /// Whether this process runs in a lab node whose lab is the default.
    pub in_lab: bool,
}

/// One launcher in the [`REGISTRY`].
pub struct Entry {
    /// How `--launch` spells it: a name (`ssh`), or a form that takes a
    /// name after a prefix (`lab:NAME`, `mpi:NAME`).
    pub forms: &'static [&'static str],
    /// Whether it is the default here, with no `--launch` given (inside a
    /// Slurm allocation, in a lab node).
    pub default_here: fn(&Options) -> bool,
    /// The nodes of the batch job this process runs in, when it is one of
    /// this launcher's (Slurm's `SLURM_JOB_NODELIST`), as a node list
    /// (`node[1-4]`): what commands given no node list spread over.
    pub allocation: fn() -> Option<String>,
    /// Make it; the name after the prefix when `--launch` took that form.
    pub make: Make,
}

/// How an [`Entry`] makes its launcher: from the name after the prefix
/// when `--launch` took that form, and the options.
pub type Make = fn(Option<&str>, &Options) -> Result<Box<dyn Launcher>>;

/// Every launcher, in the order usage errors list them. With no
/// `--launch`, the last whose [`Entry::default_here`] holds is chosen:
/// later entries are the more particular (ssh always holds).
pub const REGISTRY: &[Entry] = &[
    ssh::ENTRY,
    slurm::ENTRY,
    mpi::ENTRY,
    local::ENTRY,
    lab::ENTRY,
];

/// The launcher `--launch` names (None: the default here), made with
/// `opts`; an unknown name, an empty `--rsh` and a `--remote-wulf` that
/// is no plain path are usage errors.
pub fn parse(launch: Option<&str>, opts: &Options) -> Result<Arc<dyn Launcher>> {
    if let Some(path) = &opts.remote_wulf {
        crate::exec::check_remote_path(path).map_err(|e| usage(format!("{e:#}")))?;
    }
    let made = match launch {
        None => {
            let entry = REGISTRY
                .iter()
                .rev()
                .find(|e| (e.default_here)(opts))
                .expect("ssh is always a default");
            (entry.make)(None, opts)
        }
        Some(given) => {
            let found = REGISTRY.iter().find_map(|e| {
                e.forms
                    .iter()
                    .find_map(|form| match form.strip_suffix("NAME") {
                        Some(prefix) => given.strip_prefix(prefix).map(|n| (e, Some(n))),
                        None => (given == *form).then_some((e, None)),
                    })
            });
            let Some((entry, name)) = found else {
                return Err(usage(format!("--launch {given}: use {}", choices())));
            };
            (entry.make)(name, opts)
        }
    };
    made.map(Arc::from)
}

/// The nodes of the batch job this process runs in (`salloc -N 4 ...`),
/// as a node list, and the `--launch` that reaches them (`slurm`); None
/// outside one.
pub fn allocation() -> Option<(String, &'static str)> {
    REGISTRY
        .iter()
        .find_map(|e| Some(((e.allocation)()?, e.forms[0])))
}

/// The spellings of `--launch`, for usage errors: "ssh, slurm, ... or
/// lab:NAME".
pub fn choices() -> String {
    let forms: Vec<&str> = REGISTRY
        .iter()
        .flat_map(|e| e.forms.iter().copied())
        .collect();
    match forms.split_last() {
        Some((last, [])) => last.to_string(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
        None => String::new(),
    }
}

/// wulf's path on the nodes for the agents: `given`, else this wulf's own
/// (clusters share their file systems); a path the remote shell would
/// have to quote is a usage error.
fn agent_wulf(given: &Option<String>) -> Result<String> {
    let path = match given {
        Some(p) => p.clone(),
        None => std::env::current_exe()
            .context("cannot find wulf's own executable")?
            .display()
            .to_string(),
    };
    crate::exec::check_remote_path(&path).map_err(|e| usage(format!("{e:#}")))?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(rsh: &str, in_lab: bool) -> Options {
        Options {
            rsh: rsh.into(),
            remote_wulf: None,
            timeout: Duration::from_secs(5),
            in_lab,
        }
    }

    #[test]
    fn launch_choices() {
        let name = |l: Option<&str>, o: &Options| parse(l, o).unwrap().name();
        assert_eq!(name(Some("local"), &opts("ssh", false)), "local");
        assert_eq!(name(Some("ssh"), &opts("ssh -p 2", false)), "ssh");
        assert_eq!(name(Some("slurm"), &opts("ssh", false)), "slurm");
        let m = parse(Some("mpi:openmpi"), &opts("ssh", false)).unwrap();
        assert_eq!(
            (m.name(), m.mpi_only()),
            ("mpi:openmpi".into(), Some("mpi:openmpi"))
        );
        let lab = parse(Some("lab:mylab"), &opts("ssh", false)).unwrap();
        assert_eq!(lab.lab_to_enter(), Some("mylab"));
        assert!(parse(Some("telnet"), &opts("ssh", false)).is_err());
        assert!(parse(Some("ssh"), &opts(" ", false)).is_err());
        let bad = Options {
            remote_wulf: Some("x;y".into()),
            ..opts("ssh", false)
        };
        assert!(parse(Some("local"), &bad).is_err());
        assert_eq!(
            choices(),
            "ssh, slurm, mpi:NAME, local, lab or lab:NAME",
            "the usage errors' list"
        );
    }

    #[test]
    fn the_default_is_the_most_particular() {
        let here = |o: &Options| {
            let e = REGISTRY.iter().rev().find(|e| (e.default_here)(o)).unwrap();
            e.forms[0]
        };
        assert_eq!(here(&opts("ssh", true)), "lab");
        let outside = here(&opts("ssh", false));
        let slurm = std::env::var_os("SLURM_JOB_ID").is_some();
        assert_eq!(outside, if slurm { "slurm" } else { "ssh" });
    }

    #[test]
    fn simulated_nodes_run_here_with_their_slots() {
        let l = parse(Some("local"), &opts("ssh", false)).unwrap();
        let s = l
            .clone()
            .place(Some(vec![("sim1".into(), 2), ("sim2".into(), 1)]), 1)
            .unwrap();
        assert!(s.cluster.is_local());
        assert_eq!(s.cluster.host_list(3).unwrap(), "sim1:2,sim2");
        assert!(s.cluster.first(4).is_err());
        assert_eq!(s.launch_name, "local");
        assert!(s.launcher.shares_cpus() && !s.launcher.mpi_can_reach());
        assert!(l.clone().place(None, 1).is_err(), "no node list");
        assert!(l.place(Some(Vec::new()), 1).is_err(), "an empty one");
    }

    #[test]
    fn real_nodes_get_their_remote_shell_and_name() {
        let node = || Some(vec![("localhost".to_string(), 1)]);
        let o = opts("ssh -p 2", false);
        let s = parse(Some("ssh"), &o).unwrap().place(node(), 1).unwrap();
        assert_eq!(
            (s.launch_name.as_str(), &s.cluster.rsh[..3]),
            ("ssh", &["ssh".to_string(), "-p".into(), "2".into()][..])
        );
        assert!(s.cluster.rsh.join(" ").contains("BatchMode=yes"));
        // An MPI's launcher reaches the nodes by --rsh's program too.
        let m = parse(Some("mpi:x"), &o).unwrap().place(node(), 1).unwrap();
        assert_eq!(
            (m.launch_name.as_str(), &m.cluster.rsh[..3]),
            ("mpi:x", &["ssh".to_string(), "-p".into(), "2".into()][..])
        );
        let sl = parse(Some("slurm"), &o).unwrap().place(node(), 1).unwrap();
        let script = std::path::PathBuf::from(&sl.cluster.rsh[0]);
        assert!(
            script.ends_with("srun-rsh") && script.exists(),
            "kept while placed"
        );
        drop(sl);
        assert!(!script.exists(), "removed with the placement");
        let agents = parse(Some("mpi:x"), &o).unwrap().start(
            &["localhost".into()],
            "127.0.0.1:1".parse().unwrap(),
            "s",
        );
        assert!(agents.is_err(), "an MPI's launcher starts no agents");
    }
}
