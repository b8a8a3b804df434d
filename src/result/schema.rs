//! Serde types of the result file (schema version [`SCHEMA_VERSION`]).

use serde::{Deserialize, Serialize};

/// Version of the result schema this wulf writes and reads. Bumped on any
/// change a reader must know about; readers refuse other major versions.
/// Optional fields with defaults (the link and efficiency blocks) are added
/// within a version: files without them still read. Version 2 added the
/// measurement conditions (`conditions`, `points[].cpu_whole`); version 1
/// files read as version 2 files without them. Version 3 added
/// `conditions.peer_loads` (`--load-peer`) and the core-to-core copy
/// limits (`points[].limits.c2c_bits_per_s`, `c2c_two_copy_bits_per_s`,
/// `summary.peak_c2c_fraction`); older files read without them. Version 4
/// added `kind` (`"sweep"`, so every result names its kind) and
/// `limit_role` (what an in-process baseline measures, so a report needs
/// no transport table); older files read without them. Version 5 added
/// `points[].clean_share` and `points[].disturbed_trials` (the blocks an
/// end was kept off its CPU in, left out of the headline figures); older
/// files read without them.
pub const SCHEMA_VERSION: u32 = 5;

/// The value of [`SweepResult::kind`]. Files older than version 4 have no
/// `kind`: a document without one is a sweep result.
pub const SWEEP_KIND: &str = "sweep";

/// The `kind` of a sweep result read from a file that has none.
fn sweep_kind() -> String {
    SWEEP_KIND.into()
}

/// The oldest sweep result schema version this wulf still reads.
pub const OLDEST_SCHEMA_VERSION: u32 = 1;

super::envelope::result_document! {
    /// One sweep of one transport in one mode.
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
    #[serde(deny_unknown_fields)]
    pub struct SweepResult {
        envelope {
            /// Always [`SWEEP_KIND`] (version 4); files without it are sweeps too.
            #[serde(default = "sweep_kind")]
            kind,
            /// Version of this schema ([`SCHEMA_VERSION`]).
            schema_version,
            /// Version of the wulf that measured it.
            tool_version,
            /// False when the run was cut short (Ctrl-C, peer died, error): the
            /// points present were measured properly, but some are missing.
            complete,
            /// Wall time of the whole sweep in seconds.
            wall_s,
        }
        /// The machine the measuring (client) side ran on.
        pub host: crate::sys::Host,
        /// The machine the peer ran on, as the peer reported it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub peer_host: Option<crate::sys::Host>,
        /// Transport name as given on the command line (`tcp`, `unix`, ...).
        pub transport: String,
        /// For an in-process baseline (`memcpy`, `cacheline`, `c2c`...), the
        /// machine limit it measures, so a report draws it as a limit without
        /// looking the transport up (version 4); absent for a transport.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub limit_role: Option<LimitRole>,
        /// `pingpong`, `stream` or `bidir`.
        pub mode: Mode,
        /// Definitions of the figures, so a file explains itself.
        pub definitions: Definitions,
        /// Options in effect, including what the kernel granted.
        pub options: Options,
        /// Where each endpoint ran.
        pub placement: Placement,
        /// Measured cost of reading the clock once, subtracted from block times.
        pub timer_overhead_ns: f64,
        /// One entry per message size, ascending.
        pub points: Vec<Point>,
        /// Figures derived from the points.
        pub summary: Summary,
        /// Non-fatal observations (a clamped socket buffer, noisy points...).
        #[serde(default)]
        pub warnings: Vec<String>,
        /// The physical limit of the network path the data crossed, when a
        /// link speed and MTU on it are known, and the measured peak against it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub link: Option<super::LinkEfficiency>,
        /// The MPI library and launch of an `mpi:` transport; absent otherwise.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub mpi: Option<super::MpiInfo>,
        /// The confirmation pass: candidate events measured again with fresh
        /// trials after the sweep; absent in older files and cut-short runs.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub confirmation: Option<super::Confirmation>,
        /// The run-to-run spread of this transport and mode, when the result is
        /// one of the repetitions of `wulf run --repeat N`; absent otherwise.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub run_to_run: Option<super::RunToRun>,
        /// The conditions of the measurement: background load and the soaker
        /// calibration of `--cost whole` (schema version 2); absent otherwise.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub conditions: Option<super::Conditions>,
        /// The largest sizes of the schedule left unmeasured because the
        /// budget could not give them their least work (a slow link, long
        /// trials, a busy machine) or its deadline passed; absent when every
        /// size was measured.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub sizes_left_out: Option<super::SizesLeftOut>,
        /// Wall time before the budget's measuring began, s: starting the
        /// peer (a local `wulf serve`, a pvmd), the handshake and the data
        /// channel. A sweep ends within its budget or, when set-up took
        /// most of it, within set-up and a fifth of the budget; absent in
        /// older files and in-process baselines.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub setup_s: Option<f64>,
        /// The smallest size with the sweep's blocking waits beside the
        /// same size with spinning ends (schema version 5): whether the
        /// waits measured a CPU's wake-up. Absent where the sweep's ends
        /// spin, the probe did not run, and in older files.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub wake_up: Option<super::WakeUp>,
    }
}

