//! `wulf matrix` on a real Slurm: Debian's slurmctld and one slurmd per
//! node of a link lab (each in its node's network and UTS namespaces, as
//! a cluster's nodes would be), one munged for all. Three ways in: `wulf
//! matrix --launch slurm`, `salloc -N 4 wulf matrix` (srun chosen by
//! itself inside the allocation), and `srun -N 4 wulf matrix` (the tasks
//! meet, rank 0 coordinates). The Slurm clients run inside node1: the
//! root namespace has no route to the lab.

use crate::common;

use common::slurm::{slurm_installed, Slurm};
use common::{labs_possible, wulf_bin};
use wulf::result::read_npb_result;

use common::serial;

#[test]
fn matrices_through_slurm_three_ways() {
    let _s = serial();
    if !labs_possible() || !slurm_installed() {
        return;
    }
    let lab = format!("u{}", std::process::id() % 100_000);
    let _guard = common::lab_up(&lab, 4);
    let slurm = Slurm::start(&lab);
    let d = slurm.dir.path();
    let w = wulf_bin();
    let quick = [
        "--budget",
        "2s",
        "--bandwidth-size",
        "256Ki",
        "--quiet",
        "--json",
    ];
    let cases: [(&str, Vec<&str>); 3] = [
        (
            "slurm",
            vec![w, "matrix", "--launch", "slurm", "--hosts", "node[1-4]"],
        ),
        ("slurm", vec!["salloc", "-N", "4", w, "matrix"]),
        (
            "srun (tasks)",
            vec!["srun", "-N", "4", "--ntasks-per-node=1", w, "matrix"],
        ),
    ];
    for (i, (launch, argv)) in cases.iter().enumerate() {
        let json = d.join(format!("m{i}.json"));
        let mut full = argv.clone();
        full.extend(quick);
        let json_s = json.to_str().unwrap().to_string();
        full.push(&json_s);
        // Agents of srun tasks write their rendezvous in the working directory.
        let out = slurm.in_node1(&full).current_dir(d).output().unwrap();
        let r = common::lab_matrix_result(&out, &json, launch, 12);
        let names: Vec<&str> = r.nodes.iter().map(|n| n.name.as_str()).collect();
        assert_eq!(names, ["node1", "node2", "node3", "node4"], "{full:?}");
    }
    let left: Vec<_> = std::fs::read_dir(d)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(".wulf-matrix-"))
        .collect();
    assert!(left.is_empty(), "rendezvous files left: {left:?}");
    drop(slurm);
}

/// `wulf npb mg --launch slurm --hosts node[1-2]` and `salloc -N 2 wulf
/// npb mg` (srun chosen inside the allocation): wulf's tcp ranks started
/// by srun, each MPI's by its launcher through srun; every run verified
/// and every rank on the node it was placed on.
#[test]
fn npb_ranks_placed_through_slurm() {
    let _s = serial();
    if !labs_possible() || !slurm_installed() {
        return;
    }
    let lab = format!("v{}", std::process::id() % 100_000);
    let _guard = common::lab_up(&lab, 2);
    let slurm = Slurm::start(&lab);
    let d = slurm.dir.path();
    let w = wulf_bin();
    let mut via = vec!["tcp".to_string()];
    via.extend(common::libraries().iter().map(|l| format!("mpi:{l}")));
    let via = via.join(",");
    let cases: [Vec<&str>; 2] = [
        vec![w, "npb", "mg", "--launch", "slurm", "--hosts", "node[1-2]"],
        vec!["salloc", "-N", "2", w, "npb", "mg"],
    ];
    for (i, argv) in cases.iter().enumerate() {
        let json = d.join(format!("mg{i}.json"));
        let out = slurm
            .in_node1(argv)
            .args(["--np", "2", "--repetitions", "1", "--via", &via, "--json"])
            .arg(&json)
            .current_dir(d)
            .output()
            .unwrap();
        assert!(out.status.success(), "{argv:?}: {}", common::stderr(&out));
        let r = read_npb_result(&json).unwrap();
        assert!(r.complete, "{:?}", r.incomplete_reason);
        let nodes = r.nodes.as_ref().expect("the node list is recorded");
        assert_eq!(nodes.launch, "slurm", "{argv:?}");
        for run in &r.runs {
            assert!(run.error.is_none(), "{argv:?} {}: {:?}", run.via, run.error);
            assert!(run.outcomes.iter().all(|o| o.verified));
            let p = run.placement.as_ref().expect("placement recorded");
            let placed: Vec<(&str, &str)> = p
                .iter()
                .map(|x| (x.node.as_str(), x.hostname.as_str()))
                .collect();
            assert_eq!(
                placed,
                [("node1", "node1"), ("node2", "node2")],
                "{argv:?} {}",
                run.via
            );
        }
    }
    drop(slurm);
}
