//! `--launch ssh` (the default outside a Slurm allocation and a lab):
//! `--rsh`'s program (`ssh`, or `ssh -i KEY -p 2222`) with options that
//! never wait for a person.

use std::net::{IpAddr, SocketAddr};

use anyhow::Result;

use super::{Entry, Launcher, Options};
use crate::cluster::nodes::{NodeSlots, Spread};
use crate::error::usage;
use crate::exec::{remote_shell, Agents};

/// Its line in the registry: the default when nothing more particular is.
pub const ENTRY: Entry = Entry {
    forms: &["ssh"],
    default_here: |_| true,
    allocation: || None,
    make: |_, o| Ok(Box::new(Ssh::new(o)?)),
};

/// Nodes reached by ssh.
pub struct Ssh {
    /// The remote shell: the program, its options and the ones added.
    pub rsh: Vec<String>,
    /// wulf's path on the nodes (None: this wulf's own).
    pub remote_wulf: Option<String>,
}

impl Ssh {
    /// ssh as `opts` give it (`--rsh`, `--remote-wulf`, the connect
    /// timeout); an empty `--rsh` is a usage error.
    pub fn new(opts: &Options) -> Result<Ssh> {
        let program: Vec<String> = opts.rsh.split_whitespace().map(str::to_string).collect();
        if program.is_empty() {
            return Err(usage("--rsh: give a program (ssh)"));
        }
        Ok(Ssh {
            rsh: remote_shell::ssh(program, opts.timeout),
            remote_wulf: opts.remote_wulf.clone(),
        })
    }
}

impl Launcher for Ssh {
    fn name(&self) -> String {
        "ssh".into()
    }

    fn place(
        self: std::sync::Arc<Self>,
        nodes: Option<Vec<NodeSlots>>,
        _ppn: usize,
    ) -> Result<Spread> {
        let (rsh, wulf) = (self.rsh.clone(), self.remote_wulf.clone());
        Spread::over(nodes, self, rsh, wulf, None)
    }

    fn coordinator_ip(&self, hosts: &[String]) -> Result<IpAddr> {
        crate::exec::address_toward_first(hosts)
    }

    fn start(&self, hosts: &[String], coordinator: SocketAddr, secret: &str) -> Result<Agents> {
        let wulf = super::agent_wulf(&self.remote_wulf)?;
        remote_shell::start_agents(&self.rsh, &wulf, hosts, coordinator, secret)
    }
}
