//! Plans: what a run does, below the commands that start it.
//!
//! A command (`src/commands/`) turns its parsed arguments into work and
//! decides what reaches the terminal and which files; what the work is (a
//! run of every transport, a loaded-vs-unloaded pair, a run across a node
//! list, a NAS or collective plan, a matrix, a tuning or linpack study)
//! lives here, one file per plan, so that commands never call each other:
//! `wulf run --hosts` runs a matrix, NAS kernels and a collective through
//! `run_cluster`, which calls `matrix`, `npb` and `collective` here, not
//! the commands of those names. Commands import plans; plans import each
//! other and the layers below, never a command (the layers table of
//! ARCHITECTURE.md, checked by `tests/fast/architecture.rs`, which also
//! fails on a command that imports another).
//!
//! Plans take the types they were written with: most still take the
//! command's parsed arguments (`cli::NpbArgs`, `cli::MatrixArgs`, ...)
//! where converting them into plain option structs would rewrite the
//! code; [`npb::NpbPlan`] is the shape the others may grow into.
//!
//! This file holds what commands and plans share: the run context built
//! from the measurement options ([`context_for`]), a sweep's spec from them
//! ([`sweep_spec`]), the terminal bar of a sweep's sizes ([`SizesBar`]),
//! the relay of a command run inside a lab ([`lab_relay`],
//! [`spread_in_lab`]) and the data channels of a group of ranks
//! ([`group_channel`]).

pub mod collective;
pub mod conditions;
pub mod hpl_budget;
pub mod loaded;
pub mod matrix;
pub mod nodes;
pub mod npb;
pub mod npb_foreign;
pub mod npb_load;
pub mod offloads;
pub mod results;
pub mod run_cluster;
pub mod run_cluster_summary;
pub mod run_repeat;
pub mod study_layers;
pub mod study_linpack;
pub mod tune_tcp;
pub mod tune_wake;

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::cli::{MeasureArgs, ModeArg, WaitArg};
use crate::launch::RunContext;
use crate::message::schedule;
use crate::result::Mode;
use crate::sweep::engine::SweepSpec;
use crate::sweep::progress::Reporter;
use crate::transport::{ChannelOptions, ExtraOptions, WaitMode};

impl From<ModeArg> for Mode {
    fn from(m: ModeArg) -> Mode {
        match m {
            ModeArg::Pingpong => Mode::Pingpong,
            ModeArg::Stream => Mode::Stream,
            ModeArg::Bidir => Mode::Bidir,
        }
    }
}

/// The run context of a command with the shared measurement options: the
/// options only some transports use (MPI), no cluster yet.
pub fn context_for(m: &MeasureArgs) -> RunContext {
    RunContext::with_transports(mpi_options(&m.mpi, &m.mpi_arg, m.window))
}

/// The transport options of `--mpi`, `--mpi-arg` and `--window`.
pub fn mpi_options(
    mpi: &[(String, std::path::PathBuf)],
    mpi_arg: &[String],
    window: u64,
) -> ExtraOptions {
    ExtraOptions {
        mpi: mpi.to_vec(),
        // `--mpi-arg '--mca btl self,tcp'` is three launcher arguments.
        mpi_launcher_args: mpi_arg
            .iter()
            .flat_map(|a| a.split_whitespace().map(str::to_string))
            .collect(),
        window,
    }
}

impl From<WaitArg> for WaitMode {
    fn from(w: WaitArg) -> WaitMode {
        match w {
            WaitArg::Spin => WaitMode::Spin,
            WaitArg::Yield => WaitMode::Yield,
            WaitArg::Block => WaitMode::Block,
        }
    }
}

/// The pattern a transport is measured in when none is given.
pub fn default_mode(ctx: &RunContext, transport: &str) -> Mode {
    ctx.find(transport)
        .map_or(Mode::Pingpong, |t| t.default_mode())
}

