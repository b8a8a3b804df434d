//! `wulf matrix` with simulated nodes (agents as processes on this machine,
//! over loopback): every directed pair measured, the result file, 64
//! agents, and the faults: a node killed mid-matrix, Ctrl-C, a node of
//! another wulf version, a wrong secret, an unreachable host, bad input.

use crate::common;

use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::{stderr, tempdir, wulf};

/// Agents whose command line names `tag` (test host names are unique).
fn agents_named(tag: &str) -> usize {
    let out = Command::new("pgrep")
        .args(["-f", &format!("agent --coordinator .* --name {tag}")])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).lines().count()
}

/// A host-name prefix unique to this test run.
fn tag(test: &str) -> String {
    format!("{test}{}x", std::process::id())
}

/// Start a local matrix of `hosts` in the background and wait until its
/// `count` agents run (named with `tag`), plus `settle` into the rounds.
fn start_matrix(
    hosts: &str,
    tag: &str,
    count: usize,
    extra: &[&str],
    json: &std::path::Path,
    settle: Duration,
) -> std::process::Child {
    let mut args = vec![
        "matrix",
        "--launch",
        "local",
        "--hosts",
        hosts,
        "--quiet",
        "--json",
        json.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let child = wulf(&args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while agents_named(tag) < count && start.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(settle);
    child
}

fn matrix(hosts: &str, extra: &[&str], json: &std::path::Path) -> Output {
    let mut args = vec![
        "matrix",
        "--launch",
        "local",
        "--hosts",
        hosts,
        "--bandwidth-size",
        "64Ki",
        "--quiet",
        "--json",
        json.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    wulf(&args).output().unwrap()
}

#[test]
fn every_directed_pair_is_measured_and_saved() {
    let dir = tempdir();
    let json = dir.path().join("m.json");
    let csv = dir.path().join("m.csv");
    let t = tag("pairs");
    let out = matrix(
        &format!("{t}[1-4]"),
        &["--budget", "2s", "--csv", csv.to_str().unwrap()],
        &json,
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("latency, 8 B ping-pong"), "{text}");
    assert!(text.contains("bandwidth, 64 KiB stream"), "{text}");
    let r = wulf::result::matrix::read_matrix_result(&json).unwrap();
    assert!(r.complete);
    // The rounds' cells; suspicious ones may be measured again after them.
    let rounds_cells = r.cells.iter().filter(|c| !c.remeasure).count();
    assert_eq!((r.nodes.len(), r.rounds, rounds_cells), (4, 3, 12));
    let mut pairs: Vec<(usize, usize)> = r
        .cells
        .iter()
        .filter(|c| !c.remeasure)
        .map(|c| (c.from, c.to))
        .collect();
    pairs.sort();
    pairs.dedup();
    assert_eq!(pairs.len(), 12, "every directed pair once");
    for c in &r.cells {
        assert!(c.error.is_none(), "{:?}", c.error);
        let l = c.latency.as_ref().unwrap();
        let b = c.bandwidth.as_ref().unwrap();
        assert_eq!((l.bytes, b.bytes), (8, 64 << 10));
        assert!(!l.trials_ns.is_empty() && !b.trials_ns.is_empty());
        assert!(l.median_ns > 0.0 && b.bits_per_s > 0.0);
    }
    for n in &r.nodes {
        let host = n.host.as_ref().expect("every agent sends its fingerprint");
        assert_eq!(host.interfaces.len(), 1, "the interface it serves on");
        assert!(n.address.as_deref().unwrap().starts_with("127.0.0.1:"));
    }
    assert_eq!(r.analysis.node_summary.len(), 4);
    assert!(r.coordinator_cpu_s > 0.0 && r.rounds_s <= r.wall_s);
    let lines = std::fs::read_to_string(&csv).unwrap().lines().count();
    assert_eq!(lines, 1 + r.cells.len(), "a header and one row per cell");
    assert_eq!(agents_named(&t), 0, "no agent outlives the run");
}

#[test]
fn unknown_fields_and_other_versions_are_rejected() {
    let dir = tempdir();
    let json = dir.path().join("m.json");
    let out = matrix(
        &format!("{}[1-2]", tag("schema")),
        &["--budget", "1s"],
        &json,
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(v["kind"], "matrix");
    v["cells"][0]["surprise"] = 1.into();
    std::fs::write(&json, v.to_string()).unwrap();
    let e = wulf::result::matrix::read_matrix_result(&json).unwrap_err();
    assert!(format!("{e:#}").contains("surprise"), "{e:#}");
    v["cells"][0].as_object_mut().unwrap().remove("surprise");
    // Version 1 (before the load patterns' optional fields) is still read.
    v["schema_version"] = 1.into();
    std::fs::write(&json, v.to_string()).unwrap();
    assert!(wulf::result::matrix::read_matrix_result(&json).is_ok());
    v["schema_version"] = 99.into();
    std::fs::write(&json, v.to_string()).unwrap();
    let e = wulf::result::matrix::read_matrix_result(&json).unwrap_err();
    assert!(format!("{e:#}").contains("schema version"), "{e:#}");
}

#[test]
fn sixty_four_simulated_agents_complete_a_quick_matrix() {
    let dir = tempdir();
    let json = dir.path().join("m.json");
    let t = tag("many");
    let out = matrix(&format!("{t}[1-64]"), &["--budget", "8s"], &json);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let r = wulf::result::matrix::read_matrix_result(&json).unwrap();
    assert!(r.complete);
    let rounds_cells = r.cells.iter().filter(|c| !c.remeasure).count();
    assert_eq!((r.rounds, rounds_cells), (63, 64 * 63));
    assert!(r
        .cells
        .iter()
        .all(|c| c.error.is_none() && c.bandwidth.is_some()));
    // Every cell's trials were streamed back from the cell file.
    assert!(r
        .cells
        .iter()
        .all(|c| !c.bandwidth.as_ref().unwrap().trials_ns.is_empty()));
    assert_eq!(agents_named(&t), 0);
}

#[test]
fn a_node_killed_mid_matrix_is_named_and_the_rest_saved() {
    let dir = tempdir();
    let json = dir.path().join("m.json");
    let t = tag("kill");
    let hosts = format!("{t}[1-6]");
    let child = start_matrix(
        &hosts,
        &t,
        6,
        &[
            "--bandwidth-size",
            "64Ki",
            "--budget",
            "10s",
            "--timeout",
            "3s",
        ],
        &json,
        Duration::from_millis(1500),
    );
    let victim = format!("agent --coordinator .* --name {t}4$");
    assert!(Command::new("pkill")
        .args(["-KILL", "-f", &victim])
        .status()
        .unwrap()
        .success());
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(&format!("missing: {t}4: lost in round")),
        "{text}"
    );
    let r = wulf::result::matrix::read_matrix_result(&json).unwrap();
    assert!(!r.complete);
    assert!(r
        .incomplete_reason
        .as_deref()
        .unwrap()
        .contains(&format!("{t}4")));
    assert!(r.nodes[3].error.is_some());
    assert!(r
        .nodes
        .iter()
        .enumerate()
        .all(|(i, n)| i == 3 || n.error.is_none()));
    // The other nodes' pairs were all measured.
    let good = r
        .cells
        .iter()
        .filter(|c| c.from != 3 && c.to != 3 && c.error.is_none() && !c.remeasure)
        .count();
    assert_eq!(good, 5 * 4, "{:?}", r.cells);
    assert_eq!(agents_named(&t), 0);
}

#[test]
fn ctrl_c_saves_a_partial_matrix_and_ends_the_agents() {
    let dir = tempdir();
    let json = dir.path().join("m.json");
    let t = tag("int");
    let hosts = format!("{t}[1-4]");
    let child = start_matrix(
        &hosts,
        &t,
        4,
        &["--budget", "20s"],
        &json,
        Duration::from_millis(2500),
    );
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    let r = wulf::result::matrix::read_matrix_result(&json).unwrap();
    assert!(!r.complete);
    assert_eq!(r.incomplete_reason.as_deref(), Some("interrupted"));
    assert!(
        !r.cells.is_empty() && r.cells.len() < 12,
        "{}",
        r.cells.len()
    );
    // The cells came from the cell file, trials and all; it is gone now.
    assert!(r
        .cells
        .iter()
        .filter_map(|c| c.latency.as_ref())
        .all(|p| !p.trials_ns.is_empty()));
    assert!(!wulf::cluster::cells::cells_path(&json).exists());
    assert_eq!(agents_named(&t), 0);
}

/// A coordinator killed outright (SIGKILL: nothing can be saved at the
/// end) leaves every cell it had read in the cell file beside the
/// result, readable with their trials, and its agents end with their
/// control connections.
#[test]
fn a_killed_coordinator_leaves_its_cells_readable() {
    let dir = tempdir();
    let json = dir.path().join("m.json");
    let cells = wulf::cluster::cells::cells_path(&json);
    let t = tag("sigkill");
    let hosts = format!("{t}[1-4]");
    let mut child = start_matrix(
        &hosts,
        &t,
        4,
        &["--budget", "20s", "--bandwidth-size", "64Ki"],
        &json,
        Duration::ZERO,
    );
    // Wait (bounded) for the first whole cell line after the header.
    let start = Instant::now();
    let lines =
        |p: &std::path::Path| std::fs::read_to_string(p).map_or(0, |t| t.matches('\n').count());
    while lines(&cells) < 2 {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "no cell written in 60 s"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(!json.exists(), "a killed coordinator wrote no result");
    let (header, got) = wulf::cluster::cells::read_cells(&cells).unwrap();
    assert_eq!(header.kind, "matrix-cells");
    let names: Vec<String> = (1..=4).map(|i| format!("{t}{i}")).collect();
    assert_eq!(header.nodes, names);
    assert!(!got.is_empty() && got.len() < 12, "{}", got.len());
    for c in &got {
        assert!(c.error.is_none(), "{c:?}");
        assert!(!c.latency.as_ref().unwrap().trials_ns.is_empty());
        assert!(!c.bandwidth.as_ref().unwrap().trials_ns.is_empty());
    }
    // The agents notice their coordinator is gone.
    let start = Instant::now();
    while agents_named(&t) > 0 {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "agents outlived their coordinator"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn nodes_of_another_version_or_without_the_secret_are_named() {
    let dir = tempdir();
    let json = dir.path().join("m.json");
    let fake = dir.path().join("wulf-mixed");
    let py = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/matrix/fake_agent.py"
    );
    // The real wulf for most nodes; the fake agent for two of them.
    std::fs::write(
        &fake,
        format!(
            "#!/bin/sh\ncase \"$5\" in\n  *old) exec python3 {py} \"$3\" \"$5\" old {w} ;;\n  *bad) exec python3 {py} \"$3\" \"$5\" badsecret {w} ;;\n  *) exec {w} \"$@\" ;;\nesac\n",
            w = common::wulf_bin()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let t = tag("ver");
    let hosts = format!("{t}1,{t}2,{t}3,{t}old,{t}bad");
    let out = matrix(
        &hosts,
        &[
            "--budget",
            "2s",
            "--timeout",
            "5s",
            "--remote-wulf",
            fake.to_str().unwrap(),
        ],
        &json,
    );
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(&format!("missing: {t}old: did not join"))
            && text.contains("this agent runs wulf 0.0.1"),
        "{text}"
    );
    assert!(
        text.contains(&format!("missing: {t}bad: did not join")) && text.contains("wrong secret"),
        "{text}"
    );
    let r = wulf::result::matrix::read_matrix_result(&json).unwrap();
    assert!(!r.complete);
    assert_eq!(
        r.cells.iter().filter(|c| !c.remeasure).count(),
        6,
        "the three good nodes' pairs"
    );
    assert!(r.cells.iter().all(|c| c.error.is_none()));
}

#[test]
fn an_unreachable_host_is_named_within_the_timeout() {
    let dir = tempdir();
    let json = dir.path().join("m.json");
    let start = Instant::now();
    // Nothing listens on port 1 of loopback: ssh is refused at once.
    let out = wulf(&[
        "matrix",
        "--launch",
        "ssh",
        "--rsh",
        "ssh -p 1",
        "--hosts",
        "127.0.0.1,127.0.0.2",
        "--timeout",
        "3s",
        "--quiet",
        "--json",
        json.to_str().unwrap(),
    ])
    .output()
    .unwrap();
    assert!(start.elapsed() < Duration::from_secs(30));
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    for h in ["127.0.0.1", "127.0.0.2"] {
        assert!(
            text.contains(&format!("missing: {h}: did not join")),
            "{text}"
        );
    }
    assert!(text.contains("exit status: 255"), "{text}");
    let r = wulf::result::matrix::read_matrix_result(&json).unwrap();
    assert!(!r.complete && r.cells.is_empty());
}

#[test]
fn bad_input_is_exit_2() {
    for args in [
        vec!["matrix", "--launch", "local", "--hosts", "a,a"],
        vec!["matrix", "--launch", "local", "--hosts", "n[3-1]"],
        vec!["matrix", "--launch", "local", "--hosts", "a"],
        vec![
            "matrix", "--launch", "local", "--hosts", "a,b", "--via", "shm",
        ],
        vec![
            "matrix", "--launch", "local", "--hosts", "a,b", "--via", "nope",
        ],
        vec!["matrix", "--launch", "bogus", "--hosts", "a,b"],
        vec!["matrix", "--launch", "lab", "--hosts", "a,b"],
        vec![
            "matrix",
            "--hosts",
            "a,b",
            "--remote-wulf",
            "x;y",
            "--launch",
            "ssh",
        ],
        vec!["matrix", "--lab", "ge", "--nodes", "1"],
    ] {
        let out = wulf(&args).env_remove("SLURM_JOB_ID").output().unwrap();
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
    let out = wulf(&["matrix"])
        .env_remove("SLURM_JOB_NODELIST")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("no nodes"), "{}", stderr(&out));
}

#[test]
fn load_patterns_measure_their_pairs_at_once() {
    let dir = tempdir();
    // (pattern, steps, cells) among 6 nodes.
    for (pattern, steps, cells) in [("shift", 5, 30), ("bisection", 2, 6), ("multipair", 3, 6)] {
        let json = dir.path().join(format!("{pattern}.json"));
        let t = tag(pattern);
        let out = matrix(
            &format!("{t}[1-6]"),
            &["--pattern", pattern, "--budget", "2s"],
            &json,
        );
        assert_eq!(out.status.code(), Some(0), "{pattern}: {}", stderr(&out));
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            text.contains(&format!("{steps} steps of the {pattern} pattern")),
            "{text}"
        );
        let r = wulf::result::matrix::read_matrix_result(&json).unwrap();
        assert_eq!(
            (r.rounds, r.cells.iter().filter(|c| !c.remeasure).count()),
            (steps, cells),
            "{pattern}"
        );
        assert_eq!(r.analysis.steps.len(), steps);
        for st in &r.analysis.steps {
            let of_step: Vec<_> = r.cells.iter().filter(|c| c.round == st.step).collect();
            assert_eq!(st.pairs, of_step.len());
            let sum: f64 = of_step.iter().map(|c| c.bits_per_s().unwrap()).sum();
            assert!((st.aggregate_bits_per_s - sum).abs() < 1e-6 * sum);
            // A step's pairs are disjoint senders.
            let mut senders: Vec<usize> = of_step.iter().map(|c| c.from).collect();
            senders.dedup();
            assert_eq!(senders.len(), of_step.len());
        }
        if pattern == "multipair" {
            let pairs: Vec<usize> = r.analysis.steps.iter().map(|s| s.pairs).collect();
            assert_eq!(pairs, [1, 2, 3]);
            // osu_mbw_mr's small-message rate: every cell streams 8 B
            // messages too, and each step sums their rates.
            for st in &r.analysis.steps {
                let rate: f64 = r
                    .cells
                    .iter()
                    .filter(|c| c.round == st.step)
                    .map(|c| {
                        let p = c.rate.as_ref().expect("a small-message stream");
                        assert_eq!(p.bytes, 8);
                        1e9 / p.median_ns
                    })
                    .sum();
                let got = st.rate_messages_per_s.expect("a message rate");
                assert!((got - rate).abs() < 1e-6 * rate, "{got} {rate}");
            }
            assert!(r.cells.iter().all(|c| c.alone_bandwidth.is_none()));
            assert!(text.contains("8 B msgs/s"), "{text}");
        } else {
            // Each pair again alone after its step; each node's share kept.
            assert!(r.cells.iter().all(|c| c.rate.is_none()));
            for c in &r.cells {
                let alone = c.alone_bandwidth.as_ref().expect("measured alone");
                assert_eq!(alone.bytes, r.bandwidth_bytes);
            }
            assert_eq!(r.analysis.contention.len(), 6, "every node sends");
            for k in &r.analysis.contention {
                assert!((k.kept - k.loaded_bits_per_s / k.alone_bits_per_s).abs() < 1e-9);
            }
            assert!(
                text.contains("alone Mbit/s") && text.contains("kept"),
                "{text}"
            );
        }
    }
    // --no-alone: the pattern alone.
    let json = dir.path().join("no-alone.json");
    let out = matrix(
        &format!("{}[1-4]", tag("noalone")),
        &["--pattern", "bisection", "--no-alone", "--budget", "1s"],
        &json,
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let r = wulf::result::matrix::read_matrix_result(&json).unwrap();
    assert!(r.cells.iter().all(|c| c.alone_bandwidth.is_none()));
    assert!(r.analysis.contention.is_empty());
    let out = wulf(&[
        "matrix",
        "--launch",
        "local",
        "--hosts",
        "a,b",
        "--pattern",
        "shift",
        "--serial",
    ])
    .output()
    .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
}
