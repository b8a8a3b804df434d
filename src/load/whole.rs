//! `--cost whole` and `--cost soak`: the setup in force for this process,
//! and the figures recorded per sweep point and per NAS run.
//!
//! Two methods, both recorded side by side when the soakers run:
//! - **kernel** (`--cost whole`, the default method): busy time from
//!   `/proc/stat` over the measured blocks, every CPU, less the background
//!   measured before the run (see `kernel`). It agrees with the kernel's
//!   accounting by construction and perturbs nothing; its resolution is a
//!   tick per CPU and window.
//! - **soak** (`--cost soak`): cyclesoak's method (see `soaker`): what
//!   idle-class soaker threads lose. It sees time the kernel's tick misses,
//!   but the soakers change what they measure (wakeups get faster, the
//!   ends' own CPU time rises), so it is opt-in.
//!
//! The command sets the method up once, before any peer or rank starts,
//! and hands the [`WholeSetup`] down with the work: a sweep carries it in
//! its spec (so an MPI job's rank 0, which reads the spec from the job
//! file, has it too), a NAS run in the [`Span`] around it. Nothing here is
//! process-wide: two sweeps of one process may use different setups.

use serde::{Deserialize, Serialize};

use super::kernel::{busy_between, KernelBaseline, StatReader, Ticks, BASELINE_SPAN};
use super::soaker::{Calibration, Lost, Snapshot, Soaker};

/// How the whole CPU cost is measured in this run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WholeSetup {
    /// The background the kernel figures subtract.
    pub kernel: KernelBaseline,
    /// The soakers' idle calibration, with `--cost soak`: their figure is
    /// then the primary one and the kernel's stands beside it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub soak: Option<Calibration>,
}

impl WholeSetup {
    /// The method whose figure is primary: `kernel` or `soak`.
    pub fn method(&self) -> &'static str {
        if self.soak.is_some() {
            "soak"
        } else {
            "kernel"
        }
    }

    /// The warnings a result measured with this setup carries.
    pub fn warnings(&self) -> Vec<String> {
        let mut w: Vec<String> = self.kernel.warning().into_iter().collect();
        if let Some(cal) = &self.soak {
            w.extend(cal.warning());
            if self.kernel.includes_loads {
                w.push(
                    "whole CPU cost (soak) under --load: the soakers cannot tell the loads' CPU from \
                     the measurement's, so their figure counts both; the kernel figure beside it \
                     subtracts the loads"
                        .to_string(),
                );
            }
        }
        w
    }
}

impl WholeSetup {
    /// This setup with `--load` threads running: the background measured
    /// again now, with them, so that the kernel figures subtract the
    /// loads' own CPU. Call it after the loads started.
    pub fn with_loads_running(&self) -> std::io::Result<WholeSetup> {
        Ok(WholeSetup {
            kernel: KernelBaseline::measure(BASELINE_SPAN, true)?,
            soak: self.soak.clone(),
        })
    }
}

/// The whole CPU cost of one sweep point or one NAS run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WholeCpu {
    /// What `cpu_ns` counts: `kernel` (busy time in /proc/stat, less the
    /// background) or `soak` (what the soakers lost). Absent in files
    /// written before the kernel method existed: `soak`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    /// CPU time the measured blocks cost the machine, all CPUs, ns.
    pub cpu_ns: f64,
    /// Wall time of the measured blocks, ns.
    pub wall_ns: u64,
    /// `cpu_ns` as a share of all CPUs over `wall_ns` (0..=1).
    pub machine_share: f64,
    /// Sweep points: whole CPU per byte that crossed the channel, ns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ns_per_byte: Option<f64>,
    /// Sweep points: whole CPU per message, ns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ns_per_message: Option<f64>,
    /// Sweep points: getrusage's figure for the same blocks (both ends'
    /// measuring threads), ns per byte.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub getrusage_ns_per_byte: Option<f64>,
    /// `ns_per_byte / getrusage_ns_per_byte`: how much more the machine
    /// spent than getrusage saw (1 = it saw everything).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub whole_over_getrusage: Option<f64>,
    /// Kernel busy ticks the kernel figure rests on, all CPUs (its
    /// resolution: about one tick of sampling error per CPU and window).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub busy_ticks: Option<u64>,
    /// The background subtracted from the kernel's busy time, ns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub background_cpu_ns: Option<f64>,
    /// With `method` soak: the kernel's figure for the same blocks, CPU ns
    /// (side by side with the soakers').
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel_cpu_ns: Option<f64>,
    /// Why the kernel figure is withheld (`cpu_ns` 0 and no per-byte or
    /// per-message figure): the background it subtracts left no idle CPU
    /// to measure against, or was more than the machine was busy during
    /// the blocks. Absent: the figure stands.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub withheld: Option<String>,
}

/// Idle capacity, in CPUs, below which the background leaves nothing to
/// measure against: communication then runs in what other work leaves,
/// and busy time less the background reads about 0 whatever it cost
/// (issue 44: 0.000 ns/B where the ends' getrusage read 723-1,528 ns/B).
pub const MIN_IDLE_CPUS: f64 = 0.5;

