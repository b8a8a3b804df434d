//! NAS kernels and `wulf run` across nodes (`--hosts`, `--launch`):
//! ranks placed over a node list and the placement recorded, with
//! simulated nodes on this machine (no root needed) and across the nodes
//! of a real link lab (wulf's own tcp ranks through the lab's remote
//! shell, Open MPI's launcher through the same); `wulf run` end to end on
//! a small lab; the faults: too few slots, an unknown node, a node whose
//! remote shell fails.
//!
//! No test asserts a speed.

use crate::common;

use std::path::Path;
use std::process::Output;

use common::{file, have, json, labs_possible, run, stderr, tempdir};
use wulf::result::{read_npb_result, NpbResult};

use common::serial;

/// `wulf npb KERNEL ARGS --json FILE`, which must succeed.
fn npb(kernel: &str, args: &[&str], out: &Path) -> NpbResult {
    let mut all = vec!["npb", kernel];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--repetitions", "1", "--json", out.to_str().unwrap()]);
    let o = run(&all);
    assert!(o.status.success(), "wulf {all:?}: {}", stderr(&o));
    read_npb_result(out).unwrap()
}

/// Every run verified, its ranks on `nodes` in rank order, and (in a
/// lab) each rank's process on the node it was placed on.
fn check_placed(r: &NpbResult, via: &str, nodes: &[&str], hostnames_are_nodes: bool) {
    let run = r
        .runs
        .iter()
        .find(|x| x.via == via && x.nprocs == nodes.len())
        .unwrap_or_else(|| panic!("no {via} np={}", nodes.len()));
    assert!(run.error.is_none(), "{via}: {:?}", run.error);
    assert!(run.outcomes.iter().all(|o| o.verified));
    let p = run.placement.as_ref().expect("placement recorded");
    let placed: Vec<&str> = p.iter().map(|x| x.node.as_str()).collect();
    assert_eq!(placed, nodes, "{via}");
    for (rank, x) in p.iter().enumerate() {
        assert_eq!(x.rank, rank);
        assert!(
            !x.hostname.is_empty(),
            "{via}: rank {rank} said no host name"
        );
        if hostnames_are_nodes {
            assert_eq!(x.hostname, x.node, "{via}: rank {rank} ran elsewhere");
        }
    }
}

#[test]
fn simulated_nodes_take_ranks_by_slot_and_the_placement_is_recorded() {
    let dir = tempdir();
    let out = file(&dir, "mg.json");
    let r = npb(
        "mg",
        &[
            "--hosts",
            "sim1,sim2",
            "--ppn",
            "2",
            "--launch",
            "local",
            "--np",
            "2,4",
            "--via",
            "tcp",
        ],
        &out,
    );
    let nodes = r.nodes.as_ref().expect("nodes recorded");
    assert_eq!(nodes.launch, "local");
    assert_eq!(nodes.hosts.len(), 2);
    assert_eq!(nodes.hosts[1].slots, 2);
    check_placed(&r, "tcp", &["sim1", "sim1"], false);
    check_placed(&r, "tcp", &["sim1", "sim1", "sim2", "sim2"], false);
    // The file says it, as documented, and rejects what it does not know.
    let mut v = json(&out);
    assert_eq!(v["runs"][1]["placement"][2]["node"], "sim2");
    v["runs"][1]["placement"][0]["surprise"] = serde_json::json!(1);
    let bad = file(&dir, "bad.json");
    std::fs::write(&bad, serde_json::to_string(&v).unwrap()).unwrap();
    let e = format!("{:#}", read_npb_result(&bad).unwrap_err());
    assert!(e.contains("surprise"), "{e}");
    let mut v = json(&out);
    v["nodes"]["surprise"] = serde_json::json!(1);
    std::fs::write(&bad, serde_json::to_string(&v).unwrap()).unwrap();
    assert!(read_npb_result(&bad).is_err());
}

