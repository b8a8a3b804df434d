//! The whole CPU cost by the kernel's own accounting: busy time from
//! `/proc/stat`, summed over every CPU of the machine.
//!
//! The kernel charges each CPU's time to user, nice, system, irq, softirq,
//! idle, iowait, steal (and guest, already inside user). Busy time here is
//! user + nice + system + irq + softirq: everything a CPU did that was not
//! idling, whoever it was done for, softirq and interrupt work included
//! (getrusage charges those to whichever task happened to run, often not
//! ours). Steal is left out: it is time a hypervisor gave to another guest,
//! not work this machine did.
//!
//! Why this is the default and the soakers (cyclesoak's method, `soaker`)
//! are opt-in: an independent check against `/proc/stat` found the soakers
//! 0.44x of it at 64 B and 1.3-1.45x at 64 KiB and 4 MiB over tcp, and the
//! soakers change what they measure (an idle-class spinner keeps a CPU out
//! of its idle states, so wakeups get faster and the ends' own CPU time
//! rises). Reading a file between blocks changes nothing inside a block.
//!
//! The resolution is the kernel's tick (`USER_HZ`, 100 per second here):
//! the kernel samples which state each CPU is in, so the busy count of a
//! window is unbiased but carries about one tick of sampling error per CPU
//! and window boundary; every figure records how many ticks it rests on.
//! What the machine does anyway (daemons, and the `--load` threads, whose
//! own busy time is measured with them running before the sweep) is the
//! background, measured before the run and subtracted.

use std::io::Read;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

/// A CPU busy for at least this share of the baseline is named as held by
/// other work.
pub const HELD_SHARE: f64 = 0.25;
/// Background (all CPUs together, in CPUs) above which the figures are
/// flagged as rough: the machine was not idle.
pub const ROUGH_BACKGROUND_CPUS: f64 = 0.10;
/// How long the background is measured for.
pub const BASELINE_SPAN: Duration = Duration::from_millis(500);

/// Busy and total ticks of every CPU at one instant.
#[derive(Debug, Clone, Default)]
pub struct Ticks {
    at: Option<Instant>,
    /// The CPUs' numbers (the `N` of the `cpuN` lines, in order).
    cpu_ids: Vec<usize>,
    /// Per CPU: busy ticks.
    busy: Vec<u64>,
    /// Per CPU: all ticks (busy, idle, iowait, steal).
    total: Vec<u64>,
}

/// Reads `/proc/stat` into a buffer it keeps, so that the reads between
/// blocks do not allocate once the buffer has grown.
pub struct StatReader {
    text: String,
    ns_per_tick: f64,
}

impl StatReader {
    /// A reader; the tick length comes from `sysconf(_SC_CLK_TCK)`.
    pub fn new() -> StatReader {
        StatReader {
            text: String::with_capacity(16 * 1024),
            ns_per_tick: ns_per_tick(),
        }
    }

    /// Nanoseconds per `/proc/stat` tick.
    pub fn ns_per_tick(&self) -> f64 {
        self.ns_per_tick
    }

    /// Every CPU's ticks now, into `into` (its vectors reused).
    pub fn read_into(&mut self, into: &mut Ticks) -> std::io::Result<()> {
        self.text.clear();
        std::fs::File::open("/proc/stat")?.read_to_string(&mut self.text)?;
        into.at = Some(Instant::now());
        into.cpu_ids.clear();
        into.busy.clear();
        into.total.clear();
        for line in self.text.lines() {
            let Some(rest) = line.strip_prefix("cpu") else {
                // The cpuN lines come first; the rest is of no interest.
                if !into.busy.is_empty() {
                    break;
                }
                continue;
            };
            // "cpu " is the sum line; "cpuN " one CPU.
            if !rest.starts_with(|c: char| c.is_ascii_digit()) {
                continue;
            }
            let id = rest
                .split_ascii_whitespace()
                .next()
                .and_then(|n| n.parse().ok())
                .unwrap_or(into.busy.len());
            let (busy, total) = parse_cpu_line(rest);
            into.cpu_ids.push(id);
            into.busy.push(busy);
            into.total.push(total);
        }
        if into.busy.is_empty() {
            return Err(std::io::Error::other("/proc/stat lists no CPU"));
        }
        Ok(())
    }

