//! The whole CPU cost of communication, by cyclesoak's method.
//!
//! Andrew Morton's `zc`/`cyclesoak` (2001) measures what networking really
//! costs a machine: one lowest-priority thread per CPU counts loop
//! iterations; calibrated on the idle machine, each thread's rate is that
//! CPU's capacity; during a measurement, whatever the rate falls short of
//! was taken by something the measurement caused, all of it: user and
//! system time of both ends, softirq and interrupt work (charged by
//! getrusage to whichever task happened to run, often not ours) and kernel
//! threads. getrusage sees only the first two.
//!
//! Here each soaker thread is `SCHED_IDLE` (it runs only when a CPU has
//! nothing else to do) and pinned to its CPU. It runs a hand-written
//! counting loop and publishes its count every [`CHUNK_ITERATIONS`] with a
//! relaxed store to a counter on its own cache line: the measuring thread
//! reads the counters only between timed blocks, with relaxed loads, so the
//! soaker adds no lock and no shared write to the timing loop.
//!
//! Calibration takes several short windows and keeps each CPU's median rate
//! and its spread (the interquartile range over the median: one window a
//! daemon's wakeup cut short no longer condemns an idle machine, as the
//! max-min range did, reading 22-80% on an idle 16-core machine in issue
//! 30); a spread beyond [`SPREAD_WARN`] means the "idle" machine was not
//! idle. A CPU held by a steady load shows no spread, only a lower rate:
//! it is found from the soaker thread's own CPU clock (a `SCHED_IDLE`
//! thread on an idle CPU runs all the time; below [`HELD_SHARE`] of the
//! calibration, something else held the CPU) and named. Either way the
//! figures derived from the calibration carry a warning.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

/// Loop iterations between two publications of a soaker's count (a few
/// microseconds of work: fine enough for blocks of 50 us and more).
pub const CHUNK_ITERATIONS: u64 = 4096;
/// Calibration spread (max - min over the windows, relative to the
/// median, worst CPU) above which the whole cost is flagged as untrusted.
pub const SPREAD_WARN: f64 = 0.10;
/// A soaker that ran less than this share of the calibration's wall time
/// had its CPU held by other work: the CPU is named.
pub const HELD_SHARE: f64 = 0.75;
/// Spread recorded for a CPU whose soaker (nearly) never ran.
pub const MAX_SPREAD: f64 = 10.0;
/// Default calibration: this many windows ...
pub const CALIBRATION_WINDOWS: usize = 8;
/// ... of this length each.
pub const CALIBRATION_WINDOW: Duration = Duration::from_millis(60);

/// One counter per cache line, so two soakers never share a line.
#[repr(align(128))]
#[derive(Default)]
struct Counter(AtomicU64);

/// The idle capacity of each CPU, as iterations per second of the soak loop.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Calibration {
    /// The CPUs soaked, one soaker thread each.
    pub cpus: Vec<usize>,
    /// Median iterations per second of each CPU's soaker over the windows.
    pub idle_iterations_per_s: Vec<f64>,
    /// Spread of each CPU's windows: interquartile range / median.
    pub spread: Vec<f64>,
    /// Number of calibration windows.
    pub windows: usize,
    /// Length of each window, ms.
    pub window_ms: f64,
    /// Spread above which the calibration is not trusted.
    pub spread_threshold: f64,
    /// False when the worst CPU's spread exceeds the threshold: the machine
    /// was not idle, and whole-cost figures are at best rough.
    pub trusted: bool,
    /// The machine's load average (1 min) when calibrated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load_average_1m: Option<f64>,
    /// Share of the calibration's wall time each CPU's soaker ran, from
    /// its thread CPU clock (1 on an idle CPU); empty where the clocks
    /// could not be read.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub soaker_share: Vec<f64>,
    /// CPUs whose soaker ran less than [`HELD_SHARE`] of the calibration:
    /// held by other work, their idle capacity is what that work left.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub held_cpus: Vec<usize>,
}

impl Calibration {
    /// The worst CPU's spread.
    pub fn worst_spread(&self) -> f64 {
        self.spread.iter().copied().fold(0.0, f64::max)
    }

    /// The warning to attach to results when the calibration is untrusted.
    pub fn warning(&self) -> Option<String> {
        if !self.held_cpus.is_empty() {
            let named: Vec<String> = self
                .held_cpus
                .iter()
                .map(|&c| {
                    let share = self
                        .cpus
                        .iter()
                        .position(|&x| x == c)
                        .and_then(|i| self.soaker_share.get(i))
                        .copied()
                        .unwrap_or(0.0);
                    format!("CPU {c} (its soaker ran {:.0}% of the time)", share * 100.0)
                })
                .collect();
            return Some(format!(
                "whole CPU cost: other work held {} during the soakers' idle calibration: their \
                 idle capacity there is what that work left, so the soakers undercount what the \
                 measurement takes from them",
                named.join(", ")
            ));
        }
        (!self.trusted).then(|| {
            format!(
                "whole CPU cost: the soaker's idle calibration varied by {:.0}% (interquartile \
                 range over {} windows of {:.0} ms; threshold {:.0}%): the machine was not idle, \
                 so the whole-cost figures include other work and are rough",
                self.worst_spread() * 100.0,
                self.windows,
                self.window_ms,
                self.spread_threshold * 100.0
            )
        })
    }
}

