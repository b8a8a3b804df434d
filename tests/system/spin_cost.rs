//! A spinning end costs its wall time (issue 28): shm's spin waits once
//! showed "CPU 0.000 ns/B" because getrusage(RUSAGE_THREAD) does not count
//! the slice a thread that never sleeps is still running. Each end's CPU
//! is checked against the wall time of the kept trials, which the ends'
//! own clocks did not measure.

use crate::common;

#[test]
fn a_spinning_end_is_charged_its_wall_time() {
    let _serial = common::serial();
    let dir = common::tempdir();
    let out = common::file(&dir, "shm.json");
    let o = common::run(&[
        "sweep",
        "shm",
        "--wait",
        "spin",
        "--sizes",
        "4Ki,64Ki",
        "--no-perturb",
        // Both sizes: spinning ends on a loaded machine hand off once per
        // scheduler tick, and the budget is a deadline (issue 43).
        "--budget",
        "3s",
        "--quiet",
        "--json",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let r = wulf::result::read_result(&out).unwrap();
    assert_eq!(r.points.len(), 2);
    for p in &r.points {
        // A ping-pong trial is one-way time per operation: a round trip
        // is two of them, and both ends spin through all of it.
        let wall_ns = p.trials_ns.iter().sum::<f64>() * p.repeats as f64 * 2.0;
        for (end, c) in [("client", &p.cpu_client), ("server", &p.cpu_server)] {
            let cpu_ns = (c.user_ns + c.sys_ns) as f64;
            assert!(c.ns_per_byte > 0.0, "{end} at {} B: {c:?}", p.bytes);
            // At most the wall time (one CPU per end), and not a sliver of
            // it: a spinning end is preempted on a busy machine, but is
            // charged whenever it runs.
            assert!(
                cpu_ns <= 1.1 * wall_ns && cpu_ns >= 0.02 * wall_ns,
                "{end} at {} B: CPU {cpu_ns} ns over {wall_ns} ns of trials",
                p.bytes
            );
        }
    }
}
