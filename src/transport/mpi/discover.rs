//! Finding MPI installations: a compiler wrapper (mpicc) and the launcher
//! that goes with it (mpirun / mpiexec).
//!
//! Built in are Open MPI and MPICH, found as Debian installs them
//! (mpicc.openmpi with mpirun.openmpi, mpicc.mpich with mpiexec.mpich) or as
//! a plain `mpicc` of that kind in PATH (a source build in /usr/local, the
//! alternatives link). `--mpi NAME=PATH` adds any other: PATH is its mpicc
//! (or the directory holding it), and the launcher is looked for beside it.
//!
//! Nothing here compiles or runs MPI programs; the only processes started
//! are `mpicc -show` probes, each with a time limit.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

/// Longest wait for a wrapper's `-show` probe.
const PROBE_TIMEOUT: Duration = Duration::from_secs(10);

/// Which family an MPI belongs to: decides launcher flags and how to force TCP.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavor {
    /// Open MPI (mpirun = orterun / prte).
    OpenMpi,
    /// MPICH and its derivatives (Hydra's mpiexec).
    Mpich,
    /// Anything else: launched with `-np 2` and nothing more.
    Other,
}

impl Flavor {
    /// Human name.
    pub fn name(self) -> &'static str {
        match self {
            Flavor::OpenMpi => "Open MPI",
            Flavor::Mpich => "MPICH",
            Flavor::Other => "unknown",
        }
    }

    /// The transport beneath its default path on one host, in `wulf study
    /// layers`: Open MPI's ob1 over its shared-memory BTL is shared memory
    /// as `shm` is; MPICH's ch4:ucx default is UCX's own choice, which its
    /// `ucx-shm` variant holds to shared memory.
    pub fn default_beneath(self) -> Option<&'static str> {
        match self {
            Flavor::OpenMpi => Some("shm"),
            Flavor::Mpich | Flavor::Other => None,
        }
    }

    /// With a variant's arguments, when every rank runs on this host: TCP
    /// over the loopback (Open MPI excludes it by default, and finds no
    /// interface at all in a loopback-only network namespace).
    pub fn local_tcp_args(self) -> &'static [&'static str] {
        match self {
            Flavor::OpenMpi => &[
                "--mca",
                "btl_tcp_if_include",
                "lo",
                "--mca",
                "oob_tcp_if_include",
                "lo",
            ],
            Flavor::Mpich | Flavor::Other => &[],
        }
    }

    /// Launcher options that place one rank on each of `hosts`
    /// (comma-separated), started through the remote shell `agent` (one
    /// executable), and hold every byte between them to TCP on `subnet`
    /// through `interface`; None for a flavor wulf cannot spread.
    ///
    /// Why each: hosts of a lab share one kernel, so a library that looks
    /// past host names would use shared memory and bypass the emulated
    /// link. Open MPI: the TCP BTL under the ob1 PML (the UCX PML would
    /// bypass the BTL list), its data and run-time connections on the lab
    /// subnet only, and no binding (each daemon would pin its rank to core
    /// 0, and both share the machine's two CPUs). MPICH (ch4:ucx): UCX's
    /// TCP transport on the lab interface only, and Hydra's own
    /// connections on that interface too.
    pub fn cluster_args(
        self,
        hosts: &str,
        agent: &Path,
        subnet: &str,
        interface: &str,
    ) -> Option<Vec<String>> {
        let agent = agent.display().to_string();
        let args: Vec<&str> = match self {
            Flavor::OpenMpi => vec![
                "--host",
                hosts,
                "--mca",
                "plm_rsh_agent",
                &agent,
                "--bind-to",
                "none",
                "--mca",
                "pml",
                "ob1",
                "--mca",
                "btl",
                "self,tcp",
                "--mca",
                "btl_tcp_if_include",
                subnet,
                "--mca",
                "oob_tcp_if_include",
                subnet,
            ],
            Flavor::Mpich => vec![
                "-hosts",
                hosts,
                "-launcher",
                "rsh",
                "-launcher-exec",
                &agent,
                "-iface",
                interface,
                "-genv",
                "UCX_TLS",
                "tcp,self",
                "-genv",
                "UCX_NET_DEVICES",
                interface,
            ],
            Flavor::Other => return None,
        };
        Some(args.into_iter().map(str::to_string).collect())
    }

    /// Launcher options for ranks that outnumber the machine's CPUs
    /// although each has a host of its own (lab nodes share one machine).
    /// Open MPI yields the CPU while idle when it sees more ranks than
    /// slots on a host, which it cannot see across nodes: it is told (MG
    /// class S on 4 ranks over a fe lab: 0.58 s spinning, 0.032 s
    /// yielding, as on one host). MPICH has no such switch that ch4 heeds.
    pub fn oversubscribed_args(self) -> &'static [&'static str] {
        match self {
            Flavor::OpenMpi => &["--mca", "mpi_yield_when_idle", "1"],
            Flavor::Mpich | Flavor::Other => &[],
        }
    }

    /// Launcher options always given: Open MPI refuses more ranks than
    /// cores without --oversubscribe (MPICH's Hydra allows it).
    pub fn base_args(self) -> &'static [&'static str] {
        match self {
            Flavor::OpenMpi => &["--oversubscribe"],
            Flavor::Mpich | Flavor::Other => &[],
        }
    }

    /// The Debian packages that provide it, for error messages.
    pub fn packages(self) -> &'static str {
        match self {
            Flavor::OpenMpi => "openmpi-bin libopenmpi-dev",
            Flavor::Mpich => "mpich libmpich-dev",
            Flavor::Other => "openmpi-bin libopenmpi-dev (or mpich libmpich-dev)",
        }
    }
}

