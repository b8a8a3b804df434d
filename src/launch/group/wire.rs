//! What the coordinating wulf and the ranks it started tell each other:
//! one JSON object per line over a TCP control connection per rank, in
//! this order:
//!
//! 1. rank → coordinator: [`ToCoordinator::Hello`] (its rank and version);
//! 2. coordinator → rank: [`ToRank::Setup`] (transport, options, the job);
//! 3. rank → coordinator: [`ToCoordinator::Listening`], one description
//!    per higher rank, each a data channel prepared for that rank;
//! 4. coordinator → rank: [`ToRank::Connect`], the descriptions the lower
//!    ranks prepared for it;
//! 5. rank → coordinator: [`ToCoordinator::Done`] or [`ToCoordinator::Failed`].

use std::net::IpAddr;

use serde::{Deserialize, Serialize};

use crate::npb::{RankTask, TaskOutput};
use crate::transport::ChannelOptions;

/// Messages from a rank.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum ToCoordinator {
    /// First message: who is calling.
    Hello {
        /// The rank given on the command line.
        rank: usize,
        /// The rank's wulf version (must equal the coordinator's).
        version: String,
    },
    /// Data channels prepared for the higher ranks, in rank order.
    Listening {
        /// `(rank it is for, description)`.
        channels: Vec<(usize, serde_json::Value)>,
    },
    /// The task is done: NPB's verified outcomes, or a collective's sizes.
    Done {
        /// As [`crate::npb::RankTask::run`] returned it.
        output: TaskOutput,
        /// From rank 0 of an NPB task: the host name of every rank, in
        /// rank order (see [`crate::npb::RankOutput::hostnames`]).
        #[serde(default)]
        hostnames: Vec<String>,
    },
    /// The rank failed.
    Failed {
        /// Why, for the user.
        message: String,
        /// wulf's exit code for the error.
        exit_code: i32,
    },
}

/// Messages to a rank.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum ToRank {
    /// What to do.
    Setup {
        /// Transport linking the ranks.
        transport: String,
        /// Number of ranks.
        size: usize,
        /// Options of every data channel.
        channel: ChannelOptions,
        /// The work.
        task: RankTask,
        /// Each rank's address, in rank order: a rank binds its channels
        /// to its own and connects to the lower ranks' (all loopback when
        /// the ranks share this host).
        #[serde(default)]
        addresses: Vec<IpAddr>,
    },
    /// The channels the lower ranks prepared for this one.
    Connect {
        /// `(rank that prepared it, description)`, in rank order.
        channels: Vec<(usize, serde_json::Value)>,
    },
}
