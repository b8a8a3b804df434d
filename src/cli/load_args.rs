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
    /// Also everything the machine spent, by the kernel's own accounting:
    /// busy time in /proc/stat over the measured blocks, every CPU, user,
    /// system, irq and softirq, less the background measured before the run.
    Whole,
    /// Also everything the machine spent, by cyclesoak's method: idle-class
    /// soaker threads on every CPU, calibrated first, lose what the
    /// measurement used; the kernel's figure is recorded beside it. The
    /// soakers perturb what they measure (see docs/methodology.md).
    Soak,
}

/// `--cost`, `--load`, `--loaded-vs-unloaded`.
#[derive(Debug, Clone, Args)]
pub struct LoadArgs {
    /// CPU cost to measure: process (getrusage, default), whole (the whole
    /// machine by the kernel's accounting in /proc/stat) or soak (the whole
    /// machine by cyclesoak's soaker threads, the kernel's figure beside it).
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
