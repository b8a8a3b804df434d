//! NAS CG: not yet implemented; `wulf npb cg` says so.

use anyhow::Result;

use super::comm::Communicator;
use super::{Class, NpbOutcome};
use crate::error::usage;

/// What distinguishes one CG class from another.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CgParams {
    /// The class.
    pub class: Class,
}

impl CgParams {
    /// The parameters of `class`.
    pub fn of(class: Class) -> Self {
        CgParams { class }
    }

    /// The problem in a few words.
    pub fn describe(&self) -> String {
        "not implemented yet".to_string()
    }
}

/// Refuses every count until the kernel exists.
pub fn check_process_count(_class: Class, _np: usize) -> Result<()> {
    Err(usage("NPB CG is not implemented yet"))
}

/// Refuses to run until the kernel exists.
pub fn run_cg(_class: Class, _comm: &dyn Communicator) -> Result<NpbOutcome> {
    Err(usage("NPB CG is not implemented yet"))
}