/// A usable MPI installation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MpiInstall {
    /// The name after `mpi:` (openmpi, mpich, or a `--mpi` NAME).
    pub name: String,
    /// The C compiler wrapper.
    pub wrapper: PathBuf,
    /// The launcher.
    pub launcher: PathBuf,
    /// The family.
    pub flavor: Flavor,
}

/// Find the built-in MPI `flavor` (Open MPI or MPICH) in PATH. The error
/// names what was tried and how to install it.
pub fn builtin(flavor: Flavor) -> Result<MpiInstall, String> {
    let (name, suffix, launchers): (&str, &str, &[&str]) = match flavor {
        Flavor::OpenMpi => ("openmpi", "openmpi", &["mpirun.openmpi", "mpiexec.openmpi"]),
        Flavor::Mpich => (
            "mpich",
            "mpich",
            &["mpiexec.mpich", "mpirun.mpich", "mpiexec.hydra"],
        ),
        Flavor::Other => return Err("no built-in MPI of unknown flavor".into()),
    };
    let suffixed = format!("mpicc.{suffix}");
    let mut tried = vec![suffixed.clone()];
    let wrapper = match in_path(&suffixed) {
        Some(w) => Some(w),
        None => {
            tried.push(format!("mpicc ({})", flavor.name()));
            in_path("mpicc").filter(|w| wrapper_flavor(w) == flavor)
        }
    };
    let help = format!(
        "install it with `apt-get install {}`, or name another MPI with --mpi NAME=/path/to/mpicc",
        flavor.packages()
    );
    let Some(wrapper) = wrapper else {
        return Err(format!(
            "{} not found: tried {} in PATH ({}); {help}",
            flavor.name(),
            tried.join(" and "),
            std::env::var("PATH").unwrap_or_default()
        ));
    };
    let mut found = launchers.iter().find_map(|l| in_path(l));
    let mut tried_launchers: Vec<String> = launchers.iter().map(|s| s.to_string()).collect();
    if found.is_none() {
        let beside = beside_wrapper(&wrapper, None);
        tried_launchers.extend(beside.iter().map(|p| p.display().to_string()));
        found = beside.into_iter().find(|p| is_executable(p));
    }
    let launcher = found.ok_or_else(|| {
        format!(
            "{} has a compiler wrapper ({}) but no launcher: tried {}; {help}",
            flavor.name(),
            wrapper.display(),
            tried_launchers.join(", ")
        )
    })?;
    Ok(MpiInstall {
        name: name.into(),
        wrapper,
        launcher,
        flavor,
    })
}