/// Why a kernel figure of `raw_ns` (busy time less the background, before
/// any clamp) against `base` cannot stand, if it cannot.
fn withheld_reason(base: &KernelBaseline, raw_ns: f64, background_ns: f64) -> Option<String> {
    let idle = base.cpu_count() as f64 - base.background_cpus();
    if base.cpu_count() > 0 && idle < MIN_IDLE_CPUS {
        return Some(format!(
            "other work kept {:.2} of {} CPUs busy before the run: no idle CPU was left to \
             measure the cost against (measure on a quieter machine, or with --cost soak \
             on CPUs of its own)",
            base.background_cpus(),
            base.cpu_count()
        ));
    }
    (raw_ns <= 0.0).then(|| {
        format!(
            "the machine was busy for no more than the background subtracted ({:.0} ms of CPU): \
             other work changed after the background was measured",
            background_ns / 1e6
        )
    })
}

impl WholeCpu {
    /// From lost capacity over `ncpu` soaked CPUs, without per-byte figures.
    pub fn from_lost(lost: Lost, ncpu: usize) -> WholeCpu {
        WholeCpu {
            method: Some("soak".to_string()),
            cpu_ns: lost.cpu_ns,
            wall_ns: lost.wall_ns,
            machine_share: lost.share(ncpu),
            ns_per_byte: None,
            ns_per_message: None,
            getrusage_ns_per_byte: None,
            whole_over_getrusage: None,
            busy_ticks: None,
            background_cpu_ns: None,
            kernel_cpu_ns: None,
            withheld: None,
        }
    }

    /// From `busy_ticks` over windows of `wall_ns` in all, against the
    /// background of `base`; with `soak` (what the soakers lost, over how
    /// many CPUs, and the soaker threads' own CPU time, which the kernel
    /// counts as busy and is left out), the soakers' figure is primary.
    pub fn from_kernel(
        base: &KernelBaseline,
        busy_ticks: u64,
        wall_ns: u64,
        soak: Option<(Lost, usize, u64)>,
    ) -> WholeCpu {
        let background = base.background_cpus() * wall_ns as f64;
        let soakers = soak.map_or(0.0, |s| s.2 as f64);
        // Clamped only here, on the whole window: the per-window sampling
        // error is zero on average, and a clamp per block would bias it.
        let raw = busy_ticks as f64 * base.ns_per_tick - background - soakers;
        let kernel = raw.max(0.0);
        let withheld = withheld_reason(base, raw, background);
        let mut w = match soak {
            Some((lost, ncpu, _)) => {
                let mut w = WholeCpu::from_lost(lost, ncpu);
                w.kernel_cpu_ns = Some(kernel);
                w
            }
            None => {
                let mut w = WholeCpu::from_lost(Lost::default(), base.cpu_count());
                w.method = Some("kernel".to_string());
                w.withheld = withheld;
                w.cpu_ns = kernel;
                w.wall_ns = wall_ns;
                w.machine_share = if wall_ns == 0 || base.cpu_count() == 0 {
                    0.0
                } else {
                    (kernel / (wall_ns as f64 * base.cpu_count() as f64)).min(1.0)
                };
                w
            }
        };
        w.busy_ticks = Some(busy_ticks);
        w.background_cpu_ns = Some(background);
        w
    }

    /// Whether the figure stands (not [`WholeCpu::withheld`]).
    pub fn stands(&self) -> bool {
        self.withheld.is_none()
    }
}

/// The kernel's and (with `--cost soak`) the soakers' counters, read around
/// a window of work.
pub struct Counters {
    setup: WholeSetup,
    reader: StatReader,
    soaker: Option<Soaker>,
}

/// One reading of [`Counters`].
#[derive(Debug, Clone, Default)]
pub struct Reading {
    ticks: Ticks,
    soak: Option<Snapshot>,
}

/// What one window of work cost, before the background is subtracted.
#[derive(Debug, Clone, Copy, Default)]
pub struct Window {
    /// Busy ticks, all CPUs.
    pub busy_ticks: u64,
    /// Wall time, ns.
    pub wall_ns: u64,
    /// What the soakers lost (zero without them).
    pub lost: Lost,
    /// CPU time the soaker threads themselves ran, ns: busy to the kernel,
    /// so left out of its figure.
    pub soakers_cpu_ns: u64,
}

impl Window {
    /// Add another window.
    pub fn add(&mut self, other: Window) {
        self.busy_ticks += other.busy_ticks;
        self.wall_ns += other.wall_ns;
        self.lost.add(other.lost);
        self.soakers_cpu_ns += other.soakers_cpu_ns;
    }
}

impl Counters {
    /// Counters for `setup` (soakers started with `--cost soak`); None
    /// when the counters cannot be read.
    pub fn start(setup: &WholeSetup) -> Option<Counters> {
        let setup = setup.clone();
        let soaker = match &setup.soak {
            Some(cal) => Some(Soaker::start(&cal.cpus).ok()?),
            None => None,
        };
        let mut reader = StatReader::new();
        reader.read().ok()?;
        Some(Counters {
            setup,
            reader,
            soaker,
        })
    }

