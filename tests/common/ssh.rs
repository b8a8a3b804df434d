//! An sshd in every node of a link lab, with host and user keys made for
//! the test, so `--launch ssh` runs end to end through real ssh: the
//! fixture of every test that starts wulf's processes by ssh.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::{in_path, tempdir, wulf};

/// How long every sshd may take to accept its first connection.
const READY_TIMEOUT: Duration = Duration::from_secs(30);

/// sshd in nodes of a lab; stopped on drop (before the lab's guard goes).
pub struct SshNodes {
    children: Vec<Child>,
    /// Keys, configuration and known hosts; removed on drop.
    _dir: tempfile::TempDir,
    /// The `--rsh` value that reaches the nodes: ssh with the test's
    /// key and known-hosts file (wulf adds BatchMode and the rest).
    pub rsh: String,
}

impl Drop for SshNodes {
    fn drop(&mut self) {
        for c in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn keygen(path: &Path) {
    let ok = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-f"])
        .arg(path)
        .status()
        .unwrap()
        .success();
    assert!(ok, "ssh-keygen failed");
}

/// Whether sshd and ssh are here; says why not, and fails when
/// WULF_REQUIRE_LAB is set (CI), so an ssh test never passes by skipping.
pub fn ssh_possible() -> bool {
    if Path::new("/usr/sbin/sshd").exists() && in_path("ssh") && in_path("ssh-keygen") {
        return true;
    }
    if std::env::var_os("WULF_REQUIRE_LAB").is_some() {
        panic!("openssh-server and openssh-client are required (scripts/install-test-deps)");
    }
    eprintln!("SKIPPED: no sshd/ssh");
    false
}

impl SshNodes {
    /// Starts sshd in each of `nodes` of lab `lab` and waits (bounded)
    /// until ssh from the first node reaches every one of them.
    pub fn start(lab: &str, nodes: &[&str]) -> SshNodes {
        let dir = tempdir();
        let d = dir.path();
        keygen(&d.join("host_key"));
        keygen(&d.join("id"));
        std::fs::copy(d.join("id.pub"), d.join("authorized_keys")).unwrap();
        // sshd insists on its privilege-separation directory.
        std::fs::create_dir_all("/run/sshd").unwrap();
        let config = d.join("sshd_config");
        std::fs::write(
            &config,
            format!(
                "Port 22\nHostKey {k}\nAuthorizedKeysFile {a}\nPermitRootLogin prohibit-password\n\
                 PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\n",
                k = d.join("host_key").display(),
                a = d.join("authorized_keys").display()
            ),
        )
        .unwrap();
        let rsh = format!(
            "ssh -i {} -o UserKnownHostsFile={}",
            d.join("id").display(),
            d.join("known_hosts").display()
        );
        let mut s = SshNodes {
            children: Vec::new(),
            _dir: dir,
            rsh,
        };
        for node in nodes {
            let pid = s._dir.path().join(format!("{node}.pid"));
            let child = wulf(&["lab", "exec", "--name", lab, node, "--"])
                .arg("/usr/sbin/sshd")
                .args(["-D", "-e", "-f"])
                .arg(&config)
                .arg("-o")
                .arg(format!("PidFile={}", pid.display()))
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
            s.children.push(child);
        }
        s.wait_ready(lab, nodes);
        s
    }

    /// Waits until `ssh NODE true` from the first node works for every
    /// node: sshd takes a moment to listen.
    fn wait_ready(&self, lab: &str, nodes: &[&str]) {
        let start = Instant::now();
        for node in nodes {
            loop {
                let ok = wulf(&["lab", "exec", "--name", lab, nodes[0], "--"])
                    .args(self.rsh.split_whitespace())
                    .args(["-o", "BatchMode=yes", "-o", "ConnectTimeout=5"])
                    .args(["-o", "StrictHostKeyChecking=accept-new", node, "true"])
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .status()
                    .is_ok_and(|s| s.success());
                if ok {
                    break;
                }
                assert!(
                    start.elapsed() < READY_TIMEOUT,
                    "sshd in {node} of lab {lab} not reachable in {READY_TIMEOUT:?}"
                );
                std::thread::sleep(Duration::from_millis(300));
            }
        }
    }

    /// A command run in `node` of `lab`: `argv` there.
    pub fn in_node(lab: &str, node: &str, argv: &[&str]) -> Command {
        let mut c = wulf(&["lab", "exec", "--name", lab, node, "--"]);
        c.args(argv);
        c
    }
}

/// A lab of `n` nodes (`node1`...) named `PREFIX<pid>` with an sshd in
/// each, for a test that starts processes by ssh; None (after saying why)
/// when labs or ssh cannot run here. The sshd stops before the lab goes.
pub struct SshLab {
    /// The sshd of every node (dropped first).
    pub sshd: SshNodes,
    /// The lab's name.
    pub name: String,
    _guard: super::LabGuard,
}

impl SshLab {
    /// Build the lab and start the daemons.
    pub fn up(prefix: &str, n: usize) -> Option<SshLab> {
        if !super::labs_possible() || !ssh_possible() {
            return None;
        }
        let name = format!("{prefix}{}", std::process::id() % 100_000);
        let guard = super::lab_up(&name, n);
        let nodes: Vec<String> = (1..=n).map(|i| format!("node{i}")).collect();
        let names: Vec<&str> = nodes.iter().map(String::as_str).collect();
        Some(SshLab {
            sshd: SshNodes::start(&name, &names),
            name,
            _guard: guard,
        })
    }

    /// `wulf ARGS --launch ssh --rsh ... --hosts HOSTS` run in node1.
    pub fn wulf_in_node1(&self, args: &[&str], hosts: &str) -> Command {
        let mut c = SshNodes::in_node(&self.name, "node1", &[super::wulf_bin()]);
        c.args(args)
            .args(["--launch", "ssh", "--rsh", &self.sshd.rsh, "--hosts", hosts]);
        c
    }
}

/// `tcp` and every MPI installed, as a `--via` list.
pub fn tcp_and_every_mpi() -> Vec<String> {
    let mut via = vec!["tcp".to_string()];
    via.extend(super::libraries().iter().map(|l| format!("mpi:{l}")));
    via
}
