//! Parallel NPB runs (and `wulf collective`'s runs over wulf's own
//! transports, [`run_task`]): `np` ranks, each a process, linked by a
//! transport.
//!
//! [`run_group`] first offers the run to the transport's own launcher
//! ([`crate::launch::mpi::launch_group`]: MPI starts its ranks with
//! `mpirun`).
//! Transports without one (tcp, unix, shm, cma) get ranks started by wulf
//! itself: this process becomes the coordinator, starts `np` copies of
//! wulf (`wulf npb-rank`, hidden), and brokers their set-up over one TCP
//! control connection each ([`wire`]): every rank prepares a data channel
//! for each higher rank with [`Transport::listen`], the coordinator hands
//! the descriptions to the higher ranks, which [`Transport::connect`].
//! The ranks then run the job over [`crate::comm::EndpointComm`]
//! and report. Nothing here depends on which transport it is.
//!
//! Given a [`Cluster`] (`wulf npb --lab`), rank i is started on host i
//! through the cluster's remote shell, its channels bound to that host's
//! address, and the coordinator listens on the first host's address (it
//! runs there): every byte between ranks crosses the hosts' network.
//!
//! Faults: every set-up step is bounded by a timeout; a rank that fails
//! reports why, a rank that dies is noticed at once (its exit status is
//! named), Ctrl-C ends the ranks; in each case the other ranks are killed,
//! so no process outlives the run.

mod rank;
mod wire;

pub use rank::run as run_rank_process;

use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::process::Command;
use std::sync::atomic::Ordering;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{bail, ensure, Context, Result};

use self::wire::{ToCoordinator, ToRank};
use crate::error::{peer, usage, with_exit_code, WulfError};
use crate::exec::process::Process;
use crate::npb::{GroupRun, RankJob, RankTask, TaskOutput, TaskRun};
use crate::peer::protocol::ControlChannel;
use crate::transport::{ChannelOptions, Cluster, Transport};

/// How long set-up (ranks starting, linking up) may take.
const SETUP_TIMEOUT: Duration = Duration::from_secs(30);

/// Runs `job` on `np` ranks linked by `transport` and returns rank 0's
/// outcomes (one per repetition, all verified), with the MPI library's
/// description when an MPI launched the ranks.
pub fn run_group(
    ctx: &crate::launch::RunContext,
    transport: &dyn Transport,
    np: usize,
    job: &RankJob,
    channel: &ChannelOptions,
) -> Result<GroupRun> {
    run_task(ctx, transport, np, &RankTask::Npb(job.clone()), channel)?.into_group_run()
}

/// Runs `task` on `np` ranks linked by `transport` and returns rank 0's
/// output, with the MPI library's description when an MPI launched the
/// ranks ([`run_group`] for any task).
pub fn run_task(
    ctx: &crate::launch::RunContext,
    transport: &dyn Transport,
    np: usize,
    task: &RankTask,
    channel: &ChannelOptions,
) -> Result<TaskRun> {
    ensure!(np >= 1, usage("a run needs at least one process"));
    transport
        .availability()
        .map_err(|why| usage(format!("{} is not available here: {why}", transport.name())))?;
    task.check_process_count(np)?;
    if let Some(outcome) = crate::launch::mpi::launch_group(ctx, transport.name(), np, task) {
        return outcome;
    }
    let cluster = ctx.cluster.clone();
    let addresses: Vec<IpAddr> = match &cluster {
        Some(c) => c.first(np)?.iter().map(|h| h.address).collect(),
        None => vec![IpAddr::V4(Ipv4Addr::LOCALHOST); np],
    };
    // Where the ranks reach this process: in a lab node or on a node
    // list, the address on the way to the first rank's host.
    let here = match &cluster {
        Some(_) => crate::exec::local_address_toward(addresses[0])?,
        None => IpAddr::V4(Ipv4Addr::LOCALHOST),
    };
    let mut group = Group::start(np, cluster.as_ref(), here)?;
    let result = group.drive(transport.name(), task, channel, &addresses);
    group.kill();
    let (output, hostnames) = result?;
    Ok(TaskRun {
        output,
        hostnames,
        mpi: None,
    })
}

/// The ranks' processes, killed when the group is dropped.
struct Group {
    children: Vec<Process>,
    listener: TcpListener,
    /// Each rank's host, for errors (empty when all run here).
    hosts: Vec<String>,
}

