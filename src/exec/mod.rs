//! Starting processes: the one way wulf spawns a process, and the
//! launchers built on it.
//!
//! wulf starts processes in many places: the local peer of a sweep
//! (`wulf serve` on loopback), `wulf matrix`'s agents on every node (as
//! processes here, through ssh, a lab's remote shell, srun or an MPI
//! launcher), the ranks of an MPI job (through that MPI's own launcher) and
//! wulf's own NAS ranks (here or through the remote shell). All of them
//! spawn through [`process`]. This module sits low in the layers: it
//! imports no transport, sweep or cluster code. Jobs that need those (MPI
//! jobs, groups of NAS ranks, the MPI launcher of agents, wulf started by
//! a launcher) are in [`crate::launch`].
//!
//! * [`process`]: the one way a process is spawned: its own process group
//!   (a terminal's Ctrl-C reaches only the wulf that started it, which ends
//!   it in order), optionally bound to die with its parent, its stderr
//!   kept for the error that names a failed launch, and the whole group
//!   killed when it outlives its grace;
//! * [`Launcher`]: starting one `wulf agent` per node, with
//!   [`local::Local`], [`remote_shell::RemoteShell`] (ssh, a lab),
//!   [`slurm::Slurm`] (and `crate::launch::mpi_ranks::MpiRanks`, an MPI's
//!   launcher); [`remote_shell::command_on`] runs any command on a host the
//!   same way;
//! * [`local_peer`]: a sweep's peer on this machine;
//! * [`INTERRUPTED`]: whether the user asked to stop (Ctrl-C, SIGTERM).
//!
//! A launcher tells each agent where the coordinator listens and hands it
//! the run's secret without putting it on a command line (the environment
//! for processes it starts directly or through Slurm, stdin through a
//! remote shell). What stays the same for every launcher (accepting agents,
//! authenticating them, the schedule) lives in
//! [`crate::cluster::coordinator`]; a launcher only starts processes and
//! says, for a node that never joined, what its launch printed.

use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::{Context, Result};

pub mod credentials;
pub mod local;
pub mod local_peer;
pub mod process;
pub mod remote_shell;
pub mod slurm;

pub use local::Local;
pub use process::Agents;
pub use remote_shell::{check_remote_path, resolve_host, RemoteShell};
pub use slurm::Slurm;

/// Environment variable that carries the run's secret to an agent.
pub const SECRET_ENV: &str = "WULF_AGENT_SECRET";

/// Set by the Ctrl-C / SIGTERM handler; the engine checks it between
/// trials (never inside a timing loop) and stops, keeping what it measured.
pub static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// Whether the user asked to stop.
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::Relaxed)
}

/// The local address this machine uses to reach `host` (no packet is
/// sent: a UDP socket's connect only picks a route).
pub fn local_address_toward(target: IpAddr) -> Result<IpAddr> {
    let bind: SocketAddr = if target.is_ipv6() {
        "[::]:0".parse().expect("valid")
    } else {
        "0.0.0.0:0".parse().expect("valid")
    };
    let s = std::net::UdpSocket::bind(bind)?;
    s.connect(SocketAddr::new(target, 9))
        .with_context(|| format!("no route to {target}"))?;
    Ok(s.local_addr()?.ip())
}

/// A way of starting agents.
pub trait Launcher {
    /// How results name it (`local`, `ssh`, `lab:NAME`, `slurm`).
    fn name(&self) -> String;
    /// The address the coordinator listens on, reachable from every host.
    fn coordinator_ip(&self, hosts: &[String]) -> Result<IpAddr>;
    /// Start one agent per host, each connecting back to `coordinator`.
    fn start(&self, hosts: &[String], coordinator: SocketAddr, secret: &str) -> Result<Agents>;
}

/// The arguments of `wulf agent` after the program.
pub(crate) fn agent_args(coordinator: SocketAddr, name: Option<&str>) -> Vec<String> {
    let mut a = vec![
        "agent".to_string(),
        "--coordinator".into(),
        coordinator.to_string(),
    ];
    if let Some(n) = name {
        a.extend(["--name".into(), n.to_string()]);
    }
    a
}
