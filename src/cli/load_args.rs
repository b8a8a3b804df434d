//! Measurement conditions shared by `wulf sweep` and `wulf npb`: the whole
//! CPU cost (`--cost whole`) and background load (`--load`).

use clap::{Args, ValueEnum};

use crate::load::{parse_loads, LoadSpec};

/// The loads of one `--load` (a wrapper, so clap takes the list as one value).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadList(pub Vec<LoadSpec>);

fn parse_load_list(text: &str) -> Result<LoadList, String> {
    parse_loads(text).map(LoadList)
}

/// Which CPU cost to measure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CostArg {
    /// getrusage of each end's measuring thread (always recorded).
    Process,
    /// Also everything the machine spent, by cyclesoak's method: idle-class
    /// soaker threads on every CPU, calibrated first, lose what the
    /// measurement used (user, system, softirq, interrupts, kernel threads).
    Whole,
}

/// `--cost`, `--load`, `--loaded-vs-unloaded`.
#[derive(Debug, Clone, Args)]
pub struct LoadArgs {
    /// CPU cost to measure: process (getrusage, default) or whole (the
    /// whole machine, cyclesoak's method; needs an otherwise idle machine).
    #[arg(long, value_enum, default_value = "process")]
    pub cost: CostArg,
    /// Background load for the whole measurement, comma-separated:
    /// cpu[:N] (N busy threads, default one per CPU), memory[:N] (N threads
    /// streaming through buffers larger than the last-level cache),
    /// network[:RATE] (a TCP stream on loopback, RATE in bit/s such as
    /// 100M or 1G, default unlimited).
    #[arg(long, value_name = "SPEC", value_parser = parse_load_list)]
    pub load: Option<LoadList>,
    /// Measure everything twice, without and with --load (interleaved),
    /// and print both with the relative change.
    #[arg(long, requires = "load")]
    pub loaded_vs_unloaded: bool,
}
