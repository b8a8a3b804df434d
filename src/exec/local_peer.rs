//! A peer process on this machine, started and stopped by the sweep itself,
//! so one command does a whole measurement.
//!
//! The child is `wulf serve --once --announce` on the loopback address with
//! an ephemeral port, which it prints on stdout. It runs in its own process
//! group (a terminal's Ctrl-C goes to the sweep, which then ends the session
//! cleanly) and dies with its parent (PR_SET_PDEATHSIG).

use std::io::Read;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::os::fd::AsFd;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};

use super::process::{Options, Process};

/// A running local peer.
pub struct LocalPeer {
    process: Process,
    /// Its control address.
    pub addr: SocketAddr,
}

impl LocalPeer {
    /// Start a peer and wait (at most `timeout`) for its port.
    pub fn start(ipv6: bool, timeout: Duration) -> Result<LocalPeer> {
        let exe = std::env::current_exe().context("cannot find wulf's own executable")?;
        let ip: IpAddr = if ipv6 {
            Ipv6Addr::LOCALHOST.into()
        } else {
            Ipv4Addr::LOCALHOST.into()
        };
        let mut cmd = Command::new(exe);
        cmd.args(["serve", "--once", "--announce", "--port", "0", "--bind"])
            .arg(ip.to_string());
        LocalPeer::spawn(cmd, ip, timeout)
    }

    /// Start `cmd`, a `wulf serve --announce` (possibly wrapped, as a lab
    /// node runs it), and wait (at most `timeout`) for its port; `ip` is
    /// where clients reach it.
    pub fn spawn(cmd: Command, ip: IpAddr, timeout: Duration) -> Result<LocalPeer> {
        let options = Options {
            stdout_piped: true,
            parent_death_signal: Some(libc::SIGTERM),
            ..Options::default()
        };
        let mut process =
            Process::spawn(cmd, None, &options).context("cannot start the local peer")?;
        let port = match read_port(&mut process.child, timeout) {
            Ok(p) => p,
            Err(e) => {
                process.end_group(nix::sys::signal::Signal::SIGKILL);
                return Err(e);
            }
        };
        Ok(LocalPeer {
            process,
            addr: SocketAddr::new(ip, port),
        })
    }

    /// The peer's process id (the root of what it starts).
    pub fn pid(&self) -> i32 {
        self.process.child.id() as i32
    }

    /// Wait for the peer to exit on its own (after `Bye`), ending it if it
    /// has not within `grace`.
    pub fn finish(mut self, grace: Duration) {
        self.process.finish(grace);
    }
}

impl Drop for LocalPeer {
    fn drop(&mut self) {
        self.process.end_group(nix::sys::signal::Signal::SIGKILL);
    }
}

fn read_port(child: &mut Child, timeout: Duration) -> Result<u16> {
    let out = child
        .stdout
        .as_mut()
        .context("no stdout from the local peer")?;
    let deadline = Instant::now() + timeout;
    let mut text = Vec::new();
    let mut buf = [0u8; 128];
    while !text.contains(&b'\n') {
        let left = deadline.saturating_duration_since(Instant::now());
        let mut fds = [PollFd::new(out.as_fd(), PollFlags::POLLIN)];
        let ready = poll(
            &mut fds,
            PollTimeout::try_from(left).unwrap_or(PollTimeout::MAX),
        )?;
        if ready == 0 {
            bail!(
                "the local peer did not start within {}",
                humantime::format_duration(timeout)
            );
        }
        let n = out.read(&mut buf)?;
        if n == 0 {
            bail!("the local peer exited before it was ready");
        }
        text.extend_from_slice(&buf[..n]);
    }
    let line = String::from_utf8_lossy(&text);
    line.trim()
        .strip_prefix("WULF-LISTENING ")
        .and_then(|p| p.parse().ok())
        .with_context(|| format!("unexpected output from the local peer: {line:?}"))
}
