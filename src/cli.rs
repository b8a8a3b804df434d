//! Command-line parsing only: clap definitions and value parsers. Turning
//! arguments into work is the job of `commands`.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::units::{parse_bytes, parse_duration};

// `wulf report` and `wulf compare` read results rather than measure: their
// arguments live in their own file.
mod cluster_args;
mod collective_args;
mod dist_args;
mod hpl_args;
mod lab_args;
mod lists;
mod load_args;
mod nodes_args;
mod npb_args;
mod read_args;
mod serve_args;
pub use cluster_args::{AgentArgs, MatrixArgs, PatternArg};
pub use collective_args::{CollectiveArgs, OperationArg};
pub use dist_args::{CompletionsArgs, ManpagesArgs};
pub use hpl_args::HplArgs;
pub use lab_args::{
    LabAction, LabArgs, LabDownArgs, LabExecArgs, LabRshArgs, LabStatusArgs, LabUpArgs, StudyArg,
    StudyArgs, DEFAULT_LAB,
};
pub use load_args::{CostArg, LoadArgs, LoadList};
pub use nodes_args::NodesArgs;
pub use npb_args::{NpbArgs, NpbKernel, NpbMgArgs, NpbRankArgs, RanksArgs};
pub use read_args::{CompareArgs, ReportArgs, ReportFormat};
pub use serve_args::ServeArgs;

/// What an interconnect and message-passing stack really delivers.
#[derive(Debug, Parser)]
#[command(name = "wulf", version, about, long_about = None, propagate_version = true)]
pub struct Cli {
    /// The command.
    #[command(subcommand)]
    pub command: Command,
}

/// wulf's subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Measure every transport available on this machine and summarise
    /// them side by side (the main job).
    Run(RunArgs),
    /// Sweep one transport over message sizes (latency and throughput).
    Sweep(SweepArgs),
    /// Wait for `wulf sweep --peer` clients and act as their peer.
    Serve(ServeArgs),
    /// Describe this machine and its network (the fingerprint every result
    /// carries).
    Info(InfoArgs),
    /// Print the completion script for a shell (bash, zsh, fish...).
    Completions(CompletionsArgs),
    /// Write the man pages (wulf.1, wulf-sweep.1...) into a directory.
    Manpages(ManpagesArgs),
    /// Find the settings that make a transport fastest here, and say what
    /// to change.
    Tune(TuneArgs),
    /// Draw results as an HTML report, or export them (the formats are
    /// listed from `ReportFormat`).
    #[command(about = lists::report_about())]
    Report(ReportArgs),
    /// Compare results against a baseline, size band by size band, saying
    /// which differences exceed the noise.
    Compare(CompareArgs),
    /// Run NAS Parallel Benchmark kernels (written for wulf, verified against
    /// NPB) over each transport and process count: Mop/s and speedup.
    Npb(NpbArgs),
    /// An emulated cluster on this machine: nodes in network namespaces,
    /// shaped links (the named links are listed from the lab's table).
    #[command(about = lists::lab_about())]
    Lab(LabArgs),
    /// Network studies in the link lab, one command each (listed from
    /// `StudyArg`).
    #[command(about = lists::study_about())]
    Study(StudyArgs),
    /// Latency and bandwidth between every pair of nodes (the all-pairs
    /// link matrix), naming slow nodes and links and the fingerprint
    /// differences behind them.
    Matrix(MatrixArgs),
    /// Time a collective operation (allreduce, alltoall, bcast, barrier)
    /// over message sizes on each MPI's own algorithm and on wulf's own
    /// process group, with the statistics of `wulf sweep`.
    Collective(CollectiveArgs),
    /// Run the real HPL (Linpack, inside HPC Challenge: Debian's hpcc)
    /// through Open MPI, here or one process per lab node: Gflop/s over
    /// the interconnect, with HPL's own residual check.
    Hpl(HplArgs),
    /// Internal: a node's agent, started by `wulf matrix`.
    #[command(hide = true)]
    Agent(AgentArgs),
    /// Internal: a process a transport's own launcher started (an MPI rank).
    #[command(hide = true)]
    Worker(WorkerArgs),
    /// Internal: one rank of a `wulf npb` run that wulf started itself.
    #[command(hide = true, name = "npb-rank")]
    NpbRank(NpbRankArgs),
}

