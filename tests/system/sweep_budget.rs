//! A sweep keeps its `--budget`: `wulf sweep shm --budget 5s` once took
//! 8.0 s and tcp 8.8 s (setup, the limits, the floor measured again and
//! the close came on top of the budget, and the confirmation pass took
//! 2.6 s against its 0.5 s share).
//!
//! No speed is asserted (a noisy 2-vCPU machine): the wall-time bounds are
//! generous, so only a gross overrun (a pass that ignores its share, a
//! phase left out of the budget at a large budget, a hang) fails. The
//! tight check is on the pass's own record, which does not depend on how
//! loaded the machine is: its budget never above its 10% share and its
//! wall time within that budget and one round's slack (on a loaded 2-vCPU
//! VM at load 5-7, the points' least work, 124 sizes of eight blocks, and
//! the limits' curves overrun their shares by seconds: see the budget
//! section of docs/methodology.md).

use std::time::{Duration, Instant};

use crate::common;

use common::{json, serial, stderr, tempdir, wulf};

/// Run a tcp sweep of `budget_s` over the default sizes; its wall time
/// and result.
fn sweep(budget_s: u64) -> (Duration, serde_json::Value) {
    sweep_with(budget_s, &[])
}

/// The pass's record: a budget within its share of `budget_s`, a wall time
/// within that budget and a round's slack.
fn pass_within_its_share(r: &serde_json::Value, budget_s: f64) {
    let c = &r["confirmation"];
    let pass_budget_s = c["budget_s"].as_f64().expect("a pass record");
    let wall_s = c["wall_s"].as_f64().unwrap();
    assert!(pass_budget_s <= 0.1 * budget_s + 1e-9, "{c}");
    assert!(
        wall_s <= pass_budget_s * 1.5 + 0.3,
        "pass {wall_s} s of {pass_budget_s} s"
    );
}

/// `--budget 2s` ends in under 2 s x 3 + 5 s in any build (the debug build
/// took 7.2 s at load 5.4; the regression took 4.5x at this budget).
#[test]
fn a_short_sweep_never_overruns_grossly() {
    let _g = serial();
    let (took, r) = sweep(2);
    assert!(took < Duration::from_secs(11), "{took:?}");
    pass_within_its_share(&r, 2.0);
}

/// `--budget 10s` ends within 1.5x + 5 s in an optimised build (10.8-12.1 s
/// measured at load 5.5 with the ci profile); skipped in the debug build,
/// whose slower limits would make the bound a statement about the build.
#[test]
fn a_long_sweep_keeps_its_budget_in_an_optimised_build() {
    if cfg!(debug_assertions) {
        eprintln!("skipped: the debug build (run with --profile ci)");
        return;
    }
    let _g = serial();
    let (took, r) = sweep(10);
    assert!(took < Duration::from_secs(20), "{took:?}");
    pass_within_its_share(&r, 10.0);
}

/// Run `wulf sweep tcp --budget BUDGET_S s` with `extra` arguments; its
/// wall time and result (issue 43: `--budget` is a deadline).
fn sweep_with(budget_s: u64, extra: &[&str]) -> (Duration, serde_json::Value) {
    let dir = tempdir();
    let out = dir.path().join("s.json");
    let budget = format!("{budget_s}s");
    let mut args = vec!["sweep", "tcp", "--budget", &budget, "--quiet"];
    args.extend_from_slice(extra);
    args.extend_from_slice(&["--json", out.to_str().unwrap()]);
    let began = Instant::now();
    let o = wulf(&args).output().unwrap();
    let took = began.elapsed();
    assert!(o.status.success(), "{}", stderr(&o));
    (took, json(&out))
}

/// The deadline a sweep of `budget_s` must end by: 1.2x its budget, its
/// measured set-up and slack for a loaded 2-vCPU CI machine (the close,
/// the result, one block past the deadline). Never a throughput.
fn deadline_of(budget_s: f64, r: &serde_json::Value) -> Duration {
    let setup_s = r["setup_s"].as_f64().expect("the set-up is recorded");
    Duration::from_secs_f64(1.2 * budget_s + setup_s + 3.0)
}

/// 4 KiB socket buffers make a large message's round trip long (an
/// 8 MiB one took seconds on a busy VM): `--budget 5s` took 29-45 s idle
/// and over 200 s busy. Now the sizes whose least work cannot fit are left
/// out, said in the result.
#[test]
fn a_small_buffer_sweep_keeps_its_deadline() {
    let _g = serial();
    let (took, r) = sweep_with(5, &["--sndbuf", "4Ki", "--rcvbuf", "4Ki"]);
    assert!(took <= deadline_of(5.0, &r), "{took:?}: {}", r["setup_s"]);
    let points = r["points"].as_array().unwrap();
    assert!(!points.is_empty());
    if let Some(left) = r.get("sizes_left_out") {
        let reason = left["reason"].as_str().unwrap();
        assert!(["least_work", "deadline"].contains(&reason), "{left}");
        assert!(r["warnings"].to_string().contains("sizes left out"));
    }
}

/// A peer stalled by SIGSTOP bursts (200 ms stopped every 500 ms) keeps a
/// sweep's trials long and its medians wild: the sweep still ends by its
/// deadline, keeping what it measured.
#[test]
fn a_sweep_whose_peer_is_stalled_keeps_its_deadline() {
    let _g = serial();
    let dir = tempdir();
    let out = dir.path().join("s.json");
    let began = Instant::now();
    let mut child = wulf(&[
        "sweep",
        "tcp",
        "--budget",
        "5s",
        "--quiet",
        "--json",
        out.to_str().unwrap(),
    ])
    .stdout(std::process::Stdio::null())
    .spawn()
    .unwrap();
    let me = child.id();
    let stop = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| {
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(300));
                // The local peer: a child of the sweep, found by its pid.
                let peers = common::children_of(me);
                for &p in &peers {
                    let _ = nix::sys::signal::kill(
                        nix::unistd::Pid::from_raw(p),
                        nix::sys::signal::Signal::SIGSTOP,
                    );
                }
                std::thread::sleep(Duration::from_millis(200));
                for &p in &peers {
                    let _ = nix::sys::signal::kill(
                        nix::unistd::Pid::from_raw(p),
                        nix::sys::signal::Signal::SIGCONT,
                    );
                }
            }
        });
        let status = child.wait().unwrap();
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        assert!(status.success(), "{status}");
    });
    let took = began.elapsed();
    let r = json(&out);
    eprintln!(
        "stalled peer: {took:?} of a 5 s budget, set-up {} s",
        r["setup_s"]
    );
    assert!(took <= deadline_of(5.0, &r), "{took:?}: {}", r["setup_s"]);
    // The sweep's own wall time, from its start to its result (no process
    // start or exit in it): the bound itself, 1.2 x the budget
    // plus the set-up it recorded.
    let wall_s = r["wall_s"].as_f64().unwrap();
    let setup_s = r["setup_s"].as_f64().unwrap();
    assert!(
        wall_s <= 1.2 * 5.0 + setup_s,
        "{wall_s} s, set-up {setup_s} s"
    );
    assert!(!r["points"].as_array().unwrap().is_empty());
}