/// The machine limit an in-process baseline sweep measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum LimitRole {
    /// Copy bandwidth in one process at each size (`bits_per_s`).
    MemcpyBandwidth,
    /// One-way time of a cache-line hand-off between two CPUs (`median_ns`).
    CachelineFloor,
    /// One core copying out what the other just wrote, per size: the floor
    /// under single-copy transfers.
    C2cSingleCopy,
    /// Copy-in, hand-off and copy-out between the two cores, per size: the
    /// floor under copy-in/copy-out transfers.
    C2cTwoCopy,
}

impl LimitRole {
    /// The role of a baseline result written before schema version 4, by
    /// the name of the built-in transport that wrote it (version 4 stores
    /// the role itself). A frozen table: it describes old files, so a
    /// baseline added later never needs a line here; a test in
    /// `transport` checks that today's baselines agree with it.
    pub fn of_old_baseline(transport: &str) -> Option<LimitRole> {
        match transport {
            "memcpy" => Some(LimitRole::MemcpyBandwidth),
            "cacheline" => Some(LimitRole::CachelineFloor),
            "c2c" => Some(LimitRole::C2cSingleCopy),
            "c2c-2copy" => Some(LimitRole::C2cTwoCopy),
            _ => None,
        }
    }
}

/// Message size of the cache-line floor: the point of a cache-line
/// baseline that is the floor (8 bytes, one word, within one line). Here
/// rather than in the transport so that readers of results (the report)
/// find the floor point without the transport layer.
pub const CACHELINE_FLOOR_BYTES: u64 = 8;

/// Communication pattern of a sweep.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// A sends n bytes, B returns n bytes; time = half the round trip.
    Pingpong,
    /// A sends a stream of n-byte messages; B times its receive loop.
    Stream,
    /// Both ends send and receive n bytes at once; rate counts both ways.
    Bidir,
}

impl Mode {
    /// Bytes moved per timed operation for an n-byte message: the bidirectional
    /// mode moves a message each way per operation.
    pub fn bytes_per_op(self, bytes: u64) -> u64 {
        match self {
            Mode::Bidir => 2 * bytes,
            Mode::Pingpong | Mode::Stream => bytes,
        }
    }
}

impl std::fmt::Display for Mode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Mode::Pingpong => "pingpong",
            Mode::Stream => "stream",
            Mode::Bidir => "bidir",
        })
    }
}

/// Plain-language definitions stored in every file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Definitions {
    /// What one trial's time (`trials_ns`) is.
    pub time: String,
    /// How `bits_per_s` is computed.
    pub throughput: String,
    /// How `summary.latency_ns` is chosen.
    pub latency: String,
    /// How the peak is chosen.
    pub peak: String,
    /// How efficiency against the physical limits is computed, when the
    /// result records limits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub efficiency: Option<String>,
}