/// `wulf info`.
#[derive(Debug, Clone, Args)]
pub struct InfoArgs {
    /// Print JSON (the `host` block of a result).
    #[arg(long)]
    pub json: bool,
    /// Describe only the interface on the route to this host.
    #[arg(long, value_name = "HOST")]
    pub peer: Option<String>,
}

/// Communication pattern.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ModeArg {
    /// Send n bytes, receive n bytes back; time is half the round trip.
    Pingpong,
    /// One-way stream of n-byte messages; the receiver times its loop.
    Stream,
    /// Both ends send and receive at once; rate counts both directions.
    Bidir,
}

/// What `--integrity` checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum IntegrityScope {
    /// A separate pass of three pattern-filled messages per size.
    Sizes,
    /// That pass, and every timed message stamped and checked.
    All,
}

/// How the shared-memory transports wait for the other end.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum WaitArg {
    /// Busy-poll (lowest latency; one core busy per end).
    Spin,
    /// Poll, yielding the CPU between polls.
    Yield,
    /// Poll briefly, then sleep on a futex (more processes than cores).
    Block,
}

/// Options shared by every sweep (`wulf sweep` and each sweep of `wulf run`).
#[derive(Debug, Clone, Args)]
pub struct MeasureArgs {
    /// Message sizes: a list (1,64,1Ki) or a range MIN:MAX of NetPIPE's
    /// schedule. Units: K, M, G (10^3...) and Ki, Mi, Gi (2^10...).
    #[arg(long, value_name = "LIST|MIN:MAX")]
    pub sizes: Option<String>,
    /// Only the base sizes (no +-3 byte perturbations).
    #[arg(long)]
    pub no_perturb: bool,
    /// Stop each point when the median's 95% confidence interval is within
    /// this fraction of the median [default: 0.02 for `wulf sweep` and
    /// `wulf run --thorough`, 0.05 for the rest of `wulf run`]
    #[arg(long, value_parser = parse_precision)]
    pub precision: Option<f64>,
    /// Bound of every blocking operation (connect, each send and receive).
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    pub timeout: Duration,
    /// Also time single round trips (sizes up to 64 KiB) for p50/p99/p99.9/max.
    #[arg(long)]
    pub tails: bool,
    /// Request this SO_SNDBUF on both ends (the granted size is recorded).
    #[arg(long, value_parser = parse_bytes, value_name = "BYTES")]
    pub sndbuf: Option<u64>,
    /// Request this SO_RCVBUF on both ends (the granted size is recorded).
    #[arg(long, value_parser = parse_bytes, value_name = "BYTES")]
    pub rcvbuf: Option<u64>,
    /// Leave Nagle's algorithm on (TCP_NODELAY is set by default).
    #[arg(long)]
    pub no_nodelay: bool,
    /// Use IPv6 (::1 for a local peer).
    #[arg(long)]
    pub ipv6: bool,
    /// Rotate through buffers larger than the last-level cache.
    #[arg(long)]
    pub nocache: bool,
    /// Misalign message buffers by this many bytes.
    #[arg(long, default_value = "0", value_parser = parse_bytes, value_name = "BYTES")]
    pub offset: u64,
    /// Check every byte in a separate validation pass before timing
    /// (`--integrity`, or `--integrity sizes`: three messages per size);
    /// `--integrity all` also stamps and checks every timed message (a copy
    /// per message sent and a comparison per message received stay inside
    /// the timings).
    #[arg(long, num_args = 0..=1, default_missing_value = "sizes", value_name = "SCOPE")]
    pub integrity: Option<IntegrityScope>,
    /// CPUs for this end and the peer (default 0,1 when there are two or more).
    #[arg(long, value_parser = parse_cpus, value_name = "A,B", conflicts_with = "no_pin")]
    pub cpus: Option<(usize, usize)>,
    /// Do not pin either end to a CPU.
    #[arg(long)]
    pub no_pin: bool,
    /// How shm, cma, ucx and ofi wait for the other end (default: spin;
    /// yield on a single CPU and in a lab node, whose links' kernel work
    /// needs the ends' CPUs). Given as `spin`, tcp, unix, raw and xdp
    /// busy-poll their sockets too (as MPI libraries do) instead of
    /// sleeping in recv.
    #[arg(long, value_enum)]
    pub wait: Option<WaitArg>,
    /// No progress bar.
    #[arg(long, short)]
    pub quiet: bool,
    /// File holding the shared secret of a `wulf serve` started with one
    /// (default: the WULF_SECRET environment variable). Both ends prove
    /// they know it; it never crosses the network.
    #[arg(long, value_name = "FILE")]
    pub secret_file: Option<PathBuf>,
    /// Interface the frame transports (raw, xdp) send from; default: the one
    /// on the route to the peer.
    #[arg(long, value_name = "NAME")]
    pub iface: Option<String>,
    /// Messages in flight at once in stream mode where a transport can
    /// overlap them (MPI: a window of non-blocking sends, as osu_bw).
    #[arg(long, default_value = "64", value_parser = parse_window, value_name = "N")]
    pub window: u64,
    /// Measure another MPI as mpi:NAME (and mpi:NAME(tcp)); PATH is its C
    /// compiler wrapper (mpicc) or the directory holding it. Repeatable.
    #[arg(long = "mpi", value_name = "NAME=PATH", value_parser = parse_mpi)]
    pub mpi: Vec<(String, PathBuf)>,
    /// Arguments for the MPI launcher (mpirun / mpiexec), split at spaces
    /// and recorded in the result; repeatable. E.g. --mpi-arg '--mca btl
    /// self,tcp' (Open MPI) or --mpi-arg '-genv UCX_TLS tcp,self' (MPICH).
    /// `wulf run` gives them to every MPI's launcher: pick one with --only.
    #[arg(long = "mpi-arg", value_name = "ARG", allow_hyphen_values = true)]
    pub mpi_arg: Vec<String>,
}

