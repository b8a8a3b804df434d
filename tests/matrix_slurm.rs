//! `wulf matrix` on a real Slurm: Debian's slurmctld and one slurmd per
//! node of a link lab (each in its node's network and UTS namespaces, as
//! a cluster's nodes would be), one munged for all. Three ways in: `wulf
//! matrix --launch slurm`, `salloc -N 4 wulf matrix` (srun chosen by
//! itself inside the allocation), and `srun -N 4 wulf matrix` (the tasks
//! meet, rank 0 coordinates). The Slurm clients run inside node1: the
//! root namespace has no route to the lab.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{labs_possible, tempdir, wulf, wulf_bin};

/// The daemons of the test cluster, stopped on drop (before the lab goes).
struct Daemons(Vec<Child>);

impl Drop for Daemons {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn slurm_installed() -> bool {
    let ok = [
        "/usr/sbin/slurmctld",
        "/usr/sbin/slurmd",
        "/usr/sbin/munged",
    ]
    .iter()
    .all(|p| Path::new(p).exists());
    if !ok {
        if std::env::var_os("WULF_REQUIRE_LAB").is_some() {
            panic!("slurm-wlm and munge are required (scripts/install-test-deps)");
        }
        eprintln!("SKIPPED: slurm-wlm or munge missing");
    }
    ok
}

fn lab_addresses(lab: &str) -> Vec<(String, String)> {
    let out = wulf(&["lab", "status", "--name", lab, "--json"])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    v[0]["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| {
            let addr = n["address"].as_str().unwrap();
            let ip = addr.split('/').next().unwrap().to_string();
            (n["name"].as_str().unwrap().to_string(), ip)
        })
        .collect()
}

fn slurm_conf(dir: &Path, nodes: &[(String, String)]) -> PathBuf {
    let d = dir.display();
    let mut conf = format!(
        "ClusterName=wulftest\nSlurmctldHost={}({})\nAuthType=auth/munge\n\
         AuthInfo=socket={d}/munge.sock\nCredType=cred/munge\nSlurmUser=root\nSlurmdUser=root\n\
         StateSaveLocation={d}/state\nSlurmdSpoolDir={d}/spool-%n\nSlurmctldPidFile={d}/ctld.pid\n\
         SlurmdPidFile={d}/slurmd-%n.pid\nSlurmctldLogFile={d}/ctld.log\nSlurmdLogFile={d}/slurmd-%n.log\n\
         ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\nJobAcctGatherType=jobacct_gather/none\n\
         MailProg=/bin/true\nMpiDefault=none\nReturnToService=2\nSelectType=select/cons_tres\n\
         SelectTypeParameters=CR_CPU\n",
        nodes[0].0, nodes[0].1
    );
    for (name, ip) in nodes {
        conf.push_str(&format!(
            "NodeName={name} NodeAddr={ip} CPUs=2 State=UNKNOWN\n"
        ));
    }
    conf.push_str(
        "PartitionName=test Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES\n",
    );
    let path = dir.join("slurm.conf");
    std::fs::write(&path, conf).unwrap();
    path
}

/// A command run in node1 of `lab` with the test's Slurm configuration.
fn in_node1(lab: &str, conf: &Path, argv: &[&str]) -> Command {
    let mut c = wulf(&["lab", "exec", "--name", lab, "node1", "--"]);
    c.args(argv).env("SLURM_CONF", conf);
    c
}

#[test]
fn matrices_through_slurm_three_ways() {
    if !labs_possible() || !slurm_installed() {
        return;
    }
    let lab = format!("u{}", std::process::id() % 100_000);
    let _guard = common::lab_up(&lab, 4);
    let nodes = lab_addresses(&lab);
    let dir = tempdir();
    let d = dir.path();
    // munged's socket must be reachable by every node: a file in a
    // directory others may enter; the key in one only root may.
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::create_dir(d.join("key")).unwrap();
    std::fs::set_permissions(d.join("key"), std::fs::Permissions::from_mode(0o700)).unwrap();
    std::fs::create_dir(d.join("state")).unwrap();
    let key = d.join("key/munge.key");
    assert!(Command::new("mungekey")
        .arg("-c")
        .arg("-k")
        .arg(&key)
        .status()
        .unwrap()
        .success());
    let mut daemons = Daemons(Vec::new());
    daemons.0.push(
        Command::new("munged")
            .args(["--force", "--foreground", "-S"])
            .arg(d.join("munge.sock"))
            .arg(format!("--key-file={}", key.display()))
            .arg(format!("--pid-file={}", d.join("munged.pid").display()))
            .arg(format!("--log-file={}", d.join("munged.log").display()))
            .arg(format!("--seed-file={}", d.join("munged.seed").display()))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let conf = slurm_conf(d, &nodes);
    daemons.0.push(
        in_node1(&lab, &conf, &["slurmctld", "-D", "-i"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    // `ip netns exec` remounts /sys without cgroups, which slurmd needs:
    // nsenter keeps the host's.
    for (name, _) in &nodes {
        daemons.0.push(
            Command::new("nsenter")
                .arg(format!("--net=/run/netns/wlab-{lab}-{name}"))
                .arg(format!("--uts=/run/wulf/lab/{lab}/{name}.uts"))
                .args(["slurmd", "-D", "-N", name])
                .env("SLURM_CONF", &conf)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap(),
        );
    }
    let start = Instant::now();
    loop {
        let o = in_node1(&lab, &conf, &["sinfo", "-h", "-o", "%T %D"])
            .output()
            .unwrap();
        let s = String::from_utf8_lossy(&o.stdout).trim().to_string();
        if s == "idle 4" {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "nodes not idle: {s}"
        );
        std::thread::sleep(Duration::from_millis(300));
    }
    let w = wulf_bin();
    let quick = [
        "--budget",
        "2s",
        "--bandwidth-size",
        "256Ki",
        "--quiet",
        "--json",
    ];
    let cases: [(&str, Vec<&str>); 3] = [
        (
            "slurm",
            vec![w, "matrix", "--launch", "slurm", "--hosts", "node[1-4]"],
        ),
        ("slurm", vec!["salloc", "-N", "4", w, "matrix"]),
        (
            "srun (tasks)",
            vec!["srun", "-N", "4", "--ntasks-per-node=1", w, "matrix"],
        ),
    ];
    for (i, (launch, argv)) in cases.iter().enumerate() {
        let json = d.join(format!("m{i}.json"));
        let mut full = argv.clone();
        full.extend(quick);
        let json_s = json.to_str().unwrap().to_string();
        full.push(&json_s);
        // Agents of srun tasks write their rendezvous in the working directory.
        let out = in_node1(&lab, &conf, &full)
            .current_dir(d)
            .output()
            .unwrap();
        let r = common::lab_matrix_result(&out, &json, launch, 12);
        let names: Vec<&str> = r.nodes.iter().map(|n| n.name.as_str()).collect();
        assert_eq!(names, ["node1", "node2", "node3", "node4"], "{full:?}");
    }
    let left: Vec<_> = std::fs::read_dir(d)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(".wulf-matrix-"))
        .collect();
    assert!(left.is_empty(), "rendezvous files left: {left:?}");
    drop(daemons);
}