impl Group {
    /// Start `np` ranks, on the hosts of `cluster` if given, reporting to a
    /// coordinator listening on `here`.
    fn start(np: usize, cluster: Option<&Cluster>, here: IpAddr) -> Result<Group> {
        let listener = crate::sys::control_mark::bind(SocketAddr::new(here, 0))
            .context("cannot open the coordinator's control port")?;
        let addr = listener.local_addr()?;
        let exe = match cluster.and_then(|c| c.remote_wulf.clone()) {
            Some(path) => path,
            None => std::env::current_exe()
                .context("cannot find wulf's own executable")?
                .display()
                .to_string(),
        };
        let mut group = Group {
            children: Vec::with_capacity(np),
            listener,
            hosts: match cluster {
                Some(c) => c.first(np)?.iter().map(|h| h.name.clone()).collect(),
                None => Vec::new(),
            },
        };
        for rank in 0..np {
            let argv: Vec<String> = vec![
                exe.clone(),
                "npb-rank".into(),
                "--control".into(),
                addr.to_string(),
                "--rank".into(),
                rank.to_string(),
            ];
            let cmd = match cluster {
                Some(c) => c.command_on(rank, &argv)?,
                None => {
                    let mut c = Command::new(&argv[0]);
                    c.args(&argv[1..]);
                    c
                }
            };
            // Its own process group (a terminal's Ctrl-C reaches the
            // coordinator, which ends them; a remote shell's whole chain
            // down to the rank ends with one kill), dying with this process.
            let options = crate::exec::process::Options {
                parent_death_signal: Some(libc::SIGKILL),
                ..Default::default()
            };
            let child = Process::spawn(cmd, None, &options)
                .with_context(|| format!("cannot start rank {rank}"))?;
            group.children.push(child);
        }
        Ok(group)
    }

    /// Accepts every rank's control connection, in any order.
    fn accept_all(&mut self) -> Result<Vec<ControlChannel>> {
        let np = self.children.len();
        let mut slots: Vec<Option<ControlChannel>> = (0..np).map(|_| None).collect();
        self.listener.set_nonblocking(true)?;
        let deadline = Instant::now() + SETUP_TIMEOUT;
        let mut joined = 0;
        while joined < np {
            self.check_alive()?;
            check_interrupted()?;
            match self.listener.accept() {
                Ok((stream, _)) => {
                    let mut ctl = control(stream)?;
                    let ToCoordinator::Hello { rank, version } = ctl.recv()? else {
                        bail!("a rank did not introduce itself");
                    };
                    let ours = env!("CARGO_PKG_VERSION");
                    ensure!(
                        version == ours,
                        peer(format!(
                            "a rank runs wulf {version}, the coordinator {ours}"
                        ))
                    );
                    ensure!(
                        rank < np && slots[rank].is_none(),
                        "unexpected rank {rank} joined"
                    );
                    slots[rank] = Some(ctl);
                    joined += 1;
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    if Instant::now() > deadline {
                        bail!(peer(format!(
                            "only {joined} of {np} ranks started within {SETUP_TIMEOUT:?}"
                        )));
                    }
                    std::thread::sleep(Duration::from_millis(5));
                }
                Err(e) => return Err(e).context("the control port failed"),
            }
        }
        Ok(slots.into_iter().flatten().collect())
    }

    fn drive(
        &mut self,
        transport: &str,
        task: &RankTask,
        channel: &ChannelOptions,
        addresses: &[IpAddr],
    ) -> Result<(TaskOutput, Vec<String>)> {
        let np = self.children.len();
        let mut ctls = self.accept_all()?;
        for ctl in &mut ctls {
            ctl.send(&ToRank::Setup {
                transport: transport.to_string(),
                size: np,
                channel: channel.clone(),
                task: task.clone(),
                addresses: addresses.to_vec(),
            })?;
        }
        // prepared[i]: channels rank i prepared for ranks above it.
        let mut prepared = Vec::with_capacity(np);
        for (rank, ctl) in ctls.iter_mut().enumerate() {
            match ctl.recv()? {
                ToCoordinator::Listening { channels } => prepared.push(channels),
                ToCoordinator::Failed { message, exit_code } => {
                    return Err(rank_error(rank, message, exit_code))
                }
                _ => bail!("rank {rank} answered out of turn"),
            }
        }
        for (rank, ctl) in ctls.iter_mut().enumerate() {
            let channels = prepared
                .iter()
                .enumerate()
                .take(rank)
                .map(|(from, list)| {
                    list.iter()
                        .find(|(to, _)| *to == rank)
                        .map(|(_, d)| (from, d.clone()))
                        .with_context(|| format!("rank {from} prepared no channel for rank {rank}"))
                })
                .collect::<Result<Vec<_>>>()?;
            ctl.send(&ToRank::Connect { channels })?;
        }
        self.collect(ctls)
    }

