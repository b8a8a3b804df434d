//! Arguments of `wulf collective`.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, ValueEnum};

use super::{parse_precision, RanksArgs, WaitArg};
use crate::units::{parse_bytes, parse_duration};

/// Largest `--np`: ranks beyond this many on one machine measure the
/// scheduler, not the collective.
const MAX_NP: usize = 256;

/// `wulf collective`.
#[derive(Debug, Clone, Args)]
pub struct CollectiveArgs {
    /// The operation.
    #[arg(value_enum)]
    pub operation: OperationArg,
    /// Backends, comma-separated: mpi:NAME runs the library's own
    /// collective (mpi:openmpi, mpi:mpich, 'mpi:openmpi(tcp)'...); shm,
    /// tcp, unix and cma run wulf's own process group and its plain
    /// algorithm. Default: every MPI found here, then shm.
    #[arg(long, value_delimiter = ',', value_name = "LIST")]
    pub via: Option<Vec<String>>,
    /// Number of processes (ranks).
    #[arg(long, default_value = "2", value_name = "N", value_parser = parse_np)]
    pub np: usize,
    /// Message sizes: a list (8,1Ki,64Ki) or a range MIN:MAX, measured at
    /// the powers of two between them (as OSU's benchmarks). Units: K, M,
    /// G (10^3...) and Ki, Mi, Gi (2^10...). Default: the powers of two
    /// up to 1 MiB, from 8 B (allreduce) or 1 B; barrier takes none.
    #[arg(long, value_name = "LIST|MIN:MAX", value_parser = parse_sizes)]
    pub sizes: Option<SizeList>,
    /// Time budget of each backend's sweep, shared among its sizes.
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    pub budget: Duration,
    /// Stop each size when the median's 95% confidence interval is within
    /// this fraction of the median.
    #[arg(long, default_value = "0.02", value_parser = parse_precision)]
    pub precision: f64,
    /// Bound of every wait for another rank (a dead or silent rank becomes
    /// an error after it).
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    pub timeout: Duration,
    /// How wulf's own ranks wait for each other (default: spin while there
    /// is a CPU per rank, else block). MPI libraries wait their own way.
    #[arg(long, value_enum)]
    pub wait: Option<WaitArg>,
    /// Write the result as JSON ('-' for standard output).
    #[arg(long, value_name = "FILE", value_parser = crate::cli::output_file)]
    pub json: Option<PathBuf>,
    /// MPI libraries and the lab (`--lab SPEC`: one rank per node of a
    /// temporary lab, as `wulf npb --lab`).
    #[command(flatten)]
    pub ranks: RanksArgs,
    /// The nodes to place the ranks on (one per node unless --ppn or a
    /// hostfile's slots= say more), and how to reach them, as `wulf npb`
    /// takes them (not with --lab).
    #[command(flatten)]
    pub nodes: super::NodesArgs,
}

/// Sizes in bytes, ascending, without repeats (one option value: clap
/// would read a bare `Vec` as repeated values).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SizeList(pub Vec<u64>);

/// The collective operations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OperationArg {
    /// Element-wise sum of f64 values over all ranks, left on every rank
    /// (MPI_Allreduce; size: the values of one rank).
    Allreduce,
    /// Every rank sends a block to every rank (MPI_Alltoall; size: one
    /// block, as OSU counts it).
    Alltoall,
    /// Rank 0's buffer copied to every rank (MPI_Bcast).
    Bcast,
    /// Every rank waits for all (MPI_Barrier; no sizes).
    Barrier,
}

fn parse_np(s: &str) -> Result<usize, String> {
    match s.trim().parse::<usize>() {
        Ok(n) if (2..=MAX_NP).contains(&n) => Ok(n),
        _ => Err(format!(
            "'{s}': give a process count from 2 to {MAX_NP} (a collective needs two ranks)"
        )),
    }
}

/// A list of sizes, or MIN:MAX as the powers of two from MIN (rounded up
/// to one) to MAX; ascending, without repeats.
fn parse_sizes(text: &str) -> Result<SizeList, String> {
    let mut sizes = match text.split_once(':') {
        Some((lo, hi)) => {
            let (lo, hi) = (parse_bytes(lo.trim())?, parse_bytes(hi.trim())?);
            if lo == 0 || lo > hi {
                return Err(format!(
                    "'{text}': a range needs 1 <= MIN <= MAX (e.g. 8:1Mi)"
                ));
            }
            std::iter::successors(Some(lo.next_power_of_two()), |&b| b.checked_mul(2))
                .take_while(|&b| b <= hi)
                .collect::<Vec<u64>>()
        }
        None => text
            .split(',')
            .map(|s| parse_bytes(s.trim()))
            .collect::<Result<Vec<u64>, String>>()?,
    };
    if sizes.is_empty() {
        return Err(format!("'{text}' names no size"));
    }
    sizes.sort_unstable();
    sizes.dedup();
    Ok(SizeList(sizes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_lists_or_power_of_two_ranges() {
        let sizes = |t: &str| parse_sizes(t).map(|l| l.0);
        assert_eq!(sizes("64,8,1Ki,8"), Ok(vec![8, 64, 1024]));
        assert_eq!(sizes("8:64"), Ok(vec![8, 16, 32, 64]));
        assert_eq!(sizes("5:40"), Ok(vec![8, 16, 32]));
        assert!(parse_sizes("64:8").is_err());
        assert!(parse_sizes("0:8").is_err());
        assert!(parse_sizes("3:3").is_err());
        assert!(parse_sizes("eight").is_err());
    }

    #[test]
    fn process_counts_start_at_two() {
        assert!(parse_np("1").is_err());
        assert_eq!(parse_np("4"), Ok(4));
        assert!(parse_np("100000").is_err());
    }
}
