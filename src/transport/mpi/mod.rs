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
//! MPI found its variants held to one path ([`variants`]): `mpi:NAME(tcp)`
//! forced onto TCP (Open MPI `--mca btl self,tcp`, MPICH `-genv UCX_TLS
//! tcp,self`), so `wulf run` shows shared memory and TCP side by side, and
//! the layers beneath the MPI (`mpi:openmpi(ucx-tcp)`, `(ucx-shm)`,
//! `(ofi-tcp)`, `(ofi-shm)`, `mpi:mpich(ucx-shm)`), each checked against
//! the library's own report ([`probe`]) and measured when named (`wulf
//! sweep`, `--only`, `wulf study layers`).
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
pub mod probe;
pub mod protocol;
pub mod variants;

use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};

use anyhow::Result;

use self::discover::{Flavor, MpiInstall};
use self::variants::{Layer, Variant};
use super::{ChannelOptions, Connected, ExtraOptions, Listener, Transport};

pub use endpoint::{park, unpark};

/// Environment variable naming the wulf executable the launchers start as
/// `wulf worker`, for programs that drive wulf's library from another
/// executable (its integration tests): by default the ranks run this very
/// executable.
pub const EXE_VAR: &str = "WULF_EXE";

/// Default `--window`: osu_bw's window of non-blocking sends.
pub const DEFAULT_WINDOW: u64 = 64;

