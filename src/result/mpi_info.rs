//! The `mpi` block of a result: which MPI library measured, launched how,
//! steered by what. Present only in results of `mpi:` transports.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// How an MPI sweep ran.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MpiInfo {
    /// The name after `mpi:` (`openmpi`, `mpich`, or a `--mpi` NAME).
    pub implementation: String,
    /// The family wulf recognised: `Open MPI`, `MPICH` or `unknown`.
    pub flavor: String,
    /// A preset on top of the library's default path: `tcp` for the
    /// variant forced onto TCP (`mpi:NAME(tcp)`), `ucx-tcp`, `ucx-shm`,
    /// `ofi-tcp`, `ofi-shm` for one layer beneath it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variant: Option<String>,
    /// The path beneath the MPI as the library itself reported it, for a
    /// variant held to one layer (`pml:ucx tag(tcp/lo)`, `pml:cm mtl:ofi
    /// tcp;ofi_rxm`, `ch4:ucx tag(sysv/memory cma/memory)`): Open MPI's
    /// PML selection, the provider its ofi MTL opened, UCX's endpoint
    /// lanes (`UCX_LOG_LEVEL=info`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reported_path: Option<String>,
    /// MPI_Get_library_version as rank 0 reported it.
    pub library_version: String,
    /// MPI_Get_version: the version of the MPI standard implemented.
    pub standard_version: String,
    /// Thread support provided (wulf asks for MPI_THREAD_SINGLE).
    pub thread_level: String,
    /// The compiler wrapper that built wulf's adapter for this library.
    pub compiler_wrapper: String,
    /// What `compiler_wrapper -show` printed (include and library paths).
    pub compiler_show: String,
    /// The launcher's command line, argument by argument.
    pub launcher_command: Vec<String>,
    /// Launcher arguments from `--mpi-arg` and the variant.
    pub launcher_args: Vec<String>,
    /// Environment variables that steer MPI libraries (OMPI_MCA_*, UCX_*,
    /// MPICH_*, MPIR_CVAR_*, I_MPI_*, FI_*, ...), as the launcher got them.
    pub env: BTreeMap<String, String>,
    /// Non-blocking sends in flight in stream mode (`--window`).
    pub window: u64,
    /// MPI_Get_processor_name of rank 0 and rank 1.
    pub processors: Vec<String>,
    /// Seconds from starting the launcher until both ranks were connected.
    pub startup_s: f64,
    /// The library's protocol limits (eager limits, fragment and cell
    /// sizes) as it reported them at run time, launcher overrides applied;
    /// empty when they could not be read.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub protocol_limits: Vec<ProtocolLimit>,
}

/// One protocol limit of an MPI library.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProtocolLimit {
    /// The parameter's name (`btl_vader_eager_limit`,
    /// `MPIR_CVAR_CH4_SHM_POSIX_IQUEUE_CELL_SIZE`).
    pub name: String,
    /// Its value in bytes.
    pub bytes: u64,
}