/// Running soaker threads, one per CPU; stopped and joined on drop.
pub struct Soaker {
    counters: Arc<Vec<Counter>>,
    /// Each soaker thread's CPU-time clock, readable from any thread: the
    /// kernel counts a soaker's time as busy, and the kernel figure beside
    /// the soakers' must leave it out.
    clocks: Vec<Option<libc::clockid_t>>,
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
    cpus: Vec<usize>,
}

/// The soakers' counts at one instant.
#[derive(Debug, Clone)]
pub struct Snapshot {
    at: Instant,
    counts: Vec<u64>,
    /// CPU time of all soaker threads so far, ns.
    soakers_cpu_ns: u64,
    /// CPU time of each soaker thread so far, ns (None: no clock).
    per_cpu_ns: Vec<Option<u64>>,
}

impl Snapshot {
    /// CPU time the soaker threads themselves ran between `self` and `later`, ns.
    pub fn soakers_cpu_ns_until(&self, later: &Snapshot) -> u64 {
        later.soakers_cpu_ns.saturating_sub(self.soakers_cpu_ns)
    }
}

/// The capacity lost to everything else between two snapshots.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Lost {
    /// Wall time between the snapshots, ns.
    pub wall_ns: u64,
    /// CPU time taken from the soakers over all CPUs, ns.
    pub cpu_ns: f64,
}

impl Soaker {
    /// Start one `SCHED_IDLE` soaker pinned to each CPU in `cpus`.
    pub fn start(cpus: &[usize]) -> std::io::Result<Soaker> {
        let counters: Arc<Vec<Counter>> =
            Arc::new(cpus.iter().map(|_| Counter::default()).collect());
        let stop = Arc::new(AtomicBool::new(false));
        let mut soaker = Soaker {
            counters: counters.clone(),
            clocks: Vec::new(),
            stop: stop.clone(),
            threads: Vec::new(),
            cpus: cpus.to_vec(),
        };
        for (i, &cpu) in cpus.iter().enumerate() {
            let (counters, stop) = (counters.clone(), stop.clone());
            let handle = std::thread::Builder::new()
                .name(format!("wulf-soak{cpu}"))
                .spawn(move || {
                    // Pinning and the idle class may fail (a restricted
                    // container): a soaker at normal priority would steal
                    // from the measurement, so it then does nothing.
                    if crate::sys::pin_current_thread(cpu).is_err() || set_sched_idle().is_err() {
                        return;
                    }
                    soak(&counters[i].0, &stop);
                })?;
            let mut clock: libc::clockid_t = 0;
            // SAFETY: the thread is alive (joined only on drop) and `clock`
            // is a valid place for the id.
            let rc = unsafe {
                libc::pthread_getcpuclockid(
                    std::os::unix::thread::JoinHandleExt::as_pthread_t(&handle),
                    &mut clock,
                )
            };
            soaker.clocks.push((rc == 0).then_some(clock));
            // Pushed at once, so a failure to spawn the next one still
            // stops and joins this one (on drop).
            soaker.threads.push(handle);
        }
        Ok(soaker)
    }

    /// Start soakers on every CPU this process may use.
    pub fn start_all() -> std::io::Result<Soaker> {
        Soaker::start(&allowed_cpus())
    }

    /// The CPUs soaked.
    pub fn cpus(&self) -> &[usize] {
        &self.cpus
    }

    /// The counts now (relaxed loads: never synchronises with the soakers).
    pub fn snapshot(&self) -> Snapshot {
        let per_cpu_ns: Vec<Option<u64>> = self
            .clocks
            .iter()
            .map(|c| {
                let mut ts = libc::timespec {
                    tv_sec: 0,
                    tv_nsec: 0,
                };
                // SAFETY: `ts` is a valid timespec; a clock of a thread
                // that ended gives an error, read as no figure.
                let ok = c.is_some_and(|c| unsafe { libc::clock_gettime(c, &mut ts) } == 0);
                ok.then(|| ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64)
            })
            .collect();
        Snapshot {
            soakers_cpu_ns: per_cpu_ns.iter().flatten().sum(),
            per_cpu_ns,
            at: Instant::now(),
            counts: self
                .counters
                .iter()
                .map(|c| c.0.load(Ordering::Relaxed))
                .collect(),
        }
    }

