//! `wulf lab`: make, use, inspect and remove emulated clusters (see
//! [`crate::lab`] for how a lab is built).

use std::ffi::OsString;
use std::os::unix::process::CommandExt;

use anyhow::{Context, Result};

use crate::cli::{
    LabAction, LabArgs, LabDownArgs, LabExecArgs, LabRshArgs, LabStatusArgs, LabUpArgs,
};
use crate::error::{usage, WulfError};
use crate::exec::process::exit_code;
use crate::lab::{self, build, state, status, LinkOptions};

/// Run `wulf lab`.
pub fn execute(args: &LabArgs) -> Result<()> {
    match &args.action {
        LabAction::Up(a) => up(a),
        LabAction::Exec(a) => exec(a),
        LabAction::Status(a) => show_status(a),
        LabAction::Down(a) => down(a),
        LabAction::Rsh(a) => rsh(a),
    }
}

fn up(a: &LabUpArgs) -> Result<()> {
    let mut o = LinkOptions::default();
    for l in &a.links {
        o.add_link(l).map_err(|e| usage(format!("--link: {e}")))?;
    }
    for m in &a.mtus {
        o.add_mtu(m).map_err(|e| usage(format!("--mtu: {e}")))?;
    }
    let mut compact = Vec::new();
    if let Some(l) = &a.loss {
        compact.push(format!("loss={l}"));
    }
    if let Some(d) = &a.delay {
        compact.push(format!("delay={d}"));
    }
    if let Some(j) = &a.jitter {
        compact.push(format!("jitter={j}"));
    }
    compact.push(format!("medium={}", a.medium));
    o.impairments = LinkOptions::parse_compact(&compact.join(","))
        .map_err(usage)?
        .impairments;
    let spec = o.for_nodes(a.nodes).map_err(usage)?;
    let st = build::up(&a.name, &spec, false)?;
    print!("{}", status::format(&[status::read(&st)]));
    println!(
        "run a command in a node with: wulf lab exec{} node1 -- COMMAND",
        name_option(&a.name)
    );
    Ok(())
}

fn name_option(name: &str) -> String {
    if name == crate::cli::DEFAULT_LAB {
        String::new()
    } else {
        format!(" --name {name}")
    }
}

fn exec(a: &LabExecArgs) -> Result<()> {
    let st = state::load(&a.name)?;
    // The command's group gets every SIGINT, SIGTERM and SIGHUP wulf
    // gets, and wulf exits only after it (issue 35 item 8).
    let mut cmd = lab::command_in(&st, &a.node, &a.command)?;
    let status = crate::exec::process::run_forwarding_signals(&mut cmd)
        .context("cannot run the command in the lab")?;
    relay(exit_code(status))
}

/// Exit with a child's code without a message of ours (it spoke for itself).
fn relay(code: i32) -> Result<()> {
    if code == 0 {
        Ok(())
    } else {
        Err(WulfError::Relayed(code).into())
    }
}

fn show_status(a: &LabStatusArgs) -> Result<()> {
    let labs = match &a.name {
        Some(n) => vec![status::read(&state::load(n)?)],
        None => status::read_all(),
    };
    if a.json {
        println!("{}", serde_json::to_string_pretty(&labs)?);
    } else {
        print!("{}", status::format(&labs));
    }
    Ok(())
}

fn down(a: &LabDownArgs) -> Result<()> {
    if a.all {
        let removed = build::remove_all();
        if removed.is_empty() {
            println!("no labs");
        } else {
            println!("removed {}", removed.join(", "));
        }
        return Ok(());
    }
    lab::spec::validate_name(&a.name).map_err(usage)?;
    let known = state::lab_dir(&a.name).exists() || lab_namespaces_exist(&a.name);
    if !known {
        return Err(usage(format!(
            "no lab named '{}' (wulf lab status lists the labs)",
            a.name
        )));
    }
    build::remove(&a.name, None);
    println!("removed {}", a.name);
    Ok(())
}

fn lab_namespaces_exist(name: &str) -> bool {
    let prefix = format!("{}{name}-", state::NETNS_PREFIX);
    std::process::Command::new("ip")
        .args(["netns", "list"])
        .output()
        .map(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .any(|l| l.starts_with(&prefix))
        })
        .unwrap_or(false)
}

/// ssh's options that take an argument (its getopt string's letters
/// followed by ':'): `-o BatchMode=yes`, `-p 22`, `-l user`...
const SSH_OPTIONS_WITH_ARGUMENT: &str = "bceilmopBDEFIJLOPRSWw";