impl Definitions {
    /// The definitions for a sweep in `mode`.
    pub fn for_mode(mode: Mode) -> Definitions {
        let time = match mode {
            Mode::Pingpong => "one-way time: half of one round trip, averaged over a block of round trips timed as one",
            Mode::Stream => "one-way time: the receiver's time per message over a block of messages timed as one",
            Mode::Bidir => "exchange time: time for both ends to send and receive one message each, averaged over a block",
        };
        let throughput = match mode {
            Mode::Bidir => "bits_per_s = 2 * bytes * 8 / median exchange time (both directions), SI units (1 Mbit/s = 1e6 bit/s)",
            _ => "bits_per_s = bytes * 8 / median one-way time, SI units (1 Mbit/s = 1e6 bit/s)",
        };
        Definitions {
            time: time.into(),
            throughput: throughput.into(),
            latency: "latency_ns = median one-way time at the smallest size measured".into(),
            peak: "peak_bits_per_s = highest median throughput over all sizes; peak_bytes = the size where it occurs".into(),
            efficiency: None,
        }
    }

    /// The definition of the efficiency figures, for results with limits.
    pub fn efficiency_text() -> String {
        "points[].limits: memcpy_bits_per_s = memcpy bandwidth at that size in one process \
         (same --nocache and --offset), floor_ns = one-way time of an 8-byte cache-line \
         ping-pong between the two CPUs (its fastest trial, the least of this process's \
         measurements); summary.latency_floor_multiple = latency_ns / floor_ns; \
         summary.peak_memcpy_fraction = peak_bits_per_s / memcpy_bits_per_s at peak_bytes \
         (bidir counts both directions, so it can exceed 1); c2c_bits_per_s = rate of one core \
         copying out a message the other core has just written (the c2c baseline, the floor \
         under single-copy transfers between the two CPUs), c2c_two_copy_bits_per_s = rate of \
         the serial copy-in, flag, copy-out hand-off (c2c-2copy), both cold (buffers rotated \
         past the last-level cache, c2c --nocache) when the sweep ran with --nocache; \
         summary.peak_c2c_fraction = peak_bits_per_s / c2c_bits_per_s at peak_bytes"
            .into()
    }
}

/// Options in effect for the sweep.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Options {
    /// Total time budget in seconds.
    pub budget_s: f64,
    /// Target relative half-width of the median's 95% confidence interval.
    pub precision: f64,
    /// Timeout of every blocking operation in seconds.
    pub timeout_s: f64,
    /// Whether buffers rotate through a pool larger than the last-level cache.
    pub nocache: bool,
    /// Misalignment of the buffers in bytes.
    pub offset_bytes: u64,
    /// Whether a byte-checking validation pass ran before the timed trials.
    pub integrity: bool,
    /// Whether every timed message was also stamped and checked
    /// (`--integrity all`; the copy and comparison are inside the
    /// timings). Absent when not.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub integrity_all: bool,
    /// Whether per-message tail latency passes ran.
    pub tails: bool,
    /// Peer address when the peer was remote, `null` for a local peer.
    pub peer: Option<String>,
    /// With a remote peer: whether both ends proved the shared secret to
    /// each other (the secret itself is never recorded). Absent for a
    /// local peer and in files from before authentication existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authenticated: Option<bool>,
    /// How wulf's ends waited for each other (`--wait`, or its default:
    /// spin, or yield on a single CPU and in a lab node). MPI libraries
    /// poll as they always do. Absent in files from before it was
    /// recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wait: Option<super::WaitMode>,
    /// Transport-specific settings: requested and granted socket buffers,
    /// TCP_NODELAY, address family, socket path...
    pub transport: serde_json::Map<String, serde_json::Value>,
}

/// Where the two endpoints ran.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Placement {
    /// Host name of the measuring side.
    pub client_host: String,
    /// CPU the measuring side was pinned to, if pinned.
    pub client_cpu: Option<usize>,
    /// Host name of the peer.
    pub server_host: String,
    /// CPU the peer was pinned to, if pinned.
    pub server_cpu: Option<usize>,
    /// The lab nodes and links the two ends ran in, when measured in a
    /// lab (`--lab`); absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lab: Option<super::LabPlacement>,
}