    /// Every CPU's ticks now.
    pub fn read(&mut self) -> std::io::Result<Ticks> {
        let mut t = Ticks::default();
        self.read_into(&mut t)?;
        Ok(t)
    }
}

impl Default for StatReader {
    fn default() -> Self {
        StatReader::new()
    }
}

/// (busy, total) ticks of one `cpuN` line, `N` still at its start.
fn parse_cpu_line(rest: &str) -> (u64, u64) {
    let mut fields = rest.split_ascii_whitespace().skip(1);
    let mut next = || {
        fields
            .next()
            .and_then(|f| f.parse::<u64>().ok())
            .unwrap_or(0)
    };
    let (user, nice, system, idle, iowait, irq, softirq, steal) = (
        next(),
        next(),
        next(),
        next(),
        next(),
        next(),
        next(),
        next(),
    );
    let busy = user + nice + system + irq + softirq;
    (busy, busy + idle + iowait + steal)
}

/// Length of one `/proc/stat` tick, ns.
fn ns_per_tick() -> f64 {
    // SAFETY: sysconf has no memory effects.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    1e9 / if hz > 0 { hz as f64 } else { 100.0 }
}

/// Busy ticks summed over all CPUs between two readings, and the wall
/// time between them, ns.
pub fn busy_between(a: &Ticks, b: &Ticks) -> (u64, u64) {
    let busy = a
        .busy
        .iter()
        .zip(&b.busy)
        .map(|(x, y)| y.saturating_sub(*x))
        .sum();
    let wall_ns = match (a.at, b.at) {
        (Some(x), Some(y)) => y.saturating_duration_since(x).as_nanos() as u64,
        _ => 0,
    };
    (busy, wall_ns)
}

/// The share (0 to 1) of all CPUs' ticks between two readings that were
/// busy; `None` when no tick passed (readings too close together).
pub fn busy_share(a: &Ticks, b: &Ticks) -> Option<f64> {
    let (busy, _) = busy_between(a, b);
    let total: u64 = a
        .total
        .iter()
        .zip(&b.total)
        .map(|(x, y)| y.saturating_sub(*x))
        .sum();
    (total > 0).then(|| (busy as f64 / total as f64).min(1.0))
}

/// What the machine kept busy with before the measurement: the
/// background the whole cost subtracts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct KernelBaseline {
    /// The CPUs accounted (every online CPU of the machine), by number.
    pub cpus: Vec<usize>,
    /// Busy share of each CPU of `cpus` over the span (0..=1).
    pub busy_share: Vec<f64>,
    /// How long the background was measured, ms.
    pub span_ms: f64,
    /// Length of one kernel tick, ns (the figures' resolution).
    pub ns_per_tick: f64,
    /// CPUs busy for at least [`HELD_SHARE`] of the span: held by other work.
    pub held_cpus: Vec<usize>,
    /// True when `--load` threads were running while it was measured: the
    /// loads' own CPU is then part of what is subtracted.
    #[serde(default)]
    pub includes_loads: bool,
    /// The machine's load average (1 min) when measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load_average_1m: Option<f64>,
}

impl KernelBaseline {
    /// Measure the background over `span`.
    pub fn measure(span: Duration, includes_loads: bool) -> std::io::Result<KernelBaseline> {
        let mut reader = StatReader::new();
        let a = reader.read()?;
        std::thread::sleep(span);
        let b = reader.read()?;
        Ok(KernelBaseline::from_ticks(
            &a,
            &b,
            reader.ns_per_tick(),
            includes_loads,
        ))
    }

    /// The baseline between two readings.
    pub fn from_ticks(a: &Ticks, b: &Ticks, ns_per_tick: f64, includes_loads: bool) -> Self {
        let busy_share: Vec<f64> = a
            .busy
            .iter()
            .zip(&b.busy)
            .zip(a.total.iter().zip(&b.total))
            .map(|((b0, b1), (t0, t1))| {
                let total = t1.saturating_sub(*t0);
                if total == 0 {
                    0.0
                } else {
                    (b1.saturating_sub(*b0) as f64 / total as f64).min(1.0)
                }
            })
            .collect();
        let held_cpus = busy_share
            .iter()
            .zip(&a.cpu_ids)
            .filter(|(s, _)| **s >= HELD_SHARE)
            .map(|(_, &id)| id)
            .collect();
        let (_, wall_ns) = busy_between(a, b);
        KernelBaseline {
            cpus: a.cpu_ids.clone(),
            busy_share,
            span_ms: wall_ns as f64 / 1e6,
            ns_per_tick,
            held_cpus,
            includes_loads,
            load_average_1m: crate::sys::load_average().map(|l| l[0]),
        }
    }

