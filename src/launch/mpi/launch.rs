//! The user's side of an MPI sweep: write the job, start
//! `LAUNCHER -np 2 [--mpi-arg...] wulf worker JOB`, relay progress, stop the
//! job gracefully on Ctrl-C, and read rank 0's report.
//!
//! Every wait is bounded: the job must be ready within a start-up allowance
//! (three times `--timeout`, at least 5 s), its heartbeat must not go stale
//! for longer than `--timeout` + 5 s, it must finish within three budgets
//! plus two minutes, and it must exit within a few seconds of reporting. A
//! job that misses any of these is killed, launcher and ranks together (the
//! launcher runs in its own process group).
//!
//! NPB group jobs ([`super::group`]) use the same command line (with their
//! own `-np`), spawn, wait and kill, with limits of their own ([`Limits`]).

use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

pub(super) use super::info::mpi_info;
pub use super::info::{steering_env, STEERING_PREFIXES};
use super::job::{self, Job, JobKind, Report};
use crate::error::{peer, usage, WulfError};
use crate::launch::RunContext;
use crate::result::{MpiInfo, Point};
use crate::sweep::engine::{SweepOutcome, SweepSpec};
use crate::sweep::progress::Reporter;
use crate::transport::mpi::build::Adapter;
use crate::transport::mpi::discover::MpiInstall;
use crate::transport::mpi::variants::Variant;
use crate::transport::mpi::{Launchable, EXE_VAR};
use crate::transport::{Cluster, ExtraOptions};

/// Time a job may take to exit after its report.
const EXIT_GRACE: Duration = Duration::from_secs(5);
/// How often the launching wulf looks at the job.
const POLL: Duration = Duration::from_millis(50);

/// What to launch.
pub struct Plan<'a> {
    /// Transport name as listed.
    pub name: &'static str,
    /// The MPI.
    pub install: &'a MpiInstall,
    /// Its compiled adapter.
    pub adapter: &'a Adapter,
    /// The variant's name (`tcp`, `ucx-shm`...), None for the default path.
    pub variant: Option<&'static str>,
    /// The variant, whose path the job's output is checked against.
    pub path: Option<&'static Variant>,
    /// The variant's launcher arguments.
    pub variant_args: &'a [&'static str],
    /// Command-line options.
    pub options: ExtraOptions,
    /// Hosts to place the ranks on, one each (`--lab`); None: all here.
    pub cluster: Option<Cluster>,
}

