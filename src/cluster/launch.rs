//! Every way of starting wulf's agents on nodes, behind one interface.
//!
//! A [`Launcher`] starts one `wulf agent` per node, telling it where the
//! coordinator listens and handing it the run's secret without putting it
//! on a command line (the environment for processes it starts directly or
//! through Slurm, stdin through a remote shell). What stays the same for
//! every launcher (accepting agents, authenticating them, the schedule)
//! lives in [`super::coordinator`]; a launcher only starts processes and
//! says, for a node that never joined, what its launch printed.

use std::io::{Read, Write};
use std::net::{IpAddr, SocketAddr};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use super::protocol::SECRET_ENV;

/// Most bytes kept of what one launch printed on stderr.
const STDERR_KEEP_BYTES: usize = 4096;

/// A way of starting agents.
pub trait Launcher {
    /// How results name it (`local`, `ssh`, `lab:NAME`, `slurm`).
    fn name(&self) -> String;
    /// The address the coordinator listens on, reachable from every host.
    fn coordinator_ip(&self, hosts: &[String]) -> Result<IpAddr>;
    /// Start one agent per host, each connecting back to `coordinator`.
    fn start(&self, hosts: &[String], coordinator: SocketAddr, secret: &str) -> Result<Agents>;
}

/// The processes a launcher started (one per host, or one for all), ended
/// when dropped: agents exit by themselves when the coordinator closes
/// their connections; whatever is left after a grace period is killed.
pub struct Agents {
    procs: Vec<Launched>,
    /// Files the processes need while they run (an MPI job's directory),
    /// removed after they end.
    _files: Option<tempfile::TempDir>,
}

struct Launched {
    /// The host this process is for; None: for every host (srun).
    host: Option<String>,
    child: Child,
    stderr: Arc<Mutex<Vec<u8>>>,
}

impl Agents {
    /// No processes (the launcher that started wulf started the agents).
    pub fn none() -> Agents {
        Agents::of(Vec::new())
    }

    fn of(procs: Vec<Launched>) -> Agents {
        Agents {
            procs,
            _files: None,
        }
    }

    /// One process that starts the agents of every host (an MPI launcher),
    /// with the directory of files it needs until it ends.
    pub fn one_for_all(cmd: Command, files: tempfile::TempDir) -> Result<Agents> {
        Ok(Agents {
            procs: vec![spawn(cmd, None, None)?],
            _files: Some(files),
        })
    }

    /// For a host that never joined: what its launch printed, or that it
    /// is still running.
    pub fn why_missing(&mut self, host: &str) -> String {
        for p in &mut self.procs {
            if p.host.as_deref().is_some_and(|h| h != host) {
                continue;
            }
            let said = String::from_utf8_lossy(&p.stderr.lock().unwrap_or_else(|e| e.into_inner()))
                .trim()
                .lines()
                .rfind(|l| !l.trim().is_empty())
                .unwrap_or("")
                .to_string();
            return match p.child.try_wait() {
                Ok(Some(status)) => format!(
                    "its launch exited with {status}{}",
                    if said.is_empty() {
                        String::new()
                    } else {
                        format!(": {said}")
                    }
                ),
                _ if !said.is_empty() => format!("its launch said: {said}"),
                _ => "its agent did not connect back".into(),
            };
        }
        "no agent was started for it".into()
    }

    /// Whether every launched process has exited (none can join any more).
    pub fn all_exited(&mut self) -> bool {
        self.procs
            .iter_mut()
            .all(|p| matches!(p.child.try_wait(), Ok(Some(_))))
    }

    /// Wait up to `grace` for every process to exit, then kill the rest.
    pub fn finish(mut self, grace: Duration) {
        self.end(grace);
    }

    fn end(&mut self, grace: Duration) {
        let deadline = Instant::now() + grace;
        while Instant::now() < deadline && !self.all_exited() {
            std::thread::sleep(Duration::from_millis(20));
        }
        for p in &mut self.procs {
            if !matches!(p.child.try_wait(), Ok(Some(_))) {
                // The whole process group: a remote shell and its children.
                let pid = nix::unistd::Pid::from_raw(-(p.child.id() as i32));
                let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
                let _ = p.child.kill();
            }
            let _ = p.child.wait();
        }
        self.procs.clear();
    }
}

impl Drop for Agents {
    fn drop(&mut self) {
        self.end(Duration::from_secs(3));
    }
}

/// Start `cmd` in a process group of its own (a Ctrl-C at the terminal
/// reaches the coordinator only, which ends the run in order), with its
/// stderr kept and `stdin_line` written to its stdin.
fn spawn(mut cmd: Command, host: Option<String>, stdin_line: Option<&str>) -> Result<Launched> {
    use std::os::unix::process::CommandExt;
    cmd.process_group(0)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .stdin(if stdin_line.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        });
    let program = cmd.get_program().to_string_lossy().into_owned();
    let mut child = cmd
        .spawn()
        .with_context(|| format!("cannot start {program}"))?;
    if let (Some(line), Some(mut stdin)) = (stdin_line, child.stdin.take()) {
        // A dead remote shell shows up as a missing node, not here.
        let _ = writeln!(stdin, "{line}");
    }
    let stderr = Arc::new(Mutex::new(Vec::new()));
    if let Some(mut pipe) = child.stderr.take() {
        let keep = Arc::clone(&stderr);
        std::thread::spawn(move || {
            let mut buf = [0u8; 1024];
            while let Ok(n) = pipe.read(&mut buf) {
                if n == 0 {
                    break;
                }
                let mut k = keep.lock().unwrap_or_else(|e| e.into_inner());
                k.extend_from_slice(&buf[..n]);
                if k.len() > STDERR_KEEP_BYTES {
                    let cut = k.len() - STDERR_KEEP_BYTES;
                    k.drain(..cut);
                }
            }
        });
    }
    Ok(Launched {
        host,
        child,
        stderr,
    })
}

