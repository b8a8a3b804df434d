//! Helpers for the integration tests: run the real binary, start a real
//! server, read real result files.
#![allow(dead_code)]

pub mod lean;
pub mod libraries;
pub mod report_fixtures;
pub mod slurm;
pub mod ssh;

// Each tier's binary uses some of them (fast the layout check, the
// others the presence checks).
#[allow(unused_imports)]
pub use libraries::{assert_c_layout, have_ofi, have_ucx};
#[allow(unused_imports)]
pub use report_fixtures::matrix_with_remeasures;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

/// One test of this binary at a time, for the tests that must have the
/// machine's two CPUs to themselves: those that time things, build labs,
/// run MPI jobs or load the whole machine (each file says why it uses it).
/// A test that failed while holding it must not fail the others, so a
/// poisoned lock is taken anyway. The one serialization mechanism of the
/// suite: test binaries themselves run one after another.
pub fn serial() -> std::sync::MutexGuard<'static, ()> {
    static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// The name libtest knows test `function` of the module at `module` by
/// (`module_path!()` there), for a test that runs its own binary again
/// with `--exact` (an MPI rank, a probe inside a namespace): the tier's
/// binary names its tests `file::function`, without the crate's name.
pub fn test_name(module: &str, function: &str) -> String {
    match module.split_once("::") {
        Some((_, path)) => format!("{path}::{function}"),
        None => function.to_string(),
    }
}

/// Path of the built wulf binary.
pub fn wulf_bin() -> &'static str {
    env!("CARGO_BIN_EXE_wulf")
}

/// A `wulf` command with the given arguments.
pub fn wulf(args: &[&str]) -> Command {
    let mut c = Command::new(wulf_bin());
    c.args(args);
    c
}

/// Run wulf to completion.
pub fn run(args: &[&str]) -> Output {
    wulf(args).output().expect("run wulf")
}

/// Fast sweep options for tests.
pub const QUICK: &[&str] = &["--budget", "300ms", "--quiet", "--timeout", "5s"];

/// Sweep options for a test that checks every size it asks for (a point
/// per size, the last size's tails): `--budget` is a deadline (issue 43),
/// and the sizes whose least work it cannot fit are left out, said in the
/// result. On a loaded 2-vCPU machine (load 6-9, other builds beside the
/// suite) a 300 ms sweep's set-up, limits and integrity pass left its
/// points a fifth of it: one size. Room, not a speed: a busy sweep takes
/// all of it, a quiet one less (its points converge).
pub const EVERY_SIZE: &[&str] = &["--budget", "2s", "--quiet", "--timeout", "5s"];

/// [`EVERY_SIZE`] with a larger `budget`, for sweeps of many or large
/// sizes: spinning ends hand off once per scheduler tick on a loaded
/// machine (a 1 B shm trial then takes 0.1 s), and a 2 s shm sweep of
/// seven sizes up to 1 MiB kept four of them at load 7.
pub fn every_size(budget: &'static str) -> [&'static str; 5] {
    ["--budget", budget, "--quiet", "--timeout", "5s"]
}

/// `wulf sweep TRANSPORT` with [`QUICK`] and `extra`; its result, read
/// with the typed reader too (schema version, no unknown fields).
pub fn sweep_json(transport: &str, extra: &[&str]) -> serde_json::Value {
    let dir = tempdir();
    let out = file(&dir, "r.json");
    let mut args = vec!["sweep", transport, "--json", out.to_str().unwrap()];
    args.extend_from_slice(QUICK);
    args.extend_from_slice(extra);
    let o = run(&args);
    assert!(o.status.success(), "wulf {args:?} failed: {}", stderr(&o));
    wulf::result::read_result(&out).expect("result parses with the typed schema");
    json(&out)
}

/// Whether a sweep result says sizes were left out (the budget is a
/// deadline, issue 43: a loaded machine leaves the largest out).
pub fn left_sizes_out(r: &serde_json::Value) -> bool {
    r.get("sizes_left_out").is_some_and(|v| !v.is_null())
}

/// `args` with the value after `--budget` (`3s`, `400ms`) times `factor`.
fn scale_budget(args: &[&str], factor: f64) -> Vec<String> {
    let mut out: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    if let Some(i) = args.iter().position(|a| *a == "--budget") {
        let v = args[i + 1];
        let ms: f64 = match v.strip_suffix("ms") {
            Some(ms) => ms.parse().unwrap(),
            None => v.strip_suffix('s').unwrap().parse::<f64>().unwrap() * 1e3,
        };
        out[i + 1] = format!("{}ms", (ms * factor).round());
    }
    out
}