/// `wulf sweep`.
#[derive(Debug, Clone, Args)]
pub struct SweepArgs {
    /// Transport: tcp, shm, mpi:openmpi... (`--help` lists them all).
    #[arg(long_help = lists::transport_help())]
    pub transport: String,
    /// Communication pattern (default: pingpong; stream for memcpy).
    #[arg(long, value_enum)]
    pub mode: Option<ModeArg>,
    /// Wall time of the whole sweep. Over a link too slow for the largest
    /// sizes to get their least work within it, those sizes are left out
    /// and a warning names them and the budget they need.
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    pub budget: Duration,
    /// A `wulf serve` to measure against, HOST[:PORT]; without it a local
    /// peer is started.
    #[arg(long, value_name = "HOST[:PORT]")]
    pub peer: Option<String>,
    /// Write the result as JSON ('-' for standard output).
    #[arg(long, value_name = "FILE", value_parser = output_file)]
    pub json: Option<PathBuf>,
    /// Write the points as CSV.
    #[arg(long, value_name = "FILE", value_parser = output_file)]
    pub csv: Option<PathBuf>,
    /// Write latency, peak, n_1/2 and noise as OpenMetrics (atomically,
    /// for node_exporter's textfile collector).
    #[arg(long, value_name = "FILE", value_parser = output_file)]
    pub openmetrics: Option<PathBuf>,
    /// Measure between two nodes of a temporary lab with these links:
    /// fe, ge, 10ge or a rate, then mtu=BYTES, nodeN=LINK, mtu.nodeN=BYTES,
    /// loss=PCT, comma-separated (e.g. ge,mtu=9000).
    #[arg(long, value_name = "SPEC", conflicts_with = "peer")]
    pub lab: Option<String>,
    /// Internal (`--lab` gives it to the command it runs in node1): spread
    /// the processes over the nodes of the lab this one runs in.
    #[arg(long, hide = true, conflicts_with = "lab")]
    pub in_lab: bool,
    /// Measurement options.
    #[command(flatten)]
    pub measure: MeasureArgs,
    /// Conditions: --cost whole, --load, --loaded-vs-unloaded.
    #[command(flatten)]
    pub conditions: LoadArgs,
    /// Run the --load on the peer too (started by its `wulf serve` for the
    /// whole test, recorded in the result as conditions.peer_loads).
    #[arg(long, requires = "load")]
    pub load_peer: bool,
}

