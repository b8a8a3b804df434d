//! Arguments of `wulf lab`: make, use, inspect and remove emulated clusters.

use std::ffi::OsString;

use clap::{Args, Subcommand};

/// The name of a lab when `--name` is not given (a lab's name, not the
/// `--launch lab` launcher).
pub const DEFAULT_LAB: &str = "lab";

/// `wulf lab`.
#[derive(Debug, Clone, Args)]
pub struct LabArgs {
    /// What to do.
    #[command(subcommand)]
    pub action: LabAction,
}

/// `wulf lab` actions.
#[derive(Debug, Clone, Subcommand)]
pub enum LabAction {
    /// Make a lab: N nodes (node1 ... nodeN), each a network namespace with
    /// its own host name, joined by a switch, every link shaped.
    Up(LabUpArgs),
    /// Run a command inside a node.
    Exec(LabExecArgs),
    /// List labs, nodes, addresses, shaping and MTU as the kernel has them.
    Status(LabStatusArgs),
    /// Remove a lab and everything it made.
    Down(LabDownArgs),
    /// Internal: the remote shell MPI launchers use to start processes on
    /// lab nodes (`rsh`-compatible: HOST COMMAND...).
    #[command(hide = true)]
    Rsh(LabRshArgs),
}

/// `wulf lab up`.
#[derive(Debug, Clone, Args)]
pub struct LabUpArgs {
    /// Name of the lab (letters, digits, '-', '_').
    #[arg(long, value_parser = lab_name, default_value = DEFAULT_LAB)]
    pub name: String,
    /// Number of nodes.
    #[arg(long, default_value = "2")]
    pub nodes: usize,
    /// Link of every node: fe (100 Mbit/s), ge (1 Gbit/s), 10ge, or a rate
    /// as tc writes it (600mbit, 2.5gbit); NODE=LINK for one node
    /// (node3=fe). Repeatable. Default ge.
    #[arg(long = "link", value_name = "LINK|NODE=LINK")]
    pub links: Vec<String>,
    /// MTU of every node (1500, 9000, BYTES) or NODE=BYTES for one node.
    /// Repeatable. Default 1500.
    #[arg(long = "mtu", value_name = "BYTES|NODE=BYTES")]
    pub mtus: Vec<String>,
    /// Random frame loss in the switch, percent (needs nftables).
    #[arg(long, value_name = "PERCENT")]
    pub loss: Option<String>,
    /// One-way delay added to every path (needs sch_netem in the kernel).
    #[arg(long, value_name = "TIME")]
    pub delay: Option<String>,
    /// Jitter around the delay (needs sch_netem).
    #[arg(long, value_name = "TIME", requires = "delay")]
    pub jitter: Option<String>,
    /// What joins the nodes: a switch (each port its own link, full
    /// duplex) or a hub (Nguyen 2001's shared medium: every node's frames,
    /// both directions, share one budget of the link rate, fairly between
    /// the sending nodes; collisions and back-off are not emulated, so a
    /// real hub's loss under load is not shown).
    #[arg(long, value_name = "MEDIUM", default_value = "switch", value_parser = ["switch", "hub"])]
    pub medium: String,
}

/// `wulf lab exec`.
#[derive(Debug, Clone, Args)]
pub struct LabExecArgs {
    /// Name of the lab.
    #[arg(long, value_parser = lab_name, default_value = DEFAULT_LAB)]
    pub name: String,
    /// The node (node1 ...).
    pub node: String,
    /// The command and its arguments (after `--`).
    #[arg(last = true, required = true)]
    pub command: Vec<OsString>,
}

/// `wulf lab status`.
#[derive(Debug, Clone, Args)]
pub struct LabStatusArgs {
    /// Only this lab.
    #[arg(long, value_parser = lab_name)]
    pub name: Option<String>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// `wulf lab down`.
#[derive(Debug, Clone, Args)]
pub struct LabDownArgs {
    /// Name of the lab.
    #[arg(long, value_parser = lab_name, default_value = DEFAULT_LAB, conflicts_with = "all")]
    pub name: String,
    /// Remove every lab, and namespaces left by labs whose state is gone.
    #[arg(long)]
    pub all: bool,
}

/// `wulf lab rsh` (internal).
#[derive(Debug, Clone, Args)]
pub struct LabRshArgs {
    /// Name of the lab.
    #[arg(long, value_parser = lab_name)]
    pub name: String,
    /// Everything the launcher passes: options it adds for ssh (ignored),
    /// the host, then the command words.
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, required = true)]
    pub words: Vec<OsString>,
}