/// Room for every size a test asks for: `attempt` runs a command with
/// `args` and says whether the deadline left sizes out (with its own
/// result); it is run again with 2.5x the `--budget` while it does, three
/// runs at most. The budget is a deadline (issue 43): on a loaded machine
/// it leaves the largest sizes out and says so; a quiet machine runs once
/// (its points converge early). A size missing for any other reason, or
/// still left out after the third run, fails in the caller's checks.
pub fn with_room<T>(args: &[&str], mut attempt: impl FnMut(&[&str]) -> (T, bool)) -> T {
    let mut factor = 1.0;
    for run in 1..=3 {
        let scaled = scale_budget(args, factor);
        let refs: Vec<&str> = scaled.iter().map(String::as_str).collect();
        let (result, short) = attempt(&refs);
        if !short || run == 3 {
            return result;
        }
        eprintln!("run {run}: the deadline left sizes out of {refs:?}; again with more room");
        factor *= 2.5;
    }
    unreachable!("the third run returns")
}

/// A sweep that must measure every size it asks for: `args` (the
/// subcommand, transport and options, without `--budget`, `--json` or
/// `--quiet`) with `budget_s` of budget, given [`with_room`]. The result
/// is read with the typed reader too (schema version, no unknown fields).
pub fn sweep_every_size(args: &[&str], budget_s: f64) -> serde_json::Value {
    let dir = tempdir();
    let out = file(&dir, "r.json");
    let budget = format!("{budget_s}s");
    let mut full: Vec<&str> = args.to_vec();
    full.extend([
        "--budget",
        &budget,
        "--quiet",
        "--json",
        out.to_str().unwrap(),
    ]);
    with_room(&full, |full| {
        let o = run(full);
        assert!(o.status.success(), "wulf {full:?} failed: {}", stderr(&o));
        wulf::result::read_result(&out).expect("result parses with the typed schema");
        let r = json(&out);
        let short = left_sizes_out(&r);
        (r, short)
    })
}

/// A `wulf serve` on 127.0.0.1 with an ephemeral port, killed on drop.
pub struct Server {
    pub child: Child,
    pub port: u16,
}

impl Server {
    pub fn start(extra: &[&str]) -> Server {
        Server::start_with(extra, Stdio::null())
    }

    /// A server whose stderr (its log of refused clients) goes to `log`.
    pub fn start_logged(extra: &[&str], log: &Path) -> Server {
        Server::start_with(extra, std::fs::File::create(log).unwrap().into())
    }

    fn start_with(extra: &[&str], stderr: Stdio) -> Server {
        let mut args = vec!["serve", "--bind", "127.0.0.1", "--port", "0", "--announce"];
        args.extend_from_slice(extra);
        let mut child = wulf(&args)
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .expect("start wulf serve");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port = line
            .trim()
            .strip_prefix("WULF-LISTENING ")
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("bad announce line {line:?}"));
        Server { child, port }
    }

    pub fn addr(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    pub fn alive(&mut self) -> bool {
        self.child.try_wait().unwrap().is_none()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A fresh temporary directory.
pub fn tempdir() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

/// Read a result file as loose JSON.
pub fn json(path: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap()
}

/// Path inside a directory.
pub fn file(dir: &tempfile::TempDir, name: &str) -> PathBuf {
    dir.path().join(name)
}

/// stderr as text.
pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

pub fn in_path(name: &str) -> bool {
    std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).any(|d| d.join(name).is_file()))
        .unwrap_or(false)
}

/// Whether the Debian package of MPI `name` (openmpi, mpich) is installed;
/// with WULF_REQUIRE_MPI=1 a missing one fails the test.
pub fn have(name: &str) -> bool {
    if in_path(&format!("mpicc.{name}")) {
        return true;
    }
    if std::env::var("WULF_REQUIRE_MPI").as_deref() == Ok("1") {
        panic!(
            "{name} is not installed but WULF_REQUIRE_MPI=1: \
             apt-get install openmpi-bin libopenmpi-dev mpich libmpich-dev (scripts/install-test-deps)"
        );
    }
    eprintln!("skipped: {name} is not installed");
    false
}