/// CPU time spent by one end during a point's trials (getrusage of that
/// process's measuring thread, never system-wide counters).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CpuCost {
    /// User time in ns over all timed trials of the point.
    pub user_ns: u64,
    /// System time in ns over all timed trials of the point.
    pub sys_ns: u64,
    /// (user + sys) / bytes moved by the timed trials.
    pub ns_per_byte: f64,
    /// (user + sys) / messages moved by the timed trials.
    pub ns_per_message: f64,
}

/// Per-message tail latency from the optional `--tails` pass.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Tails {
    /// Number of individually timed round trips.
    pub samples: u64,
    /// Median one-way time (half round trip) in ns.
    pub p50_ns: f64,
    /// 99th percentile one-way time in ns.
    pub p99_ns: f64,
    /// 99.9th percentile one-way time in ns.
    pub p999_ns: f64,
    /// Largest one-way time in ns.
    pub max_ns: f64,
    /// Cost of one clock read, included in each sample (not subtracted,
    /// because per-sample jitter of the clock is of the same order).
    pub timer_cost_ns: f64,
}

/// One message size.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Point {
    /// Message size in bytes.
    pub bytes: u64,
    /// Every kept trial's time per operation in ns, in measurement order.
    pub trials_ns: Vec<f64>,
    /// Operations (round trips, messages, exchanges) per trial.
    pub repeats: u64,
    /// Trials kept (`trials_ns.len()`).
    pub trials: u64,
    /// Trials run and dropped before the kept ones (calibration and warm-up).
    pub warmup_trials: u64,
    /// Smallest trial.
    pub min_ns: f64,
    /// Median trial.
    pub median_ns: f64,
    /// Mean trial.
    pub mean_ns: f64,
    /// Sample standard deviation.
    pub stddev_ns: f64,
    /// 90th percentile.
    pub p90_ns: f64,
    /// 99th percentile.
    pub p99_ns: f64,
    /// Lower bound of the 95% confidence interval of the median.
    pub ci_low_ns: f64,
    /// Upper bound of the 95% confidence interval of the median.
    pub ci_high_ns: f64,
    /// Throughput from the median (see `definitions.throughput`).
    pub bits_per_s: f64,
    /// True when the interval did not reach `options.precision` in budget.
    pub noisy: bool,
    /// True when the point was stopped short: the sweep's deadline
    /// (`--budget`, a matrix cell's share) passed while it was measured,
    /// or it ran past three even shares of the time left, which the sizes
    /// after it need. It keeps the trials measured by then (at least
    /// three) and is marked noisy too; absent (false) otherwise and in
    /// older files.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cut: bool,
    /// CPU cost of the measuring end.
    pub cpu_client: CpuCost,
    /// CPU cost of the peer.
    pub cpu_server: CpuCost,
    /// Per-message tail latency, when `--tails` ran for this size.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tails: Option<Tails>,
    /// The physical limits this point is measured against (intra-node and
    /// loopback sweeps).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limits: Option<Limits>,
    /// The whole CPU cost of this point's kept trials (`--cost whole`,
    /// cyclesoak's method; schema version 2); absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_whole: Option<crate::load::whole::WholeCpu>,
    /// The share of kept trials whose blocks were clean: neither end
    /// waited for a CPU (schedstat's run delay) for 5% of the block's
    /// timed part or more (schema version 5). The headline figures
    /// (median, interval, throughput, CPU cost) are the clean trials'
    /// when at least three are clean and no load was asked for; otherwise
    /// every trial's. Absent where the run delay could not be read, and
    /// in older files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clean_share: Option<f64>,
    /// Indices in `trials_ns` of the disturbed trials (schema version 5):
    /// kept in the file, left out of the headline figures (see
    /// `clean_share`). Empty (absent) when every block was clean.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub disturbed_trials: Vec<u32>,
}

/// Physical limits of the machine at one message size.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Limits {
    /// memcpy bandwidth at this size within one process, bits/s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memcpy_bits_per_s: Option<f64>,
    /// One-way time of an 8-byte cache-line ping-pong between the two
    /// CPUs, ns: the floor of any message between two processes there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub floor_ns: Option<f64>,
    /// Rate at which one of the two CPUs copies out a message of this size
    /// that the other has just written (the `c2c` baseline), bits/s: the
    /// floor under single-copy transfers (schema version 3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub c2c_bits_per_s: Option<f64>,
    /// Rate of the serial copy-in, flag, copy-out hand-off of a message of
    /// this size between the two CPUs (`c2c-2copy`), bits/s: the floor
    /// under unpipelined copy-in/copy-out (schema version 3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub c2c_two_copy_bits_per_s: Option<f64>,
}

