//! Inside the MPI job: `wulf worker JOB`, started twice by the launcher
//! for a sweep (NPB group jobs, of any size, continue in [`super::group`]).
//!
//! Both ranks load the adapter, initialise MPI and swap processor names.
//! Rank 1 then plays `wulf serve --once`: it opens a control port, sends
//! its number to rank 0 over MPI and serves one session, whose data channel
//! is MPI. Rank 0 runs the ordinary sweep engine against that peer and
//! writes the result for the launching wulf (see [`super::job`]).
//!
//! MPI calls cannot time out, so each rank runs a watchdog thread: an MPI
//! call that makes no progress for the channel timeout ends the process
//! (rank 0 first reports why), and the launcher then ends the other rank.
//! Rank 0's watchdog also writes the heartbeat and turns the `stop` file
//! into the same graceful stop as Ctrl-C.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};

use super::job::{self, AgentJob, Job, JobKind, Report};
use crate::error::exit_code_of;
use crate::sweep::engine::run_sweep;
use crate::sweep::progress::JsonLines;
use crate::transport::mpi::ffi::{call_progress, Mpi};
use crate::transport::mpi::{park, serve_in_job, unpark};

/// Tag of the set-up messages (processor names, control port).
const SETUP_TAG: i32 = 3;
/// Bytes of a processor name on the wire.
const NAME_BYTES: usize = 256;

/// Run one rank of the job described by `job_path`.
pub fn run(job_path: &Path) -> Result<()> {
    // Die with the launcher, and end at once on a signal: the launching
    // wulf owns graceful stops (the stop file).
    // SAFETY: prctl with these arguments only sets a process attribute.
    unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) };
    crate::EXIT_ON_SIGNAL.store(true, Ordering::Relaxed);
    match job::read(job_path)? {
        JobKind::Sweep(job) => sweep(*job),
        JobKind::NpbGroup(job) => super::group::rank(&job),
        JobKind::Agent(job) => agent_rank(job),
    }
}

/// One rank of an agent job: the agent of node `hosts[rank]`, whose
/// measuring channels to the other agents are this MPI's, set up on this
/// (MPI's) thread.
fn agent_rank(job: AgentJob) -> Result<()> {
    serve_in_job(&job.transport, job.window);
    let mpi = Mpi::init(&job.adapter).map_err(anyhow::Error::msg)?;
    let rank = mpi.rank();
    let node = job.hosts.get(rank).cloned().with_context(|| {
        format!(
            "this is rank {rank} of {}, but the job names {} nodes",
            mpi.size(),
            job.hosts.len()
        )
    })?;
    watchdog(
        rank,
        Duration::from_millis(job.timeout_ms.max(1)),
        job.dir.clone(),
    );
    park(mpi);
    let ran = crate::cluster::agent::run(&crate::cluster::agent::AgentOptions {
        coordinator: vec![job.coordinator],
        name: node,
        secret: job.secret.clone(),
        serve_inline: true,
    });
    let mpi = unpark().context("the MPI channel was not released")?;
    if let Err(e) = ran {
        // No MPI_Finalize: the other ranks may be in a call with this one.
        eprintln!("wulf worker (agent rank {rank}): {e:#}");
        std::process::exit(exit_code_of(&e).max(1));
    }
    mpi.finalize()?;
    Ok(())
}

/// One rank of a sweep job.
fn sweep(job: Job) -> Result<()> {
    serve_in_job(&job.transport, job.window);
    let mpi = Mpi::init(&job.adapter).map_err(anyhow::Error::msg)?;
    let timeout = job.spec.channel.timeout();
    let rank = mpi.rank();
    if mpi.size() != 2 {
        let msg = format!(
            "the MPI job has {} ranks, wulf needs 2 (were -np/-n given in --mpi-arg?)",
            mpi.size()
        );
        if rank == 0 {
            report_failure(&job.dir, &mpi, Vec::new(), &msg, 1);
        }
        bail!(msg);
    }
    watchdog(rank, timeout, job.dir.clone());
    let mine = mpi.processor_name();
    let theirs = swap_names(&mpi, &mine)?;
    let names = if rank == 0 {
        vec![mine, theirs]
    } else {
        vec![theirs, mine]
    };
    let same_host = names[0] == names[1];
    if rank == 0 {
        rank0(mpi, &job, names, same_host)
    } else {
        rank1(mpi, &job, same_host, timeout)
    }
}