impl<'a> Plan<'a> {
    /// The plan of the MPI transport `l` in `ctx`: its adapter built, or
    /// why it cannot be.
    pub fn of(l: &'a Launchable, ctx: &RunContext) -> Result<Plan<'a>> {
        // Simulated hosts (`--launch local`) are all this machine.
        let cluster = ctx.cluster.clone().filter(|c| !c.is_local());
        if cluster.is_none() {
            // A path the library refuses here is refused before the job.
            l.probed()?;
        }
        Ok(Plan {
            name: l.name(),
            install: l.install()?,
            adapter: l.adapter()?,
            variant: l.variant(),
            path: l.path_variant(),
            variant_args: l.variant_args()?,
            options: ctx.transports.clone(),
            cluster,
        })
    }
}

/// Run the sweep `spec` as an MPI job; see the module documentation.
pub fn run(plan: &Plan, spec: &SweepSpec, progress: &mut dyn Reporter) -> Result<SweepOutcome> {
    if spec.peer.is_some() {
        return Err(usage(format!(
            "{} takes no --peer: the MPI launcher places both ranks (between lab nodes use --lab; or give it hosts with --mpi-arg, e.g. --mpi-arg '--host a,b')",
            plan.name
        )));
    }
    if spec.sizes.iter().any(|&s| s > i32::MAX as u64) {
        return Err(usage(format!(
            "{}: messages are limited to 2^31 - 1 bytes (an MPI count)",
            plan.name
        )));
    }
    let dir = tempfile::Builder::new()
        .prefix("wulf-mpi-")
        .tempdir()
        .context("cannot create a directory for the MPI job")?;
    let job = Job {
        transport: plan.name.into(),
        adapter: plan.adapter.library.clone(),
        window: plan.options.window,
        spec: spec.clone(),
        dir: dir.path().to_path_buf(),
        limits: crate::sweep::limits_carry::known(),
    };
    let job_path = dir.path().join(job::JOB);
    job::write(&job_path, &JobKind::Sweep(Box::new(job)))?;
    let (argv, launcher_args) = command(plan, 2, &job_path)?;

    let started = Instant::now();
    let mut launcher = spawn(&argv, dir.path())?;
    let timeout = spec.channel.timeout();
    // On a slow link the fewest trials of the large sizes can outlast any
    // budget: allow four times what they must take on the wire.
    let wire = plan
        .cluster
        .as_ref()
        .and_then(|c| c.link_bits_per_s)
        .map_or(Duration::ZERO, |rate| least_wire_time(spec, rate));
    let limits = Limits {
        startup: (3 * timeout).max(Duration::from_secs(5)),
        stale: timeout + Duration::from_secs(5),
        run: 3 * spec.budget + Duration::from_secs(120) + 4 * wire,
        graceful_stop: true,
    };
    let waited = wait(&mut launcher.child, dir.path(), &limits, progress);
    let startup_s = waited
        .ready_after
        .unwrap_or_else(|| started.elapsed())
        .as_secs_f64();
    let info = |report: &Report| mpi_info(plan, report, &argv, &launcher_args, startup_s);
    let report: Option<Report> = dir
        .path()
        .join(job::REPORT)
        .is_file()
        .then(|| job::read(&dir.path().join(job::REPORT)).ok())
        .flatten();
    let shown = argv.join(" ");
    relay_phases(dir.path());
    match report {
        Some(report) => {
            let error = report.error();
            match report.result.clone() {
                Some(mut result) => {
                    let mpi = info(&report);
                    crate::transport::mpi::protocol::state_thresholds(
                        &mut result,
                        &mpi.protocol_limits,
                        plan.variant == Some("tcp"),
                    );
                    let (reported, warning) = reported_path(plan, dir.path());
                    result.warnings.extend(warning);
                    result.mpi = Some(MpiInfo {
                        reported_path: reported,
                        ..mpi
                    });
                    if let Some(why) = &waited.killed {
                        result
                            .warnings
                            .push(format!("the MPI job {why} and was killed"));
                    }
                    Ok(SweepOutcome {
                        result,
                        error,
                        peer_loads: Vec::new(),
                    })
                }
                None => {
                    // Rank 0's own account is precise; the launcher's
                    // output would only repeat it.
                    let e = error.unwrap_or_else(|| anyhow::anyhow!("rank 0 sent no result"));
                    Err(e.context(format!("the MPI job `{shown}` failed")))
                }
            }
        }
        None => Err(waited.no_result(&shown, dir.path())),
    }
}

/// With `WULF_PHASES` set, rank 0's phases line (its stderr went to the
/// launcher's output in `dir`) on this process's stderr, as a sweep run
/// here prints it.
fn relay_phases(dir: &Path) {
    if std::env::var_os("WULF_PHASES").is_none_or(|v| v == "0") {
        return;
    }
    let err = std::fs::read_to_string(dir.join("launcher.err")).unwrap_or_default();
    for line in err.lines().filter(|l| l.starts_with("wulf: phases")) {
        eprintln!("{line}");
    }
}

/// The path the library reported in the job's output (in `dir`), checked
/// against the variant of `plan` (see [`Variant::check`]), and a warning
/// when it is not the one asked for or was not reported. Nothing for the
/// default path and the TCP variants, whose ranks record theirs.
fn reported_path(plan: &Plan, dir: &Path) -> (Option<String>, Option<String>) {
    let Some(variant) = plan.path.filter(|_| plan.cluster.is_none()) else {
        return (None, None);
    };
    let read = |f: &str| std::fs::read_to_string(dir.join(f)).unwrap_or_default();
    let output = format!("{}\n{}", read("launcher.out"), read("launcher.err"));
    match variant.check(&output) {
        None => (None, None),
        Some(Ok(path)) => (Some(path), None),
        Some(Err(why)) => (None, Some(format!("the path was not confirmed: {why}"))),
    }
}

/// The least time `spec` keeps a link of `bits_per_s` busy, whatever its
/// budget: per size two calibration blocks and the fewest trials the
/// policy keeps, of one round trip each (both directions of a ping-pong
/// cross the link), plus the tail and integrity passes when asked for.
fn least_wire_time(spec: &SweepSpec, bits_per_s: u64) -> Duration {
    let blocks = 2 + crate::measure::policy::MIN_TRIALS_ON_BUDGET as u64;
    let bytes: u64 = spec
        .sizes
        .iter()
        .map(|&b| {
            let tails = if spec.tails && b <= crate::sweep::engine::TAILS_MAX_BYTES {
                crate::sweep::tails::FULL_SAMPLES
            } else {
                0
            };
            let integrity = if spec.integrity { 3 } else { 0 };
            2 * b * (blocks + tails + integrity)
        })
        .sum();
    Duration::from_secs_f64(bytes as f64 * 8.0 / bits_per_s.max(1) as f64)
}

/// The executable the ranks run (see [`EXE_VAR`]).
pub(super) fn worker_exe() -> Result<PathBuf> {
    match std::env::var_os(EXE_VAR) {
        Some(exe) if !exe.is_empty() => Ok(PathBuf::from(exe)),
        _ => std::env::current_exe().context("cannot find wulf's own executable"),
    }
}

/// The launcher's command line for a job of `np` ranks described by
/// `job_path` (`LAUNCHER -np N BASE... CLUSTER... --mpi-arg... VARIANT...
/// wulf worker JOB`), and the launcher arguments it holds beyond the base
/// ones. With a cluster, the ranks go one per host, started through the
/// cluster's remote shell (written as a script beside the job file), and
/// the cluster's arguments already force TCP, so the variant's are left out.
pub(super) fn command(
    plan: &Plan,
    np: usize,
    job_path: &Path,
) -> Result<(Vec<String>, Vec<String>)> {
    let exe = match plan.cluster.as_ref().and_then(|c| c.remote_wulf.clone()) {
        Some(path) => PathBuf::from(path),
        None => worker_exe()?,
    };
    let mut launcher_args = Vec::new();
    if let Some(cluster) = &plan.cluster {
        let dir = job_path.parent().unwrap_or(Path::new("."));
        let agent = cluster.rsh_script(dir)?;
        let args = plan
            .install
            .flavor
            .cluster_args(
                &cluster.host_list(np)?,
                &agent,
                &cluster.subnet,
                &cluster.interface,
            )
            .ok_or_else(|| {
                usage(format!(
                    "{}: wulf does not know how to give this MPI's launcher hosts and a remote shell \
                     (it knows Open MPI and MPICH); its ranks cannot be spread over nodes",
                    plan.name
                ))
            })?;
        launcher_args.extend(args);
        if np > crate::sys::cpu_count() {
            let over = plan.install.flavor.oversubscribed_args();
            launcher_args.extend(over.iter().map(|s| s.to_string()));
        }
    }
    launcher_args.extend(plan.options.mpi_launcher_args.iter().cloned());
    if plan.cluster.is_none() {
        launcher_args.extend(plan.variant_args.iter().map(|s| s.to_string()));
        // The library's own report of the path it takes (read back by
        // `reported_path`).
        let report = plan.path.map_or(&[][..], |v| v.report_args);
        launcher_args.extend(report.iter().map(|s| s.to_string()));
        // Every rank is on this host, so TCP between them goes through the
        // loopback whatever address it picks; Open MPI leaves the loopback
        // out by default and dies in MPI_Init where it is the only
        // interface (a private network namespace). Name it, unless the user
        // chose interfaces.
        // Interfaces or other hosts the user chose: theirs to route.
        let chosen = plan.options.mpi_launcher_args.iter().any(|a| {
            a.contains("tcp_if_")
                || ["--host", "-H", "--hostfile", "--machinefile"].contains(&a.as_str())
        });
        if !plan.variant_args.is_empty() && !chosen {
            let local = plan.install.flavor.local_tcp_args();
            launcher_args.extend(local.iter().map(|s| s.to_string()));
        }
    }
    let mut argv: Vec<String> = vec![
        plan.install.launcher.display().to_string(),
        "-np".into(),
        np.to_string(),
    ];
    argv.extend(
        plan.install
            .flavor
            .base_args()
            .iter()
            .map(|s| s.to_string()),
    );
    argv.extend(launcher_args.iter().cloned());
    argv.push(exe.display().to_string());
    argv.push("worker".into());
    argv.push(job_path.display().to_string());
    Ok((argv, launcher_args))
}

/// Start the launcher `argv` in its own process group, its output going to
/// files of the job directory `dir`.
pub(super) fn spawn(argv: &[String], dir: &Path) -> Result<crate::exec::process::Process> {
    let mut cmd = Command::new(&argv[0]);
    cmd.args(&argv[1..]);
    // SAFETY: getuid cannot fail.
    if unsafe { libc::getuid() } == 0 {
        // Open MPI refuses root without these; set for this job only.
        cmd.env("OMPI_ALLOW_RUN_AS_ROOT", "1")
            .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
    }
    // Its own group (see crate::exec::process): the terminal's Ctrl-C
    // reaches only this wulf, which stops the job gracefully, and a kill
    // reaches every rank.
    let options = crate::exec::process::Options {
        parent_death_signal: Some(libc::SIGTERM),
        output_files: Some((dir.join("launcher.out"), dir.join("launcher.err"))),
        ..Default::default()
    };
    crate::exec::process::Process::spawn(cmd, None, &options)
        .with_context(|| format!("cannot start the MPI launcher {}", argv[0]))
}

/// The bounds of a job's life (see the module documentation).
pub(super) struct Limits {
    /// From launch until rank 0 writes `ready`.
    pub startup: Duration,
    /// Longest silence of the heartbeat once ready.
    pub stale: Duration,
    /// From `ready` until the report.
    pub run: Duration,
    /// Whether rank 0 honours the `stop` file; if not, an interrupted job
    /// is killed at once rather than given time to stop.
    pub graceful_stop: bool,
}

/// How the wait ended.
pub(super) struct Waited {
    /// The launcher's exit status, if it could be reaped.
    pub status: Option<std::process::ExitStatus>,
    /// Why the job was killed, if it was.
    pub killed: Option<String>,
    /// When rank 0 said it was ready, after launch.
    pub ready_after: Option<Duration>,
    /// Whether the launching wulf was interrupted.
    pub interrupted: bool,
}

impl Waited {
    /// The error of a job `shown` (its command line) that ended without a
    /// result: how it ended, the last lines it printed (from its job
    /// directory `dir`), as an interruption, a fault of a rank or the link
    /// (the ranks had started), or a failed launch.
    pub fn no_result(&self, shown: &str, dir: &Path) -> anyhow::Error {
        let how = match (&self.killed, self.status) {
            (Some(why), _) => format!("{why} and was killed"),
            (None, Some(s)) => format!("ended without a result ({s})"),
            (None, None) => "ended without a result".into(),
        };
        let msg = format!("the MPI job `{shown}` {how}{}", output_tail(dir));
        if self.interrupted {
            anyhow::Error::new(WulfError::Interrupted).context(msg)
        } else if self.ready_after.is_some() {
            // The ranks started, so the failure is one of a rank or the link.
            peer(msg)
        } else {
            anyhow::anyhow!(msg)
        }
    }
}

/// Watch the job until its launcher exits or a limit is missed (then kill
/// it), telling `progress` of the measured points as they appear.
pub(super) fn wait(
    child: &mut Child,
    dir: &Path,
    limits: &Limits,
    progress: &mut dyn Reporter,
) -> Waited {
    let (startup_limit, stale_limit, run_limit) = (limits.startup, limits.stale, limits.run);
    let t0 = Instant::now();
    let mut points = Tail::new(dir.join(job::PROGRESS));
    let (mut ready_at, mut report_at, mut stop_at) = (None, None, None);
    let mut beat = (String::new(), t0);
    let mut killed = None;
    loop {
        points.poll(progress);
        if exited(child) {
            break;
        }
        let now = Instant::now();
        if ready_at.is_none() && dir.join(job::READY).exists() {
            ready_at = Some(now);
            beat.1 = now;
        }
        if report_at.is_none() && dir.join(job::REPORT).exists() {
            report_at = Some(now);
        }
        if let Ok(b) = std::fs::read_to_string(dir.join(job::HEARTBEAT)) {
            if b != beat.0 {
                beat = (b, now);
            }
        }
        if crate::sweep::interrupted() && stop_at.is_none() {
            let _ = std::fs::write(dir.join(job::STOP), b"stop\n");
            stop_at = Some(now);
        }
        let why = if stop_at.is_some() && !limits.graceful_stop {
            Some("was interrupted".into())
        } else if let Some(r) = report_at {
            (now - r > EXIT_GRACE).then(|| "did not exit after reporting".to_string())
        } else if let Some(ready) = ready_at {
            if stop_at.is_some_and(|s| now - s > stale_limit) {
                Some("did not stop when interrupted".into())
            } else if now - beat.1 > stale_limit {
                Some(format!(
                    "stopped responding (no heartbeat for {})",
                    humantime::format_duration(stale_limit)
                ))
            } else {
                (now - ready > run_limit)
                    .then(|| format!("ran longer than {}", humantime::format_duration(run_limit)))
            }
        } else if stop_at.is_some() {
            Some("was interrupted while starting".into())
        } else {
            (now - t0 > startup_limit).then(|| {
                format!(
                    "did not start within {}",
                    humantime::format_duration(startup_limit)
                )
            })
        };
        if why.is_some() {
            killed = why;
            terminate(child);
            break;
        }
        std::thread::sleep(POLL);
    }
    // The launcher has exited but is not reaped yet, so its process group
    // id cannot have been reused: end any rank left behind, then reap.
    // SAFETY: killpg only sends a signal.
    unsafe { libc::killpg(child.id() as i32, libc::SIGKILL) };
    let status = child.wait().ok();
    points.poll(progress);
    Waited {
        status,
        killed,
        ready_after: ready_at.map(|r| r - t0),
        interrupted: stop_at.is_some(),
    }
}

/// Whether the child has exited, without reaping it (WNOWAIT).
fn exited(child: &Child) -> bool {
    // SAFETY: a zeroed siginfo_t is a valid out-buffer for waitid.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    // SAFETY: waitid writes only into `info`.
    let rc = unsafe {
        libc::waitid(
            libc::P_PID,
            child.id(),
            &mut info,
            libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
        )
    };
    // SAFETY: si_pid is valid to read after waitid (0 when nothing exited).
    rc != 0 || unsafe { info.si_pid() } != 0
}

/// SIGTERM to the launcher's group (launchers end their ranks on it), then
/// wait up to 3 s for the launcher to exit.
fn terminate(child: &Child) {
    // SAFETY: killpg only sends a signal.
    unsafe { libc::killpg(child.id() as i32, libc::SIGTERM) };
    let deadline = Instant::now() + Duration::from_secs(3);
    while Instant::now() < deadline && !exited(child) {
        std::thread::sleep(POLL);
    }
}

/// The last lines the launcher and ranks printed, for error messages.
pub(super) fn output_tail(dir: &Path) -> String {
    let mut lines = Vec::new();
    for f in ["launcher.err", "launcher.out"] {
        if let Ok(t) = std::fs::read_to_string(dir.join(f)) {
            lines.extend(
                t.lines()
                    .filter(|l| !l.trim().is_empty())
                    .map(str::to_string),
            );
        }
    }
    if lines.is_empty() {
        return String::new();
    }
    let start = lines.len().saturating_sub(15);
    format!("; its output ends:\n  {}", lines[start..].join("\n  "))
}

/// Follows `progress.jsonl` as rank 0 appends to it.
struct Tail {
    path: PathBuf,
    offset: u64,
    partial: Vec<u8>,
}

impl Tail {
    fn new(path: PathBuf) -> Tail {
        Tail {
            path,
            offset: 0,
            partial: Vec::new(),
        }
    }