/// The MPI a user named with `--mpi NAME=PATH`: PATH is its mpicc, or a
/// directory holding `mpicc` or `bin/mpicc`.
pub fn user(name: &str, path: &Path) -> Result<MpiInstall, String> {
    let help = "give --mpi NAME=PATH the path of that MPI's C compiler wrapper (mpicc); \
                or install one: apt-get install openmpi-bin libopenmpi-dev (or mpich libmpich-dev)";
    let wrapper = if path.is_dir() {
        [path.join("mpicc"), path.join("bin/mpicc")]
            .into_iter()
            .find(|p| is_executable(p))
            .ok_or_else(|| {
                format!(
                    "--mpi {name}={}: no mpicc in that directory (tried mpicc and bin/mpicc); {help}",
                    path.display()
                )
            })?
    } else if is_executable(path) {
        path.to_path_buf()
    } else if path.exists() {
        return Err(format!(
            "--mpi {name}={}: not an executable file; {help}",
            path.display()
        ));
    } else {
        return Err(format!(
            "--mpi {name}={}: no such file; {help}",
            path.display()
        ));
    };
    let flavor = wrapper_flavor(&wrapper);
    let candidates = beside_wrapper(&wrapper, wrapper_suffix(&wrapper));
    let launcher = candidates
        .iter()
        .find(|p| is_executable(p))
        .cloned()
        .ok_or_else(|| {
            format!(
                "--mpi {name}={}: no launcher beside it (tried {})",
                wrapper.display(),
                candidates
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        })?;
    Ok(MpiInstall {
        name: name.into(),
        wrapper,
        launcher,
        flavor,
    })
}

/// `mpicc.SUFFIX` -> `SUFFIX`.
fn wrapper_suffix(wrapper: &Path) -> Option<String> {
    let file = wrapper.file_name()?.to_str()?;
    file.strip_prefix("mpicc.").map(str::to_string)
}

/// Launchers to try in the wrapper's directory, most specific first.
fn beside_wrapper(wrapper: &Path, suffix: Option<String>) -> Vec<PathBuf> {
    let dir = wrapper.parent().unwrap_or(Path::new("."));
    let mut names = Vec::new();
    if let Some(s) = suffix {
        names.push(format!("mpiexec.{s}"));
        names.push(format!("mpirun.{s}"));
    }
    names.push("mpiexec".into());
    names.push("mpirun".into());
    names.into_iter().map(|n| dir.join(n)).collect()
}

/// The family of a compiler wrapper: from its name (Debian's suffixes, or
/// the `opal_wrapper` that Open MPI's wrappers link to) or else from what
/// `-show` prints.
pub fn wrapper_flavor(wrapper: &Path) -> Flavor {
    let resolved = std::fs::canonicalize(wrapper).unwrap_or_else(|_| wrapper.to_path_buf());
    for p in [wrapper, resolved.as_path()] {
        let file = p.file_name().and_then(|f| f.to_str()).unwrap_or("");
        if file.contains("openmpi") || file == "opal_wrapper" {
            return Flavor::OpenMpi;
        }
        if file.contains("mpich") {
            return Flavor::Mpich;
        }
    }
    flavor_from_show(&show(wrapper).unwrap_or_default())
}

/// Classify the output of `mpicc -show`.
pub fn flavor_from_show(text: &str) -> Flavor {
    let t = text.to_ascii_lowercase();
    if t.contains("mpich") {
        Flavor::Mpich
    } else if t.contains("openmpi") || t.contains("open-mpi") || t.contains("-lopen-") {
        Flavor::OpenMpi
    } else {
        Flavor::Other
    }
}

/// What `wrapper -show` prints (the compiler command line it would run):
/// part of the MPI's identity, for the adapter cache.
pub fn show(wrapper: &Path) -> Result<String, String> {
    let out = run_with_timeout(Command::new(wrapper).arg("-show"), PROBE_TIMEOUT)?;
    if !out.status.success() {
        return Err(format!(
            "`{} -show` failed ({}): {}",
            wrapper.display(),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// Run a command to completion, killing it after `limit`.
pub fn run_with_timeout(
    cmd: &mut Command,
    limit: Duration,
) -> Result<std::process::Output, String> {
    let shown = format!("{:?}", cmd.get_program());
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run {shown}: {e}"))?;
    // Readers on threads: a full pipe must not stall the child.
    let mut so = child.stdout.take().expect("piped");
    let mut se = child.stderr.take().expect("piped");
    let t_out = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = std::io::Read::read_to_end(&mut so, &mut v);
        v
    });
    let t_err = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = std::io::Read::read_to_end(&mut se, &mut v);
        v
    });
    let deadline = std::time::Instant::now() + limit;
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break s,
            Ok(None) if std::time::Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(10))
            }
            Ok(None) => {
                // A command started in its own group (an MPI launcher and
                // its ranks) goes with all of it: the group's id is the
                // child's pid, so no other group is touched.
                // SAFETY: kill has no memory effects.
                unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "{shown} did not finish within {}",
                    humantime::format_duration(limit)
                ));
            }
            Err(e) => return Err(format!("cannot wait for {shown}: {e}")),
        }
    };
    Ok(std::process::Output {
        status,
        stdout: t_out.join().unwrap_or_default(),
        stderr: t_err.join().unwrap_or_default(),
    })
}

