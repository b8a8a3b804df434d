//! The whole CPU cost (issue 30): by default the kernel's own accounting
//! (/proc/stat busy time over the measured blocks, less the background
//! measured before the run), with the soakers (cyclesoak's method) only
//! when asked, their figure and the kernel's side by side. A CPU held by
//! other work before the run is named.
//!
//! Agreement with an outside sampler of /proc/stat is a benchmark, not a
//! test (bench/cost_vs_procstat.sh): these tests check what is recorded.

use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn wulf(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_wulf"))
        .args(args)
        .output()
        .expect("run wulf")
}

fn sweep(dir: &tempfile::TempDir, cost: &str) -> (wulf::result::SweepResult, String) {
    let out = dir.path().join(format!("{cost}.json"));
    let o = wulf(&[
        "sweep",
        "tcp",
        "--sizes",
        "1Ki,64Ki",
        "--budget",
        "0.4s",
        "--no-perturb",
        "--cost",
        cost,
        "--json",
        out.to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        o.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    (wulf::result::read_result(&out).unwrap(), stdout)
}

#[test]
fn the_default_whole_cost_is_the_kernels_busy_time_with_its_resolution() {
    let dir = tempfile::tempdir().unwrap();
    let (r, text) = sweep(&dir, "whole");
    assert!(
        text.contains("the kernel's busy time in /proc/stat"),
        "{text}"
    );
    assert!(text.contains("background subtracted"), "{text}");
    let c = r.conditions.unwrap();
    let base = c.kernel_baseline.expect("the background");
    assert_eq!(base.cpus.len(), base.busy_share.len());
    assert!(base.cpu_count() >= 1 && base.span_ms >= 400.0, "{base:?}");
    assert!(base.busy_share.iter().all(|s| (0.0..=1.0).contains(s)));
    assert!(!base.includes_loads && c.soaker.is_none());
    for p in &r.points {
        let w = p.cpu_whole.as_ref().unwrap();
        assert_eq!(w.method.as_deref(), Some("kernel"));
        // Both ends run on this machine: the machine was busy while they
        // talked (ticks of sampling error aside, never negative).
        assert!(w.cpu_ns >= 0.0 && w.wall_ns > 0, "{w:?}");
        assert!(w.busy_ticks.is_some() && w.kernel_cpu_ns.is_none());
        // Withheld (a saturated background on a busy CI machine), with
        // its reason and no figure; otherwise the figure adds up.
        let Some(per_byte) = w.ns_per_byte else {
            assert!(w.withheld.is_some(), "{w:?}");
            continue;
        };
        let ops = (p.trials * p.repeats) as f64;
        assert!((per_byte * ops * 2.0 * p.bytes as f64 - w.cpu_ns).abs() <= 1e-6 * w.cpu_ns + 1e-6);
    }
}

#[test]
fn with_soak_both_figures_are_recorded_side_by_side() {
    let dir = tempfile::tempdir().unwrap();
    let (r, text) = sweep(&dir, "soak");
    assert!(text.contains("kernel ns/B"), "{text}");
    let c = r.conditions.unwrap();
    assert!(c.soaker.is_some() && c.kernel_baseline.is_some());
    for p in &r.points {
        let w = p.cpu_whole.as_ref().unwrap();
        assert_eq!(w.method.as_deref(), Some("soak"));
        assert!(w.kernel_cpu_ns.unwrap() >= 0.0, "{w:?}");
    }
}

/// Keep CPU `cpu` busy for half of every 6 ms until `stop`. Not 10 ms:
/// the kernel's accounting samples at its 100 Hz tick, and a 10 ms period
/// locks onto it, so every tick of a half second can land in the same
/// phase (a CI run read 24% busy); 6 ms walks through the phases.
fn half_load(cpu: usize, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        wulf::sys::pin_current_thread(cpu).ok();
        while !stop.load(Ordering::Relaxed) {
            let t = Instant::now();
            while t.elapsed() < Duration::from_millis(3) {
                std::hint::spin_loop();
            }
            std::thread::sleep(Duration::from_millis(3));
        }
    })
}

/// A tcp sweep of one `size` with the whole cost, its result in `out`.
fn whole_sweep(
    out: &std::path::Path,
    size: &str,
    budget: &str,
    extra: &[&str],
) -> std::process::Output {
    let mut args = vec!["sweep", "tcp", "--sizes", size, "--budget", budget];
    args.extend_from_slice(extra);
    args.extend(["--cost", "whole", "--json", out.to_str().unwrap()]);
    wulf(&args)
}

#[test]
fn a_cpu_held_at_half_rate_before_the_run_is_named() {
    let cpu = wulf::sys::cpu_count() - 1;
    let stop = Arc::new(AtomicBool::new(false));
    let burner = half_load(cpu, stop.clone());
    // The background is measured in the first half second of the run.
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.json");
    let o = whole_sweep(&out, "1Ki", "0.2s", &[]);
    stop.store(true, Ordering::Relaxed);
    burner.join().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let r = wulf::result::read_result(&out).unwrap();
    let base = r.conditions.unwrap().kernel_baseline.unwrap();
    // At least half busy (more if other work shares the CPU).
    assert!(base.share_of(cpu).unwrap() >= 0.4, "{base:?}");
    assert!(base.held_cpus.contains(&cpu), "{base:?}");
    let named = format!("CPU {cpu} ");
    assert!(
        r.warnings.iter().any(|w| w.contains(&named)),
        "{:?}",
        r.warnings
    );
}

/// Keep CPU `cpu` busy all the time until `stop` (bounded by the caller).
fn full_load(cpu: usize, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        wulf::sys::pin_current_thread(cpu).ok();
        let deadline = Instant::now() + Duration::from_secs(60);
        while !stop.load(Ordering::Relaxed) && Instant::now() < deadline {
            std::hint::spin_loop();
        }
    })
}

/// Issue 44: with every CPU held by other work, busy time less the
/// background read 0 CPU, printed "0.000 ns/B" beside getrusage's
/// 723-1,528 ns/B. Now the figure is withheld with the reason.
#[test]
fn whole_cost_is_withheld_under_a_saturated_background() {
    let stop = Arc::new(AtomicBool::new(false));
    let burners: Vec<_> = (0..wulf::sys::cpu_count())
        .map(|cpu| full_load(cpu, stop.clone()))
        .collect();
    std::thread::sleep(Duration::from_millis(200));
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.json");
    let o = whole_sweep(&out, "64Ki", "0.3s", &["--no-pin"]);
    stop.store(true, Ordering::Relaxed);
    for b in burners {
        b.join().unwrap();
    }
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        o.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let r = wulf::result::read_result(&out).unwrap();
    for p in &r.points {
        let w = p.cpu_whole.as_ref().unwrap();
        let why = w
            .withheld
            .as_deref()
            .unwrap_or_else(|| panic!("not withheld: {w:?}"));
        assert!(why.contains("no idle CPU"), "{why}");
        assert!(
            w.ns_per_byte.is_none() && w.ns_per_message.is_none(),
            "{w:?}"
        );
    }
    assert!(
        text.contains("whole cost withheld: other work kept"),
        "{text}"
    );
    assert!(!text.contains(" 0.000 "), "{text}");
}