/// Build a sweep specification from the shared measurement options.
pub fn sweep_spec(
    ctx: &RunContext,
    m: &MeasureArgs,
    transport: &str,
    mode: Mode,
    budget: Duration,
    peer: Option<String>,
) -> anyhow::Result<SweepSpec> {
    let sizes = match &m.sizes {
        Some(text) => schedule::parse_sizes(text, !m.no_perturb)
            .map_err(|e| crate::error::usage(format!("--sizes: {e}")))?,
        None => ctx
            .find(transport)
            .and_then(|t| t.default_sizes(!m.no_perturb))
            .unwrap_or_else(|| schedule::netpipe(1, schedule::DEFAULT_MAX_BYTES, !m.no_perturb)),
    };
    let ncpu = crate::sys::cpu_count();
    let cpus = if m.no_pin {
        (None, None)
    } else if let Some((a, b)) = m.cpus {
        for c in [a, b] {
            if c >= ncpu {
                return Err(crate::error::usage(format!(
                    "--cpus: CPU {c} does not exist (this machine has {ncpu})"
                )));
            }
        }
        // With a remote peer, `b` is the CPU it pins itself to.
        (Some(a), Some(b))
    } else if peer.is_some() {
        // The remote machine's CPUs are unknown here; pin only this end.
        (Some(0), None)
    } else if ncpu >= 2 {
        (Some(0), Some(1))
    } else {
        (None, None)
    };
    let channel = ChannelOptions {
        sndbuf_bytes: m.sndbuf,
        rcvbuf_bytes: m.rcvbuf,
        nodelay: !m.no_nodelay,
        mss_bytes: None,
        ipv6: m.ipv6,
        timeout_ms: m.timeout.as_millis() as u64,
        wait: m
            .wait
            .map(WaitMode::from)
            .unwrap_or_else(|| default_wait(ncpu, crate::lab::in_node())),
        // Sockets keep the classic blocking receive (NetPIPE's) unless
        // spinning is asked for by name.
        busy_poll: m.wait == Some(WaitArg::Spin),
        iface: m.iface.clone(),
    };
    // A local peer has no secret: only a remote one needs proving.
    let peer_secret = match &peer {
        Some(_) => crate::peer::auth::Secret::from_file_or_env(m.secret_file.as_deref())
            .map_err(|e| crate::error::usage(format!("{e:#}")))?,
        None => None,
    };
    Ok(SweepSpec {
        precision: m
            .precision
            .unwrap_or(crate::measure::policy::SWEEP_PRECISION),
        nocache: m.nocache,
        offset_bytes: m.offset,
        integrity: m.integrity.is_some(),
        integrity_all: m.integrity == Some(crate::cli::IntegrityScope::All),
        tails: m.tails,
        cpus,
        cpus_given: m.cpus.is_some() && !m.no_pin,
        peer_secret,
        peer,
        ..SweepSpec::new(transport, mode, sizes, budget, channel)
    })
}

/// A progress bar on stderr, hidden when stderr is not a terminal or when
/// `quiet`.
pub fn progress_bar(len: u64, quiet: bool, label: &str) -> ProgressBar {
    let pb = if quiet || !std::io::stderr().is_terminal() {
        ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::hidden())
    } else {
        ProgressBar::new(len)
    };
    pb.set_style(
        ProgressStyle::with_template("{prefix:>12} [{bar:30}] {pos}/{len} sizes  {msg}")
            .expect("valid template")
            .progress_chars("=> "),
    );
    pb.set_prefix(label.to_string());
    pb
}

/// The terminal bar of a sweep's sizes: a [`Reporter`] that moves on a
/// size per point and names the last one measured (hidden as
/// [`progress_bar`]'s is).
pub struct SizesBar(ProgressBar);

impl SizesBar {
    /// A bar over the sizes of `spec`, labelled `label`.
    pub fn new(spec: &SweepSpec, quiet: bool, label: &str) -> SizesBar {
        SizesBar(progress_bar(spec.sizes.len() as u64, quiet, label))
    }

    /// Clear the bar (before anything else is printed).
    pub fn finish(&self) {
        self.0.finish_and_clear();
    }
}

