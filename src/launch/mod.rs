//! Jobs: what wulf runs through launchers, above the layers it drives.
//!
//! Starting a process is [`crate::exec`]'s; this module holds the jobs that
//! need the sweep engine, the cluster's agents or the NAS kernels, and so
//! sit above them:
//!
//! * [`group`]: NAS kernels and collectives on `np` ranks, each a process
//!   linked by a transport: offered to the transport's own launcher
//!   ([`mpi`]) first, else started by wulf (`wulf npb-rank`);
//! * [`mpi`]: jobs started by an MPI's own launcher (sweeps in two ranks,
//!   NAS and collective groups, one process per host);
//! * [`mpi_ranks`]: [`mpi_ranks::MpiRanks`], the
//!   [`crate::cluster::launchers::Launcher`]
//!   that starts `wulf matrix`'s agents as the ranks of an MPI job;
//! * [`context`]: [`RunContext`], what one command runs with (transport
//!   options, the cluster), handed down instead of process globals;
//! * [`launched`]: the other way round, wulf started by a launcher
//!   (`srun wulf matrix`, `mpirun wulf matrix`), reading its rank.

pub mod context;
pub mod group;
pub mod launched;
pub mod mpi;
pub mod mpi_ranks;

pub use context::RunContext;
