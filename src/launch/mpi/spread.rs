//! Starting a program once on each of a list of hosts with an MPI's own
//! launcher, for commands that are not MPI jobs themselves but run where
//! MPI users run (`wulf matrix --launch mpi:NAME`), and the agent jobs of
//! a matrix over MPI (`wulf matrix --via mpi:NAME`: each rank an agent).

use crate::launch::RunContext;
use crate::transport::mpi::discover::{Flavor, MpiInstall};
use crate::transport::mpi::launchable;

/// An environment variable for the launcher: name and value.
pub type EnvVar = (String, String);

/// The command line (and environment) that starts `program` once on each
/// of `hosts` with the launcher of the MPI transport `mpi` (`mpi:NAME`,
/// as its launcher names it): how `wulf matrix
/// --launch mpi:NAME` starts itself on every node. In a lab (`ctx`'s
/// cluster), the launcher reaches the nodes through the lab's remote shell
/// (a script written in `dir`) and keeps to its network, as for ranks;
/// elsewhere through `rsh` (`--rsh`'s ssh with its options) when given.
pub fn launch_once_per_host(
    ctx: &RunContext,
    mpi: &str,
    hosts: &[String],
    dir: &std::path::Path,
    program: &[String],
    rsh: Option<&[String]>,
) -> anyhow::Result<(Vec<String>, Vec<EnvVar>)> {
    let l = launchable(mpi, &ctx.transports)
        .ok_or_else(|| crate::error::usage(format!("--launch {mpi}: no MPI of that name")))?;
    let install = l
        .install()
        .map_err(|why| crate::error::usage(format!("--launch {mpi}: {why:#}")))?;
    once_per_host(ctx, mpi, install, &[], hosts, dir, program, rsh)
}

/// Start one agent of a matrix per host of `hosts`, as the ranks of one
/// job of the MPI transport `via` (`mpi:NAME` or its `(tcp)` variant):
/// the launcher's command line and environment. The job file, with the
/// run's secret, is written in `dir` (private to its owner), which must
/// outlive the job.
pub fn agent_job(
    ctx: &RunContext,
    via: &str,
    hosts: &[String],
    dir: &std::path::Path,
    coordinator: std::net::SocketAddr,
    secret: &str,
    timeout: std::time::Duration,
) -> anyhow::Result<(Vec<String>, Vec<EnvVar>)> {
    let usage = |why: anyhow::Error| crate::error::usage(format!("--via {via}: {why:#}"));
    let l = launchable(via, &ctx.transports)
        .ok_or_else(|| usage(anyhow::anyhow!("no MPI of that name")))?;
    let install = l.install().map_err(usage)?;
    let adapter = l.adapter().map_err(usage)?;
    let job = super::job::AgentJob {
        transport: via.to_string(),
        adapter: adapter.library.clone(),
        window: ctx.transports.window,
        hosts: hosts.to_vec(),
        coordinator,
        secret: secret.to_string(),
        timeout_ms: timeout.as_millis() as u64,
        dir: dir.to_path_buf(),
    };
    let job_path = dir.join(super::job::JOB);
    super::job::write(&job_path, &super::job::JobKind::Agent(job))?;
    let exe = match ctx.cluster.as_ref().and_then(|c| c.remote_wulf.clone()) {
        Some(p) => p,
        None => super::launch::worker_exe()?.display().to_string(),
    };
    let program = [exe, "worker".into(), job_path.display().to_string()];
    let variant = l.variant_args()?;
    once_per_host(ctx, via, install, variant, hosts, dir, &program, None)
}

/// The launcher's command line and environment that start `program` once
/// on each of `hosts` (see [`launch_once_per_host`]); `variant` holds the
/// arguments of a TCP-forced variant, needless in a lab, whose arguments
/// hold every rank to its network anyway; `rsh`, outside a lab, is the
/// remote shell the launcher is told to use (Open MPI's `plm_rsh_agent`,
/// hydra's `-launcher-exec`, as a script in `dir`).
#[allow(clippy::too_many_arguments)]
fn once_per_host(
    ctx: &RunContext,
    full: &str,
    install: &MpiInstall,
    variant: &[&str],
    hosts: &[String],
    dir: &std::path::Path,
    program: &[String],
    rsh: Option<&[String]>,
) -> anyhow::Result<(Vec<String>, Vec<EnvVar>)> {
    let list = hosts.join(",");
    let agent = match rsh {
        Some(r) => Some(
            crate::exec::remote_shell::rsh_script(r, dir)?
                .display()
                .to_string(),
        ),
        None => None,
    };
    let placement: Vec<String> = match (&ctx.cluster, install.flavor) {
        (Some(c), flavor) => {
            let agent = c.rsh_script(dir)?;
            let mut args = flavor
                .cluster_args(&list, &agent, &c.subnet, &c.interface)
                .ok_or_else(|| crate::error::usage(format!("--launch {full}: unknown launcher")))?;
            // Lab nodes share this machine's CPUs (as for ranks, see
            // `Flavor::oversubscribed_args`).
            if hosts.len() > crate::sys::cpu_count() {
                args.extend(flavor.oversubscribed_args().iter().map(|s| s.to_string()));
            }
            args
        }
        (None, Flavor::OpenMpi) => {
            let mut a: Vec<String> = ["--host", &list, "--map-by", "ppr:1:node"]
                .map(str::to_string)
                .to_vec();
            if let Some(agent) = &agent {
                a.extend(["--mca".into(), "plm_rsh_agent".into(), agent.clone()]);
            }
            a
        }
        (None, Flavor::Mpich) => {
            let mut a: Vec<String> = ["-hosts", &list, "-ppn", "1"].map(str::to_string).to_vec();
            if let Some(agent) = &agent {
                a.extend(["-launcher".into(), "rsh".into(), "-launcher-exec".into(), agent.clone()]);
            }
            a
        }
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
    argv.extend(ctx.transports.mpi_launcher_args.iter().cloned());
    if ctx.cluster.is_none() {
        argv.extend(variant.iter().map(|s| s.to_string()));
    }
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
