//! wulf across many nodes: node lists, the agents, and the coordinator
//! that runs the all-pairs matrix, and the launchers ([`launchers`],
//! `--launch`) that place nodes and start agents and ranks on them (the
//! MPI job of agents is in [`crate::launch`]).
//!
//! # Design
//!
//! One coordinator (the `wulf matrix` process) and one agent per node. The
//! coordinator listens on an ephemeral port and makes a one-time secret;
//! a [`launchers::Launcher`] (processes on this machine, ssh, a lab's remote
//! shell, srun) starts `wulf agent` on every node and hands it the secret
//! without a command line seeing it (to an agent started for a named host,
//! only its node's key, [`crate::exec::credentials`]). Each agent connects
//! back from one of the hosts' addresses, proves it holds its node's key and
//! has the coordinator prove it too ([`protocol`]; the limits on who may
//! connect and how many at once are in `admission`), sends its
//! fingerprint, and serves
//! measurements to the other agents with the same server session as
//! `wulf serve`. The coordinator then walks the round-robin tournament
//! ([`schedule`]): in each round it orders the first node of every pair to
//! sweep against the second (and then the other way round), and each
//! agent runs an ordinary one-size sweep (ping-pong, then stream) against
//! its peer's server, so a matrix cell is measured by exactly the code and
//! statistics of `wulf sweep --peer`. Cells stream back one message each.
//! After the rounds, the suspicious cells are measured again alone
//! ([`remeasure`]), and only what the re-measures confirm is named.
//!
//! Agents end with their control connection, so none outlives a run.

mod admission;
pub mod agent;
pub mod budget;
pub mod cells;
pub mod coordinator;
mod deadline;
pub mod hostlist;
pub mod launchers;
pub mod nodes;
pub mod orphan;
pub mod pair;
pub mod protocol;
pub mod refusal;
mod remeasure;
pub mod rounds;
pub mod schedule;
pub mod sources;
pub mod stream_fit;