impl Reporter for SizesBar {
    fn point(&mut self, point: &crate::result::Point) {
        self.0.set_message(crate::units::format_bytes(point.bytes));
        self.0.inc(1);
    }
}

/// Exit with the code of a command run in a lab node, printing nothing more
/// (it spoke for itself).
pub fn lab_relay(code: i32) -> anyhow::Result<()> {
    if code == 0 {
        Ok(())
    } else {
        Err(crate::error::WulfError::Relayed(code).into())
    }
}

/// With `--in-lab` (given by `--lab` to the command it runs in node1):
/// spread `ctx` over the nodes of the lab this process runs in, so that
/// transports that start their own processes place one on each node.
pub fn spread_in_lab(ctx: &mut RunContext, in_lab: bool) -> anyhow::Result<()> {
    if in_lab {
        let (lab, node) = crate::lab::current()?;
        ctx.cluster = Some(crate::lab::cluster(&lab, &node)?);
    }
    Ok(())
}

/// How a sweep's ends wait when `--wait` is not given, on a machine of
/// `ncpu` CPUs, in a lab node or not.
///
/// Spinning, where each end has a CPU: the floor of a hand-off, and no
/// halted CPU's wake-up in the figure. Yielding (polling, and giving the
/// CPU up between polls) with fewer than two CPUs, where a spinning end
/// would cost a time slice per hand-off; and in a lab node, where every
/// message crosses veth pairs and the link's shaper, kernel work (softirq,
/// often in `ksoftirqd`) that runs on the same CPUs as the ends: a
/// spinning end keeps it off its CPU until the scheduler's tick: 1 B
/// across a ge lab link read 4.0-6.7 ms spinning against 11-15 us
/// yielding (ucx(tcp), ofi(tcp), load 10-15), and yielding cost nothing
/// on the idle VM (6.8 against 6.6 us; docs/validation.md).
pub fn default_wait(ncpu: usize, in_lab_node: bool) -> WaitMode {
    if ncpu >= 2 && !in_lab_node {
        WaitMode::Spin
    } else {
        WaitMode::Yield
    }
}

/// The data channels of a group of `np` ranks wulf starts itself (`wulf
/// npb`, `wulf collective`): `wait` if given, else spin while there is a
/// CPU per rank and the ranks are not `spread` over hosts, else block.
pub fn group_channel(
    np: usize,
    wait: Option<WaitMode>,
    timeout: Duration,
    spread: bool,
) -> ChannelOptions {
    // Spinning ranks starve each other once they outnumber the CPUs.
    // In a lab they also starve the emulated link, whose shaping
    // and forwarding run on the same CPUs (softirq work): MG class
    // S over tcp on fe took 0.67 s spinning, 0.029 s blocking.
    let wait = wait.unwrap_or(if np <= crate::sys::cpu_count() && !spread {
        WaitMode::Spin
    } else {
        WaitMode::Block
    });
    ChannelOptions {
        sndbuf_bytes: None,
        rcvbuf_bytes: None,
        nodelay: true,
        mss_bytes: None,
        ipv6: false,
        timeout_ms: timeout.as_millis() as u64,
        wait,
        // Poll sockets too while there is a CPU per rank, as MPI
        // libraries do: a sleeping receive costs a wake-up per message.
        busy_poll: wait == WaitMode::Spin,
        iface: None,
    }
}

/// The one-line note for transports left out because they cannot cross
/// from one node to another.
pub fn local_only_note(skipped: &[&str]) -> Option<String> {
    (!skipped.is_empty()).then(|| {
        format!(
            "wulf: in the lab, not run (local only, they cannot cross from node to node): {}",
            skipped.join(", ")
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ends_spin_with_a_cpu_each_and_yield_on_one_cpu_or_in_a_lab_node() {
        assert_eq!(default_wait(2, false), WaitMode::Spin);
        assert_eq!(default_wait(16, false), WaitMode::Spin);
        assert_eq!(default_wait(1, false), WaitMode::Yield);
        // A lab's veth pairs and shaper run on the ends' CPUs.
        assert_eq!(default_wait(16, true), WaitMode::Yield);
    }
}
