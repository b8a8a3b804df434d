//! PVM between the nodes of a temporary lab (`wulf sweep pvm --lab fe`):
//! the peer's pvmd in node2 adds node1 through `wulf lab rsh`, and the
//! measuring side enrolls with the pvmd started there. Every variant in
//! every mode completes with its bytes checked (`--integrity`), records
//! its route and encoding, crosses the 100 Mbit/s link (its 64 KiB point
//! is below the link's rate, which a path through shared memory or the
//! root namespace would beat), and leaves no pvmd running: /proc is read
//! for any non-zombie pvmd whose environment names the command's lab
//! (`WULF_LAB=t<pid>`: both daemons inherit it). Also when the sweep is
//! interrupted (SIGINT) or one end is killed (SIGKILL). Skips with a line
//! where PVM is absent, unless WULF_REQUIRE_PVM=1 (CI), where it fails.
//!
//! Zombies are not counted: a killed pvmd whose parent is a container's
//! init that never reaps stays in /proc as `Z`; it runs nothing.

use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::{self, serial, wulf};

fn pvm_present() -> bool {
    let lib = [
        "/usr/lib/x86_64-linux-gnu",
        "/usr/lib/aarch64-linux-gnu",
        "/usr/lib",
    ]
    .iter()
    .any(|d| Path::new(d).join("libpvm3.so.3").exists());
    if lib && Path::new("/usr/lib/pvm3/lib/pvmd").is_file() {
        return true;
    }
    if std::env::var("WULF_REQUIRE_PVM").as_deref() == Ok("1") {
        panic!("PVM is absent but WULF_REQUIRE_PVM=1: apt-get install pvm pvm-dev");
    }
    eprintln!("SKIPPED: PVM across lab nodes needs PVM (apt install pvm pvm-dev)");
    false
}

/// The environment of `pid`, one `KEY=VALUE` a string ("" where unreadable).
fn environ(pid: i32) -> Vec<String> {
    std::fs::read(format!("/proc/{pid}/environ"))
        .unwrap_or_default()
        .split(|b| *b == 0)
        .map(|v| String::from_utf8_lossy(v).into_owned())
        .collect()
}

fn zombie(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .unwrap_or_default()
        .rsplit_once(") ")
        .is_some_and(|(_, s)| s.starts_with('Z'))
}

/// Running processes named `comm` whose environment holds `WULF_LAB=lab`.
fn in_lab(comm: &str, lab: &str) -> Vec<i32> {
    let want = format!("WULF_LAB={lab}");
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&pid| {
            std::fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|c| c.trim() == comm)
                && !zombie(pid)
                && environ(pid).contains(&want)
        })
        .collect()
}

/// The pvmds of lab `lab` once every end has had a moment to go, each
/// with its command line.
fn pvmds_left(lab: &str) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let left = in_lab("pvmd", lab);
        if left.is_empty() || Instant::now() > deadline {
            return left
                .into_iter()
                .map(|pid| {
                    let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
                    let stat =
                        std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
                    let parent = stat
                        .rsplit_once(") ")
                        .map(|(_, s)| s.split(' ').nth(1).unwrap_or("?").to_string());
                    format!(
                        "{pid} (parent {}): {}",
                        parent.unwrap_or_default(),
                        String::from_utf8_lossy(&cmd).replace('\0', " ")
                    )
                })
                .collect();
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn start(args: &[&str]) -> (Child, String) {
    eprintln!("wulf {}", args.join(" "));
    let child = wulf(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start wulf");
    let lab = format!("t{}", child.id());
    (child, lab)
}

#[test]
fn every_pvm_variant_and_mode_crosses_the_lab_link_checked_and_leaves_no_pvmd() {
    let _s = serial();
    if !common::labs_possible() || !pvm_present() {
        return;
    }
    for (t, route, encoding) in [
        ("pvm", "PvmRouteDirect", "PvmDataRaw"),
        ("pvm(daemon)", "PvmDontRoute", "PvmDataRaw"),
        ("pvm(xdr)", "PvmRouteDirect", "PvmDataDefault (XDR)"),
    ] {
        for mode in ["pingpong", "stream", "bidir"] {
            let (child, lab) = start(&[
                "sweep",
                t,
                "--lab",
                "fe",
                "--mode",
                mode,
                "--sizes",
                "1,64Ki",
                "--budget",
                "1s",
                "--integrity",
                "--json",
                "-",
            ]);
            let out = child.wait_with_output().unwrap();
            let err = common::stderr(&out);
            assert!(out.status.success(), "{t} {mode}: {err}");
            let r: Value = serde_json::from_slice(&out.stdout).expect("a JSON result");
            assert_eq!(r["transport"], t);
            assert_eq!(r["complete"], true, "{t} {mode}");
            assert_eq!(r["options"]["integrity"], true);
            let settings = &r["options"]["transport"];
            assert_eq!(settings["route"], route, "{t}");
            assert_eq!(settings["encoding"], encoding, "{t}");
            let p = &r["placement"]["lab"];
            assert_eq!(p["name"], lab.as_str(), "{p}");
            assert_eq!(p["client_node"], "node1", "{p}");
            assert_eq!(p["server_node"], "node2", "{p}");
            // Over the link: a 64 KiB point below 100 Mbit/s each way.
            common::assert_over_fe_link(&r, t, mode);
            assert_eq!(
                pvmds_left(&lab),
                Vec::<String>::new(),
                "{t} {mode}: a pvmd outlived its sweep"
            );
        }
    }
}

/// Wait at most 60 s for `child` to end; returns what it said.
fn ended(mut child: Child) -> String {
    let deadline = Instant::now() + Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("the sweep did not end within 60 s");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    common::stderr(&child.wait_with_output().unwrap())
}

/// The wulf process of lab `lab` whose command line holds `word`.
fn wulf_in_lab(lab: &str, word: &str) -> i32 {
    let pids: Vec<i32> = in_lab("wulf", lab)
        .into_iter()
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| c.split(|b| *b == 0).any(|w| w == word.as_bytes()))
        })
        .collect();
    assert_eq!(pids.len(), 1, "one wulf {word} in lab {lab}: {pids:?}");
    pids[0]
}

