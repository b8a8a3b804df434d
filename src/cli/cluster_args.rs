//! Arguments of the commands that span nodes: `wulf matrix` and the
//! hidden `wulf agent` it starts on each node.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use crate::units::{parse_bytes, parse_duration};

/// `wulf matrix`.
#[derive(Debug, Clone, Args)]
pub struct MatrixArgs {
    /// The nodes, comma-separated; Slurm's compact syntax works
    /// (`node[01-16,20]`).
    #[arg(long, value_name = "LIST", conflicts_with_all = ["hostfile", "lab"])]
    pub hosts: Option<String>,
    /// A file naming the nodes, one per line (MPI hostfiles' `slots=` is
    /// accepted and ignored).
    #[arg(long, value_name = "FILE", conflicts_with = "lab")]
    pub hostfile: Option<PathBuf>,
    /// How agents are started on the nodes: ssh, slurm, mpi:NAME (the
    /// whole matrix once per node by that MPI's launcher, through
    /// `--rsh`), local (simulated nodes on this machine, over loopback) or
    /// lab[:NAME]. Default: srun inside a Slurm allocation, the lab's
    /// remote shell in a lab, else ssh.
    #[arg(long, value_name = "HOW")]
    pub launch: Option<String>,
    /// A temporary lab to measure in (the compact syntax of `--lab`
    /// elsewhere: `ge,node3=fe`), with `--nodes` nodes.
    #[arg(long, value_name = "SPEC")]
    pub lab: Option<String>,
    /// Nodes of the `--lab` lab.
    #[arg(long, default_value = "4", value_name = "N")]
    pub nodes: usize,
    /// Transport between the nodes.
    #[arg(long, default_value = "tcp", value_name = "TRANSPORT")]
    pub via: String,
    /// Ping-pong size of the latency matrix.
    #[arg(long, default_value = "8", value_parser = parse_bytes, value_name = "BYTES")]
    pub latency_size: u64,
    /// Stream size of the bandwidth matrix [default: 4Mi, halved to fit
    /// --budget over a slow link; a size given is kept].
    #[arg(long, value_parser = parse_bytes, value_name = "BYTES")]
    pub bandwidth_size: Option<u64>,
    /// Measure one pair at a time (no contention in the switch) instead of
    /// a whole round of disjoint pairs at once (`--pattern pairs` only).
    #[arg(long)]
    pub serial: bool,
    /// What to measure at once: pairs (every pair, both ways, in the
    /// tournament's rounds), shift (step k: every node i to i+k, mpiGraph),
    /// bisection (the first half of the nodes to the second, then back),
    /// multipair (1, 2 ... N/2 pairs streaming at once, osu_mbw_mr).
    #[arg(long, value_enum, default_value = "pairs")]
    pub pattern: PatternArg,
    /// With `--pattern shift` or `bisection`, do not stream each pair
    /// again alone after its step (by default they do, so that each node's
    /// bandwidth under contention is set against the same pairs alone,
    /// for half of the budget).
    #[arg(long)]
    pub no_alone: bool,
    /// Time budget of the whole measurement: the rounds, the pairs alone
    /// and the re-measures of suspicious cells (a fifth of it kept for
    /// them); kept within 1.2 x unless too short for the matrix (the
    /// result then says so). The agents' start-up comes on top.
    #[arg(long, default_value = "60s", value_parser = parse_duration)]
    pub budget: Duration,
    /// Random seed of the order of the rounds (recorded in the result as
    /// `seed`; give it again to repeat an order). Default: a fresh one.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Bound of every blocking step; agents that have not joined by then
    /// are named as missing.
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    pub timeout: Duration,
    /// Where wulf is on the nodes (default: this wulf's own path; clusters
    /// share their file systems). With `--launch local`, the wulf the
    /// simulated nodes run.
    #[arg(long, value_name = "PATH")]
    pub remote_wulf: Option<String>,
    /// The ssh program and its options for `--launch ssh` and `mpi:NAME` (`ssh -i KEY -p
    /// 2222`); BatchMode, a connect timeout and accept-new host keys are
    /// always added.
    #[arg(long, default_value = "ssh", value_name = "COMMAND")]
    pub rsh: String,
    /// Write the result (JSON) here; `-` for standard output (default:
    /// wulf-results/matrix-TIME.json).
    #[arg(long, value_name = "FILE", value_parser = crate::cli::output_file)]
    pub json: Option<PathBuf>,
    /// Write both matrices as CSV here.
    #[arg(long, value_name = "FILE", value_parser = crate::cli::output_file)]
    pub csv: Option<PathBuf>,
    /// Write every cell's latency and bandwidth as OpenMetrics here
    /// (atomically, for node_exporter's textfile collector).
    #[arg(long, value_name = "FILE", value_parser = crate::cli::output_file)]
    pub openmetrics: Option<PathBuf>,
    /// No progress on standard error.
    #[arg(long)]
    pub quiet: bool,
    /// Internal: run inside node1 of the lab (given by `--lab`).
    #[arg(long, hide = true)]
    pub in_lab: bool,
    /// Processes per node, as mpiGraph and LinkTest run by default: N
    /// agents on every host (named `HOST/0` .. `HOST/N-1`); cells between
    /// two processes of one host are marked intra-node and kept out of
    /// the link findings. Under srun or mpirun, start N tasks per node.
    #[arg(long, default_value = "1", value_name = "N")]
    pub ppn: usize,
}

/// `--pattern` of `wulf matrix`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum PatternArg {
    /// Every pair, both directions (the tournament).
    Pairs,
    /// Every node to the node k further, for each k.
    Shift,
    /// Half the nodes to the other half.
    Bisection,
    /// 1 to N/2 pairs at once.
    Multipair,
}

/// `wulf agent` (internal).
#[derive(Debug, Clone, Args)]
pub struct AgentArgs {
    /// The coordinator's control address.
    #[arg(long, value_name = "IP:PORT")]
    pub coordinator: SocketAddr,
    /// The node this agent stands for (default: SLURMD_NODENAME, else the
    /// host name).
    #[arg(long)]
    pub name: Option<String>,
}