/// `wulf worker` (internal).
#[derive(Debug, Clone, Args)]
pub struct WorkerArgs {
    /// The job file the launching wulf wrote.
    pub job: PathBuf,
}

/// `wulf run`.
#[derive(Debug, Clone, Args)]
pub struct RunArgs {
    /// A short run (about a quarter of the default budget).
    #[arg(long, conflicts_with = "thorough")]
    pub quick: bool,
    /// A long run (four times the default budget, tails included).
    #[arg(long)]
    pub thorough: bool,
    /// Total budget of the sweeps (default 50s), shared among the
    /// transports found, baselines getting less (overrides --quick /
    /// --thorough).
    #[arg(long, value_parser = parse_duration)]
    pub budget: Option<Duration>,
    /// Directory under which a timestamped results directory is created.
    #[arg(long, default_value = "wulf-results", value_name = "DIR", value_parser = output_dir)]
    pub out: PathBuf,
    /// Also write every transport's latency, peak, n_1/2 and noise as
    /// OpenMetrics here (atomically, for node_exporter's textfile collector).
    #[arg(long, value_name = "FILE", value_parser = output_file)]
    pub openmetrics: Option<PathBuf>,
    /// Only these transports (comma-separated).
    #[arg(long, value_delimiter = ',', value_name = "LIST")]
    pub only: Option<Vec<String>>,
    /// Measure every transport N times in turn (repetition 1 of each, then
    /// 2...) into NAME-MODE-rK.json, each with the run-to-run spread of
    /// its transport recorded (`run_to_run`), which `wulf compare` uses as
    /// the noise floor of single runs. The budget is per repetition; the
    /// summary and report show the first.
    #[arg(long, default_value = "1", value_parser = parse_repeat, value_name = "N")]
    pub repeat: u32,
    /// Skip the NAS MG run (class S on 1 and 2 processes over each
    /// transport; class W with --thorough).
    #[arg(long)]
    pub no_npb: bool,
    /// Measure what crosses the network between two nodes of a temporary
    /// lab with these links (as `wulf sweep --lab`): tcp, each MPI on its
    /// TCP path, and NAS MG with one process per node.
    #[arg(long, value_name = "SPEC", conflicts_with_all = ["hosts", "hostfile", "launch"])]
    pub lab: Option<String>,
    /// Across the nodes of a cluster instead (`--hosts`, `--hostfile`,
    /// `--launch`): the link matrix and the fingerprints' differences, a
    /// full sweep between the slowest and a typical pair, multi-pair load
    /// and NAS MG across the nodes.
    #[command(flatten)]
    pub nodes: NodesArgs,
    /// Internal (`--lab` gives it to the command it runs in node1): spread
    /// over the nodes of the lab this one runs in.
    #[arg(long, hide = true, conflicts_with = "lab")]
    pub in_lab: bool,
    /// Internal (with --in-lab): the `wulf serve` in node2, HOST:PORT.
    #[arg(long, hide = true, requires = "in_lab", value_name = "HOST[:PORT]")]
    pub peer: Option<String>,
    /// Measurement options.
    #[command(flatten)]
    pub measure: MeasureArgs,
}

/// `wulf tune`.
#[derive(Debug, Clone, Args)]
pub struct TuneArgs {
    /// What to tune.
    #[command(subcommand)]
    pub target: TuneTarget,
}

/// What `wulf tune` can tune.
#[derive(Debug, Clone, Subcommand)]
pub enum TuneTarget {
    /// TCP: sweep socket buffer sizes, Nagle on and off, and the MSS, then
    /// report the best setting per size band, the bandwidth-delay product
    /// and which sysctls to raise.
    Tcp(TuneTcpArgs),
}