/// The first executable called `name` in PATH, in its real directory:
/// Open MPI's mpirun derives its install prefix from the directory it was
/// started from, and /bin -> /usr/bin gives it a prefix of "/".
pub fn in_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    let found = std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| is_executable(p))?;
    let real_dir = found.parent().and_then(|d| std::fs::canonicalize(d).ok());
    Some(match real_dir {
        Some(d) => d.join(name),
        None => found,
    })
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p)
        .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flavors_from_show_output() {
        assert_eq!(
            flavor_from_show("gcc -I/usr/include/x86_64-linux-gnu/mpich -lmpich"),
            Flavor::Mpich
        );
        assert_eq!(
            flavor_from_show("gcc -I/usr/lib/x86_64-linux-gnu/openmpi/include -lmpi"),
            Flavor::OpenMpi
        );
        assert_eq!(flavor_from_show("icc -lmpi"), Flavor::Other);
    }

    #[test]
    fn cluster_arguments_place_ranks_and_force_tcp() {
        let agent = Path::new("/tmp/j/rsh");
        let o = Flavor::OpenMpi
            .cluster_args("node1,node2", agent, "198.18.0.0/24", "eth0")
            .unwrap()
            .join(" ");
        for want in [
            "--host node1,node2",
            "--mca plm_rsh_agent /tmp/j/rsh",
            "--bind-to none",
            "--mca btl self,tcp",
            "--mca btl_tcp_if_include 198.18.0.0/24",
        ] {
            assert!(o.contains(want), "{o}");
        }
        let m = Flavor::Mpich
            .cluster_args("node1,node2", agent, "198.18.0.0/24", "eth0")
            .unwrap()
            .join(" ");
        for want in [
            "-hosts node1,node2",
            "-launcher rsh -launcher-exec /tmp/j/rsh",
            "-genv UCX_TLS tcp,self",
            "-genv UCX_NET_DEVICES eth0",
        ] {
            assert!(m.contains(want), "{m}");
        }
        assert!(Flavor::Other
            .cluster_args("a", agent, "198.18.0.0/24", "eth0")
            .is_none());
    }

    #[test]
    fn launchers_beside_a_suffixed_wrapper() {
        let c = beside_wrapper(Path::new("/opt/x/bin/mpicc.foo"), Some("foo".into()));
        assert_eq!(c[0], Path::new("/opt/x/bin/mpiexec.foo"));
        assert_eq!(c.last().unwrap(), Path::new("/opt/x/bin/mpirun"));
        assert_eq!(
            wrapper_suffix(Path::new("/usr/bin/mpicc.mpich")).as_deref(),
            Some("mpich")
        );
    }

    #[test]
    fn missing_user_mpi_says_what_and_how() {
        let e = user("broken", Path::new("/nonexistent/mpicc")).unwrap_err();
        assert!(
            e.contains("/nonexistent/mpicc") && e.contains("apt-get install"),
            "{e}"
        );
    }
}