/// Where the host is among `words`, after the ssh-style options a
/// launcher or a user's `--rsh` adds: flags alone or clustered (`-x`,
/// `-nT`, `-q`) and options with an argument, attached (`-oBatchMode=yes`)
/// or as the next word (`-o BatchMode=yes`). `--` ends the options.
fn host_position(words: &[String]) -> Option<usize> {
    let mut i = 0;
    while i < words.len() {
        let w = &words[i];
        if w == "--" {
            return (i + 1 < words.len()).then_some(i + 1);
        }
        let Some(letters) = w.strip_prefix('-').filter(|l| !l.is_empty()) else {
            return Some(i);
        };
        // The first letter that takes an argument takes the rest of the
        // word, or the next word when it ends the word.
        if let Some(at) = letters.find(|c| SSH_OPTIONS_WITH_ARGUMENT.contains(c)) {
            if at + 1 == letters.len() {
                i += 1;
            }
        }
        i += 1;
    }
    None
}

/// The remote shell of MPI launchers: `wulf lab rsh --name LAB [OPTIONS]
/// HOST WORDS...` runs `sh -c "WORDS..."` in node HOST, as ssh would run
/// them on a remote host (the launcher quotes for a remote shell).
fn rsh(a: &LabRshArgs) -> Result<()> {
    let st = state::load(&a.name)?;
    let texts: Vec<String> = a
        .words
        .iter()
        .map(|w| w.to_string_lossy().into_owned())
        .collect();
    // ssh-style options a launcher may add (-x, -n, -T, -o OPTION, -p
    // PORT...) come first; none means anything inside a lab node.
    let at = host_position(&texts).ok_or_else(|| usage("wulf lab rsh: no host given"))?;
    let host = &texts[at];
    let words = a.words.iter().skip(at + 1);
    // Launchers pass host names, possibly qualified or as addresses.
    let node = st
        .nodes
        .iter()
        .find(|n| n.name == host.split('.').next().unwrap_or("") || n.address.to_string() == *host)
        .ok_or_else(|| {
            usage(format!(
                "wulf lab rsh: '{host}' is not a node of lab {}",
                st.name
            ))
        })?;
    let script = words
        .map(|w| w.to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join(" ");
    let argv: Vec<OsString> = vec!["sh".into(), "-c".into(), script.into()];
    let mut cmd = lab::command_in(&st, &node.name, &argv)?;
    // A launcher ends its remote processes by ending their remote shells
    // (as ssh's end hangs up a remote session): end at once on a signal,
    // and take the remote command along.
    crate::EXIT_ON_SIGNAL.store(true, std::sync::atomic::Ordering::Relaxed);
    // SAFETY: prctl is async-signal-safe; nothing else runs in pre_exec.
    unsafe {
        cmd.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
            Ok(())
        });
    }
    let status = cmd
        .status()
        .context("cannot start the remote command in the lab")?;
    relay(exit_code(status))
}

#[cfg(test)]
mod tests {
    use super::host_position;

    fn at(words: &[&str]) -> Option<usize> {
        host_position(&words.iter().map(|w| w.to_string()).collect::<Vec<_>>())
    }

    /// What launchers and users pass to a remote shell before the host
    /// (issue 49 item 16: `-o BatchMode=yes` was taken for the host).
    #[test]
    fn ssh_options_before_the_host_are_skipped_with_their_arguments() {
        assert_eq!(at(&["node1", "hostname"]), Some(0));
        assert_eq!(at(&["-x", "-n", "-T", "-q", "node2", "cmd"]), Some(4));
        assert_eq!(at(&["-nTx", "node2"]), Some(1));
        assert_eq!(at(&["-o", "BatchMode=yes", "node1", "cmd"]), Some(2));
        assert_eq!(
            at(&["-oBatchMode=yes", "-o", "StrictHostKeyChecking=no", "node3"]),
            Some(3)
        );
        assert_eq!(
            at(&["-p", "22", "-l", "root", "-xq", "10.0.0.2", "cmd"]),
            Some(5)
        );
        assert_eq!(at(&["-qo", "ConnectTimeout=5", "node1"]), Some(2));
        assert_eq!(at(&["--", "node1"]), Some(1));
        assert_eq!(at(&["-o", "BatchMode=yes"]), None);
        assert_eq!(at(&["-x"]), None);
    }
}
