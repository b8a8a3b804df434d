//! A real Slurm over the nodes of a link lab: Debian's slurmctld in
//! node1 and one slurmd per node (each in its node's network and UTS
//! namespaces, as a cluster's nodes would be), one munged for all. The
//! Slurm clients run inside node1: the root namespace has no route to the
//! lab.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::{tempdir, wulf};

/// How long the nodes may take to become idle.
const IDLE_TIMEOUT: Duration = Duration::from_secs(30);

/// The daemons of a test cluster, stopped on drop (before the lab goes).
pub struct Slurm {
    daemons: Vec<Child>,
    lab: String,
    /// The working directory of the daemons (configuration, munge socket,
    /// logs, state); also a place for the tests' files.
    pub dir: tempfile::TempDir,
    /// The slurm.conf every client must be given (SLURM_CONF).
    pub conf: PathBuf,
}

impl Drop for Slurm {
    fn drop(&mut self) {
        for c in &mut self.daemons {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Whether slurm-wlm and munge are installed; says why not, and fails when
/// WULF_REQUIRE_LAB is set (CI), so a Slurm test never passes by skipping.
pub fn slurm_installed() -> bool {
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

/// Every node of `lab` with its address.
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

impl Slurm {
    /// Starts munged, slurmctld and a slurmd per node of `lab`, and waits
    /// (bounded) until every node is idle.
    pub fn start(lab: &str) -> Slurm {
        let nodes = lab_addresses(lab);
        let dir = tempdir();
        let d = dir.path().to_path_buf();
        // munged's socket must be reachable by every node: a file in a
        // directory others may enter; the key in one only root may.
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o755)).unwrap();
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
        let conf = slurm_conf(&d, &nodes);
        let mut s = Slurm {
            daemons: Vec::new(),
            lab: lab.to_string(),
            dir,
            conf,
        };
        s.daemons.push(
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
        let ctld = s
            .in_node1(&["slurmctld", "-D", "-i"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        s.daemons.push(ctld);
        // `ip netns exec` remounts /sys without cgroups, which slurmd
        // needs: nsenter keeps the host's.
        for (name, _) in &nodes {
            s.daemons.push(
                Command::new("nsenter")
                    .arg(format!("--net=/run/netns/wlab-{lab}-{name}"))
                    .arg(format!("--uts=/run/wulf/lab/{lab}/{name}.uts"))
                    .args(["slurmd", "-D", "-N", name])
                    .env("SLURM_CONF", &s.conf)
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .spawn()
                    .unwrap(),
            );
        }
        let want = format!("idle {}", nodes.len());
        let start = Instant::now();
        loop {
            let o = s
                .in_node1(&["sinfo", "-h", "-o", "%T %D"])
                .output()
                .unwrap();
            let state = String::from_utf8_lossy(&o.stdout).trim().to_string();
            if state == want {
                break;
            }
            assert!(start.elapsed() < IDLE_TIMEOUT, "nodes not idle: {state}");
            std::thread::sleep(Duration::from_millis(300));
        }
        s
    }

    /// A command run in node1 of the lab with this cluster's configuration.
    pub fn in_node1(&self, argv: &[&str]) -> Command {
        let mut c = wulf(&["lab", "exec", "--name", &self.lab, "node1", "--"]);
        c.args(argv).env("SLURM_CONF", &self.conf);
        c
    }
}
