//! MPI: every installed MPI implementation, measured from one wulf binary.
//!
//! wulf is built without MPI. At run time it finds each MPI ([`discover`]),
//! compiles a small C adapter with that MPI's own `mpicc` into a cached
//! shared library ([`build`]), loaded with dlopen ([`ffi`]). This module
//! only makes endpoints: inside a job an MPI's launcher started, the data
//! channel between two ranks is an [`endpoint::MpiEndpoint`] over
//! MPI_Send / MPI_Recv / MPI_Sendrecv and windows of MPI_Isend /
//! MPI_Irecv, set up like any transport's ([`Transport::listen`],
//! [`Transport::connect`]), so MPI sweeps share the schedule, policy,
//! statistics, CPU accounting, integrity pass and result schema of every
//! other transport. Starting the jobs (`mpirun -np 2 wulf worker JOB` for
//! a sweep, `-np N` for NAS kernels, collectives and matrix agents) is the
//! launchers' work: [`crate::launch::mpi`], which learns what it needs
//! here ([`launchable`]). A channel between two ranks of a larger job
//! works too: the listening rank learns its peer from the peer's hello.
//!
//! Transports listed: `mpi:openmpi` and `mpi:mpich` (always, so a missing
//! one explains itself), `mpi:NAME` for each `--mpi NAME=PATH`, and for each
//! MPI found a `mpi:NAME(tcp)` variant forced onto TCP (Open MPI
//! `--mca btl self,tcp`, MPICH `-genv UCX_TLS tcp,self`), so `wulf run`
//! shows shared memory and TCP side by side.
//!
//! Given a [`super::Cluster`] (`--lab`), the launchers place one rank per
//! host through the cluster's remote shell and every variant is held to
//! TCP on the cluster's subnet ([`discover::Flavor::cluster_args`]): the
//! hosts of a lab share one kernel, and shared memory would bypass the link.

pub mod build;
pub mod discover;
mod endpoint;
pub mod ffi;
mod loader;
pub mod path;
pub mod protocol;

use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};

use anyhow::Result;

use self::discover::{Flavor, MpiInstall};
use super::{ChannelOptions, Connected, ExtraOptions, Listener, Transport};

pub use endpoint::{park, unpark};

/// Environment variable naming the wulf executable the launchers start as
/// `wulf worker`, for programs that drive wulf's library from another
/// executable (its integration tests): by default the ranks run this very
/// executable.
pub const EXE_VAR: &str = "WULF_EXE";

/// Default `--window`: osu_bw's window of non-blocking sends.
pub const DEFAULT_WINDOW: u64 = 64;

/// Name of the TCP-forced variant, as in `mpi:openmpi(tcp)`.
const TCP_VARIANT: &str = "tcp";

/// Set inside an MPI worker: the one transport this process serves.
static WORKER: OnceLock<(&'static str, u64)> = OnceLock::new();

/// Entries discovered so far, reused by every `registry()` call.
static ENTRIES: Mutex<Vec<Arc<Entry>>> = Mutex::new(Vec::new());

/// One MPI, found or not, and its adapter once built.
struct Entry {
    /// `mpi:NAME`.
    name: &'static str,
    /// `mpi:NAME(tcp)`, made once with the entry: the registry is listed
    /// per request (a server's every session), and must not leak a name
    /// each time.
    tcp_name: &'static str,
    /// Where it came from: a built-in flavor or a user path.
    origin: Origin,
    /// The installation, or why there is none.
    install: Result<MpiInstall, String>,
    /// The compiled adapter, built on first use.
    adapter: OnceLock<Result<build::Adapter, String>>,
}

#[derive(Debug, Clone, PartialEq)]
enum Origin {
    Builtin(Flavor),
    User(PathBuf),
}

fn leak(s: String) -> &'static str {
    // A handful of names per process, created once each and cached.
    Box::leak(s.into_boxed_str())
}

