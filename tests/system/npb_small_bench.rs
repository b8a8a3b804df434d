//! `bench/npb_kernels_vs_npb.sh` builds an NPB tree that has its own
//! `config/make.def` with the script's flags (issue 31, item 6): FFLAGS
//! on make's command line (which overrides the tree's), with
//! `-fallow-argument-mismatch` for the MPI build where the compiler knows
//! it (gfortran 10 and later reject NPB's type-generic MPI calls without).
//! NPB itself is not shipped: a stand-in tree whose makefile records the
//! FFLAGS it was given and whose "binary" prints NPB's verification lines.

use crate::common::*;

use std::path::Path;
use std::process::Command;

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

#[test]
fn the_npb_bench_passes_its_fflags_over_the_trees_own_make_def() {
    for tool in ["mpif90.openmpi", "mpicc.openmpi", "mpirun.openmpi", "jq"] {
        if Command::new("sh")
            .args(["-c", &format!("command -v {tool}")])
            .output()
            .map_or(true, |o| !o.status.success())
        {
            eprintln!("SKIPPED: {tool} not installed");
            return;
        }
    }
    let _s = serial();
    let dir = tempdir();
    // The script runs from its tree's root and builds under its target/:
    // a copy in a scratch tree leaves this one's alone.
    let script = dir.path().join("bench/npb_kernels_vs_npb.sh");
    // The script and the build functions it sources.
    for file in ["npb_kernels_vs_npb.sh", "npb_mpi_tree.sh"] {
        let from = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("bench")
            .join(file);
        write(
            &dir.path().join("bench").join(file),
            &std::fs::read_to_string(from).unwrap(),
        );
    }
    let npb = dir.path().join("NPB");
    for d in ["CG", "EP", "IS", "common", "sys"] {
        std::fs::create_dir_all(npb.join(d)).unwrap();
    }
    // The tree's own make.def, with flags the script's must override.
    write(
        &npb.join("config/make.def"),
        "FFLAGS = -O0 -from-make-def\n",
    );
    let fflags = dir.path().join("fflags.txt");
    write(
        &npb.join("Makefile"),
        &format!(
            "include config/make.def\n\
             ep:\n\
             \tprintf '%s\\n' '$(FFLAGS)' > {}\n\
             \tprintf '#!/bin/sh\\necho \" Mop/s total     =  12.5\"\\necho \" Verification    =  SUCCESSFUL\"\\n' > bin/ep.$(CLASS).x\n\
             \tchmod +x bin/ep.$(CLASS).x\n",
            fflags.display()
        ),
    );
    let out = Command::new("bash")
        .arg(&script)
        .arg("S")
        .env("NPB_DIR", &npb)
        .env("KERNELS", "ep")
        .env("NPS", "1")
        .env("REPS", "1")
        .env("VIA", "shm")
        .env("WULF", wulf_bin())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}{}", stderr(&out));
    let given = std::fs::read_to_string(&fflags).expect("make was not run");
    assert!(given.contains("-O3"), "FFLAGS given to make: {given}");
    assert!(!given.contains("-from-make-def"), "make.def won: {given}");
    // Where the compiler takes the flag, the MPI build gets it.
    let probe = dir.path().join("probe.f90");
    write(&probe, "end\n");
    let knows = Command::new("mpif90.openmpi")
        .args(["-fallow-argument-mismatch", "-c"])
        .arg(&probe)
        .arg("-o")
        .arg(dir.path().join("probe.o"))
        .output()
        .is_ok_and(|o| o.status.success());
    assert_eq!(
        given.contains("-fallow-argument-mismatch"),
        knows,
        "{given}"
    );
    // The run itself went through: NPB's figure and wulf's, side by side.
    assert!(text.contains("NPB     12.50"), "{text}");
    assert!(text.contains("wulf shm"), "{text}");
}