/// Set inside an MPI worker: the one transport this process serves.
static WORKER: OnceLock<(&'static str, u64)> = OnceLock::new();

/// Entries discovered so far, reused by every `registry()` call.
static ENTRIES: Mutex<Vec<Arc<Entry>>> = Mutex::new(Vec::new());

/// One MPI, found or not, and its adapter once built.
struct Entry {
    /// `mpi:NAME`.
    name: &'static str,
    /// Its variants (none for a library not found or of no known
    /// family) and their names (`mpi:NAME(tcp)`), made once with the
    /// entry: the registry is listed per request (a server's every
    /// session), and must not leak a name each time.
    variants: Vec<(&'static Variant, &'static str)>,
    /// Each variant's probe ([`probe::probe`]), run on first use.
    probes: Vec<OnceLock<Result<String, String>>>,
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
            let variants: Vec<(&'static Variant, &'static str)> = match &install {
                Ok(i) => variants::of(i.flavor)
                    .map(|v| (v, leak(format!("{full}({})", v.name))))
                    .collect(),
                Err(_) => Vec::new(),
            };
            let e = Arc::new(Entry {
                probes: variants.iter().map(|_| OnceLock::new()).collect(),
                variants,
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
        out.push(Box::new(MpiTransport {
            name: entry.name,
            side: Side::Launcher {
                entry: Arc::clone(&entry),
                variant: None,
            },
        }));
        for (i, &(_, name)) in entry.variants.iter().enumerate() {
            out.push(Box::new(MpiTransport {
                name,
                side: Side::Launcher {
                    entry: Arc::clone(&entry),
                    variant: Some(i),
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
    /// The user's `wulf sweep` / `wulf run`: launches the job. `variant`:
    /// which of the entry's variants this is, None for the default path.
    Launcher {
        entry: Arc<Entry>,
        variant: Option<usize>,
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

    /// The variant this transport is, if it is one.
    fn variant(&self) -> Option<&'static Variant> {
        match &self.side {
            Side::Launcher {
                entry,
                variant: Some(i),
            } => entry.variants.get(*i).map(|v| v.0),
            _ => None,
        }
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
        match self.variant() {
            Some(v) => v.about,
            None => "MPI point-to-point on the library's default path, ranks started by its own launcher",
        }
    }

    fn availability(&self) -> Result<(), String> {
        match &self.side {
            Side::Worker { .. } => Ok(()),
            Side::Launcher { entry, variant } => {
                Self::adapter(entry)?;
                match variant {
                    Some(i) => entry.probe(*i).map(|_| ()),
                    None => Ok(()),
                }
            }
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
        self.variant().is_some()
    }

    fn layering(&self, path: super::LayersPath) -> Option<super::Layering> {
        let Side::Launcher { entry, .. } = &self.side else {
            return None;
        };
        let (beneath, on_shm) = match self.variant() {
            Some(v) => v.beneath,
            None => (entry.install.as_ref().ok()?.flavor.default_beneath()?, true),
        };
        let here = match path {
            super::LayersPath::SharedMemory => on_shm,
            super::LayersPath::Loopback => !on_shm,
            // Across lab nodes only the TCP variants keep their path.
            super::LayersPath::Link => self.variant().is_some_and(|v| v.layer == Layer::Tcp),
        };
        here.then_some(super::Layering::Over(beneath))
    }

    fn measured_by_default(&self) -> bool {
        // A path beneath another library is a layers-study row: one job
        // more per row and kernel in every `wulf run`, named when wanted.
        self.variant().is_none_or(|v| v.layer == Layer::Tcp)
    }

    fn duplicate_across_hosts(&self) -> bool {
        // Across hosts every variant is held to TCP (see the module
        // documentation): the default one repeats the TCP variant, and
        // the cluster's arguments hold a layer's variant to ob1 over TCP.
        match &self.side {
            Side::Launcher { entry, variant } => match self.variant() {
                Some(v) => v.layer != Layer::Tcp,
                None => variant.is_none() && entry.has_tcp(),
            },
            Side::Worker { .. } => false,
        }
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

impl Entry {
    /// Whether the library has a TCP-forced variant.
    fn has_tcp(&self) -> bool {
        self.variants.iter().any(|(v, _)| v.layer == Layer::Tcp)
    }

    /// The path variant `i` takes here, as its probe found (see
    /// [`probe`]), probed once per process.
    fn probe(&self, i: usize) -> Result<String, String> {
        let (variant, _) = self.variants.get(i).ok_or("no such variant")?;
        let install = self.install.as_ref().map_err(Clone::clone)?;
        self.probes[i]
            .get_or_init(|| match variant.layer {
                // The ranks record the TCP variant's path themselves.
                Layer::Tcp => Ok(String::new()),
                _ => probe::probe(install, variant),
            })
            .clone()
    }
}

/// An MPI transport as the launcher that starts its jobs sees it: the
/// installation, its adapter and which variant it is.
pub struct Launchable {
    entry: Arc<Entry>,
    /// The entry's variant, None for the library's default path.
    variant: Option<usize>,
}

impl Launchable {
    /// The transport's name (`mpi:openmpi`, `mpi:mpich(tcp)`...).
    pub fn name(&self) -> &'static str {
        self.variant
            .and_then(|i| self.entry.variants.get(i))
            .map_or(self.entry.name, |v| v.1)
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

    /// The variant's launcher arguments, or none.
    pub fn variant_args(&self) -> Result<&'static [&'static str]> {
        self.install()?;
        Ok(self.path_variant().map_or(&[], |v| v.args))
    }

    /// The variant's name (`tcp`, `ucx-shm`), or None.
    pub fn variant(&self) -> Option<&'static str> {
        self.path_variant().map(|v| v.name)
    }

    /// The variant, or None for the library's default path.
    pub fn path_variant(&self) -> Option<&'static Variant> {
        self.variant
            .and_then(|i| self.entry.variants.get(i))
            .map(|v| v.0)
    }

    /// Whether the library takes the variant's path on this host, asked
    /// of it once per process ([`probe`]); the error says why not.
    pub fn probed(&self) -> Result<()> {
        match self.variant {
            Some(i) => self
                .entry
                .probe(i)
                .map(|_| ())
                .map_err(|why| anyhow::anyhow!("{} is unavailable here: {why}", self.name())),
            None => Ok(()),
        }
    }

    /// Whether this is the variant forced onto TCP by the MPI's own
    /// transport (its TCP limits then apply).
    pub fn is_tcp(&self) -> bool {
        self.path_variant().is_some_and(|v| v.layer == Layer::Tcp)
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
        if entry.name == name {
            return Some(Launchable {
                entry,
                variant: None,
            });
        }
        let i = entry.variants.iter().position(|(_, n)| *n == name)?;
        Some(Launchable {
            entry,
            variant: Some(i),
        })
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