/// The arguments of `wulf agent` after the program.
fn agent_args(coordinator: SocketAddr, name: Option<&str>) -> Vec<String> {
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

/// Agents as processes on this machine, over loopback: simulated nodes
/// for testing the coordinator at scale (`--launch local`).
pub struct Local {
    /// The wulf to start (this one unless `--remote-wulf` says otherwise).
    pub wulf: String,
}

impl Launcher for Local {
    fn name(&self) -> String {
        "local".into()
    }

    fn coordinator_ip(&self, _hosts: &[String]) -> Result<IpAddr> {
        Ok(IpAddr::from([127, 0, 0, 1]))
    }

    fn start(&self, hosts: &[String], coordinator: SocketAddr, secret: &str) -> Result<Agents> {
        let mut procs = Vec::with_capacity(hosts.len());
        for h in hosts {
            let mut cmd = Command::new(&self.wulf);
            cmd.args(agent_args(coordinator, Some(h)))
                .env(SECRET_ENV, secret);
            procs.push(spawn(cmd, Some(h.clone()), None)?);
        }
        Ok(Agents::of(procs))
    }
}

/// Agents through a remote shell, one per host: ssh (`BatchMode=yes`,
/// never a password prompt, a connect timeout) or a lab's `wulf lab rsh`.
/// The secret goes over the shell's stdin.
pub struct RemoteShell {
    /// Name for results (`ssh`, `lab:NAME`).
    pub label: String,
    /// Program and leading arguments; the host and the command follow.
    pub rsh: Vec<String>,
    /// wulf's path on the hosts.
    pub remote_wulf: String,
}

impl RemoteShell {
    /// ssh with options that never wait for a person, after `program`
    /// (`ssh`, or a user's own `ssh -i KEY -p 2222 ...`).
    pub fn ssh(
        program: Vec<String>,
        remote_wulf: String,
        connect_timeout: Duration,
    ) -> RemoteShell {
        let mut rsh = program;
        rsh.extend([
            "-o".into(),
            "BatchMode=yes".into(),
            "-o".into(),
            format!("ConnectTimeout={}", connect_timeout.as_secs().max(1)),
            "-o".into(),
            "StrictHostKeyChecking=accept-new".into(),
        ]);
        RemoteShell {
            label: "ssh".into(),
            rsh,
            remote_wulf,
        }
    }
}

impl Launcher for RemoteShell {
    fn name(&self) -> String {
        self.label.clone()
    }

    fn coordinator_ip(&self, hosts: &[String]) -> Result<IpAddr> {
        let first = hosts.first().context("no hosts")?;
        let ip = resolve_host(first)?;
        super::agent::local_address_toward(ip)
    }

    fn start(&self, hosts: &[String], coordinator: SocketAddr, secret: &str) -> Result<Agents> {
        let mut procs = Vec::with_capacity(hosts.len());
        for h in hosts {
            let mut cmd = Command::new(&self.rsh[0]);
            cmd.args(&self.rsh[1..])
                .arg(h)
                .arg(&self.remote_wulf)
                .args(agent_args(coordinator, Some(h)));
            procs.push(spawn(cmd, Some(h.clone()), Some(secret))?);
        }
        Ok(Agents::of(procs))
    }
}

/// Agents as the tasks of one `srun` step, one task per node; each names
/// itself after its node (SLURMD_NODENAME). srun passes the environment,
/// and with it the secret.
pub struct Slurm {
    /// wulf's path on the nodes.
    pub remote_wulf: String,
}

impl Launcher for Slurm {
    fn name(&self) -> String {
        "slurm".into()
    }

    fn coordinator_ip(&self, hosts: &[String]) -> Result<IpAddr> {
        let first = hosts.first().context("no hosts")?;
        super::agent::local_address_toward(resolve_host(first)?)
    }

    fn start(&self, hosts: &[String], coordinator: SocketAddr, secret: &str) -> Result<Agents> {
        let mut cmd = Command::new("srun");
        cmd.arg(format!("--nodes={}", hosts.len()))
            .arg(format!("--ntasks={}", hosts.len()))
            .arg("--ntasks-per-node=1")
            .arg(format!("--nodelist={}", hosts.join(",")))
            .arg("--kill-on-bad-exit=0")
            .arg(&self.remote_wulf)
            .args(agent_args(coordinator, None))
            .env(SECRET_ENV, secret);
        Ok(Agents::of(vec![spawn(cmd, None, None)?]))
    }
}

/// The first address `host` resolves to.
pub fn resolve_host(host: &str) -> Result<IpAddr> {
    use std::net::ToSocketAddrs;
    (host, 0)
        .to_socket_addrs()
        .map_err(|e| crate::error::peer(format!("cannot resolve host {host}: {e}")))?
        .map(|a| a.ip())
        .next()
        .ok_or_else(|| crate::error::peer(format!("host {host} has no address")))
}

/// A remote path goes through the remote shell's `sh -c`: allow only
/// characters that need no quoting.
pub fn check_remote_path(path: &str) -> Result<()> {
    if path.is_empty()
        || !path
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/._-+".contains(&b))
    {
        bail!("--remote-wulf '{path}': use a plain path (letters, digits, / . _ - +)");
    }
    Ok(())
}
