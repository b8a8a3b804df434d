//! The fast tier: tests that need nothing but the built binary, loopback
//! and a few seconds (architecture, command line, result files and their
//! schema, report exports, hostile files, NAS MG's arithmetic). Run alone
//! with `./scripts/test fast`; no test here needs root, MPI or a lab.
//!
//! One test binary per tier (not one per file): each binary links the
//! whole crate, and linking some 45 of them was most of CI's build time.
//! Each former file is a module; `common::serial()` is the one lock for
//! the tests that need the machine to themselves, across all modules.

#[path = "../common/mod.rs"]
mod common;
#[path = "../support/python.rs"]
mod python;

mod architecture;
mod architecture_commands;
mod cli_misc;
mod cma_page_steps;
mod compare_cli;
mod confirm_stored;
mod deb_files;
mod fuzz_properties;
mod fuzz_sessions;
mod help_lists;
mod hostile_files;
mod hpl_report;
mod kind_names;
mod matrix_launch;
mod matrix_read;
mod npb_bench;
mod npb_mg;
mod ofi_layout;
mod openmetrics;
mod report_cold;
mod report_exports;
mod report_floor;
mod report_limits;
mod report_matrix;
mod report_scales;
mod result_clean;
mod result_schema;
mod sys_host;
mod ucx_layout;
