//! Arguments of `wulf hpl`.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use super::RanksArgs;
use crate::units::parse_duration;

/// `wulf hpl`.
#[derive(Debug, Clone, Args)]
pub struct HplArgs {
    /// MPI processes (with --lab: one per node). Default: 2 with --lab,
    /// else one per CPU.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=1024))]
    pub np: Option<u64>,
    /// Problem size (the order of the matrix). Default: chosen from
    /// --budget (a probe run at a small N measures the rate first), at
    /// most the largest multiple of NB whose matrix fills
    /// --memory-fraction of this machine's memory (lab nodes share it).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    pub n: Option<u64>,
    /// HPL's block size.
    #[arg(long, default_value = "128", value_parser = clap::value_parser!(u64).range(1..=4096))]
    pub nb: u64,
    /// Share of memory the matrix fills when --n is not given.
    #[arg(long, default_value = "0.1", value_parser = parse_fraction)]
    pub memory_fraction: f64,
    /// Keep every figure of HPC Challenge's summary in the result
    /// (PTRANS, DGEMM, STREAM, RandomAccess, FFT, b_eff), not only HPL's.
    #[arg(long)]
    pub hpcc_all: bool,
    /// Time the whole run may take when --n is not given: N is the
    /// largest whose estimated time (from the probe's rate, 2/3 N^3
    /// flops, with 25% headroom) fits what the probe left; printed before
    /// it starts.
    #[arg(long, default_value = "60s", value_parser = parse_duration)]
    pub budget: Duration,
    /// Longest the run may take; then it is stopped (exit 3).
    #[arg(long, default_value = "30min", value_parser = parse_duration)]
    pub timeout: Duration,
    /// Write the result as JSON.
    #[arg(long, value_name = "FILE", value_parser = crate::cli::output_file)]
    pub json: Option<PathBuf>,
    /// The MPI options and the lab.
    #[command(flatten)]
    pub ranks: RanksArgs,
}

fn parse_fraction(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(f) if f > 0.0 && f <= 0.8 => Ok(f),
        _ => Err(format!(
            "'{s}': give a share of memory above 0 and at most 0.8"
        )),
    }
}
