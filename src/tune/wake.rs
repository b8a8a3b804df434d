//! `wulf tune tcp --wake-up`: what a halted CPU's wake-up costs a small
//! message, and the remedies sites use against it, each measured against
//! the baseline (issue 44).
//!
//! A blocking receive sleeps; on an idle machine its CPU halts, and every
//! message then pays that CPU's wake-up (on the idle 2-vCPU VM tcp 8 B
//! across a lab link read 55-120 us one way blocked, 9-11 us spinning).
//! The remedies, one configuration each:
//!
//! * `wake: spin`: the ends poll their sockets with non-blocking calls
//!   (`--wait spin`, as MPI libraries do): the transport's own figure, and
//!   so the wake-up's cost is the baseline's smallest size less this one's;
//! * `wake: busy_read N us`: the kernel busy-polls a socket's queue for up
//!   to N us before sleeping (net.core.busy_read for reads, busy_poll for
//!   poll/select; per socket, SO_BUSY_POLL), set for the configuration's
//!   sweep and put back after it;
//! * `wake: cpuidle off`: no CPU enters an idle state deeper than polling,
//!   by holding /dev/cpu_dma_latency open with 0 written (the PM QoS
//!   request lasts while the file is open, so the kernel drops it when the
//!   sweep ends, whatever ends the process).
//!
//! Everything here is pure: the configurations, the settings they make
//! and the advice. `plan::tune_wake` makes and undoes the settings.

use serde::{Deserialize, Serialize};

use super::bands::{Comparison, Verdict};
use super::plan::{Factor, TuneConfig};
use super::recommend::{Recommendation, Topic};
use super::summary::ConfigRun;

/// How long the kernel busy-polls a socket before sleeping, us: the
/// kernel documentation's suggestion for net.core.busy_read (50 us), and
/// longer than a wake-up of the idle VM's CPUs (tens of us).
pub const BUSY_POLL_USEC: u64 = 50;

/// The sysctls the busy-polling remedy sets, under /proc/sys.
pub const BUSY_POLL_SYSCTLS: [&str; 2] = ["net/core/busy_read", "net/core/busy_poll"];

/// The file whose PM QoS request keeps CPUs out of deep idle states.
pub const CPU_DMA_LATENCY: &str = "/dev/cpu_dma_latency";

/// One remedy against paying a CPU's wake-up on every message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WakeRemedy {
    /// Both ends poll their sockets in user space (`--wait spin`).
    Spin,
    /// The kernel busy-polls sockets ([`BUSY_POLL_SYSCTLS`] at
    /// [`BUSY_POLL_USEC`]).
    BusyPoll,
    /// No CPU idles deeper than polling ([`CPU_DMA_LATENCY`] held at 0).
    CpuidleOff,
}

impl WakeRemedy {
    /// Every remedy, in the order measured.
    pub const ALL: [WakeRemedy; 3] = [
        WakeRemedy::Spin,
        WakeRemedy::BusyPoll,
        WakeRemedy::CpuidleOff,
    ];

    /// The configuration's label.
    pub fn label(self) -> String {
        match self {
            WakeRemedy::Spin => "wake: spin".into(),
            WakeRemedy::BusyPoll => format!("wake: busy_read {BUSY_POLL_USEC} us"),
            WakeRemedy::CpuidleOff => "wake: cpuidle off".into(),
        }
    }

    /// What a site does to apply it everywhere, as root.
    pub fn site_commands(self) -> Vec<String> {
        match self {
            WakeRemedy::Spin => Vec::new(),
            WakeRemedy::BusyPoll => BUSY_POLL_SYSCTLS
                .iter()
                .map(|s| format!("sysctl -w {}={BUSY_POLL_USEC}", s.replace('/', ".")))
                .collect(),
            WakeRemedy::CpuidleOff => vec![
                "cpupower idle-set -D 0   # or: echo 1 > /sys/devices/system/cpu/cpu*/cpuidle/state[1-9]*/disable".into(),
            ],
        }
    }

    /// How the remedy works, for the advice.
    fn how(self) -> &'static str {
        match self {
            WakeRemedy::Spin => {
                "have programs poll their sockets (non-blocking receives in a loop, as MPI \
                 libraries do) instead of sleeping in recv"
            }
            WakeRemedy::BusyPoll => {
                "let the kernel busy-poll sockets before sleeping (net.core.busy_read and \
                 busy_poll, or SO_BUSY_POLL per socket)"
            }
            WakeRemedy::CpuidleOff => {
                "keep CPUs out of deep idle states (a PM QoS request through \
                 /dev/cpu_dma_latency, cpupower idle-set, or the cpuidle states' disable files)"
            }
        }
    }
}