fn swap_names(mpi: &Mpi, mine: &str) -> Result<String> {
    let mut out = [0u8; NAME_BYTES];
    let n = mine.len().min(NAME_BYTES);
    out[..n].copy_from_slice(&mine.as_bytes()[..n]);
    let mut inp = [0u8; NAME_BYTES];
    mpi.exchange(&out, &mut inp, 1 - mpi.rank(), SETUP_TAG)
        .context("cannot exchange processor names between the ranks")?;
    let end = inp.iter().position(|&b| b == 0).unwrap_or(NAME_BYTES);
    Ok(String::from_utf8_lossy(&inp[..end]).into_owned())
}

fn loopback(ipv6: bool) -> IpAddr {
    if ipv6 {
        Ipv6Addr::LOCALHOST.into()
    } else {
        Ipv4Addr::LOCALHOST.into()
    }
}

/// Rank 0: the measuring side.
fn rank0(mpi: Mpi, job: &Job, names: Vec<String>, same_host: bool) -> Result<()> {
    let mut port = [0u8; 8];
    mpi.recv(&mut port, 1, SETUP_TAG)
        .context("no control port from rank 1")?;
    let port = u64::from_le_bytes(port);
    if port == 0 || port > u16::MAX as u64 {
        let msg = "rank 1 could not open a control port (see its message above)";
        report_failure(&job.dir, &mpi, names, msg, 1);
        bail!(msg);
    }
    let ip = if same_host {
        loopback(job.spec.channel.ipv6).to_string()
    } else {
        names[1].clone()
    };
    let mut spec = job.spec.clone();
    spec.peer = Some(match ip.parse::<IpAddr>() {
        Ok(IpAddr::V6(v6)) => format!("[{v6}]:{port}"),
        _ => format!("{ip}:{port}"),
    });
    let mut report = empty_report(&mpi, names);
    std::fs::write(job.dir.join(job::READY), b"ready\n")?;
    // One line per point, which the launching side follows (`launch::wait`).
    let mut progress = JsonLines(std::fs::File::create(job.dir.join(job::PROGRESS))?);
    // The launching wulf's limits: not measured again here.
    crate::sweep::limits_carry::adopt(&job.limits);
    park(mpi);
    let outcome = run_sweep(&spec, &mut progress);
    let mpi = unpark().context("the MPI channel was not released")?;
    match outcome {
        Ok(o) => {
            let mut result = o.result;
            // The peer was rank 1 on a port of its own, not a remote
            // `wulf serve` the user named.
            result.options.peer = None;
            report.result = Some(result);
            if let Some(e) = o.error {
                report.exit_code = exit_code_of(&e);
                report.error = Some(format!("{e:#}"));
            }
        }
        Err(e) => {
            report.exit_code = exit_code_of(&e);
            report.error = Some(format!("{e:#}"));
        }
    }
    job::write(&job.dir.join(job::REPORT), &report)?;
    if report.exit_code != 0 {
        // No MPI_Finalize: rank 1 may still wait in a call, and finalising
        // would wait for it. Exiting non-zero makes the launcher end it.
        std::process::exit(report.exit_code);
    }
    mpi.finalize()?;
    Ok(())
}

