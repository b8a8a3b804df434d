//! A test hook that corrupts one value of a kernel's exchanges on rank 0,
//! to show that verification catches a corrupted exchange and that such a
//! run is reported as a failure, never as a speed.
//!
//! Set [`FAULT_VAR`] to `is-key` (IS: one received key changed at every
//! ranking), `cg-value` (CG: one received partial sum changed at every
//! matrix-vector product) or `ft-value` (FT: one received value of the
//! inverse transpose changed at every time step). The variable is read
//! once, before any timed section; nothing else changes when it is unset.

use crate::comm::Communicator;

/// The environment variable naming the fault to inject.
pub const FAULT_VAR: &str = "WULF_NPB_FAULT";

/// Whether this rank of `comm` is to inject the fault called `name`.
pub fn injected(comm: &dyn Communicator, name: &str) -> bool {
    comm.rank() == 0 && std::env::var(FAULT_VAR).is_ok_and(|v| v == name)
}