/// The MPI entries for `cfg` (the built-in flavors and `--mpi`'s),
/// discovering each once per process.
fn entries(cfg: &ExtraOptions) -> Vec<Arc<Entry>> {
    let mut wanted: Vec<(String, Origin)> = Vec::new();
    for (name, flavor) in [("openmpi", Flavor::OpenMpi), ("mpich", Flavor::Mpich)] {
        // A `--mpi openmpi=...` replaces the built-in one.
        if !cfg.mpi.iter().any(|(n, _)| n == name) {
            wanted.push((name.into(), Origin::Builtin(flavor)));
        }
    }
    for (name, path) in &cfg.mpi {
        wanted.push((name.clone(), Origin::User(path.clone())));
    }
    let mut cache = ENTRIES.lock().unwrap_or_else(|e| e.into_inner());
    wanted
        .into_iter()
        .map(|(name, origin)| {
            let full = format!("mpi:{name}");
            if let Some(e) = cache.iter().find(|e| e.name == full && e.origin == origin) {
                return Arc::clone(e);
            }
            let install = match &origin {
                Origin::Builtin(f) => discover::builtin(*f),
                Origin::User(p) => discover::user(&name, p),
            };
            let e = Arc::new(Entry {
                tcp_name: leak(format!("{full}({TCP_VARIANT})")),
                name: leak(full),
                origin,
                install,
                adapter: OnceLock::new(),
            });
            cache.push(Arc::clone(&e));
            e
        })
        .collect()
}

/// The MPI transports to list in the registry for `cfg`.
pub(super) fn transports(cfg: &ExtraOptions) -> Vec<Box<dyn Transport>> {
    if let Some(&(name, window)) = WORKER.get() {
        return vec![Box::new(MpiTransport {
            name,
            side: Side::Worker { window },
        })];
    }
    let mut out: Vec<Box<dyn Transport>> = Vec::new();
    for entry in entries(cfg) {
        // A TCP variant only for a library found and known how to force.
        let has_tcp = entry
            .install
            .as_ref()
            .is_ok_and(|i| i.flavor.tcp_args().is_some());
        out.push(Box::new(MpiTransport {
            name: entry.name,
            side: Side::Launcher {
                entry: Arc::clone(&entry),
                tcp: false,
                has_tcp,
            },
        }));
        if has_tcp {
            out.push(Box::new(MpiTransport {
                name: entry.tcp_name,
                side: Side::Launcher {
                    entry,
                    tcp: true,
                    has_tcp,
                },
            }));
        }
    }
    out
}

/// An MPI transport: on the user's side it launches jobs; inside a job it
/// sets up the data channel between the two ranks.
struct MpiTransport {
    name: &'static str,
    side: Side,
}

enum Side {
    /// The user's `wulf sweep` / `wulf run`: launches the job. `tcp`: this
    /// is the TCP variant; `has_tcp`: the library has one.
    Launcher {
        entry: Arc<Entry>,
        tcp: bool,
        has_tcp: bool,
    },
    /// A rank of the job.
    Worker { window: u64 },
}

impl MpiTransport {
    fn adapter(entry: &Entry) -> Result<&build::Adapter, String> {
        let install = entry.install.as_ref().map_err(Clone::clone)?;
        entry
            .adapter
            .get_or_init(|| build::adapter_library(install))
            .as_ref()
            .map_err(Clone::clone)
    }

    fn not_in_a_job(&self) -> anyhow::Error {
        anyhow::anyhow!(
            "{} channels exist only inside a job wulf launches itself: run `wulf sweep {}` without --peer",
            self.name,
            self.name
        )
    }
}

impl Transport for MpiTransport {
    fn name(&self) -> &'static str {
        self.name
    }

    fn about(&self) -> &'static str {
        match &self.side {
            Side::Launcher { tcp: true, .. } => {
                "MPI point-to-point forced onto TCP, ranks started by the MPI's own launcher"
            }
            _ => "MPI point-to-point on the library's default path, ranks started by its own launcher",
        }
    }

    fn availability(&self) -> Result<(), String> {
        match &self.side {
            Side::Worker { .. } => Ok(()),
            Side::Launcher { entry, .. } => Self::adapter(entry).map(|_| ()),
        }
    }

    fn local_only(&self) -> bool {
        false
    }

    fn claims_nic(&self) -> bool {
        false
    }

    fn starts_both_ends(&self) -> bool {
        matches!(self.side, Side::Launcher { .. })
    }

    fn forced_variant(&self) -> bool {
        matches!(self.side, Side::Launcher { tcp: true, .. })
    }

    fn duplicate_across_hosts(&self) -> bool {
        // Across hosts every variant is held to TCP (see the module
        // documentation): the default one repeats the TCP variant.
        matches!(
            self.side,
            Side::Launcher {
                tcp: false,
                has_tcp: true,
                ..
            }
        )
    }

    fn listen(&self, _opts: &ChannelOptions, _bind_ip: IpAddr) -> Result<Box<dyn Listener>> {
        match self.side {
            Side::Worker { window } => Ok(Box::new(endpoint::MpiListener::new(window))),
            Side::Launcher { .. } => Err(self.not_in_a_job()),
        }
    }

    fn connect(
        &self,
        description: &serde_json::Value,
        _opts: &ChannelOptions,
        _peer_ip: IpAddr,
    ) -> Result<Connected> {
        match self.side {
            Side::Worker { window } => endpoint::connect(description, window),
            Side::Launcher { .. } => Err(self.not_in_a_job()),
        }
    }
}