/// Whether `hpcc` (HPC Challenge, for `wulf hpl`) is installed; with
/// WULF_REQUIRE_MPI=1 a missing one fails the test.
pub fn have_hpcc() -> bool {
    if in_path("hpcc") {
        return true;
    }
    if std::env::var("WULF_REQUIRE_MPI").as_deref() == Ok("1") {
        panic!("hpcc is not installed but WULF_REQUIRE_MPI=1: apt-get install hpcc (scripts/install-test-deps)");
    }
    eprintln!("SKIPPED: hpcc is not installed");
    false
}

/// The installed libraries.
pub fn libraries() -> Vec<&'static str> {
    ["openmpi", "mpich"]
        .into_iter()
        .filter(|l| have(l))
        .collect()
}

/// Whether link labs can be built here (root, iproute2, ethtool,
/// util-linux); says why not when they cannot, and fails when
/// WULF_REQUIRE_LAB is set (CI), so a lab test never passes by skipping.
pub fn labs_possible() -> bool {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let tools = ["ip", "tc", "ethtool", "nsenter", "unshare"]
        .iter()
        .all(|t| {
            Command::new("sh")
                .args(["-c", &format!("command -v {t}")])
                .output()
                .is_ok_and(|o| o.status.success())
        });
    if root && tools {
        return true;
    }
    let why = if root {
        "ip, tc, ethtool or util-linux missing"
    } else {
        "not root"
    };
    if std::env::var_os("WULF_REQUIRE_LAB").is_some() {
        panic!("lab tests required but cannot run: {why}");
    }
    eprintln!("SKIPPED: lab tests need root and iproute2/ethtool ({why})");
    false
}

/// Removes lab `name` when dropped.
pub struct LabGuard(pub String);

impl Drop for LabGuard {
    fn drop(&mut self) {
        let _ = wulf(&["lab", "down", "--name", &self.0])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}

/// `wulf lab up --name NAME --nodes N --link ge`; the lab is removed when
/// the returned guard drops.
pub fn lab_up(name: &str, nodes: usize) -> LabGuard {
    let guard = LabGuard(name.to_string());
    let n = nodes.to_string();
    let up = wulf(&["lab", "up", "--name", name, "--nodes", &n, "--link", "ge"])
        .output()
        .unwrap();
    assert!(up.status.success(), "{}", stderr(&up));
    guard
}

/// The matrix `out` wrote to `json`, checked: the command succeeded, the
/// agents were started by `launch`, the matrix is complete with `cells`
/// cells, and every agent ran in its own lab node, on its lab address.
pub fn lab_matrix_result(
    out: &Output,
    json: &Path,
    launch: &str,
    cells: usize,
) -> wulf::result::matrix::MatrixResult {
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        stderr(out)
    );
    let r = wulf::result::matrix::read_matrix_result(json).unwrap();
    assert_eq!(r.launch, launch);
    assert!(r.complete, "{:?}", r.incomplete_reason);
    // The rounds' cells (suspicious ones may be re-measured after them).
    assert_eq!(r.cells.iter().filter(|c| !c.remeasure).count(), cells);
    for n in &r.nodes {
        assert_eq!(n.host.as_ref().unwrap().hostname, n.name);
        assert!(n.address.as_deref().unwrap().starts_with("198.1"), "{n:?}");
    }
    r
}

/// Region names are /dev/shm/wulf-<creator pid>-<tag>.
pub fn regions() -> Vec<(i32, String)> {
    std::fs::read_dir("/dev/shm")
        .unwrap()
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let pid = name
                .strip_prefix("wulf-")?
                .split('-')
                .next()?
                .parse()
                .ok()?;
            Some((pid, name))
        })
        .collect()
}

/// Whether process `pid` exists (a zombie counts: see [`gone`]).
pub fn alive(pid: i32) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
}

/// No region may belong to `pids` or to a process that no longer exists.
pub fn assert_no_leaked_region(pids: &[i32]) {
    let leaked: Vec<_> = regions()
        .into_iter()
        .filter(|(p, _)| pids.contains(p) || !alive(*p))
        .collect();
    assert!(leaked.is_empty(), "leaked shared memory: {leaked:?}");
}

/// The processes whose parent is `pid`.
pub fn children_of(pid: u32) -> Vec<i32> {
    let path = format!("/proc/{pid}/task/{pid}/children");
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect()
}

