//! Whether an MPI takes a variant's path on this host, asked of the
//! library itself before any sweep: a two-rank job of the probe program
//! ([`super::build::PROBE_SOURCE`]) with the variant's arguments and its
//! report switched on, whose output [`Variant::check`] reads. A path the
//! library refuses (Open MPI's cm PML finds no libfabric provider it
//! accepts, UCX no lane) is then a reason to skip the row, given before
//! anything is measured.

use std::process::Command;
use std::time::Duration;

use super::discover::{run_with_timeout, MpiInstall};
use super::variants::Variant;

/// Longest wait for a probe job: start-up on a loaded machine.
const PROBE_TIMEOUT: Duration = Duration::from_secs(60);
/// Lines of a failed probe's output kept in its error.
const TAIL_LINES: usize = 6;

/// The launcher's command line of the probe job for `variant`.
pub fn command(install: &MpiInstall, variant: &Variant, program: &str) -> Vec<String> {
    let mut argv = vec![
        install.launcher.display().to_string(),
        "-np".into(),
        "2".into(),
    ];
    let flavor = install.flavor;
    let parts = [
        flavor.base_args(),
        variant.args,
        variant.report_args,
        flavor.local_tcp_args(),
    ];
    argv.extend(parts.iter().flat_map(|p| p.iter()).map(|s| s.to_string()));
    argv.push(program.into());
    argv
}

/// The path `variant` takes here as the library reports it (empty for a
/// variant whose ranks record it themselves), or why it is refused.
pub fn probe(install: &MpiInstall, variant: &Variant) -> Result<String, String> {
    let program = super::build::probe_program(install)?;
    let argv = command(install, variant, &program.display().to_string());
    let mut cmd = Command::new(&argv[0]);
    cmd.args(&argv[1..]);
    // Its own group, so that a timeout ends the ranks with the launcher.
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    // SAFETY: getuid cannot fail.
    if unsafe { libc::getuid() } == 0 {
        // Open MPI refuses root without these; set for this job only.
        cmd.env("OMPI_ALLOW_RUN_AS_ROOT", "1")
            .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
    }
    let out = run_with_timeout(&mut cmd, PROBE_TIMEOUT)?;
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    if !out.status.success() {
        if let Some(why) = super::variants::refusal(&text) {
            return Err(format!(
                "the library refused the {} path: {why}",
                variant.name
            ));
        }
        let tail: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
        let tail = tail[tail.len().saturating_sub(TAIL_LINES)..].join("\n");
        return Err(format!(
            "the probe job `{}` failed ({}): {tail}",
            argv.join(" "),
            out.status
        ));
    }
    variant.check(&text).unwrap_or(Ok(String::new()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::mpi::discover::Flavor;

    #[test]
    fn the_probe_asks_for_the_path_and_its_report() {
        let install = MpiInstall {
            name: "openmpi".into(),
            wrapper: "/usr/bin/mpicc".into(),
            launcher: "/usr/bin/mpirun".into(),
            flavor: Flavor::OpenMpi,
        };
        let v = super::super::variants::of(Flavor::OpenMpi)
            .find(|v| v.name == "ofi-tcp")
            .unwrap();
        let argv = command(&install, v, "/cache/probe").join(" ");
        assert!(
            argv.starts_with("/usr/bin/mpirun -np 2 --oversubscribe"),
            "{argv}"
        );
        assert!(argv.contains("--mca pml cm --mca mtl ofi"), "{argv}");
        assert!(argv.contains("--mca mtl_ofi_verbose 100"), "{argv}");
        assert!(argv.ends_with(" /cache/probe"), "{argv}");
    }
}