    fn poll(&mut self, progress: &mut dyn Reporter) {
        let Ok(mut f) = std::fs::File::open(&self.path) else {
            return;
        };
        if f.seek(SeekFrom::Start(self.offset)).is_err() {
            return;
        }
        let mut fresh = Vec::new();
        if let Ok(n) = f.read_to_end(&mut fresh) {
            self.offset += n as u64;
        }
        self.partial.extend_from_slice(&fresh);
        while let Some(end) = self.partial.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = self.partial.drain(..=end).collect();
            if let Ok(p) = serde_json::from_slice::<Point>(&line) {
                progress.point(&p);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steering_variables_are_picked_by_prefix() {
        std::env::set_var("OMPI_MCA_btl_test_only", "self");
        std::env::set_var("WULF_UNRELATED_TEST_VAR", "x");
        let env = steering_env();
        assert_eq!(
            env.get("OMPI_MCA_btl_test_only").map(String::as_str),
            Some("self")
        );
        assert!(!env.contains_key("WULF_UNRELATED_TEST_VAR"));
    }

    #[test]
    fn least_wire_time_counts_the_fewest_round_trips() {
        let mut spec = SweepSpec::for_tests("mpi:openmpi", vec![1 << 20]);
        // 8 round trips of 1 MiB each way at 100 Mbit/s.
        let t = least_wire_time(&spec, 100_000_000).as_secs_f64();
        assert!((t - 16.0 * 1048576.0 * 8.0 / 1e8).abs() < 1e-6, "{t}");
        spec.tails = true;
        spec.sizes = vec![64 << 10];
        let t = least_wire_time(&spec, 100_000_000).as_secs_f64();
        assert!((t - 2.0 * 1008.0 * 65536.0 * 8.0 / 1e8).abs() < 1e-6, "{t}");
    }
}
