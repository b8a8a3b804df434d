//! The soakers' calibration (`--cost soak`, issue 30): a CPU held at half
//! rate by a steady load during the calibration is named (it used to be
//! absorbed silently: a steady load shows no spread, only a lower idle
//! rate), from the soaker thread's own CPU clock.

use crate::common::*;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[test]
fn a_cpu_held_at_half_rate_during_the_soakers_calibration_is_named() {
    let _g = serial();
    let cpu = wulf::sys::cpu_count() - 1;
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    // Busy for half of every 10 ms, at normal priority: the idle-class
    // soaker on that CPU gets at most the other half.
    let burner = std::thread::spawn(move || {
        wulf::sys::pin_current_thread(cpu).ok();
        while !flag.load(Ordering::Relaxed) {
            let t = Instant::now();
            while t.elapsed() < Duration::from_millis(5) {
                std::hint::spin_loop();
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    });
    let dir = tempdir();
    let out = file(&dir, "r.json");
    let o = run(&[
        "sweep",
        "tcp",
        "--sizes",
        "1Ki",
        "--budget",
        "0.3s",
        "--quiet",
        "--cost",
        "soak",
        "--json",
        out.to_str().unwrap(),
    ]);
    stop.store(true, Ordering::Relaxed);
    burner.join().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let r = wulf::result::read_result(&out).unwrap();
    let cal = r
        .conditions
        .unwrap()
        .soaker
        .expect("the soakers' calibration");
    let i = cal.cpus.iter().position(|&c| c == cpu).unwrap();
    assert!(cal.soaker_share[i] < 0.75, "{cal:?}");
    assert!(cal.held_cpus.contains(&cpu) && !cal.trusted, "{cal:?}");
    let named = format!("CPU {cpu} (its soaker ran");
    assert!(
        r.warnings.iter().any(|w| w.contains(&named)),
        "{:?}",
        r.warnings
    );
}