/// Rank 1: the peer, `wulf serve --once` on a port rank 0 learns over MPI.
fn rank1(mpi: Mpi, job: &Job, same_host: bool, timeout: Duration) -> Result<()> {
    let bind = if same_host {
        loopback(job.spec.channel.ipv6)
    } else if job.spec.channel.ipv6 {
        Ipv6Addr::UNSPECIFIED.into()
    } else {
        Ipv4Addr::UNSPECIFIED.into()
    };
    let listener = crate::sys::control_mark::bind(SocketAddr::new(bind, 0));
    let port = listener
        .as_ref()
        .ok()
        .and_then(|l| l.local_addr().ok())
        .map(|a| a.port() as u64)
        .unwrap_or(0);
    // Always answer, even with 0, so rank 0 never waits in vain.
    mpi.send(&port.to_le_bytes(), 0, SETUP_TAG)?;
    let listener = listener.with_context(|| format!("rank 1 cannot listen on {bind}"))?;
    let stream = accept_within(&listener, timeout)?;
    let max_bytes = job.spec.sizes.iter().copied().max().unwrap_or(1);
    park(mpi);
    let policy = crate::peer::server::SessionPolicy {
        max_bytes,
        ..crate::peer::server::SessionPolicy::local_peer()
    };
    let served = crate::peer::server::session(stream, &policy, None, &mut |_| {});
    let mpi = unpark().context("the MPI channel was not released")?;
    if let Err(e) = served {
        // Rank 0 reports the sweep's failure; this is the peer's view.
        eprintln!("wulf worker (rank 1): {e:#}");
        std::process::exit(1);
    }
    mpi.finalize()?;
    Ok(())
}

fn accept_within(listener: &TcpListener, timeout: Duration) -> Result<TcpStream> {
    let mut fds = [PollFd::new(listener.as_fd(), PollFlags::POLLIN)];
    let t = PollTimeout::try_from(timeout).unwrap_or(PollTimeout::MAX);
    loop {
        match poll(&mut fds, t) {
            Ok(0) => bail!(
                "rank 0 did not connect within {}",
                humantime::format_duration(timeout)
            ),
            Ok(_) => return Ok(listener.accept()?.0),
            Err(nix::errno::Errno::EINTR) => continue,
            Err(e) => return Err(e.into()),
        }
    }
}

/// Write rank 0's report of a job that failed before producing anything.
pub(super) fn report_failure(dir: &Path, mpi: &Mpi, processors: Vec<String>, msg: &str, code: i32) {
    let report = Report {
        error: Some(msg.into()),
        exit_code: code,
        ..empty_report(mpi, processors)
    };
    let _ = job::write(&dir.join(job::REPORT), &report);
}

/// Rank 0's report with nothing in it yet: the library's own description
/// and the ranks' processors.
pub(super) fn empty_report(mpi: &Mpi, processors: Vec<String>) -> Report {
    Report {
        result: None,
        output: None,
        error: None,
        exit_code: 0,
        library_version: mpi.library_version(),
        standard_version: mpi.version(),
        thread_level: mpi.thread_level().name().into(),
        processors,
        hostnames: None,
    }
}

/// Start the watchdog thread of this rank (see the module documentation).
pub(super) fn watchdog(rank: usize, timeout: Duration, dir: PathBuf) {
    // Rare wake-ups: each one can preempt a busy-polling rank.
    const PERIOD: Duration = Duration::from_millis(200);
    std::thread::spawn(move || {
        let mut last = call_progress();
        let mut since = Instant::now();
        let mut ticks = 0u64;
        loop {
            std::thread::sleep(PERIOD);
            ticks += 1;
            let now = call_progress();
            if now != last {
                last = now;
                since = Instant::now();
            } else if now % 2 == 1 && since.elapsed() > timeout {
                let msg = format!(
                    "rank {rank}: an MPI call made no progress for {}: the other rank stopped or hung",
                    humantime::format_duration(timeout)
                );
                if rank == 0 {
                    let report = Report {
                        result: None,
                        output: None,
                        error: Some(msg.clone()),
                        exit_code: 3,
                        library_version: String::new(),
                        standard_version: String::new(),
                        thread_level: String::new(),
                        processors: Vec::new(),
                        hostnames: None,
                    };
                    let _ = job::write(&dir.join(job::REPORT), &report);
                }
                eprintln!("wulf worker: {msg}");
                // SAFETY: _exit ends the process without running anything
                // that could block on the hung MPI call.
                unsafe { libc::_exit(3) };
            }
            if rank == 0 {
                if dir.join(job::STOP).exists() {
                    crate::sweep::INTERRUPTED.store(true, Ordering::Relaxed);
                }
                if ticks.is_multiple_of(3) {
                    let _ = std::fs::write(dir.join(job::HEARTBEAT), ticks.to_string());
                }
            }
        }
    });
}
