//! `wulf hpl` on this machine: the real HPL inside HPC Challenge (Debian's
//! `hpcc`, installed by scripts/install-test-deps) on 2 Open MPI
//! processes, a small N: HPL's own residual check passes, the result
//! records the grid and HPL's rate agrees with HPL's operation count
//! over HPL's time (2/3 N^3 + 2 N^2 flops). Skips where hpcc is missing,
//! unless WULF_REQUIRE_MPI=1 (CI), where it fails.

use crate::common;

#[test]
fn hpl_passes_its_residual_check_and_reports_hpl_s_rate() {
    if !common::have_hpcc() || !common::have("openmpi") {
        return;
    }
    let _serial = common::serial();
    let dir = common::tempdir();
    let json = common::file(&dir, "hpl.json");
    let out = common::run(&[
        "hpl",
        "--np",
        "2",
        "--n",
        "600",
        "--nb",
        "60",
        "--json",
        json.to_str().unwrap(),
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}{}", common::stderr(&out));
    assert!(
        text.contains("P x Q = 1 x 2") && text.contains("PASSED"),
        "{text}"
    );
    let r = common::json(&json);
    assert_eq!(r["kind"], "hpl");
    assert_eq!(
        (r["n"].as_u64(), r["p"].as_u64(), r["q"].as_u64()),
        (Some(600), Some(1), Some(2))
    );
    assert_eq!(r["passed"], true);
    assert!(r["scaled_residual"].as_f64().unwrap() < 16.0);
    let n = 600.0f64;
    let flops = 2.0 / 3.0 * n.powi(3) + 2.0 * n * n;
    let (gflops, time_s) = (r["gflops"].as_f64().unwrap(), r["time_s"].as_f64().unwrap());
    let derived = flops / time_s / 1e9;
    // HPL prints its time rounded; the rate follows from its count.
    assert!(
        (gflops / derived - 1.0).abs() < 0.05,
        "HPL's {gflops} Gflop/s against {derived} from its time"
    );
}

#[test]
fn hpl_refuses_a_bad_share_of_memory() {
    let out = common::run(&["hpl", "--memory-fraction", "2"]);
    assert_eq!(out.status.code(), Some(2), "{}", common::stderr(&out));
    assert!(common::stderr(&out).contains("share of memory"));
}
