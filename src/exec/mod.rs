//! Starting processes: the one way wulf spawns a process, and the
//! launchers built on it.
//!
//! wulf starts processes in many places: the local peer of a sweep
//! (`wulf serve` on loopback), `wulf matrix`'s agents on every node (as
//! processes here, through ssh, a lab's remote shell, srun or an MPI
//! launcher), the ranks of an MPI job (through that MPI's own launcher) and
//! wulf's own NAS ranks (here or through the remote shell). All of them
//! spawn through [`process`]. This module sits low in the layers: it
//! imports no transport, sweep or cluster code. The launchers themselves
//! (`--launch`: which nodes, how a role is started on them) need the
//! cluster's and the lab's types and live in
//! `crate::cluster::launchers`; they start their processes with the
//! pieces here.
//!
//! * [`process`]: the one way a process is spawned: its own process group
//!   (a terminal's Ctrl-C reaches only the wulf that started it, which ends
//!   it in order), optionally bound to die with its parent, its stderr
//!   kept for the error that names a failed launch, and the whole group
//!   killed when it outlives its grace; [`Agents`], the processes that
//!   started a matrix's agents;
//! * [`remote_shell`]: commands on a host through a remote shell (ssh's
//!   options that never wait for a person, a lab's `wulf lab rsh`), and
//!   agents started that way ([`remote_shell::start_agents`]);
//! * [`credentials`]: each node's key, handed to that node's agent alone;
//! * [`local_peer`]: a sweep's peer on this machine;
//! * [`owned`]: what a command started (process groups, labs, shared
//!   memory), registered as it starts, and ended with the command however
//!   it ends: the one place a signal's clean-up reads;
//! * [`INTERRUPTED`]: whether the user asked to stop (Ctrl-C, SIGTERM).
//!
//! An agent is told where the coordinator listens and gets the run's
//! secret without it on a command line (the environment for processes
//! started directly or through Slurm, stdin through a remote shell).

use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::{Context, Result};

pub mod credentials;
pub mod local_peer;
pub mod owned;
pub mod process;
pub mod remote_shell;

pub use process::Agents;
pub use remote_shell::{check_remote_path, resolve_host};

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

/// The address this machine reaches the first of `hosts` from: where a
/// coordinator listens for agents on those hosts.
pub fn address_toward_first(hosts: &[String]) -> Result<IpAddr> {
    let first = hosts.first().context("no hosts")?;
    local_address_toward(resolve_host(first)?)
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
