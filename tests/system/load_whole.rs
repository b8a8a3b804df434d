//! `--cost whole --load cpu:1` (issue 30, item 3): the whole cost of a
//! loaded run subtracts the load's own CPU, measured with the load running
//! before the sweep, and says so. Before, the load was charged to
//! communication (machine share 100%, whole / getrusage about 29 on an
//! idle 16-core machine).

use crate::common::*;

#[test]
fn the_whole_cost_of_a_loaded_run_subtracts_the_loads_own_cpu_and_says_so() {
    let _g = serial();
    let dir = tempdir();
    let out = file(&dir, "r.json");
    let mut args = vec!["sweep", "tcp", "--sizes", "64Ki", "--no-perturb"];
    args.extend_from_slice(&["--cost", "whole", "--load", "cpu:1"]);
    args.extend_from_slice(&["--json", out.to_str().unwrap()]);
    args.extend_from_slice(QUICK);
    let o = run(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    let r = wulf::result::read_result(&out).unwrap();
    let c = r.conditions.expect("conditions");
    let base = c.kernel_baseline.expect("background");
    // The spinner keeps its CPU busy while the background is measured, so
    // the background holds at least most of one CPU: the load's.
    assert!(base.includes_loads, "{base:?}");
    assert!(base.background_cpus() >= 0.8, "{base:?}");
    assert!(
        r.warnings
            .iter()
            .any(|w| w.contains("whole CPU cost under --load") && w.contains("subtracted")),
        "{:?}",
        r.warnings
    );
    for p in &r.points {
        let w = p.cpu_whole.as_ref().expect("whole cost");
        let background = w.background_cpu_ns.unwrap();
        assert!(background >= 0.8 * w.wall_ns as f64, "{w:?}");
        // What is left is the measurement's: never the whole machine.
        let ncpu = base.cpu_count() as f64;
        assert!(w.cpu_ns <= (ncpu - 0.8) * w.wall_ns as f64 + 1.0, "{w:?}");
    }
}
