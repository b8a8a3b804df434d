//! `--lab`: one measuring command between the nodes of a temporary lab.
//!
//! The command line is run again inside node1, without `--lab`, and with
//! what it needs to reach the other nodes ([`Across`]):
//!
//! * `--peer` pointing at a `wulf serve` started in node2, for transports
//!   measured against a peer (tcp): the measurement is exactly the one
//!   `--peer` makes between two machines, the same code, the same result
//!   file, the same fingerprint (read inside node1, where the shaped eth0
//!   is the interface on the route);
//! * [`IN_LAB`], for commands whose processes are placed one per node by
//!   a launcher (MPI) or by wulf itself (NPB ranks): they read the lab from
//!   the environment ([`super::current`]) and spread over its nodes
//!   ([`super::cluster`]). The launcher runs in node1 because the root
//!   namespace has no route to the lab's addresses, and must never get one.
//!
//! The lab is removed when the command ends, however it ends; an interrupt
//! is handed on to the inner command exactly once
//! ([`run_forwarding_interrupt`](crate::exec::process::run_forwarding_interrupt)), which saves what it measured.

use std::ffi::OsString;
use std::net::IpAddr;
use std::time::Duration;

use anyhow::{Context, Result};

use super::{command_in, LinkOptions, TempLab};
use crate::exec::local_peer::LocalPeer;
use crate::exec::process::{exit_code, run_forwarding_interrupt};

/// How long a server in a fresh node may take to listen.
const SERVE_START_TIMEOUT: Duration = Duration::from_secs(20);

/// The hidden option that tells a command run in node1 to spread its
/// processes over the nodes of the lab it runs in.
pub const IN_LAB: &str = "--in-lab";

/// How the command run in node1 reaches the other nodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Across {
    /// Nodes of the lab (at least 2).
    pub nodes: usize,
    /// Start `wulf serve` in node2 and give the command `--peer` to it;
    /// `Some(true)`: the server serves one session and exits.
    pub serve: Option<bool>,
    /// Give the command [`IN_LAB`].
    pub spread: bool,
}

/// Run this process's command line (without `--lab`) in node1 of a
/// temporary two-node lab made from `lab` (the compact syntax), against a
/// `wulf serve` in node2. Returns the inner command's exit code.
pub fn run_against_peer_node(lab: &str, serve_once: bool) -> Result<i32> {
    run_in_node1(
        lab,
        Across {
            nodes: 2,
            serve: Some(serve_once),
            spread: false,
        },
    )
}

/// Run this process's command line (without `--lab`) in node1 of a
/// temporary lab made from `lab` (the compact syntax), reaching the other
/// nodes as `across` says. Returns the inner command's exit code.
pub fn run_in_node1(lab: &str, across: Across) -> Result<i32> {
    let options =
        LinkOptions::parse_compact(lab).map_err(|e| crate::error::usage(format!("--lab: {e}")))?;
    let mut inner: Vec<OsString> = vec![std::env::current_exe()
        .context("cannot find wulf's own executable")?
        .into()];
    inner.extend(own_args_without_lab());
    let began = std::time::Instant::now();
    let temp = TempLab::up(across.nodes.max(2), &options)?;
    let peer = match across.serve {
        Some(once) => Some(serve_in_node2(&temp, once)?),
        None => None,
    };
    let set_up = began.elapsed();
    if let Some(p) = &peer {
        inner.push("--peer".into());
        inner.push(p.addr.to_string().into());
    }
    if across.spread {
        inner.push(IN_LAB.into());
    }
    let mut cmd = command_in(&temp.state, "node1", &inner)?;
    let status =
        run_forwarding_interrupt(&mut cmd).context("cannot run the command in node1 of the lab");
    let ending = std::time::Instant::now();
    if let Some(p) = peer {
        p.finish(Duration::from_secs(2));
    }
    drop(temp);
    if !quiet(inner.iter()) {
        // The allowance a --budget is kept against beside the command's
        // own (issue 43): its budget starts inside the lab.
        eprintln!(
            "wulf: the lab took {:.2} s to set up and {:.2} s to remove, outside the command's --budget",
            set_up.as_secs_f64(),
            ending.elapsed().as_secs_f64()
        );
    }
    Ok(exit_code(status?))
}

/// Whether a command line asks for quiet (`--quiet`, `-q`).
fn quiet<'a>(args: impl Iterator<Item = &'a OsString>) -> bool {
    args.filter_map(|a| a.to_str())
        .any(|a| a == "--quiet" || a == "-q")
}

/// Run this process's command line, with [`IN_LAB`], in node1 of the
/// existing lab `name` (made with `wulf lab up`), which stays up after.
/// Returns the inner command's exit code.
pub fn run_in_named_lab(name: &str) -> Result<i32> {
    let st = super::state::load(name)?;
    let mut inner: Vec<OsString> = vec![std::env::current_exe()
        .context("cannot find wulf's own executable")?
        .into()];
    inner.extend(std::env::args_os().skip(1));
    inner.push(IN_LAB.into());
    let mut cmd = command_in(&st, "node1", &inner)?;
    let status =
        run_forwarding_interrupt(&mut cmd).context("cannot run the command in node1 of the lab")?;
    Ok(exit_code(status))
}

fn serve_in_node2(temp: &TempLab, once: bool) -> Result<LocalPeer> {
    let exe = std::env::current_exe().context("cannot find wulf's own executable")?;
    let server = &temp.state.nodes[1];
    let mut serve: Vec<OsString> = vec![exe.into(), "serve".into(), "--announce".into()];
    if once {
        serve.push("--once".into());
    }
    serve.extend([
        "--port".into(),
        "0".into(),
        "--bind".into(),
        server.address.to_string().into(),
        // The lab's own server, for this run alone: it grants what the run
        // asks (loads on the peer, the lean stacks, any buffers).
        "--allow-load".into(),
        "--allow-lean".into(),
        "--max-memory".into(),
        "1048576Gi".into(),
    ]);
    LocalPeer::spawn(
        command_in(&temp.state, &server.name, &serve)?,
        IpAddr::V4(server.address),
        SERVE_START_TIMEOUT,
    )
    .context("cannot start wulf serve in node2 of the lab")
}

/// This process's arguments after the program name, without `--lab X` /
/// `--lab=X`.
pub fn own_args_without_lab() -> Vec<OsString> {
    strip_lab(std::env::args_os().skip(1))
}

fn strip_lab(args: impl Iterator<Item = OsString>) -> Vec<OsString> {
    let mut out = Vec::new();
    let mut skip_next = false;
    for a in args {
        if skip_next {
            skip_next = false;
            continue;
        }
        match a.to_str() {
            Some("--lab") => skip_next = true,
            Some(s) if s.starts_with("--lab=") => {}
            _ => out.push(a),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lab_is_taken_out_of_the_arguments() {
        let v = |s: &[&str]| s.iter().map(OsString::from).collect::<Vec<_>>();
        assert_eq!(
            strip_lab(v(&["sweep", "tcp", "--lab", "ge,mtu=9000", "--sizes", "1"]).into_iter()),
            v(&["sweep", "tcp", "--sizes", "1"])
        );
        assert_eq!(
            strip_lab(v(&["sweep", "--lab=fe", "tcp"]).into_iter()),
            v(&["sweep", "tcp"])
        );
    }
}
