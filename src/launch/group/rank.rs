//! One rank started by the coordinator (`wulf npb-rank`, hidden): link up
//! with the other ranks through the chosen transport, run the job, report.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Duration;

use anyhow::{bail, ensure, Context, Result};

use super::wire::{ToCoordinator, ToRank};
use crate::comm::EndpointComm;
use crate::error::exit_code_of;
use crate::npb::RankOutput;
use crate::peer::protocol::ControlChannel;
use crate::transport::{self, ChannelOptions, Endpoint, Transport};

/// How long a rank waits for the coordinator during set-up.
const SETUP_TIMEOUT: Duration = Duration::from_secs(30);

/// Runs rank `rank` for the coordinator listening at `control`.
pub fn run(control: SocketAddr, rank: usize) -> Result<()> {
    // Die with the coordinator: a rank must never outlive its run.
    // SAFETY: prctl with these arguments only sets a process attribute.
    unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) };
    crate::EXIT_ON_SIGNAL.store(true, std::sync::atomic::Ordering::Relaxed);
    let stream = crate::sys::control_mark::connect(control, SETUP_TIMEOUT)
        .with_context(|| format!("rank {rank}: cannot reach the coordinator at {control}"))?;
    stream.set_read_timeout(Some(SETUP_TIMEOUT))?;
    stream.set_write_timeout(Some(SETUP_TIMEOUT))?;
    let mut ctl = ControlChannel::new(stream)?;
    ctl.send(&ToCoordinator::Hello {
        rank,
        version: env!("CARGO_PKG_VERSION").to_string(),
    })?;
    let outcome = link_and_run(&mut ctl, rank);
    let last = match outcome {
        Ok(run) => ToCoordinator::Done {
            output: run.output,
            hostnames: run.hostnames,
        },
        Err(e) => ToCoordinator::Failed {
            message: format!("{e:#}"),
            exit_code: exit_code_of(&e),
        },
    };
    ctl.send(&last)
}

fn link_and_run(ctl: &mut ControlChannel, rank: usize) -> Result<RankOutput> {
    let ToRank::Setup {
        transport: name,
        size,
        channel,
        task,
        addresses,
    } = ctl.recv()?
    else {
        bail!("the coordinator did not send the set-up first");
    };
    ensure!(rank < size, "rank {rank} outside a group of {size}");
    // A rank of wulf's own group links by a built-in transport: no MPI
    // options apply (an MPI's ranks are started by its own launcher).
    let t = transport::find(&name, &Default::default())
        .with_context(|| format!("no transport {name:?}"))?;
    let address = |r: usize| {
        addresses
            .get(r)
            .copied()
            .unwrap_or(IpAddr::V4(Ipv4Addr::LOCALHOST))
    };
    // Before any thread is started: the ranks' threads inherit the CPU.
    let all_cpus = pin_spinning_rank(rank, size, &channel);
    let links = link(ctl, t.as_ref(), rank, size, &channel, &address)?;
    let mut comm = EndpointComm::new(rank, &name, links)?;
    if let Some(cpus) = all_cpus {
        comm.unpin_helper_threads(cpus);
    }
    // From here on the control connection only carries the final report;
    // the run itself may take long.
    ctl.stream().set_read_timeout(None)?;
    task.run(&comm)
}

/// Binds a rank that will spin to a CPU of its own, as MPI libraries bind
/// their ranks (Open MPI binds each rank to a core when there is one per
/// rank): rank `r` of `size` runs on the `r`-th CPU this process may use.
/// Returns the CPUs it could use before, for threads that must not share
/// the rank's CPU; None when it was left unbound.
///
/// Why: two spinning ranks the scheduler leaves on one CPU wait for each
/// other a time slice per message. On this project's 2-vCPU machine,
/// shared with other work, unbound ranks over shm ran NAS MG class S at
/// 2 processes at 6 Mop/s where NPB 3.4.2's bound ranks made 10,000, and
/// NPB's MG unbound (`mpirun --bind-to none`) fell to 97-693 Mop/s from
/// 424-2,621 bound. Ranks that block (more ranks than CPUs, spread over
/// nodes, `--wait block|yield`) and a run of one rank are left to the
/// scheduler, which may move them anywhere.
fn pin_spinning_rank(
    rank: usize,
    size: usize,
    channel: &ChannelOptions,
) -> Option<nix::sched::CpuSet> {
    // One rank never waits for another: the scheduler may move it.
    if channel.wait != transport::WaitMode::Spin || size < 2 {
        return None;
    }
    let me = nix::unistd::Pid::from_raw(0);
    let allowed = nix::sched::sched_getaffinity(me).ok()?;
    let cpus: Vec<usize> = (0..nix::sched::CpuSet::count())
        .filter(|&c| allowed.is_set(c).unwrap_or(false))
        .collect();
    if size > cpus.len() {
        return None;
    }
    crate::sys::pin_current_thread(cpus[rank]).ok()?;
    Some(allowed)
}

