//! MPI ranks and NAS MG ranks across lab nodes: started through each MPI's
//! own launcher (or by wulf) in two different nodes, they talk over the
//! emulated link, not shared memory. A 64 KiB message over `fe` cannot beat
//! 100 Mbit/s by more than the shaper's free burst allows, which shared
//! memory (gigabytes per second) would: that bound, not a speed, is what
//! the tests check. Root is needed (CI runs as root; WULF_REQUIRE_LAB=1
//! turns a skip into a failure), and each MPI found (WULF_REQUIRE_MPI=1
//! makes a missing one a failure).

mod common;

use common::{libraries, wulf};

fn root() -> bool {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        return true;
    }
    if std::env::var_os("WULF_REQUIRE_LAB").is_some() {
        panic!("lab tests required but not root");
    }
    eprintln!("SKIPPED: MPI across lab nodes needs root for the lab");
    false
}

/// One lab at a time: rates on two shared vCPUs.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn json_of(args: &[&str]) -> serde_json::Value {
    let o = wulf(args).output().unwrap();
    assert!(
        o.status.success(),
        "{args:?}: exit {:?}\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&o.stdout).unwrap()
}

#[test]
fn mpi_ranks_in_two_nodes_cross_the_emulated_link() {
    let _s = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !root() {
        return;
    }
    for lib in libraries() {
        let transport = format!("mpi:{lib}(tcp)");
        let v = json_of(&[
            "sweep",
            &transport,
            "--lab",
            "fe",
            "--sizes",
            "1,64Ki",
            "--no-perturb",
            "--budget",
            "1s",
            "--quiet",
            "--json",
            "-",
        ]);
        let lab = &v["placement"]["lab"];
        assert_eq!(lab["client_node"], "node1", "{transport}: {lab}");
        assert_eq!(lab["server_node"], "node2", "{transport}: {lab}");
        assert_eq!(v["placement"]["client_host"], "node1");
        assert_eq!(v["placement"]["server_host"], "node2");
        let free = lab["links"][0]["free_burst_bytes"].as_f64().unwrap();
        let p = &v["points"][1];
        let bytes = p["bytes"].as_f64().unwrap();
        let bound = 100e6 * bytes / (bytes - free);
        let got = p["bits_per_s"].as_f64().unwrap();
        assert!(
            got <= bound,
            "{transport}: {got} bit/s over fe: not across the link"
        );
    }
}

#[test]
fn nas_mg_ranks_run_in_lab_nodes_and_verify() {
    let _s = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !root() {
        return;
    }
    let mut via = vec!["tcp".to_string()];
    via.extend(libraries().iter().take(1).map(|l| format!("mpi:{l}")));
    let v = json_of(&[
        "npb",
        "mg",
        "--lab",
        "fe",
        "--np",
        "2",
        "--via",
        &via.join(","),
        "--class",
        "S",
        "--repetitions",
        "1",
        "--json",
        "-",
    ]);
    assert_eq!(v["lab"]["links"][0]["link"], "fe", "{}", v["lab"]);
    for run in v["runs"].as_array().unwrap() {
        assert!(run["error"].is_null(), "{run}");
        assert_eq!(run["outcomes"][0]["verified"], true);
    }
}
