//! `wulf matrix` started by a launcher on every node (srun, mpirun, any
//! PMI launcher): rank 0's coordinator accepts connections only from this
//! machine's addresses and those the other tasks published in private
//! files of the user's; a stranger's address is closed before a byte is
//! read. Loopback only: other hosts are other loopback addresses.

use crate::common;

use std::io::{BufRead, BufReader};
use std::net::{IpAddr, SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::{stderr, tempdir, wulf};

/// `wulf matrix` as rank `rank` of 2 of a PMI launch, in `dir`.
fn rank(dir: &Path, rank: usize, json: &Path) -> Command {
    let mut c = wulf(&[
        "matrix",
        "--timeout",
        "10s",
        "--budget",
        "2s",
        "--bandwidth-size",
        "64Ki",
        "--quiet",
        "--json",
        json.to_str().unwrap(),
    ]);
    for (k, _) in std::env::vars() {
        if k.starts_with("SLURM_") || k.starts_with("OMPI_") || k.starts_with("PMI") {
            c.env_remove(k);
        }
    }
    c.current_dir(dir)
        .env("PMI_RANK", rank.to_string())
        .env("PMI_SIZE", "2")
        // Two nodes' names on one machine.
        .env("SLURMD_NODENAME", format!("rank{rank}node"))
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    c
}

/// The loopback port rank 0 published in its rendezvous file `file`.
fn published_port(file: &Path, within: Duration) -> u16 {
    let start = Instant::now();
    while start.elapsed() < within {
        if let Ok(text) = std::fs::read_to_string(file) {
            let v: serde_json::Value = serde_json::from_str(&text).unwrap();
            let a: SocketAddr = v["addresses"][0].as_str().unwrap().parse().unwrap();
            return a.port();
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("rank 0 did not publish {}", file.display());
}

/// What the coordinator at `port` sends a connection from `from` first
/// ("" when it closes it at once).
fn first_line_from(from: [u8; 4], port: u16) -> String {
    let s = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    s.bind(&SocketAddr::new(IpAddr::from(from), 0).into())
        .unwrap();
    let to = SocketAddr::from(([127, 0, 0, 1], port));
    s.connect_timeout(&to.into(), Duration::from_secs(5))
        .unwrap();
    let s: TcpStream = s.into();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut line = String::new();
    let _ = BufReader::new(&s).read_line(&mut line);
    line
}

fn wait_bounded(mut child: Child, limit: Duration) -> Output {
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > limit {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!("did not end within {limit:?}: {}", stderr(&out));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.wait_with_output().unwrap()
}

/// A private file of the user's at `path` saying `text`.
fn private(path: &PathBuf, text: &str, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    let _ = std::fs::remove_file(path);
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

#[test]
fn ranks_connect_only_from_this_machine_or_the_addresses_they_published() {
    let dir = tempdir();
    let json = dir.path().join("m.json");
    // SAFETY: getuid has no preconditions.
    let uid = unsafe { libc::getuid() };
    let file = dir.path().join(format!(".wulf-matrix-pmi-{uid}.json"));
    let addresses = dir
        .path()
        .join(format!(".wulf-matrix-pmi-{uid}.rank-1.addresses"));
    let zero = rank(dir.path(), 0, &json).spawn().unwrap();
    let port = published_port(&file, Duration::from_secs(10));
    // A stranger's address: told why and closed, nothing read.
    let refused = |line: String| line.contains("\"refused\"") && !line.contains("wulf");
    assert!(refused(first_line_from([127, 0, 0, 9], port)));
    // An address in a file open to others (planted): still refused.
    private(&addresses, "[\"127.0.0.9\"]", 0o644);
    std::thread::sleep(Duration::from_millis(150));
    assert!(refused(first_line_from([127, 0, 0, 9], port)));
    // An address rank 1 published (its own private file): greeted.
    private(&addresses, "[\"127.0.0.9\"]", 0o600);
    std::thread::sleep(Duration::from_millis(150));
    assert!(first_line_from([127, 0, 0, 9], port).contains("wulf"));
    // This machine's own address: greeted; and the real rank 1 joins.
    assert!(first_line_from([127, 0, 0, 1], port).contains("wulf"));
    let one = rank(dir.path(), 1, &dir.path().join("unused.json"))
        .spawn()
        .unwrap();
    let out = wait_bounded(zero, Duration::from_secs(60));
    let one = wait_bounded(one, Duration::from_secs(20));
    assert!(out.status.success(), "{}\n{}", stderr(&out), stderr(&one));
    assert!(one.status.success(), "{}", stderr(&one));
    // Rank 1 removed its addresses file at the end.
    assert!(!addresses.exists());
}