/// Builds the full mesh: a channel prepared for each higher rank on this
/// rank's address, a connection to each lower one at its address.
fn link(
    ctl: &mut ControlChannel,
    t: &dyn Transport,
    rank: usize,
    size: usize,
    opts: &ChannelOptions,
    address: &dyn Fn(usize) -> IpAddr,
) -> Result<Vec<Option<Box<dyn Endpoint>>>> {
    let mut listeners = Vec::new();
    let mut prepared = Vec::new();
    for to in rank + 1..size {
        let l = t
            .listen(opts, address(rank))
            .with_context(|| format!("rank {rank}: {} cannot prepare a channel", t.name()))?;
        prepared.push((to, l.describe()));
        listeners.push((to, l));
    }
    ctl.send(&ToCoordinator::Listening { channels: prepared })?;
    let ToRank::Connect { channels } = ctl.recv()? else {
        bail!("the coordinator sent no channels to connect to");
    };
    ensure!(
        channels.len() == rank && channels.iter().enumerate().all(|(i, (from, _))| *from == i),
        "the coordinator sent channels for the wrong ranks"
    );
    let timeout = opts.timeout();
    let mut links: Vec<Option<Box<dyn Endpoint>>> = (0..size).map(|_| None).collect();
    // Accept the higher ranks on a thread of their own while connecting to
    // the lower ones: pair (i, j) waits only on pairs below it, so the
    // mesh forms without deadlock whatever the transport's handshake.
    let accepted = std::thread::scope(|s| {
        let acceptor = s.spawn(move || {
            listeners
                .into_iter()
                .map(|(to, l)| {
                    l.accept(timeout)
                        .map(|c| (to, c.endpoint))
                        .with_context(|| format!("rank {rank}: rank {to} did not connect"))
                })
                .collect::<Result<Vec<_>>>()
        });
        for (from, description) in &channels {
            let c = t
                .connect(description, opts, address(*from))
                .with_context(|| format!("rank {rank}: cannot connect to rank {from}"))?;
            links[*from] = Some(c.endpoint);
        }
        acceptor
            .join()
            .unwrap_or_else(|_| bail!("rank {rank}: the accepting thread panicked"))
    })?;
    for (to, endpoint) in accepted {
        links[to] = Some(endpoint);
    }
    Ok(links)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::WaitMode;

    /// The CPUs the calling thread may run on.
    fn my_cpus() -> Vec<usize> {
        let set = nix::sched::sched_getaffinity(nix::unistd::Pid::from_raw(0)).unwrap();
        (0..nix::sched::CpuSet::count())
            .filter(|&c| set.is_set(c).unwrap())
            .collect()
    }

    /// Runs `pin_spinning_rank` on a thread of its own (the binding is
    /// the thread's) and returns what it gave back and the thread's CPUs.
    fn pin_on_thread(rank: usize, size: usize, wait: WaitMode) -> (bool, Vec<usize>) {
        std::thread::spawn(move || {
            let given = pin_spinning_rank(rank, size, &ChannelOptions::local_for_tests(wait));
            (given.is_some(), my_cpus())
        })
        .join()
        .unwrap()
    }

    #[test]
    fn spinning_ranks_get_a_cpu_each_and_the_others_are_left_alone() {
        let all = my_cpus();
        if all.len() < 2 {
            eprintln!("SKIPPED: one CPU");
            return;
        }
        let last = all.len() - 1;
        assert_eq!(
            pin_on_thread(last, all.len(), WaitMode::Spin),
            (true, vec![all[last]])
        );
        assert_eq!(pin_on_thread(0, 2, WaitMode::Spin), (true, vec![all[0]]));
        // More ranks than CPUs, ranks that sleep, one rank: unbound.
        assert_eq!(
            pin_on_thread(0, all.len() + 1, WaitMode::Spin),
            (false, all.clone())
        );
        assert_eq!(pin_on_thread(1, 2, WaitMode::Block), (false, all.clone()));
        assert_eq!(pin_on_thread(0, 1, WaitMode::Spin), (false, all));
    }
}