    /// Waits for every rank's final report; the first failure, death or
    /// interruption ends the run.
    fn collect(&mut self, ctls: Vec<ControlChannel>) -> Result<(TaskOutput, Vec<String>)> {
        let np = ctls.len();
        let (tx, rx) = mpsc::channel();
        for (rank, mut ctl) in ctls.into_iter().enumerate() {
            let tx = tx.clone();
            // A rank may compute for minutes: no read timeout here; a rank
            // that dies closes its connection, and `check_alive` names it.
            let _ = ctl.stream().set_read_timeout(None);
            std::thread::spawn(move || {
                let _ = tx.send((rank, ctl.recv::<ToCoordinator>()));
            });
        }
        drop(tx);
        let mut outcomes: Vec<Option<TaskOutput>> = (0..np).map(|_| None).collect();
        let mut hostnames = Vec::new();
        let mut done = 0;
        while done < np {
            check_interrupted()?;
            match rx.recv_timeout(Duration::from_millis(100)) {
                Ok((
                    rank,
                    Ok(ToCoordinator::Done {
                        output: o,
                        hostnames: h,
                    }),
                )) => {
                    if rank == 0 {
                        hostnames = h;
                    }
                    outcomes[rank] = Some(o);
                    done += 1;
                }
                Ok((rank, Ok(ToCoordinator::Failed { message, exit_code }))) => {
                    return Err(rank_error(rank, message, exit_code));
                }
                Ok((rank, Ok(_))) => bail!("rank {rank} answered out of turn"),
                Ok((rank, Err(e))) => {
                    // Most likely it died: give its exit status a moment to
                    // appear so the error can name it.
                    std::thread::sleep(Duration::from_millis(200));
                    self.check_alive()?;
                    return Err(peer(format!("rank {rank} stopped answering: {e:#}")));
                }
                Err(mpsc::RecvTimeoutError::Timeout) => self.check_alive_or_finished()?,
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
            }
        }
        let first = outcomes.swap_remove(0).context("rank 0 sent no outcome")?;
        Ok((first, hostnames))
    }

    /// Fails if any rank has exited.
    fn check_alive(&mut self) -> Result<()> {
        for (rank, p) in self.children.iter_mut().enumerate() {
            if let Some(status) = p.child.try_wait()? {
                bail!(peer(format!(
                    "rank {rank}{} died ({status})",
                    on(&self.hosts, rank)
                )));
            }
        }
        Ok(())
    }

    /// Fails if a rank exited without success before reporting.
    fn check_alive_or_finished(&mut self) -> Result<()> {
        for (rank, p) in self.children.iter_mut().enumerate() {
            if let Some(status) = p.child.try_wait()? {
                if !status.success() {
                    bail!(peer(format!(
                        "rank {rank}{} died ({status})",
                        on(&self.hosts, rank)
                    )));
                }
            }
        }
        Ok(())
    }

    fn kill(&mut self) {
        for p in &mut self.children {
            p.end_group(nix::sys::signal::Signal::SIGKILL);
        }
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        self.kill();
    }
}

/// ` on HOST` for a rank placed on a host, else nothing.
fn on(hosts: &[String], rank: usize) -> String {
    hosts
        .get(rank)
        .map(|h| format!(" on {h}"))
        .unwrap_or_default()
}

fn control(stream: TcpStream) -> Result<ControlChannel> {
    stream.set_nonblocking(false)?;
    stream.set_read_timeout(Some(SETUP_TIMEOUT))?;
    stream.set_write_timeout(Some(SETUP_TIMEOUT))?;
    ControlChannel::new(stream)
}

fn check_interrupted() -> Result<()> {
    if crate::sweep::INTERRUPTED.load(Ordering::Relaxed) {
        bail!(WulfError::Interrupted);
    }
    Ok(())
}

/// A rank's own error, keeping its exit code.
fn rank_error(rank: usize, message: String, exit_code: i32) -> anyhow::Error {
    with_exit_code(exit_code, format!("rank {rank}: {message}"))
}