/// `wulf tune tcp`.
#[derive(Debug, Clone, Args)]
pub struct TuneTcpArgs {
    /// A `wulf serve` to measure against, HOST[:PORT]; without it a local
    /// peer is started.
    #[arg(long, value_name = "HOST[:PORT]")]
    pub peer: Option<String>,
    /// File holding the peer's shared secret (default: WULF_SECRET).
    #[arg(long, value_name = "FILE")]
    pub secret_file: Option<PathBuf>,
    /// Total time budget, shared by all configurations.
    #[arg(long, default_value = "60s", value_parser = parse_duration)]
    pub budget: Duration,
    /// Message sizes: a list (1,64,1Ki) or a range MIN:MAX of NetPIPE's
    /// schedule (default 1:8Mi without the +-3 byte perturbations).
    #[arg(long, value_name = "LIST|MIN:MAX")]
    pub sizes: Option<String>,
    /// Include the +-3 byte perturbations (three times the points).
    #[arg(long)]
    pub perturb: bool,
    /// Directory under which a timestamped results directory is created.
    #[arg(long, default_value = "wulf-results", value_name = "DIR", value_parser = output_dir)]
    pub out: PathBuf,
    /// Print the summary (tune.json) on standard output; the table goes to
    /// standard error.
    #[arg(long)]
    pub json: bool,
    /// Stop each point when the median's 95% confidence interval is within
    /// this fraction of the median.
    #[arg(long, default_value = "0.02", value_parser = parse_precision)]
    pub precision: f64,
    /// Bound of every blocking operation (connect, each send and receive).
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    pub timeout: Duration,
    /// Use IPv6 (::1 for a local peer).
    #[arg(long)]
    pub ipv6: bool,
    /// CPUs for this end and the peer (default 0,1 when there are two or more).
    #[arg(long, value_parser = parse_cpus, value_name = "A,B", conflicts_with = "no_pin")]
    pub cpus: Option<(usize, usize)>,
    /// Do not pin either end to a CPU.
    #[arg(long)]
    pub no_pin: bool,
    /// No progress bars.
    #[arg(long, short)]
    pub quiet: bool,
    /// Tune between two nodes of a temporary lab with these links (as
    /// `wulf sweep --lab`, e.g. ge,mtu=9000).
    #[arg(long, value_name = "SPEC", conflicts_with = "peer")]
    pub lab: Option<String>,
    /// Also flip TSO, GSO, GRO, checksum offload (tx, rx) and interrupt
    /// coalescing of this end's interface on the path, one at a time, with
    /// the whole CPU cost per byte measured; everything is restored after
    /// (also on error and Ctrl-C). Needs root and the ethtool program.
    #[arg(long)]
    pub offloads: bool,
    /// Also measure what a halted CPU's wake-up costs a small message and
    /// the remedies against it, one at a time: spinning ends, the kernel's
    /// busy polling (net.core.busy_read and busy_poll at 50 us) and no
    /// deep idle states (/dev/cpu_dma_latency held at 0); the machine's
    /// settings are put back after each (also on error and Ctrl-C). The
    /// last two need root and are skipped, with the reason, where they
    /// cannot be set.
    #[arg(long)]
    pub wake_up: bool,
}

fn parse_precision(s: &str) -> Result<f64, String> {
    let p: f64 = s.parse().map_err(|_| format!("'{s}' is not a number"))?;
    if p > 0.0 && p < 1.0 {
        Ok(p)
    } else {
        Err("precision must be between 0 and 1 (0.02 means +-2%)".into())
    }
}

fn parse_repeat(s: &str) -> Result<u32, String> {
    match s.parse::<u32>() {
        Ok(n) if (1..=100).contains(&n) => Ok(n),
        _ => Err(format!("'{s}': the repetitions are a count from 1 to 100")),
    }
}

pub(crate) fn parse_window(s: &str) -> Result<u64, String> {
    match s.parse::<u64>() {
        Ok(n) if (1..=1024).contains(&n) => Ok(n),
        _ => Err(format!("'{s}': the window is a count from 1 to 1024")),
    }
}

