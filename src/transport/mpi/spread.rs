//! Starting a program once on each of a list of hosts with an MPI's own
//! launcher, for commands that are not MPI jobs themselves but run where
//! MPI users run (`wulf matrix --launch mpi:NAME`).

use super::discover::Flavor;
use super::{config, entries};

/// An environment variable for the launcher: name and value.
pub type EnvVar = (String, String);

/// The command line (and environment) that starts `program` once on each
/// of `hosts` with the launcher of the MPI `mpi:NAME`: how `wulf matrix
/// --launch mpi:NAME` starts itself on every node. In a lab ([`crate::transport::cluster`]),
/// the launcher reaches the nodes through the lab's remote shell (a script
/// written in `dir`) and keeps to its network, as for ranks.
pub fn launch_once_per_host(
    name: &str,
    hosts: &[String],
    dir: &std::path::Path,
    program: &[String],
) -> anyhow::Result<(Vec<String>, Vec<EnvVar>)> {
    let full = format!("mpi:{name}");
    let entry = entries()
        .into_iter()
        .find(|e| e.name == full)
        .ok_or_else(|| crate::error::usage(format!("--launch {full}: no MPI of that name")))?;
    let install = entry
        .install
        .clone()
        .map_err(|why| crate::error::usage(format!("--launch {full}: {why}")))?;
    let list = hosts.join(",");
    let placement: Vec<String> = match (crate::transport::cluster::get(), install.flavor) {
        (Some(c), flavor) => {
            let agent = c.rsh_script(dir)?;
            flavor
                .cluster_args(&list, &agent, &c.subnet, &c.interface)
                .ok_or_else(|| crate::error::usage(format!("--launch {full}: unknown launcher")))?
        }
        (None, Flavor::OpenMpi) => ["--host", &list, "--map-by", "ppr:1:node"]
            .map(str::to_string)
            .to_vec(),
        (None, Flavor::Mpich) => ["-hosts", &list, "-ppn", "1"].map(str::to_string).to_vec(),
        (None, Flavor::Other) => {
            return Err(crate::error::usage(format!(
                "--launch {full}: wulf does not know how to place one process per host with this MPI's launcher"
            )))
        }
    };
    let mut argv = vec![
        install.launcher.display().to_string(),
        "-np".into(),
        hosts.len().to_string(),
    ];
    argv.extend(install.flavor.base_args().iter().map(|s| s.to_string()));
    argv.extend(placement);
    argv.extend(config().mpi_launcher_args);
    argv.extend(program.iter().cloned());
    // SAFETY: getuid cannot fail.
    let env = if unsafe { libc::getuid() } == 0 {
        // Open MPI refuses root without these.
        vec![
            ("OMPI_ALLOW_RUN_AS_ROOT".into(), "1".into()),
            ("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM".into(), "1".into()),
        ]
    } else {
        Vec::new()
    };
    Ok((argv, env))
}