/// The configurations of `--wake-up`, one per remedy.
pub fn wake_configs() -> Vec<TuneConfig> {
    WakeRemedy::ALL
        .iter()
        .map(|&r| TuneConfig {
            label: r.label(),
            factor: Factor::WakeUp,
            wake: Some(r),
            ..TuneConfig::baseline()
        })
        .collect()
}

/// What a CPU's wake-up cost a message: the baseline's smallest size
/// (blocking waits) against the spinning configuration's.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WakeCost {
    /// The size compared, bytes.
    pub bytes: u64,
    /// The baseline's median there, ns (one way).
    pub blocked_ns: f64,
    /// The spinning configuration's, ns.
    pub spinning_ns: f64,
}

/// The wake-up's cost from `runs`, when both the baseline and the
/// spinning configuration measured the same smallest size.
pub fn wake_cost(runs: &[ConfigRun]) -> Option<WakeCost> {
    let first = |f: &dyn Fn(&TuneConfig) -> bool| {
        runs.iter()
            .find(|r| f(&r.summary.config))
            .and_then(|r| r.points.first())
    };
    let blocked = first(&|c| c.factor == Factor::Baseline)?;
    let spinning = first(&|c| c.wake == Some(WakeRemedy::Spin))?;
    (blocked.bytes == spinning.bytes).then_some(WakeCost {
        bytes: blocked.bytes,
        blocked_ns: blocked.median_ns,
        spinning_ns: spinning.median_ns,
    })
}

/// The advice of the `--wake-up` configurations: what the wake-up cost,
/// and each remedy that made small messages faster beyond the noise (the
/// bands below 64 KiB), or that it did not.
pub fn wake_advice(runs: &[ConfigRun], cs: &[Comparison]) -> Vec<Recommendation> {
    let measured: Vec<WakeRemedy> = runs.iter().filter_map(|r| r.summary.config.wake).collect();
    let cost = wake_cost(runs).map(|c| {
        let took = format!(
            " At {} B a message took {:.1} us one way with blocking waits and {:.1} us with \
             spinning ones",
            c.bytes,
            c.blocked_ns / 1e3,
            c.spinning_ns / 1e3,
        );
        if c.blocked_ns > c.spinning_ns {
            format!(
                "{took}: waking a blocked end (its CPU, where it had halted) cost {:.1} us.",
                (c.blocked_ns - c.spinning_ns) / 1e3
            )
        } else {
            // A busy machine: spinning ends compete for the CPUs others use.
            format!("{took}: no wake-up was paid (the spinning ends waited for CPUs instead).")
        }
    });
    measured
        .into_iter()
        .map(|r| {
            let label = r.label();
            let small = |v: Verdict| {
                cs.iter()
                    .filter(|c| c.config == label && c.verdict == v)
                    .filter(|c| c.band.starts_with('<') || c.band.starts_with("1 KiB"))
                    .map(|c| format!("{} {:+.0}%", c.band, c.change * 100.0))
                    .collect::<Vec<_>>()
            };
            let (better, worse) = (small(Verdict::Better), small(Verdict::Worse));
            let helped = !better.is_empty() && worse.is_empty();
            let verdict = if helped {
                format!(
                    "{label} made small messages faster beyond the noise ({}): {} where latency \
                     matters.",
                    better.join(", "),
                    r.how()
                )
            } else if !worse.is_empty() {
                format!("{label} made small messages slower ({}).", worse.join(", "))
            } else {
                format!(
                    "{label} measured the same as the blocking baseline within the noise: the \
                     CPUs' wake-ups cost this path nothing worth a remedy."
                )
            };
            let advice = match (&cost, r) {
                (Some(c), WakeRemedy::Spin) => format!("{verdict}{c}"),
                _ => verdict,
            };
            Recommendation {
                topic: Topic::WakeUp,
                host: None,
                advice,
                // How to set it site-wide, only where it helped.
                commands: if helped {
                    r.site_commands()
                } else {
                    Vec::new()
                },
            }
        })
        .collect()
}

#[cfg(test)]
#[path = "wake_tests.rs"]
mod tests;
