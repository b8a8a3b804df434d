//! Starting processes on hosts through a remote shell: ssh (with options
//! that never wait for a person) or a lab's `wulf lab rsh`, and with no
//! remote shell at all, `sh -c` here (hosts simulated on this machine).
//! `wulf matrix`'s agents, wulf's own NAS ranks and the MPI launchers'
//! remote shell (a script, [`rsh_script`]) all build their command lines
//! here.

use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{bail, Context, Result};

use super::process::{agent_options, Process};
use super::{agent_args, Agents};

/// A command that runs `argv` on `host` through the remote shell `rsh`
/// (program and leading arguments), or through `sh -c` here when `rsh` is
/// empty. The remote side joins the words and hands them to `sh -c`, as
/// rsh and ssh do: each word is quoted so paths with spaces stay one word.
pub fn command_on(rsh: &[String], host: &str, argv: &[String]) -> Command {
    let words = argv
        .iter()
        .map(|a| shell_quote(a))
        .collect::<Vec<_>>()
        .join(" ");
    let Some((program, lead)) = rsh.split_first() else {
        let mut c = Command::new("sh");
        c.arg("-c").arg(words);
        return c;
    };
    let mut c = Command::new(program);
    c.args(lead).arg(host).arg(words);
    c
}

/// Write the remote shell `rsh` as one executable script in `dir` and
/// return its path: some launchers (MPICH's Hydra) take the path of a
/// program, not a command line.
pub fn rsh_script(rsh: &[String], dir: &Path) -> Result<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let words: Vec<String> = rsh.iter().map(|w| shell_quote(w)).collect();
    let path = dir.join("rsh");
    let text = format!("#!/bin/sh\nexec {} \"$@\"\n", words.join(" "));
    std::fs::write(&path, text)
        .with_context(|| format!("cannot write the remote shell {}", path.display()))?;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))?;
    Ok(path)
}

/// `s` as one word of a POSIX shell command line.
pub fn shell_quote(s: &str) -> String {
    let plain = !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/._-=:,@%+".contains(&b));
    if plain {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// The remote shell of ssh after `program` (`ssh`, or a user's own `ssh -i
/// KEY -p 2222 ...`), with options that never wait for a person: no
/// password prompt (`BatchMode=yes`), a connect timeout, new host keys
/// accepted.
pub fn ssh(program: Vec<String>, connect_timeout: Duration) -> Vec<String> {
    let mut rsh = program;
    rsh.extend([
        "-o".into(),
        "BatchMode=yes".into(),
        "-o".into(),
        format!("ConnectTimeout={}", connect_timeout.as_secs().max(1)),
        "-o".into(),
        "StrictHostKeyChecking=accept-new".into(),
    ]);
    rsh
}

/// Start one `wulf agent` (at `remote_wulf` on the hosts) on each of
/// `hosts` through the remote shell `rsh`, each connecting back to
/// `coordinator`. Each gets its node's key alone, on the shell's stdin:
/// it cannot join under another name, and no command line shows it.
pub fn start_agents(
    rsh: &[String],
    remote_wulf: &str,
    hosts: &[String],
    coordinator: SocketAddr,
    secret: &str,
) -> Result<Agents> {
    let mut procs = Vec::with_capacity(hosts.len());
    for h in hosts {
        let mut argv = vec![remote_wulf.to_string()];
        argv.extend(agent_args(coordinator, Some(h)));
        // One of several processes on its host (`HOST/K`, `--ppn`).
        let host = h.split_once('/').map_or(h.as_str(), |(host, _)| host);
        let cmd = command_on(rsh, host, &argv);
        procs.push(Process::spawn(
            cmd,
            Some(h.clone()),
            &agent_options(Some(&super::credentials::for_node(secret, h))),
        )?);
    }
    Ok(Agents::of(procs))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting_keeps_words_whole() {
        assert_eq!(shell_quote("/usr/bin/wulf"), "/usr/bin/wulf");
        assert_eq!(shell_quote("a b"), "'a b'");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
        assert_eq!(shell_quote(""), "''");
        assert_eq!(shell_quote("$HOME;rm"), "'$HOME;rm'");
    }

    #[test]
    fn commands_through_a_remote_shell_and_here() {
        let rsh: Vec<String> = vec!["/x y/wulf".into(), "lab".into(), "rsh".into()];
        let cmd = command_on(&rsh, "node2", &["/a b/wulf".into(), "npb-rank".into()]);
        let args: Vec<String> = cmd
            .get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        assert_eq!(cmd.get_program(), "/x y/wulf");
        assert_eq!(args, ["lab", "rsh", "node2", "'/a b/wulf' npb-rank"]);
        let here = command_on(&[], "sim1", &["echo".into(), "a b".into()]);
        let args: Vec<String> = here
            .get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        assert_eq!(here.get_program(), "sh");
        assert_eq!(args, ["-c", "echo 'a b'"]);
        let dir = tempfile::tempdir().unwrap();
        let script = std::fs::read_to_string(rsh_script(&rsh, dir.path()).unwrap()).unwrap();
        assert!(
            script.contains("exec '/x y/wulf' lab rsh \"$@\""),
            "{script}"
        );
    }

    #[test]
    fn ssh_never_waits_for_a_person() {
        let joined = ssh(vec!["ssh".into()], Duration::from_secs(7)).join(" ");
        assert!(joined.contains("BatchMode=yes"), "{joined}");
        assert!(joined.contains("ConnectTimeout=7"), "{joined}");
    }
}