/// The studies `wulf study` runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum StudyArg {
    /// Peak throughput and latency by MTU (1500, 3000, 4500, 9000) and
    /// socket buffer (default, 64 KiB ... 1 MiB), as Farrell and Ong 2003,
    /// Table 4.1, with León Carri et al. 2004's graphs per MTU.
    MtuBuffers,
    /// Latency, peak and n_1/2 of tcp and each MPI's TCP path over Fast and
    /// Gigabit Ethernet, as Nguyen 2001, Table 2.
    FeVsGe,
    /// tcp against the lean stacks (raw, xdp, tipc) and each MPI's TCP
    /// path over ge and 10ge, MTU 1500 and 9000: latency, peak, n_1/2 and
    /// CPU per byte on both ends (as Bounanos and Fleury
    /// 2007, Table 2 and Figs. 1-2).
    LeanStacks,
    /// The same message through sockets or shared memory, UCX, libfabric
    /// and each MPI over them, on the loopback, in shared memory and over
    /// a lab link (--link): latency, peak and CPU per byte, each layer's
    /// overhead over the one beneath it.
    Layers,
    /// The real HPL (`wulf hpl`) at 1, 2 and 4 lab nodes over fe, ge and
    /// 10ge: Gflop/s per link and node count (as Innocente et al. 2000).
    Linpack,
}

/// `wulf study`.
#[derive(Debug, Clone, Args)]
#[command(after_long_help = super::lists::study_references())]
pub struct StudyArgs {
    /// The study.
    #[arg(value_enum)]
    pub name: StudyArg,
    /// The link of mtu-buffers (default ge) or the only link of
    /// lean-stacks (default ge and 10ge): fe, ge, 10ge or a rate (600mbit);
    /// layers: a lab link measured besides the loopback and shared memory.
    #[arg(long)]
    pub link: Option<String>,
    /// lean-stacks: only these MTUs (comma-separated; default 1500,9000).
    #[arg(long, value_delimiter = ',', value_name = "LIST")]
    pub mtu: Option<Vec<u32>>,
    /// lean-stacks between real machines: a `wulf serve` on HOST[:PORT]
    /// instead of lab links (the path as it is: its rate and MTU are read,
    /// not set; the MPIs need a launcher and are left out unless --only
    /// names them).
    #[arg(long, value_name = "HOST[:PORT]", conflicts_with_all = ["link", "mtu"])]
    pub peer: Option<String>,
    /// lean-stacks: CPU cost to measure in each sweep, process (getrusage),
    /// whole or soak (also the whole machine's, as `wulf sweep --cost`).
    #[arg(long, value_enum, default_value = "process")]
    pub cost: super::CostArg,
    /// lean-stacks: background load during every sweep, as `wulf sweep
    /// --load` (cpu[:N], memory[:N], network[:RATE]).
    #[arg(long, value_name = "SPEC", value_parser = checked_load)]
    pub load: Option<String>,
    /// Smaller budgets and fewer sizes (well under a minute for mtu-buffers).
    #[arg(long, conflicts_with = "thorough")]
    pub quick: bool,
    /// Four times the default budgets.
    #[arg(long)]
    pub thorough: bool,
    /// fe-vs-ge, lean-stacks, layers: only these transports (comma-separated).
    #[arg(long, value_delimiter = ',', value_name = "LIST")]
    pub only: Option<Vec<String>>,
    /// Directory under which a timestamped study directory is created.
    #[arg(long, default_value = "wulf-results", value_name = "DIR", value_parser = crate::cli::output_dir)]
    pub out: std::path::PathBuf,
    /// Print the study summary (study.json) on standard output; the tables
    /// go to standard error.
    #[arg(long)]
    pub json: bool,
}

/// A `--load` spec as written, once it parses.
fn checked_load(text: &str) -> Result<String, String> {
    crate::load::parse_loads(text).map(|_| text.to_string())
}

/// A lab name as clap reads it: checked at once (exit 2), since it becomes
/// part of namespace names and paths (see [`crate::lab::spec::validate_name`]).
fn lab_name(s: &str) -> Result<String, String> {
    crate::lab::spec::validate_name(s).map(|_| s.to_string())
}
