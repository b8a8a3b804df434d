//! `wulf hpl --lab ge`: the real HPL (HPC Challenge) with one Open MPI
//! process per node of a temporary lab, every message over the emulated
//! link; HPL's residual check passes and the result records the lab.
//! Skips where hpcc is missing unless WULF_REQUIRE_MPI=1.

use crate::common;

#[test]
fn hpl_runs_one_process_per_lab_node_and_passes_its_check() {
    if !common::labs_possible() || !common::have("openmpi") || !common::have_hpcc() {
        return;
    }
    let _serial = common::serial();
    let dir = common::tempdir();
    let json = common::file(&dir, "hpl.json");
    let out = common::run(&[
        "hpl",
        "--lab",
        "ge",
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
    let r = common::json(&json);
    assert_eq!(r["passed"], true);
    let nodes: Vec<&str> = r["lab"]["links"]
        .as_array()
        .expect("lab links")
        .iter()
        .map(|l| l["node"].as_str().unwrap())
        .collect();
    assert_eq!(nodes, ["node1", "node2"]);
    let launcher = r["launcher_command"].as_array().unwrap();
    assert!(
        launcher.iter().any(|a| a == "btl_tcp_if_include"),
        "not held to the lab's link: {launcher:?}"
    );
}