/// Set in a process the MPI launcher started (`wulf worker JOB`): the
/// registry then lists the one MPI transport `name` of that job, whose
/// channels are made between its ranks, `window` messages in flight.
pub fn serve_in_job(name: &str, window: u64) {
    let _ = WORKER.set((leak(name.to_string()), window));
}

/// An MPI transport as the launcher that starts its jobs sees it: the
/// installation, its adapter and whether it is the TCP-forced variant.
pub struct Launchable {
    entry: Arc<Entry>,
    /// This is the `(tcp)` variant.
    pub tcp: bool,
}

impl Launchable {
    /// The transport's name (`mpi:openmpi`, `mpi:mpich(tcp)`...).
    pub fn name(&self) -> &'static str {
        if self.tcp {
            self.entry.tcp_name
        } else {
            self.entry.name
        }
    }

    /// The installation, or why it cannot be used.
    pub fn install(&self) -> Result<&MpiInstall> {
        self.entry
            .install
            .as_ref()
            .map_err(|why| anyhow::anyhow!("{} is not installed: {why}", self.name()))
    }

    /// The compiled adapter the ranks load, built on first use.
    pub fn adapter(&self) -> Result<&build::Adapter> {
        MpiTransport::adapter(&self.entry).map_err(anyhow::Error::msg)
    }

    /// The variant's launcher arguments (TCP forced), or none.
    pub fn variant_args(&self) -> Result<&'static [&'static str]> {
        Ok(if self.tcp {
            self.install()?.flavor.tcp_args().unwrap_or(&[])
        } else {
            &[]
        })
    }

    /// The variant's name (`tcp`), or None.
    pub fn variant(&self) -> Option<&'static str> {
        self.tcp.then_some(TCP_VARIANT)
    }
}

/// The MPI transport `name` on the launching side, if it is one among
/// `cfg`'s (inside a job, the transports are the job's channels, and none
/// is launchable).
pub fn launchable(name: &str, cfg: &ExtraOptions) -> Option<Launchable> {
    if WORKER.get().is_some() {
        return None;
    }
    entries(cfg).into_iter().find_map(|entry| {
        let tcp = entry.tcp_name == name
            && entry
                .install
                .as_ref()
                .is_ok_and(|i| i.flavor.tcp_args().is_some());
        (entry.name == name || tcp).then_some(Launchable { entry, tcp })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtins_are_always_listed_and_users_override_them() {
        let cfg = ExtraOptions {
            mpi: vec![
                ("openmpi".into(), "/nonexistent/ompi/mpicc".into()),
                ("broken".into(), "/nonexistent/mpicc".into()),
            ],
            mpi_launcher_args: vec![],
            window: DEFAULT_WINDOW,
        };
        let names: Vec<&str> = transports(&cfg).iter().map(|t| t.name()).collect();
        assert!(names.contains(&"mpi:mpich"), "{names:?}");
        assert!(names.contains(&"mpi:broken"), "{names:?}");
        assert!(!names.contains(&"mpi:broken(tcp)"), "{names:?}");
        let broken = transports(&cfg)
            .into_iter()
            .find(|t| t.name() == "mpi:openmpi")
            .unwrap();
        let why = broken.availability().unwrap_err();
        assert!(why.contains("/nonexistent/ompi/mpicc"), "{why}");
        // The options are this call's alone: the defaults list no user MPI.
        let names: Vec<&str> = transports(&ExtraOptions::default())
            .iter()
            .map(|t| t.name())
            .collect();
        assert!(!names.contains(&"mpi:broken"), "{names:?}");
    }
}
