//! The MPI rows held to one layer beneath the library (issue 47, item 3):
//! Open MPI over its UCX PML (UCX held to TCP, to shared memory) and over
//! its cm PML with libfabric's tcp provider, MPICH ch4:ucx held to shared
//! memory; each sweep's messages checked (`--integrity`) and its path the
//! one the library itself reported (`mpi.reported_path`), and a path the
//! library refuses (Open MPI's ofi MTL with the shm provider, on Debian
//! 12's Open MPI 4.1.4 and libfabric 1.17) refused with the library's
//! reason before any job runs.
//!
//! A missing MPI, UCX or libfabric skips, or fails where CI requires them.
//! Speeds are never asserted.

use crate::common;
use common::libraries::{have_ofi, have_ucx};
use common::*;

// MPI ranks busy-poll: these tests hold the machine (one at a time).
use common::serial;

/// A two-size ping-pong sweep of `transport` with integrity checked, as
/// the result says it; its path as the library reported it.
fn sweep_path(transport: &str, variant: &str) -> String {
    let r = sweep_every_size(
        &[
            "sweep",
            transport,
            "--timeout",
            "5s",
            "--integrity",
            "--sizes",
            "8,65536",
        ],
        2.0,
    );
    assert_eq!(r["complete"], true, "{transport}");
    assert_eq!(r["transport"], transport);
    assert_eq!(r["options"]["integrity"], true);
    assert_eq!(r["points"].as_array().unwrap().len(), 2, "{transport}");
    let m = &r["mpi"];
    assert_eq!(m["variant"], variant, "{transport}");
    let warnings = r["warnings"].to_string();
    assert!(!warnings.contains("not confirmed"), "{warnings}");
    m["reported_path"]
        .as_str()
        .unwrap_or_else(|| panic!("{transport}: no reported path in {m}"))
        .to_string()
}

#[test]
fn open_mpi_over_ucx_and_libfabric_as_the_library_reports() {
    let _s = serial();
    if !have("openmpi") || !have_ucx() || !have_ofi() {
        return;
    }
    let tcp = sweep_path("mpi:openmpi(ucx-tcp)", "ucx-tcp");
    assert!(tcp.starts_with("pml:ucx tag(tcp/"), "{tcp}");
    let shm = sweep_path("mpi:openmpi(ucx-shm)", "ucx-shm");
    assert!(shm.starts_with("pml:ucx tag("), "{shm}");
    assert!(!shm.contains("tcp/"), "shared memory only: {shm}");
    let ofi = sweep_path("mpi:openmpi(ofi-tcp)", "ofi-tcp");
    assert!(ofi.starts_with("pml:cm mtl:ofi tcp"), "{ofi}");
}

#[test]
fn mpich_over_ucx_shared_memory_as_ucx_reports() {
    let _s = serial();
    if !have("mpich") || !have_ucx() {
        return;
    }
    let shm = sweep_path("mpi:mpich(ucx-shm)", "ucx-shm");
    assert!(shm.starts_with("ch4:ucx tag("), "{shm}");
    assert!(!shm.contains("tcp/"), "shared memory only: {shm}");
}

#[test]
fn a_path_the_library_refuses_is_refused_with_its_reason() {
    let _s = serial();
    if !have("openmpi") || !have_ofi() {
        return;
    }
    let dir = tempdir();
    let out = file(&dir, "r.json");
    let transport = "mpi:openmpi(ofi-shm)";
    let o = run(&[
        "sweep",
        transport,
        "--budget",
        "2s",
        "--quiet",
        "--integrity",
        "--sizes",
        "8",
        "--json",
        out.to_str().unwrap(),
    ]);
    if o.status.success() {
        // A library that takes the path must say it took that one.
        let r = json(&out);
        let path = r["mpi"]["reported_path"].as_str().unwrap_or("");
        assert!(path.starts_with("pml:cm mtl:ofi shm"), "{path}");
        return;
    }
    let err = stderr(&o);
    assert!(
        err.contains("is unavailable here: the library refused the ofi-shm path"),
        "{err}"
    );
    // Refused before any job: nothing measured, nothing written.
    assert!(!out.exists());
    // `wulf run` skips it with the same reason, and goes on.
    let o = run(&[
        "run",
        "--only",
        transport,
        "--budget",
        "1s",
        "--no-npb",
        "--out",
        dir.path().to_str().unwrap(),
    ]);
    let err = stderr(&o);
    assert!(
        err.contains(&format!("skipping {transport}: the library refused")),
        "{err}"
    );
}