#[test]
fn bad_node_lists_fail_clearly_and_at_once() {
    // More ranks than slots: a usage error before anything starts.
    let o = run(&[
        "npb", "mg", "--hosts", "a,b", "--launch", "local", "--np", "4", "--via", "tcp",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("4 processes need 4 process slots"),
        "{}",
        stderr(&o)
    );
    // A node its remote shell cannot reach: named, exit 3, no hang.
    let t = std::time::Instant::now();
    let o = run(&[
        "npb",
        "mg",
        "--hosts",
        "127.0.0.1,127.0.0.2",
        "--launch",
        "ssh",
        "--rsh",
        "false",
        "--np",
        "2",
        "--via",
        "tcp",
        "--timeout",
        "5s",
        "--repetitions",
        "1",
    ]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(stderr(&o).contains("on 127.0.0."), "{}", stderr(&o));
    assert!(t.elapsed() < std::time::Duration::from_secs(20));
    // MPI launchers start MPI ranks; wulf's own go by ssh, slurm, lab.
    let o = run(&[
        "npb",
        "mg",
        "--hosts",
        "a,b",
        "--launch",
        "mpi:openmpi",
        "--via",
        "tcp",
        "--np",
        "2",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("starts mpi:openmpi's ranks only"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn npb_ranks_cross_two_lab_nodes_by_wulf_and_by_open_mpi() {
    let _s = serial();
    if !labs_possible() {
        return;
    }
    let lab = format!("n{}", std::process::id() % 100_000);
    let _guard = common::lab_up(&lab, 2);
    let launch = format!("lab:{lab}");
    let dir = tempdir();
    let mut via = "tcp".to_string();
    if have("openmpi") {
        via.push_str(",mpi:openmpi");
    }
    let r = npb(
        "mg",
        &[
            "--launch",
            &launch,
            "--hosts",
            "node1,node2",
            "--np",
            "2",
            "--via",
            &via,
        ],
        &file(&dir, "mg.json"),
    );
    assert_eq!(r.nodes.as_ref().unwrap().launch, launch);
    check_placed(&r, "tcp", &["node1", "node2"], true);
    if have("openmpi") {
        check_placed(&r, "mpi:openmpi", &["node1", "node2"], true);
        let mpi = r.runs.iter().find(|x| x.via == "mpi:openmpi").unwrap();
        let line = mpi.mpi.as_ref().unwrap().launcher_command.join(" ");
        assert!(line.contains("--host node1,node2"), "{line}");
    }
    // A second kernel, all-to-all heavy: IS.
    let r = npb(
        "is",
        &["--launch", &launch, "--np", "2", "--via", "tcp"],
        &file(&dir, "is.json"),
    );
    check_placed(&r, "tcp", &["node1", "node2"], true);
    // A node the lab does not have is named.
    let o = run(&[
        "npb",
        "mg",
        "--launch",
        &launch,
        "--hosts",
        "node1,node9",
        "--np",
        "2",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("node9 is not a node of lab"),
        "{}",
        stderr(&o)
    );
}

/// `wulf run --launch lab:LAB --quick --quiet --out DIR` with `extra`.
fn run_quick_in_lab(lab: &str, dir: &tempfile::TempDir, extra: &[&str]) -> Output {
    let launch = format!("lab:{lab}");
    let out = dir.path().to_str().unwrap();
    let mut args = vec![
        "run", "--launch", &launch, "--quick", "--quiet", "--out", out,
    ];
    args.extend_from_slice(extra);
    run(&args)
}

#[test]
fn run_across_a_small_lab_end_to_end() {
    let _s = serial();
    if !labs_possible() {
        return;
    }
    let lab = format!("r{}", std::process::id() % 100_000);
    let _guard = common::lab_up(&lab, 2);
    let dir = tempdir();
    let o = run_quick_in_lab(
        &lab,
        &dir,
        &["--budget", "4s", "--sizes", "1:64Ki", "--only", "tcp"],
    );
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(o.status.success(), "{text}{}", stderr(&o));
    for needle in [
        "summary",
        "nodes (lab:",
        "matrix: latency median",
        "tcp sweep, slowest pair",
        "allreduce over tcp np=2: 8 B",
        "NAS MG class S tcp np=2",
    ] {
        assert!(text.contains(needle), "no {needle:?} in:\n{text}");
    }
    assert!(
        !text.contains("matrix over mpi:"),
        "--only tcp: no MPI matrix"
    );
    let runs: Vec<_> = std::fs::read_dir(dir.path()).unwrap().flatten().collect();
    assert_eq!(runs.len(), 1, "one results directory");
    let d = runs[0].path();
    for f in [
        "matrix.json",
        "npb-mg-S.json",
        "collective-allreduce.json",
        "report.html",
        "summary.txt",
    ] {
        assert!(d.join(f).is_file(), "no {f}");
    }
    let c = wulf::result::collective::read_collective_result(&d.join("collective-allreduce.json"))
        .unwrap();
    assert_eq!(
        (c.collective.as_str(), c.nprocs, c.runs.len()),
        ("allreduce", 2, 1)
    );
    let placed = c.runs[0].placement.as_ref().expect("the ranks' placement");
    let on: Vec<&str> = placed.iter().map(|p| p.node.as_str()).collect();
    assert_eq!(on, ["node1", "node2"], "one rank on each lab node");
    let html = std::fs::read_to_string(d.join("report.html")).unwrap();
    assert!(
        html.contains("allreduce"),
        "the report draws the collective"
    );
    let m = wulf::result::matrix::read_matrix_result(&d.join("matrix.json")).unwrap();
    // The rounds' cells: a suspicious one may be measured again (a
    // re-measure, marked), as a busy machine makes likely.
    assert_eq!(m.cells.iter().filter(|c| !c.remeasure).count(), 2);
    assert!(m.nodes.iter().all(|n| n.host.is_some()), "fingerprints");
    let sweeps: Vec<_> = std::fs::read_dir(&d)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("sweep-tcp-"))
        .collect();
    assert_eq!(sweeps.len(), 1, "one pair between two nodes");
    let s = wulf::result::read_result(&sweeps[0].path()).unwrap();
    assert!(s.placement.lab.is_some(), "the sweep ran between lab nodes");
    let mg = read_npb_result(&d.join("npb-mg-S.json")).unwrap();
    check_placed(&mg, "tcp", &["node1", "node2"], true);
}

/// `wulf run` across a lab with every MPI installed: each MPI's matrix
/// (its ranks on the lab's nodes, by its own launcher) and allreduce over
/// tcp and each MPI, in the summary and the results directory.
#[test]
fn run_across_a_lab_measures_each_mpi_matrix_and_allreduce() {
    let _s = serial();
    let mpis = common::libraries();
    if !labs_possible() || mpis.is_empty() {
        return;
    }
    let lab = format!("q{}", std::process::id() % 100_000);
    let _guard = common::lab_up(&lab, 2);
    let dir = tempdir();
    let o = run_quick_in_lab(
        &lab,
        &dir,
        &["--budget", "6s", "--sizes", "1:4Ki", "--no-npb"],
    );
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(o.status.success(), "{text}{}", stderr(&o));
    let d = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .next()
        .unwrap()
        .path();
    let c = wulf::result::collective::read_collective_result(&d.join("collective-allreduce.json"))
        .unwrap();
    for mpi in &mpis {
        // In a lab the MPIs are held to TCP: mpi:NAME(tcp).
        let via = format!("mpi:{mpi}(tcp)");
        assert!(
            text.contains(&format!("matrix over {via}: latency median")),
            "{text}"
        );
        let file = d.join(format!("matrix-mpi-{mpi}-tcp.json"));
        let m = wulf::result::matrix::read_matrix_result(&file).unwrap();
        // The rounds' cells; re-measures of doubtful ones may follow.
        let rounds = m.cells.iter().filter(|c| !c.remeasure).count();
        assert_eq!((m.via.as_str(), rounds), (via.as_str(), 2));
        assert!(m.cells.iter().all(|c| c.bits_per_s().is_some()), "{via}");
        let run = c
            .runs
            .iter()
            .find(|r| r.via == via)
            .expect("an allreduce run");
        assert!(run.error.is_none() && !run.points.is_empty(), "{run:?}");
        assert!(
            text.contains(&format!("allreduce over {via} np=2: 8 B")),
            "{text}"
        );
    }
    assert!(c.runs.iter().any(|r| r.via == "tcp" && r.error.is_none()));
}

/// The processes in lab `lab`'s node namespaces whose command line names
/// wulf: (pid, command line).
fn wulf_in_nodes(lab: &str, nodes: usize) -> Vec<(i32, String)> {
    let mut found = Vec::new();
    for i in 1..=nodes {
        let ns = format!("wlab-{lab}-node{i}");
        let Ok(out) = std::process::Command::new("ip")
            .args(["netns", "pids", &ns])
            .output()
        else {
            continue;
        };
        for pid in String::from_utf8_lossy(&out.stdout)
            .split_whitespace()
            .filter_map(|p| p.parse::<i32>().ok())
        {
            let cmd = std::fs::read(format!("/proc/{pid}/cmdline"))
                .map(|b| String::from_utf8_lossy(&b).replace('\0', " "))
                .unwrap_or_default();
            if cmd.contains("wulf") {
                found.push((pid, cmd));
            }
        }
    }
    found
}

/// Ends whatever wulf is left in a lab's nodes when dropped (a failed
/// test must not leave its processes behind).
struct KillLeftovers(String, usize);

impl Drop for KillLeftovers {
    fn drop(&mut self) {
        for (pid, _) in wulf_in_nodes(&self.0, self.1) {
            // SAFETY: kill only sends a signal.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
    }
}

#[test]
fn a_killed_coordinator_leaves_no_wulf_on_the_nodes() {
    use std::time::{Duration, Instant};
    let _s = serial();
    if !labs_possible() {
        return;
    }
    let lab = format!("k{}", std::process::id() % 100_000);
    let _guard = common::lab_up(&lab, 2);
    let _leftovers = KillLeftovers(lab.clone(), 2);
    let dir = tempdir();
    // A pair sweep of 0.2 x 150 s: far longer than the bound below.
    let mut coordinator = common::wulf(&[
        "run",
        "--launch",
        &format!("lab:{lab}"),
        "--budget",
        "150s",
        "--sizes",
        "1:8Mi",
        "--only",
        "tcp",
        "--no-npb",
        "--quiet",
        "--out",
        dir.path().to_str().unwrap(),
    ])
    .stdout(std::process::Stdio::null())
    .stderr(std::process::Stdio::null())
    .spawn()
    .unwrap();
    // Wait for the pair sweep: its server and its client on the nodes.
    let deadline = Instant::now() + Duration::from_secs(240);
    loop {
        let now = wulf_in_nodes(&lab, 2);
        let serving = now.iter().any(|(_, c)| c.contains("serve --once"));
        let sweeping = now.iter().any(|(_, c)| c.contains("sweep tcp --peer"));
        if serving && sweeping {
            break;
        }
        assert!(
            coordinator.try_wait().unwrap().is_none(),
            "wulf run ended before its pair sweep was seen"
        );
        assert!(Instant::now() < deadline, "no pair sweep within 240 s");
        std::thread::sleep(Duration::from_millis(100));
    }
    // The coordinator alone, at once: nothing of it can tidy up. It is
    // the `wulf run` that `--launch lab:NAME` started inside node1.
    let inner: Vec<i32> = wulf_in_nodes(&lab, 1)
        .into_iter()
        .filter(|(_, c)| c.contains(" run ") && c.contains("--in-lab"))
        .map(|(pid, _)| pid)
        .collect();
    assert_eq!(inner.len(), 1, "one coordinator in node1");
    // SAFETY: kill only sends a signal.
    unsafe { libc::kill(inner[0], libc::SIGKILL) };
    let killed = Instant::now();
    let bound = Duration::from_secs(10);
    let mut left = wulf_in_nodes(&lab, 2);
    while !left.is_empty() && killed.elapsed() < bound {
        std::thread::sleep(Duration::from_millis(100));
        left = wulf_in_nodes(&lab, 2);
    }
    assert!(
        left.is_empty(),
        "still running {bound:?} after the coordinator was killed: {left:?}"
    );
    // And the wulf that started it in the lab ends with it.
    while coordinator.try_wait().unwrap().is_none() && killed.elapsed() < 2 * bound {
        std::thread::sleep(Duration::from_millis(100));
    }
    let ended = coordinator.try_wait().unwrap();
    let _ = coordinator.kill();
    assert!(
        ended.is_some(),
        "the relaying wulf run outlived its coordinator"
    );
}

/// `wulf npb mg --launch ssh --hosts node1,node2` run in node1 of a
/// 2-node lab with an sshd in each node: wulf's own tcp ranks started by
/// ssh, each MPI's by its launcher through the same ssh; every run
/// verified, every rank on the node it was placed on.
#[test]
fn npb_ranks_cross_lab_nodes_started_by_ssh() {
    let _s = serial();
    let Some(lab) = common::ssh::SshLab::up("h", 2) else {
        return;
    };
    let nodes = ["node1", "node2"];
    let via = common::ssh::tcp_and_every_mpi();
    let dir = tempdir();
    let out = file(&dir, "mg.json");
    let o = lab
        .wulf_in_node1(&["npb", "mg"], "node1,node2")
        .args(["--np", "2", "--via", &via.join(","), "--repetitions", "1"])
        .arg("--json")
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let r = read_npb_result(&out).unwrap();
    assert!(r.complete, "{:?}", r.incomplete_reason);
    assert_eq!(r.nodes.as_ref().unwrap().launch, "ssh");
    for v in &via {
        check_placed(&r, v, &nodes, true);
    }
}
