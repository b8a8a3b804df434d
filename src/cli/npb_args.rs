//! Arguments of `wulf npb` and of its hidden rank processes.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Subcommand};

use super::{parse_mpi, WaitArg};
use crate::npb::Class;
use crate::units::parse_duration;

/// `wulf npb`.
#[derive(Debug, Clone, Args)]
pub struct NpbArgs {
    /// The kernel.
    #[command(subcommand)]
    pub kernel: NpbKernel,
}

/// The NAS kernels wulf has.
#[derive(Debug, Clone, Subcommand)]
pub enum NpbKernel {
    /// MG: multigrid V-cycles on a periodic 3-D Poisson problem; nearest
    /// neighbour ghost exchanges of every size plus small reductions.
    Mg(NpbMgArgs),
}

/// `wulf npb mg`.
#[derive(Debug, Clone, Args)]
pub struct NpbMgArgs {
    /// Problem class: S (seconds), W, A, B, C (grows 8x or more per class).
    #[arg(long, default_value = "S", value_parser = parse_class)]
    pub class: Class,
    /// Process counts (powers of two), comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "1,2,4", value_name = "LIST", value_parser = parse_np)]
    pub np: Vec<usize>,
    /// Transports linking the processes, comma-separated: tcp, unix, shm,
    /// cma, mpi:openmpi, mpi:mpich, 'mpi:openmpi(tcp)'... (default: every
    /// one available here).
    #[arg(long, value_delimiter = ',', value_name = "LIST")]
    pub via: Option<Vec<String>>,
    /// Verified runs per transport and process count (best and median kept).
    #[arg(long, default_value_t = 3, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=100))]
    pub repetitions: u64,
    /// Bound of every wait for another process (a dead or silent rank
    /// becomes an error after it).
    #[arg(long, default_value = "60s", value_parser = parse_duration)]
    pub timeout: Duration,
    /// How ranks wait for each other (default: spin while there are at
    /// least as many CPUs as ranks, else block). Spinning ranks also
    /// busy-poll tcp and unix sockets, as MPI libraries do.
    #[arg(long, value_enum)]
    pub wait: Option<WaitArg>,
    /// Write the result as JSON ('-' for standard output).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Another MPI as mpi:NAME; PATH is its mpicc or the directory holding
    /// it. Repeatable.
    #[arg(long = "mpi", value_name = "NAME=PATH", value_parser = parse_mpi)]
    pub mpi: Vec<(String, PathBuf)>,
    /// Arguments for the MPI launcher, split at spaces; repeatable.
    #[arg(long = "mpi-arg", value_name = "ARG", allow_hyphen_values = true)]
    pub mpi_arg: Vec<String>,
    /// Run with one process per node of a temporary lab with these links
    /// (as many nodes as the largest process count; as `wulf sweep --lab`,
    /// e.g. fe). Transports that cannot cross nodes (unix, shm, cma) are
    /// skipped.
    #[arg(long, value_name = "SPEC")]
    pub lab: Option<String>,
    /// Internal (`--lab` gives it to the command it runs in node1): spread
    /// the ranks over the nodes of the lab this one runs in.
    #[arg(long, hide = true, conflicts_with = "lab")]
    pub in_lab: bool,
}

/// `wulf npb-rank` (internal).
#[derive(Debug, Clone, Args)]
pub struct NpbRankArgs {
    /// The coordinator's control address.
    #[arg(long)]
    pub control: SocketAddr,
    /// This process's rank.
    #[arg(long)]
    pub rank: usize,
}

fn parse_class(s: &str) -> Result<Class, String> {
    s.parse::<Class>().map_err(|e| e.to_string())
}

fn parse_np(s: &str) -> Result<usize, String> {
    match s.trim().parse::<usize>() {
        Ok(n) if n.is_power_of_two() && n <= 1024 => Ok(n),
        _ => Err(format!(
            "'{s}': MG runs on a power of two of processes (1, 2, 4, ... 1024)"
        )),
    }
}
