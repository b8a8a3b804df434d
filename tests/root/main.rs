//! The root tier: tests that need root: network namespaces and the lab
//! (links, shapers, loss), raw and AF_XDP sockets, tmpfs mounts (full
//! disks, resource limits), Slurm and sshd inside lab nodes, offload
//! toggles, the Debian package installed with dpkg. As another user they
//! skip with a note, or fail where CI requires them (WULF_REQUIRE_LAB,
//! WULF_REQUIRE_PACKAGE). Run alone with `./scripts/test root`.
//!
//! Each former test file is a module; `common::serial()` is the one lock
//! for the tests that need the machine to themselves, across all modules.

#[path = "../common/mod.rs"]
mod common;
#[path = "../support/python.rs"]
mod python;

mod cluster_npb_run;
mod disk_full;
mod lab;
mod lab_budget;
mod lab_burst;
mod lab_hpl;
mod lab_hub;
mod lab_load;
mod lab_load_nas;
mod lab_loss;
mod lab_mpi;
mod lean_integrity;
mod lean_raw;
mod lean_raw_sessions;
mod lean_xdp;
mod matrix_deadline;
mod matrix_host;
mod matrix_lab;
mod matrix_ppn;
mod matrix_slurm;
mod npb_traffic;
mod offloads_site;
mod ofi_lab;
mod package_deb;
mod pvm_lab;
mod reframe_lab;
mod resources;
mod serve_hostile;
mod signals;
mod study;
mod study_lean;
mod sys_netns;
mod tune;
mod tune_wake;
mod ucx_lab;
