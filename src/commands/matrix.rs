//! `wulf matrix`: latency and bandwidth between every pair of nodes, and
//! `wulf agent`, what it starts on each node.

use anyhow::Result;

use crate::cli::{AgentArgs, MatrixArgs};

/// Run `wulf matrix`.
pub fn execute(args: &MatrixArgs) -> Result<()> {
    crate::plan::matrix::execute_with(args, None)
}

/// Run `wulf agent`.
pub fn execute_agent(args: &AgentArgs) -> Result<()> {
    crate::plan::matrix::execute_agent(args)
}
