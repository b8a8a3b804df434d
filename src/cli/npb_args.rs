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
    /// CG: conjugate gradient on a random sparse matrix over a 2-D process
    /// grid; small, latency-bound reductions along process rows and a
    /// transpose exchange. Powers of two of processes.
    Cg(NpbMgArgs),
    /// EP: Gaussian pairs; computation only, one reduction at the end. Any
    /// process count.
    Ep(NpbMgArgs),
    /// IS: integer bucket sort; one large all-to-all of keys per iteration.
    /// Powers of two of processes.
    Is(NpbMgArgs),
    /// MG: multigrid V-cycles on a periodic 3-D Poisson problem; nearest
    /// neighbour ghost exchanges of every size plus small reductions.
    /// Powers of two of processes.
    Mg(NpbMgArgs),
    /// LU: SSOR on the 3-D Navier-Stokes equations over a 2-D process
    /// grid; a wavefront pipeline of small messages (one per z plane and
    /// neighbour) plus ghost exchanges. Any process count whose blocks keep
    /// 3 points a side.
    Lu(NpbMgArgs),
    /// SP: ADI time steps on the 3-D Navier-Stokes equations; scalar
    /// pentadiagonal line solves pipelined over NPB's multi-partition
    /// (one message per stage, axis and direction) plus face exchanges.
    /// Square process counts (1, 4, 9, ...).
    Sp(NpbMgArgs),
    /// FT: 3-D FFT PDE solver over slabs; one all-to-all transpose of the
    /// whole grid per time step. Counts that divide the grid's y rows and z
    /// planes (1, 2, 4, ...).
    Ft(NpbMgArgs),
    /// BT: ADI time steps on the 3-D Navier-Stokes equations as SP, but
    /// block-tridiagonal line solves (5x5 blocks) pipelined over NPB's
    /// multi-partition (one message per stage, axis and direction) plus
    /// face exchanges. Square process counts (1, 4, 9, ...).
    Bt(NpbMgArgs),
    /// Every kernel (BT, CG, EP, FT, IS, LU, MG, SP) in turn, each kernel's tables, then one
    /// table of Mop/s with a row per kernel and a column per transport.
    /// Process counts a kernel cannot use are skipped for it; --json FILE
    /// writes one file per kernel, FILE with -KERNEL before its extension.
    All(NpbMgArgs),
}

impl NpbKernel {
    /// Which kernels, and their options.
    pub fn parts(&self) -> (Vec<crate::npb::Kernel>, &NpbMgArgs) {
        use crate::npb::Kernel;
        match self {
            NpbKernel::Cg(a) => (vec![Kernel::Cg], a),
            NpbKernel::Ep(a) => (vec![Kernel::Ep], a),
            NpbKernel::Is(a) => (vec![Kernel::Is], a),
            NpbKernel::Mg(a) => (vec![Kernel::Mg], a),
            NpbKernel::Lu(a) => (vec![Kernel::Lu], a),
            NpbKernel::Sp(a) => (vec![Kernel::Sp], a),
            NpbKernel::Ft(a) => (vec![Kernel::Ft], a),
            NpbKernel::Bt(a) => (vec![Kernel::Bt], a),
            NpbKernel::All(a) => (Kernel::ALL.to_vec(), a),
        }
    }
}

/// `wulf npb mg|cg|ep|is`: the options every kernel shares.
#[derive(Debug, Clone, Args)]
pub struct NpbMgArgs {
    /// Problem class: S (seconds), W, A, B, C (grows 4x or more per class).
    #[arg(long, default_value = "S", value_parser = parse_class)]
    pub class: Class,
    /// Process counts, comma-separated (MG, CG and IS take powers of two,
    /// EP any count; a count the kernel cannot use is refused before
    /// anything starts).
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
    #[arg(long, value_name = "FILE", value_parser = crate::cli::output_file)]
    pub json: Option<PathBuf>,
    /// MPI libraries and the lab, as `wulf collective` takes them.
    #[command(flatten)]
    pub ranks: RanksArgs,
    /// The nodes to place the ranks on (one per node unless --ppn or a
    /// hostfile's slots= say more), and how to reach them (not with
    /// --lab).
    #[command(flatten)]
    pub nodes: super::NodesArgs,
    /// Conditions: --cost whole, --load, --loaded-vs-unloaded.
    #[command(flatten)]
    pub conditions: super::LoadArgs,
}

/// Where the ranks of a group run and which MPIs start them: the options
/// `wulf npb` and `wulf collective` share.
#[derive(Debug, Clone, Args)]
pub struct RanksArgs {
    /// Another MPI as mpi:NAME; PATH is its mpicc or the directory holding
    /// it. Repeatable.
    #[arg(long = "mpi", value_name = "NAME=PATH", value_parser = parse_mpi)]
    pub mpi: Vec<(String, PathBuf)>,
    /// Arguments for the MPI launcher, split at spaces; repeatable.
    #[arg(long = "mpi-arg", value_name = "ARG", allow_hyphen_values = true)]
    pub mpi_arg: Vec<String>,
    /// Run with one process per node of a temporary lab with these links
    /// (as many nodes as the largest process count; as `wulf sweep --lab`,
    /// e.g. fe). MPIs are held to TCP on the lab's links; transports that
    /// cannot cross nodes (unix, shm, cma) are skipped.
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
    let most = crate::npb::MAX_PROCESSES;
    match s.trim().parse::<usize>() {
        // Which counts a kernel can use is its own rule, checked later.
        Ok(n) if (1..=most).contains(&n) => Ok(n),
        _ => Err(format!("'{s}': give a process count from 1 to {most}")),
    }
}