/// Whether process `pid` descends from process `ancestor` (its parent,
/// its parent's parent, ...): a test that looks for processes by their
/// command line must not take another run's, e.g. a colleague's MPI job
/// on a shared development machine.
pub fn descends_from(pid: i32, ancestor: u32) -> bool {
    let mut p = pid;
    // A chain of parents is short; the bound only guards a loop.
    for _ in 0..64 {
        if p as u32 == ancestor {
            return true;
        }
        let stat = std::fs::read_to_string(format!("/proc/{p}/stat")).unwrap_or_default();
        // The command may hold spaces and parentheses: fields follow the last ')'.
        let Some(ppid) = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1))
            .and_then(|f| f.parse::<i32>().ok())
        else {
            return false;
        };
        if ppid <= 1 {
            return false;
        }
        p = ppid;
    }
    false
}

/// Whether process `pid` has ended: it no longer exists, or is a zombie
/// waiting for its parent to reap it.
pub fn gone(pid: i32) -> bool {
    !alive(pid)
        || std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .unwrap_or_default()
            .contains(") Z")
}

/// The rank processes (`wulf npb-rank`) among the children of `child`
/// (`wulf npb` or `wulf collective`), once there are at least `n` of them
/// (at most 20 s). Other children (short-lived probes started before the
/// ranks, which live long enough to be seen on a busy machine) are not
/// ranks: killing one instead of a rank once left a run without its error.
pub fn wait_for_ranks(child: &std::process::Child, n: usize) -> Vec<i32> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let is_rank = |pid: &i32| {
        std::fs::read(format!("/proc/{pid}/cmdline"))
            .is_ok_and(|c| c.split(|&b| b == 0).any(|a| a == b"npb-rank"))
    };
    loop {
        let ranks: Vec<i32> = children_of(child.id())
            .into_iter()
            .filter(is_rank)
            .collect();
        if ranks.len() >= n {
            return ranks;
        }
        assert!(std::time::Instant::now() < deadline, "ranks never started");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// Wait until process `pid` has used `ticks` clock ticks of CPU (user and
/// system, /proc/PID/stat fields 14 and 15), or `limit` has passed.
pub fn wait_for_cpu_ticks(pid: u32, ticks: u64, limit: std::time::Duration) {
    let t = std::time::Instant::now();
    while t.elapsed() < limit {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        // The command name (field 2) may hold spaces; count after its ')'.
        let used: u64 = stat
            .rsplit_once(')')
            .map(|(_, rest)| {
                rest.split_whitespace()
                    .skip(11)
                    .take(2)
                    .filter_map(|f| f.parse::<u64>().ok())
                    .sum()
            })
            .unwrap_or(0);
        if used >= ticks {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    panic!("process {pid} used less than {ticks} CPU ticks within {limit:?}");
}

/// The one directory a command (`wulf study`) made under `out`.
pub fn only_dir(out: &Path) -> PathBuf {
    let dirs: Vec<PathBuf> = std::fs::read_dir(out)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    assert_eq!(dirs.len(), 1, "{dirs:?}");
    dirs[0].clone()
}

/// Assert that sweep result `r` (mode `mode`) crossed a 100 Mbit/s fe lab
/// link: its 64 KiB point is below the link's rate each way (twice that
/// for bidir), which a path through shared memory or the root namespace
/// would beat.
pub fn assert_over_fe_link(r: &serde_json::Value, label: &str, mode: &str) {
    let link = if mode == "bidir" { 200e6 } else { 100e6 };
    let big = r["points"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["bytes"] == 65536)
        .expect("a 64 KiB point");
    let bits = big["bits_per_s"].as_f64().unwrap();
    assert!(
        bits < link,
        "{label} {mode}: 64 KiB at {bits} bit/s, not over the fe link"
    );
}

/// A short 8 B `wulf sweep TRANSPORT` with `env` set to `value`, expected
/// to fail promptly, without a panic; its standard error.
pub fn sweep_failing_with_env(transport: &str, env: &str, value: &str) -> String {
    let dir = tempdir();
    let json = file(&dir, "r.json");
    let out = wulf(&[
        "sweep",
        transport,
        "--sizes",
        "8",
        "--budget",
        "300ms",
        "--timeout",
        "5s",
        "--quiet",
        "--json",
        json.to_str().unwrap(),
    ])
    .env(env, value)
    .output()
    .unwrap();
    assert!(
        !out.status.success(),
        "{transport} with {env}={value} succeeded"
    );
    let err = stderr(&out);
    assert!(!err.contains("panicked"), "{err}");
    err
}