    /// Measure the idle capacity: `windows` windows of `window` each, after
    /// a short settling time.
    pub fn calibrate(&self, windows: usize, window: Duration) -> Calibration {
        std::thread::sleep(Duration::from_millis(20));
        let n = self.cpus.len();
        let mut rates: Vec<Vec<f64>> = vec![Vec::with_capacity(windows); n];
        let mut before = self.snapshot();
        let first = before.clone();
        for _ in 0..windows.max(1) {
            std::thread::sleep(window);
            let after = self.snapshot();
            let secs = after.at.duration_since(before.at).as_secs_f64().max(1e-9);
            for (cpu, r) in rates.iter_mut().enumerate() {
                r.push(after.counts[cpu].wrapping_sub(before.counts[cpu]) as f64 / secs);
            }
            before = after;
        }
        let wall_ns = before.at.duration_since(first.at).as_nanos().max(1) as f64;
        let shares: Vec<Option<f64>> = first
            .per_cpu_ns
            .iter()
            .zip(&before.per_cpu_ns)
            .map(|(a, b)| Some((b.zip(*a).map(|(b, a)| b.saturating_sub(a))? as f64) / wall_ns))
            .collect();
        let mut cal = summarise(&self.cpus, rates, &shares);
        cal.windows = windows.max(1);
        cal.window_ms = window.as_secs_f64() * 1e3;
        cal
    }
}

impl Drop for Soaker {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

impl Lost {
    /// The capacity lost between `a` and `b` against `cal`: per CPU,
    /// `wall * (1 - rate / idle rate)`, clamped to `[0, wall]` (a CPU
    /// running faster than calibrated lost nothing), summed over CPUs.
    pub fn between(cal: &Calibration, a: &Snapshot, b: &Snapshot) -> Lost {
        let wall_ns = b.at.duration_since(a.at).as_nanos() as u64;
        let secs = wall_ns as f64 * 1e-9;
        let mut cpu_ns = 0.0;
        for (i, &idle) in cal.idle_iterations_per_s.iter().enumerate() {
            let (Some(&x), Some(&y)) = (a.counts.get(i), b.counts.get(i)) else {
                continue;
            };
            if idle <= 0.0 || secs <= 0.0 {
                continue;
            }
            let rate = y.wrapping_sub(x) as f64 / secs;
            cpu_ns += (1.0 - rate / idle).clamp(0.0, 1.0) * wall_ns as f64;
        }
        Lost { wall_ns, cpu_ns }
    }

    /// Add another interval.
    pub fn add(&mut self, other: Lost) {
        self.wall_ns += other.wall_ns;
        self.cpu_ns += other.cpu_ns;
    }

