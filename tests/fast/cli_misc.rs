//! `wulf info`, `--help` and `--version` on the real binary.

use crate::common;
use common::*;

#[test]
fn info_prints_the_fingerprint() {
    let o = run(&["info"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = String::from_utf8_lossy(&o.stdout);
    for key in ["cpu", "kernel", "tcp", "interface"] {
        assert!(text.contains(key), "missing {key}: {text}");
    }
    let o = run(&["info", "--json", "--peer", "127.0.0.1"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let host: wulf::sys::Host =
        serde_json::from_slice(&o.stdout).expect("info --json is a host block");
    assert_eq!(host.interfaces.len(), 1);
    assert_eq!(host.interfaces[0].name, "lo");
}

#[test]
fn every_command_has_help_and_version() {
    for cmd in [
        vec!["--help"],
        vec!["--version"],
        vec!["run", "--help"],
        vec!["sweep", "--help"],
        vec!["serve", "--help"],
        vec!["info", "--help"],
    ] {
        let o = run(&cmd);
        assert!(o.status.success(), "{cmd:?}");
        assert!(!o.stdout.is_empty());
    }
    let o = run(&["--version"]);
    assert!(String::from_utf8_lossy(&o.stdout).contains(env!("CARGO_PKG_VERSION")));
}

#[test]
fn sweep_results_carry_the_route_interface() {
    let dir = tempdir();
    let out = file(&dir, "r.json");
    let mut args = vec![
        "sweep",
        "tcp",
        "--sizes",
        "1",
        "--json",
        out.to_str().unwrap(),
    ];
    args.extend_from_slice(QUICK);
    assert!(run(&args).status.success());
    let r = json(&out);
    assert_eq!(r["host"]["interfaces"][0]["name"], "lo");
    assert!(r["host"]["tcp_sysctls"].is_object());
    // Loopback has no link speed, so no link limit is claimed.
    assert!(r.get("link").is_none());
}

/// `--launch`'s help, written by hand in the clap doc comments, lists
/// every form of the launchers' registry (`launchers::choices()`), for
/// the matrix and for the commands that place nodes (issue 35 item 4:
/// `mpi:NAME` was missing).
#[test]
fn launch_help_lists_every_launcher() {
    let choices = wulf::cluster::launchers::choices();
    let forms: Vec<&str> = choices
        .split([',', ' '])
        .filter(|w| !w.is_empty() && *w != "or")
        .collect();
    assert!(forms.contains(&"mpi:NAME"), "{choices}");
    for command in [&["matrix"][..], &["npb", "ep"], &["collective"]] {
        let mut args = command.to_vec();
        args.push("--help");
        let o = run(&args);
        assert!(o.status.success(), "{}", stderr(&o));
        let text = String::from_utf8_lossy(&o.stdout);
        // The help spells `lab` and `lab:NAME` together as lab[:NAME].
        let help = text.replace("lab[:NAME]", "lab, lab:NAME");
        for form in &forms {
            assert!(
                help.contains(form),
                "{command:?} --help lacks {form}: {text}"
            );
        }
    }
}
