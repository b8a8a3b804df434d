//! The system tier: real runs of the binary that take longer or need more
//! than loopback alone: both MPIs (Open MPI and MPICH, installed by
//! scripts/install-test-deps), NAS kernels over every transport, matrices
//! of local agents, peers that fail, loads, a headless browser, ReFrame.
//! A missing MPI, browser or Python venv skips with a note, or fails where
//! CI requires it (WULF_REQUIRE_MPI, WULF_REQUIRE_BROWSER,
//! WULF_REQUIRE_PYTHON). Run alone with `./scripts/test system`.
//!
//! Each former test file is a module; `common::serial()` is the one lock
//! for the tests that need the machine to themselves, across all modules.

#[path = "../common/mod.rs"]
mod common;
#[path = "../support/python.rs"]
mod python;

mod baselines;
mod busy_pins;
mod c2c_cold;
mod clean_blocks;
mod collective;
mod compare_runs;
mod hpl;
mod intranode;
mod lean_tipc;
mod load_conditions;
mod load_network;
mod load_perturb;
mod load_soak_calibration;
mod load_whole;
mod matrix;
mod matrix_agents_hostile;
mod matrix_budget;
mod matrix_hostile;
mod matrix_partial;
mod matrix_ranks;
mod mpi;
mod mpi_ffi;
mod mpi_layers;
mod npb_adi;
mod npb_all_counts;
mod npb_bt;
mod npb_cma;
mod npb_faults;
mod npb_ft;
mod npb_group;
mod npb_kernels;
mod npb_lu;
mod npb_mpi;
mod npb_small_bench;
mod npb_small_failed;
mod npb_sp;
mod ofi;
mod peer_faults;
mod pvm;
mod reframe;
mod report_browser;
mod report_browser_full;
mod report_browser_items;
mod soaker;
mod spin_cost;
mod study_layers;
mod sweep_budget;
mod sweep_local;
mod ucx;
mod wake_up;
mod whole_cost;