    /// The CPU lost as a share of the soaked CPUs' capacity (0..=1).
    pub fn share(&self, ncpu: usize) -> f64 {
        if self.wall_ns == 0 || ncpu == 0 {
            0.0
        } else {
            self.cpu_ns / (self.wall_ns as f64 * ncpu as f64)
        }
    }
}

/// A calibration of `cpus` from each CPU's rates over the windows and its
/// soaker's share of the wall time (None: no clock; every share missing:
/// none recorded).
fn summarise(cpus: &[usize], rates: Vec<Vec<f64>>, shares: &[Option<f64>]) -> Calibration {
    let mut idle = Vec::with_capacity(cpus.len());
    let mut spread = Vec::with_capacity(cpus.len());
    for mut r in rates {
        r.sort_by(f64::total_cmp);
        let median = crate::stats::quantile_sorted(&r, 0.5);
        let iqr = crate::stats::quantile_sorted(&r, 0.75) - crate::stats::quantile_sorted(&r, 0.25);
        idle.push(median);
        // A CPU whose soaker hardly ran has no capacity to measure: its
        // spread is capped (JSON has no infinity) far above any threshold.
        spread.push(if median > 0.0 {
            (iqr / median).min(MAX_SPREAD)
        } else {
            MAX_SPREAD
        });
    }
    let soaker_share: Vec<f64> = if shares.iter().any(Option::is_some) {
        shares.iter().map(|s| s.unwrap_or(1.0).min(1.0)).collect()
    } else {
        Vec::new()
    };
    let held_cpus: Vec<usize> = cpus
        .iter()
        .zip(&soaker_share)
        .filter(|(_, s)| **s < HELD_SHARE)
        .map(|(&c, _)| c)
        .collect();
    let worst = spread.iter().copied().fold(0.0, f64::max);
    Calibration {
        cpus: cpus.to_vec(),
        idle_iterations_per_s: idle,
        spread,
        windows: 1,
        window_ms: 0.0,
        spread_threshold: SPREAD_WARN,
        trusted: worst <= SPREAD_WARN && held_cpus.is_empty(),
        load_average_1m: crate::sys::load_average().map(|l| l[0]),
        soaker_share,
        held_cpus,
    }
}

/// The soak loop: count, publish every chunk, stop when told.
#[inline(never)]
fn soak(counter: &AtomicU64, stop: &AtomicBool) {
    let mut n: u64 = 0;
    while !stop.load(Ordering::Relaxed) {
        // The tight loop is the instrument: a fixed amount of work per
        // iteration whose rate only changes when the CPU is taken away.
        // black_box keeps the compiler from folding the loop into one add.
        let mut i = 0u64;
        while i < CHUNK_ITERATIONS {
            n = std::hint::black_box(n).wrapping_add(1);
            i += 1;
        }
        counter.store(n, Ordering::Relaxed);
    }
}

/// Put the calling thread in `SCHED_IDLE`: it runs only when nothing else
/// wants the CPU, so it measures idle time and takes none from the work.
fn set_sched_idle() -> std::io::Result<()> {
    // SAFETY: a zeroed sched_param is valid for SCHED_IDLE (priority 0);
    // pid 0 means the calling thread.
    let param: libc::sched_param = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::sched_setscheduler(0, libc::SCHED_IDLE, &param) };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// The CPUs this process may run on.
pub fn allowed_cpus() -> Vec<usize> {
    let me = nix::unistd::Pid::from_raw(0);
    match nix::sched::sched_getaffinity(me) {
        Ok(set) => (0..nix::sched::CpuSet::count())
            .filter(|&c| set.is_set(c).unwrap_or(false))
            .collect(),
        Err(_) => (0..crate::sys::cpu_count()).collect(),
    }
}

/// Calibrate soakers on every CPU with the default windows, then stop them.
pub fn calibrate_idle() -> std::io::Result<Calibration> {
    let s = Soaker::start_all()?;
    Ok(s.calibrate(CALIBRATION_WINDOWS, CALIBRATION_WINDOW))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cal(idle: Vec<f64>) -> Calibration {
        Calibration {
            cpus: (0..idle.len()).collect(),
            spread: vec![0.0; idle.len()],
            idle_iterations_per_s: idle,
            windows: 1,
            window_ms: 1.0,
            spread_threshold: SPREAD_WARN,
            trusted: true,
            load_average_1m: None,
            soaker_share: Vec::new(),
            held_cpus: Vec::new(),
        }
    }

    #[test]
    fn an_idle_machine_passes_despite_one_cut_window_and_a_held_cpu_is_named() {
        // 8 windows; one daemon wakeup cut CPU 0's fifth window by 40%
        // (the max-min spread would read 40%); CPU 1 steady at half rate,
        // its soaker running half the time (a steady load: no spread).
        let mut cpu0 = vec![1e9; 8];
        cpu0[4] = 0.6e9;
        let idle = summarise(
            &[0, 1],
            vec![cpu0.clone(), vec![1e9; 8]],
            &[Some(0.99), Some(1.0)],
        );
        assert!(idle.trusted && idle.worst_spread() < 0.01, "{idle:?}");
        assert!(idle.held_cpus.is_empty() && idle.warning().is_none());
        let held = summarise(
            &[0, 1],
            vec![cpu0, vec![0.5e9; 8]],
            &[Some(0.99), Some(0.5)],
        );
        assert!(!held.trusted && held.worst_spread() < 0.01, "{held:?}");
        assert_eq!(held.held_cpus, [1]);
        let w = held.warning().unwrap();
        assert!(w.contains("CPU 1 (its soaker ran 50% of the time)"), "{w}");
        // No clocks: nothing named, nothing recorded.
        let blind = summarise(&[0], vec![vec![1e9; 8]], &[None]);
        assert!(blind.soaker_share.is_empty() && blind.trusted);
    }

    #[test]
    fn lost_capacity_is_the_shortfall_against_idle() {
        let c = cal(vec![1e9, 1e9]);
        let t0 = Instant::now();
        let a = Snapshot {
            at: t0,
            counts: vec![0, 0],
            soakers_cpu_ns: 0,
            per_cpu_ns: Vec::new(),
        };
        // One second: CPU 0 ran at a quarter of idle, CPU 1 at full speed.
        let b = Snapshot {
            at: t0 + Duration::from_secs(1),
            counts: vec![250_000_000, 1_100_000_000],
            soakers_cpu_ns: 0,
            per_cpu_ns: Vec::new(),
        };
        let l = Lost::between(&c, &a, &b);
        assert_eq!(l.wall_ns, 1_000_000_000);
        assert!((l.cpu_ns - 0.75e9).abs() < 1.0, "{l:?}");
        assert!((l.share(2) - 0.375).abs() < 1e-9);
    }
}
