//! The `mpi` block of an MPI sweep's result: the library a plan ran, as
//! rank 0 reports it, the launcher line, and the environment that steered
//! the library.

use std::collections::BTreeMap;

use super::job::Report;
use super::launch::Plan;
use crate::result::MpiInfo;

/// Prefixes of environment variables that steer MPI libraries, recorded.
pub const STEERING_PREFIXES: &[&str] = &[
    "OMPI_MCA_",
    "PMIX_MCA_",
    "PRTE_MCA_",
    "UCX_",
    "MPICH_",
    "MPIR_CVAR_",
    "I_MPI_",
    "FI_",
    "HYDRA_",
    "MV2_",
];

/// The `mpi` block of a result: the library `plan` ran, as rank 0's
/// `report` describes it, the launcher line, and what steered it.
pub(super) fn mpi_info(
    plan: &Plan,
    report: &Report,
    argv: &[String],
    launcher_args: &[String],
    startup_s: f64,
) -> MpiInfo {
    MpiInfo {
        implementation: plan.install.name.clone(),
        flavor: plan.install.flavor.name().into(),
        variant: plan.variant.map(str::to_string),
        reported_path: None,
        library_version: report.library_version.clone(),
        standard_version: report.standard_version.clone(),
        thread_level: report.thread_level.clone(),
        compiler_wrapper: plan.install.wrapper.display().to_string(),
        compiler_show: plan.adapter.show.clone(),
        launcher_command: argv.to_vec(),
        launcher_args: launcher_args.to_vec(),
        env: steering_env(),
        window: plan.options.window,
        processors: report.processors.clone(),
        startup_s,
        protocol_limits: crate::transport::mpi::protocol::protocol_limits(
            plan.install,
            launcher_args,
        ),
    }
}

/// The environment variables that steer MPI libraries, as the launcher got them.
pub fn steering_env() -> BTreeMap<String, String> {
    std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
        .filter(|(k, _)| STEERING_PREFIXES.iter().any(|p| k.starts_with(p)))
        .collect()
}