/// A plateau of a memory-hierarchy curve (the memcpy baseline).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Plateau {
    /// `L1`, `L2`, `L3`... or `DRAM`.
    pub level: String,
    /// Size of that cache as the kernel reports it, bytes (null for DRAM).
    pub cache_bytes: Option<u64>,
    /// Smallest message size counted.
    pub min_bytes: u64,
    /// Largest message size counted.
    pub max_bytes: u64,
    /// Number of points counted.
    pub points: u64,
    /// Median of their throughputs, bits/s.
    pub median_bits_per_s: f64,
}

/// Figures derived from the points.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Summary {
    /// Median one-way time at the smallest size; null with no points.
    pub latency_ns: Option<f64>,
    /// Highest median throughput; across a lab link, of the sizes past
    /// the shaper's free burst (a warning names a faster smaller size);
    /// null with no points.
    pub peak_bits_per_s: Option<f64>,
    /// Size where the peak occurs; null with no points.
    pub peak_bytes: Option<u64>,
    /// Number of points marked noisy.
    pub noisy_points: u64,
    /// `latency_ns` divided by the first point's cache-line floor.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_floor_multiple: Option<f64>,
    /// `peak_bits_per_s` divided by memcpy bandwidth at `peak_bytes`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak_memcpy_fraction: Option<f64>,
    /// `peak_bits_per_s` divided by the core-to-core single-copy rate at
    /// `peak_bytes` (schema version 3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak_c2c_fraction: Option<f64>,
    /// Named plateaus (the memcpy baseline's cache levels and DRAM).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub plateaus: Vec<Plateau>,
}

impl Summary {
    /// Derive the summary from `points` (ascending sizes).
    pub fn from_points(points: &[Point]) -> Summary {
        let peak = points
            .iter()
            .max_by(|a, b| a.bits_per_s.total_cmp(&b.bits_per_s));
        let first = points.first();
        Summary {
            latency_ns: first.map(|p| p.median_ns),
            peak_bits_per_s: peak.map(|p| p.bits_per_s),
            peak_bytes: peak.map(|p| p.bytes),
            noisy_points: points.iter().filter(|p| p.noisy).count() as u64,
            // Withheld below 1: nothing is faster than the floor, so a
            // latency under it says the floor was measured on a busier
            // moment (once printed as 0.01x "the floor"), not a fact.
            latency_floor_multiple: first.and_then(|p| {
                let floor = p.limits?.floor_ns?;
                let multiple = p.median_ns / floor;
                (floor > 0.0 && multiple >= 1.0).then_some(multiple)
            }),
            peak_memcpy_fraction: peak.and_then(|p| {
                let memcpy = p.limits?.memcpy_bits_per_s?;
                (memcpy > 0.0).then(|| p.bits_per_s / memcpy)
            }),
            peak_c2c_fraction: peak.and_then(|p| {
                let c2c = p.limits?.c2c_bits_per_s?;
                (c2c > 0.0).then(|| p.bits_per_s / c2c)
            }),
            plateaus: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A latency below the floor measured before the sweep is no multiple
    /// of it (once printed as 0.01x "the floor"): withheld.
    #[test]
    fn a_floor_multiple_below_one_is_withheld() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/tcp-pingpong.json"
        );
        let mut r = crate::result::read_result(std::path::Path::new(path)).unwrap();
        let median = r.points[0].median_ns;
        let limits = |floor_ns| Limits {
            floor_ns: Some(floor_ns),
            ..Limits::default()
        };
        r.points[0].limits = Some(limits(median / 4.0));
        let x = Summary::from_points(&r.points).latency_floor_multiple;
        assert!((x.unwrap() - 4.0).abs() < 1e-9);
        r.points[0].limits = Some(limits(median * 4.0));
        assert_eq!(Summary::from_points(&r.points).latency_floor_multiple, None);
    }
}
