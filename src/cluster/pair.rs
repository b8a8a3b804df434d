//! One full sweep between two nodes of a [`Cluster`]: `wulf serve` on one,
//! `wulf sweep tcp --peer` on the other, both started through the
//! cluster's remote shell. The measurement is exactly the one a user makes
//! by hand between two machines (the same code, result and fingerprint);
//! the run's one-time secret reaches both ends on their stdin, never on a
//! command line, and the server takes one session and exits.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::process::CommandExt;
use std::process::{Child, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use super::orphan::EXIT_ON_STDIN_EOF_ENV;
use crate::exec::remote_shell::shell_quote;
use crate::peer::auth::{random_hex, SECRET_ENV};
use crate::result::SweepResult;
use crate::transport::Cluster;

/// Bound of a server's start (a remote shell's log-in included).
const SERVE_START: Duration = Duration::from_secs(30);

/// Sweep tcp (ping-pong, over `sizes` in `--sizes` syntax, or every
/// default size) from host `from` to host `to` of `cluster` within
/// `budget`, every blocking step bounded by `timeout`. The sweep's own
/// result, as `wulf sweep --json` writes it.
pub fn sweep_between(
    cluster: &Cluster,
    (from, to): (usize, usize),
    sizes: Option<&str>,
    budget: Duration,
    timeout: Duration,
) -> Result<SweepResult> {
    let secret = random_hex()?;
    let wulf = match &cluster.remote_wulf {
        Some(p) => p.clone(),
        None => std::env::current_exe()
            .context("cannot find wulf's own executable")?
            .display()
            .to_string(),
    };
    let to_host = &cluster.first(to + 1)?[to];
    let serve = format!(
        "serve --once --announce --port 0 --bind {}",
        to_host.address
    );
    let mut server = Remote::start(cluster, to, &wulf, &serve, &secret)?;
    let port = server
        .first_line(SERVE_START)
        .with_context(|| format!("wulf serve did not start on {}", to_host.name))?
        .trim()
        .strip_prefix("WULF-LISTENING ")
        .and_then(|p| p.parse::<u16>().ok())
        .with_context(|| format!("wulf serve on {} did not announce its port", to_host.name))?;
    let peer = match to_host.address {
        std::net::IpAddr::V6(v6) => format!("[{v6}]:{port}"),
        v4 => format!("{v4}:{port}"),
    };
    let mut sweep = format!(
        "sweep tcp --peer {peer} --budget {}ms --timeout {}ms --quiet --json -",
        budget.as_millis(),
        timeout.as_millis()
    );
    if let Some(s) = sizes {
        sweep.push_str(&format!(" --sizes {}", shell_quote(s)));
    }
    let mut client = Remote::start(cluster, from, &wulf, &sweep, &secret)?;
    // The sweep keeps to its budget; its slowest sizes and start-up come
    // on top.
    let out = client.output(3 * budget + 2 * timeout + SERVE_START);
    server.end();
    let (code, stdout) = out?;
    let from_name = &cluster.hosts[from].name;
    if stdout.trim().is_empty() {
        bail!(
            "the sweep on {from_name} against {} printed no result (exit {code}){}",
            to_host.name,
            client.said()
        );
    }
    serde_json::from_str(&stdout)
        .with_context(|| format!("the sweep on {from_name} printed a malformed result"))
}

/// A wulf command on a host, with the secret written to its stdin.
struct Remote {
    child: Child,
    /// Held open: its end tells the remote process that we are gone.
    _stdin: Option<std::process::ChildStdin>,
    stdout: mpsc::Receiver<String>,
    stderr: std::sync::Arc<std::sync::Mutex<String>>,
    /// Its group, this command's until ended here.
    _owned: crate::exec::owned::Owned,
}

impl Remote {
    fn start(
        cluster: &Cluster,
        host: usize,
        wulf: &str,
        args: &str,
        secret: &str,
    ) -> Result<Remote> {
        // `read` is a shell builtin: the secret never appears in `ps`.
        // Its stdin stays open while this Remote lives: it exits when the
        // remote shell's session closes (see `super::orphan`).
        let script = format!(
            "read -r {SECRET_ENV} && export {SECRET_ENV} {EXIT_ON_STDIN_EOF_ENV}=1 && exec {} {args}",
            shell_quote(wulf)
        );
        let mut cmd = cluster.command_on(host, &["sh".into(), "-c".into(), script])?;
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // Its own group: one kill ends a remote shell and its children.
            .process_group(0);
        let mut child = cmd.spawn().context("cannot start the remote shell")?;
        let owned = crate::exec::owned::group(child.id());
        let mut stdin = child.stdin.take();
        if let Some(stdin) = stdin.as_mut() {
            // A shell that died at once shows up in its output.
            let _ = writeln!(stdin, "{secret}");
        }
        let (tx, rx) = mpsc::channel();
        let mut out = BufReader::new(child.stdout.take().context("no stdout")?);
        std::thread::spawn(move || {
            let mut first = String::new();
            if out.read_line(&mut first).unwrap_or(0) == 0 {
                return;
            }
            let _ = tx.send(first);
            let mut rest = String::new();
            let _ = out.read_to_string(&mut rest);
            let _ = tx.send(rest);
        });
        let stderr = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
        if let Some(mut err) = child.stderr.take() {
            let keep = std::sync::Arc::clone(&stderr);
            std::thread::spawn(move || {
                let mut s = String::new();
                let _ = err.read_to_string(&mut s);
                *keep.lock().unwrap_or_else(|e| e.into_inner()) = s;
            });
        }
        Ok(Remote {
            child,
            _stdin: stdin,
            stdout: rx,
            stderr,
            _owned: owned,
        })
    }

    /// The first line it printed, within `limit`.
    fn first_line(&mut self, limit: Duration) -> Result<String> {
        self.stdout
            .recv_timeout(limit)
            .map_err(|_| anyhow::anyhow!("nothing within {limit:?}{}", self.said()))
    }

    /// Its exit code and everything it printed, within `limit` (then it
    /// is killed).
    fn output(&mut self, limit: Duration) -> Result<(i32, String)> {
        let deadline = Instant::now() + limit;
        let mut text = String::new();
        loop {
            match self.stdout.recv_timeout(Duration::from_millis(100)) {
                Ok(part) => text.push_str(&part),
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    if crate::sweep::INTERRUPTED.load(std::sync::atomic::Ordering::Relaxed) {
                        self.end();
                        bail!(crate::error::WulfError::Interrupted);
                    }
                    if Instant::now() > deadline {
                        self.end();
                        bail!("the sweep did not end within {limit:?}");
                    }
                }
            }
        }
        let status = self.child.wait()?;
        Ok((status.code().unwrap_or(-1), text))
    }

    /// `: LAST LINE OF STDERR`, or nothing.
    fn said(&self) -> String {
        std::thread::sleep(Duration::from_millis(50));
        let s = self.stderr.lock().unwrap_or_else(|e| e.into_inner());
        s.lines()
            .rfind(|l| !l.trim().is_empty())
            .map(|l| format!(": {}", l.trim()))
            .unwrap_or_default()
    }

    /// End it and its children.
    fn end(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let group = self.child.id() as i32;
            // SAFETY: killpg only sends a signal; the group id is not
            // reused while its leader is unreaped.
            unsafe {
                libc::killpg(group, libc::SIGTERM);
                std::thread::sleep(Duration::from_millis(100));
                libc::killpg(group, libc::SIGKILL);
            }
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Remote {
    fn drop(&mut self) {
        self.end();
    }
}