/// An output file argument (`--json`, `--csv`, `-o` ...): `-` is standard
/// output, a device or FIFO is written through; what the writer would
/// refuse (`result::write::target_of`: a directory, a symlink loop) and a
/// path under something that is not a directory are refused here, before
/// anything is measured (a loop and `wulf hpl --json DIR` were once
/// refused only after the run).
pub(crate) fn output_file(s: &str) -> Result<PathBuf, String> {
    let path = PathBuf::from(s);
    if s == "-" {
        return Ok(path);
    }
    under_a_directory(s, path.parent().unwrap_or(std::path::Path::new("")))?;
    match crate::result::target_of(&path).map_err(|e| format!("{e:#}"))? {
        crate::result::Target::File(file) => {
            let parent = file.parent().unwrap_or(std::path::Path::new(""));
            under_a_directory(s, parent)?;
        }
        crate::result::Target::Stdout | crate::result::Target::Special(_) => {}
    }
    Ok(path)
}

/// An output directory argument (`wulf run --out DIR`): a directory, or a
/// path that can become one (`wulf run --out FILE` once measured for 11 s,
/// then failed with "Not a directory").
pub(crate) fn output_dir(s: &str) -> Result<PathBuf, String> {
    let path = PathBuf::from(s);
    under_a_directory(s, &path)?;
    Ok(path)
}

/// Whether `dir` is a directory or can be made one: its nearest existing
/// ancestor (symlinks followed) is a directory. `arg` names the argument.
fn under_a_directory(arg: &str, dir: &std::path::Path) -> Result<(), String> {
    let mut here = dir;
    loop {
        let at = if here.as_os_str().is_empty() {
            std::path::Path::new(".")
        } else {
            here
        };
        match std::fs::metadata(at) {
            Ok(m) if m.is_dir() => return Ok(()),
            Ok(_) => {
                return Err(format!(
                    "{arg}: {} is not a directory: nothing can be written under it",
                    at.display()
                ))
            }
            // ENOTDIR: a file above it, which the walk up names.
            Err(e)
                if e.kind() == std::io::ErrorKind::NotFound
                    || e.raw_os_error() == Some(libc::ENOTDIR) =>
            {
                match here.parent() {
                    Some(up) => here = up,
                    None => return Ok(()),
                }
            }
            Err(e) => return Err(format!("{arg}: cannot examine {}: {e}", at.display())),
        }
    }
}

pub(crate) fn parse_mpi(s: &str) -> Result<(String, PathBuf), String> {
    let (name, path) = s
        .split_once('=')
        .ok_or_else(|| format!("'{s}': give NAME=PATH, e.g. intel=/opt/intel/mpi/bin/mpicc"))?;
    let ok = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
    if !ok || path.is_empty() {
        return Err(format!(
            "'{s}': NAME is letters, digits, '_', '-' or '.', and PATH is not empty"
        ));
    }
    Ok((name.to_string(), PathBuf::from(path)))
}

fn parse_cpus(s: &str) -> Result<(usize, usize), String> {
    let (a, b) = s
        .split_once(',')
        .ok_or_else(|| format!("'{s}': give two CPUs, e.g. 0,1"))?;
    let cpu = |t: &str| {
        t.trim()
            .parse::<usize>()
            .map_err(|_| format!("'{t}' is not a CPU number"))
    };
    Ok((cpu(a)?, cpu(b)?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn clap_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn value_parsers() {
        assert_eq!(parse_cpus("0,1"), Ok((0, 1)));
        assert!(parse_cpus("0").is_err());
        assert!(parse_precision("0").is_err());
        assert!(parse_precision("1.5").is_err());
        assert_eq!(parse_precision("0.05"), Ok(0.05));
        assert_eq!(
            parse_mpi("x=/opt/mpicc"),
            Ok(("x".into(), PathBuf::from("/opt/mpicc")))
        );
        assert!(parse_mpi("x").is_err());
        assert!(parse_mpi("a b=/x").is_err());
        assert!(parse_window("0").is_err());
        assert_eq!(parse_window("64"), Ok(64));
        assert_eq!(parse_repeat("3"), Ok(3));
        assert!(parse_repeat("0").is_err());
        assert!(parse_repeat("x").is_err());
    }
}