fn kill(pid: i32, signal: nix::sys::signal::Signal) {
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), signal).unwrap();
}

/// `wulf lab exec --name LAB NODE -- wulf ARGS...`.
fn in_node(lab: &str, node: &str, args: &[&str]) -> Child {
    let mut all = vec!["lab", "exec", "--name", lab, node, "--", common::wulf_bin()];
    all.extend_from_slice(args);
    wulf(&all)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start wulf lab exec")
}

/// A `pvm` sweep from node1 against the server in node2, running until
/// both pvmds are up (bounded) and a second after, so that it measures
/// (a server killed while its pvmd adds node1 leaves the pvmd's helper
/// and node1's pvmd to the next PVM channel's start: documented).
fn sweep_running(lab: &str, budget: &str) -> Child {
    let child = in_node(
        lab,
        "node1",
        &[
            "sweep",
            "pvm",
            "--peer",
            "node2:17111",
            "--sizes",
            "1:64Ki",
            "--budget",
            budget,
        ],
    );
    let mut child = child;
    let deadline = Instant::now() + Duration::from_secs(30);
    while in_lab("pvmd", lab).len() < 2 {
        if child.try_wait().unwrap().is_some() {
            let out = child.wait_with_output().unwrap();
            panic!(
                "the sweep ended before its pvmds ran: {}",
                common::stderr(&out)
            );
        }
        assert!(
            Instant::now() < deadline,
            "no two pvmds in lab {lab} within 30 s"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_secs(1));
    child
}

/// In a lab that stays up (its removal would kill whatever runs in its
/// nodes): no pvmd outlives a sweep that ends, a measuring side killed
/// outright (the server kills both daemons) or a server killed outright
/// (its pvmd dies with it; the measuring side kills the one in its node).
#[test]
fn no_pvmd_outlives_a_sweep_or_a_killed_end_in_a_lab_that_stays() {
    use nix::sys::signal::Signal;
    let _s = serial();
    if !common::labs_possible() || !pvm_present() {
        return;
    }
    let lab = format!("pv{}", std::process::id());
    let _guard = common::lab_up(&lab, 2);
    // The server's stderr goes to the test's output (shown when it fails).
    let mut server = in_node(&lab, "node2", &["serve", "--port", "17111"]);
    let mut said = server.stderr.take().unwrap();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(&mut said)
            .lines()
            .map_while(Result::ok)
        {
            eprintln!("{line}");
        }
    });
    std::thread::sleep(Duration::from_secs(1));
    // A sweep that ends.
    let sweep = sweep_running(&lab, "1s");
    let out = sweep.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", common::stderr(&out));
    assert_eq!(
        pvmds_left(&lab),
        Vec::<String>::new(),
        "a pvmd outlived its sweep"
    );
    // The measuring side killed.
    let sweep = sweep_running(&lab, "60s");
    kill(wulf_in_lab(&lab, "sweep"), Signal::SIGKILL);
    ended(sweep);
    assert_eq!(
        pvmds_left(&lab),
        Vec::<String>::new(),
        "a pvmd outlived the killed sweep"
    );
    // The server killed.
    let sweep = sweep_running(&lab, "60s");
    let serve = wulf_in_lab(&lab, "serve");
    eprintln!("killing the server {serve}");
    kill(serve, Signal::SIGKILL);
    eprintln!("the sweep said: {}", ended(sweep));
    let _ = server.kill();
    let _ = server.wait();
    assert_eq!(
        pvmds_left(&lab),
        Vec::<String>::new(),
        "a pvmd outlived the killed server"
    );
}

/// Ctrl-C on a `--lab` sweep: the command ends and no pvmd is left.
#[test]
fn no_pvmd_outlives_an_interrupted_lab_sweep() {
    let _s = serial();
    if !common::labs_possible() || !pvm_present() {
        return;
    }
    let (child, lab) = start(&[
        "sweep", "pvm", "--lab", "fe", "--sizes", "1:64Ki", "--budget", "60s",
    ]);
    let deadline = Instant::now() + Duration::from_secs(30);
    while in_lab("pvmd", &lab).len() < 2 {
        assert!(
            Instant::now() < deadline,
            "no two pvmds in lab {lab} within 30 s"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    kill(child.id() as i32, nix::sys::signal::Signal::SIGINT);
    ended(child);
    assert_eq!(
        pvmds_left(&lab),
        Vec::<String>::new(),
        "a pvmd outlived Ctrl-C"
    );
}

#[test]
fn the_pvm_transport_names_the_lab_variable_the_lab_sets() {
    // transport may not import lab (a cycle): the name is written twice.
    assert_eq!(wulf::transport::pvm::remote::ENV_LAB, wulf::lab::ENV_LAB);
}