    /// Read every counter into `into` (its buffers reused).
    pub fn read_into(&mut self, into: &mut Reading) {
        if self.reader.read_into(&mut into.ticks).is_err() {
            into.ticks = Ticks::default();
        }
        into.soak = self.soaker.as_ref().map(Soaker::snapshot);
    }

    /// What the machine spent between two readings.
    pub fn window(&self, a: &Reading, b: &Reading) -> Window {
        let (busy_ticks, wall_ns) = busy_between(&a.ticks, &b.ticks);
        let (lost, soakers_cpu_ns) = match (&self.setup.soak, &a.soak, &b.soak) {
            (Some(cal), Some(x), Some(y)) => (Lost::between(cal, x, y), x.soakers_cpu_ns_until(y)),
            _ => (Lost::default(), 0),
        };
        Window {
            busy_ticks,
            wall_ns,
            lost,
            soakers_cpu_ns,
        }
    }

    /// The whole CPU of `w`, no per-byte figures.
    pub fn whole(&self, w: &Window) -> WholeCpu {
        let soak = self
            .setup
            .soak
            .as_ref()
            .map(|cal| (w.lost, cal.cpus.len(), w.soakers_cpu_ns));
        WholeCpu::from_kernel(&self.setup.kernel, w.busy_ticks, w.wall_ns, soak)
    }
}

/// Counters read over the length of one NAS run (or any span of work).
pub struct Span {
    counters: Counters,
    from: Reading,
}

impl Span {
    /// Start reading with `setup`; None without one (no whole cost asked
    /// for) or when the counters cannot be read.
    pub fn start(setup: Option<&WholeSetup>) -> Option<Span> {
        let mut counters = Counters::start(setup?)?;
        let mut from = Reading::default();
        counters.read_into(&mut from);
        Some(Span { counters, from })
    }

    /// Stop, and the whole CPU the span used.
    pub fn finish(mut self) -> WholeCpu {
        let mut to = Reading::default();
        self.counters.read_into(&mut to);
        let w = self.counters.window(&self.from, &to);
        self.counters.whole(&w)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base(shares: Vec<f64>) -> KernelBaseline {
        KernelBaseline {
            cpus: (0..shares.len()).collect(),
            busy_share: shares,
            span_ms: 500.0,
            ns_per_tick: 1e7,
            held_cpus: Vec::new(),
            includes_loads: false,
            load_average_1m: None,
        }
    }

    #[test]
    fn the_kernel_figure_is_busy_time_less_the_background() {
        // 2 CPUs, 1 s, 120 busy ticks of 10 ms; background 0.1 CPU.
        let w = WholeCpu::from_kernel(&base(vec![0.05, 0.05]), 120, 1_000_000_000, None);
        assert_eq!(w.method.as_deref(), Some("kernel"));
        assert!((w.cpu_ns - 1.1e9).abs() < 1.0, "{w:?}");
        assert!((w.machine_share - 0.55).abs() < 1e-9);
        assert_eq!(w.busy_ticks, Some(120));
        assert!((w.background_cpu_ns.unwrap() - 1e8).abs() < 1.0);
    }

    /// Issue 44: under a saturated background the kernel figure read 0
    /// CPU ("0.000 ns/B") where the ends' own threads used 723-1,528 ns/B.
    #[test]
    fn the_kernel_figure_is_withheld_under_a_saturated_background() {
        let w = WholeCpu::from_kernel(&base(vec![0.9, 0.8]), 200, 1_000_000_000, None);
        assert!(!w.stands(), "{w:?}");
        assert!(
            w.withheld.as_deref().unwrap().contains("1.70 of 2 CPUs"),
            "{w:?}"
        );
        // Busy time below the background: other work changed.
        let w = WholeCpu::from_kernel(&base(vec![0.5, 0.5]), 50, 1_000_000_000, None);
        assert!(w.withheld.as_deref().unwrap().contains("changed"), "{w:?}");
        assert_eq!(w.cpu_ns, 0.0);
        // A quiet background: it stands.
        let w = WholeCpu::from_kernel(&base(vec![0.05, 0.05]), 120, 1_000_000_000, None);
        assert!(w.stands(), "{w:?}");
    }

    #[test]
    fn with_soakers_their_figure_leads_and_the_kernel_stands_beside_it() {
        let lost = Lost {
            wall_ns: 1_000_000_000,
            cpu_ns: 7e8,
        };
        // 150 busy ticks of 10 ms, of which the soakers ran 1 s.
        let w = WholeCpu::from_kernel(
            &base(vec![0.0; 2]),
            150,
            1_000_000_000,
            Some((lost, 2, 1_000_000_000)),
        );
        assert_eq!(w.method.as_deref(), Some("soak"));
        assert_eq!(w.cpu_ns, 7e8);
        assert!((w.kernel_cpu_ns.unwrap() - 5e8).abs() < 1.0);
    }

    #[test]
    fn an_idle_window_never_costs_below_zero() {
        let w = WholeCpu::from_kernel(&base(vec![0.5]), 0, 1_000_000, None);
        assert_eq!(w.cpu_ns, 0.0);
    }
}