    /// The background, in CPUs (the sum of the shares).
    pub fn background_cpus(&self) -> f64 {
        self.busy_share.iter().sum()
    }

    /// Number of CPUs accounted.
    pub fn cpu_count(&self) -> usize {
        self.busy_share.len()
    }

    /// The busy share of CPU number `cpu`, if accounted.
    pub fn share_of(&self, cpu: usize) -> Option<f64> {
        let i = self.cpus.iter().position(|&c| c == cpu)?;
        self.busy_share.get(i).copied()
    }

    /// What a result should say about this baseline, if anything.
    pub fn warning(&self) -> Option<String> {
        let shares = || {
            self.held_cpus
                .iter()
                .map(|&c| format!("CPU {c} {:.0}%", self.share_of(c).unwrap_or(0.0) * 100.0))
                .collect::<Vec<_>>()
                .join(", ")
        };
        if self.includes_loads {
            return Some(format!(
                "whole CPU cost under --load: the loads' own busy time, {:.2} CPUs measured with them \
                 running before the sweep, is subtracted; where loads and measurement compete for \
                 CPUs the loads get less than that and the figures are low by up to the difference",
                self.background_cpus()
            ));
        }
        if !self.held_cpus.is_empty() {
            return Some(format!(
                "whole CPU cost: before the run other work held {} (over {:.0} ms): the kernel's \
                 accounting subtracts that background, {:.2} CPUs, but if it varies the figures are rough",
                shares(),
                self.span_ms,
                self.background_cpus()
            ));
        }
        (self.background_cpus() > ROUGH_BACKGROUND_CPUS).then(|| {
            format!(
                "whole CPU cost: the machine was not idle before the run ({:.2} CPUs busy over {:.0} ms, \
                 subtracted): the figures are rough",
                self.background_cpus(),
                self.span_ms
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ticks(at: Instant, rows: &[(u64, u64)]) -> Ticks {
        Ticks {
            at: Some(at),
            cpu_ids: (0..rows.len()).collect(),
            busy: rows.iter().map(|r| r.0).collect(),
            total: rows.iter().map(|r| r.1).collect(),
        }
    }

    #[test]
    fn a_cpu_line_counts_irq_and_softirq_as_busy_and_steal_as_neither() {
        // user nice system idle iowait irq softirq steal guest guest_nice
        let (busy, total) = parse_cpu_line("3 10 1 5 100 7 2 4 9 0 0");
        assert_eq!(busy, 10 + 1 + 5 + 2 + 4);
        assert_eq!(total, busy + 100 + 7 + 9);
    }

    #[test]
    fn this_machine_reads_one_line_per_cpu_and_time_moves_on() {
        let mut r = StatReader::new();
        let a = r.read().unwrap();
        assert_eq!(a.busy.len(), crate::sys::cpu_count().max(a.busy.len()));
        std::thread::sleep(Duration::from_millis(30));
        let b = r.read().unwrap();
        assert!(b.total.iter().zip(&a.total).all(|(y, x)| y >= x));
        assert!(busy_between(&a, &b).1 >= 30_000_000);
    }

    #[test]
    fn a_half_busy_cpu_is_named_and_the_background_is_the_sum() {
        let t0 = Instant::now();
        let a = ticks(t0, &[(0, 0), (0, 0), (0, 0)]);
        let b = ticks(
            t0 + Duration::from_millis(500),
            &[(1, 50), (25, 50), (50, 50)],
        );
        let base = KernelBaseline::from_ticks(&a, &b, 1e7, false);
        assert_eq!(base.held_cpus, [1, 2]);
        assert!((base.background_cpus() - 1.52).abs() < 1e-9);
        let w = base.warning().unwrap();
        assert!(w.contains("CPU 1 50%") && w.contains("CPU 2 100%"), "{w}");
        let idle = KernelBaseline::from_ticks(&a, &ticks(t0, &[(0, 50); 3]), 1e7, false);
        assert_eq!(idle.warning(), None);
    }
}
