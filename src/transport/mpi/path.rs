//! Which data path carries the messages between a job's ranks, as a rank
//! sees it, so that only the protocol limits of the mechanisms in use are
//! named as causes (the tcp BTL's limits on the path forced onto TCP, the
//! shared-memory BTL's on the default one; never a CH3 variable for a CH4
//! build).
//!
//! The rank records it in its settings under [`DATA_PATH_KEY`] (in the
//! result's `options.transport`), from what it can read itself:
//!
//! * the library as built: `MPI_Get_library_version`. MPICH prints its
//!   device there (`MPICH Device: ch4:ucx`, as `mpichversion` does), which
//!   tells CH3 from CH4 and CH4's network module; Open MPI prints its
//!   version (`Open MPI v4.1.4`), which tells its shared-memory BTL's name
//!   (`vader` up to 4.x, `sm` from 5.0);
//! * what the launcher selected: Open MPI's `mpirun --mca NAME VALUE` reaches
//!   the ranks as `OMPI_MCA_NAME` (`OMPI_MCA_btl=self,tcp` for the TCP
//!   variant), MPICH's `-genv` as plain variables (`MPIR_CVAR_NOLOCAL`);
//! * whether the ranks share a host: `OMPI_COMM_WORLD_LOCAL_SIZE` (Open MPI)
//!   or `MPI_LOCALNRANKS` (MPICH's Hydra) equal to the job's size;
//! * for Open MPI, whether the UCX PML could be chosen: 4.1 selects it over
//!   ob1 (and its BTLs) only for Mellanox devices (`pml_ucx_devices =
//!   mlx*`), so a host without RDMA devices runs ob1.
//!
//! Paths: `btl:NAME` (Open MPI's ob1 over that BTL), `pml:ucx`, `pml:cm`,
//! and for MPICH the device (`ch4:ucx`, `ch4:ofi`, `ch3:nemesis`...),
//! followed by `/local` when the ranks share a host. Nothing certain gives
//! no path, and then no MPI limit is named.
//!
//! Which limits a path uses ([`limit_in_use`]): a BTL's own
//! (`btl_tcp_*`); none for the UCX PML (UCX's thresholds are no MCA
//! parameters). CH3: `MPIR_CVAR_CH3_EAGER_MAX_MSG_SIZE` between hosts,
//! Nemesis' `MPIR_CVAR_NEMESIS_SHM_EAGER_MAX_SZ` within one (its cells
//! carry local messages). CH4 between hosts: its network module's
//! (`MPIR_CVAR_CH4_OFI_EAGER_MAX_MSG_SIZE`; ch4:ucx has none, UCX decides).
//! CH4 within one host: none, as whether CH4's POSIX shared memory or the
//! network module carries local messages depends on how it was built: the
//! Debian MPICH 4.0.2 (`ch4:ucx`) lists `MPIR_CVAR_CH4_SHM_POSIX_*` in
//! `mpivars`, yet with `UCX_TLS=tcp,self` each of 20,000 local ping-pongs
//! made a `sendto` per rank (strace): UCX carried them all.

/// Key of the data path in an MPI rank's settings.
pub const DATA_PATH_KEY: &str = "data_path";

/// What a rank knows about its job, the input of [`data_path`].
pub struct RankFacts<'a> {
    /// `MPI_Get_library_version`.
    pub library_version: &'a str,
    /// The job's size.
    pub world_size: usize,
    /// Whether the host has RDMA devices (/sys/class/infiniband).
    pub rdma_devices: bool,
    /// The process's environment.
    pub env: &'a dyn Fn(&str) -> Option<String>,
}

/// Open MPI's major version in its library version (`Open MPI v4.1.4`).
fn open_mpi_major(version: &str) -> Option<u32> {
    let rest = version.split("Open MPI v").nth(1)?;
    rest.split('.').next()?.trim().parse().ok()
}

/// MPICH's device in its library version (`MPICH Device:\tch4:ucx`).
fn mpich_device(version: &str) -> Option<String> {
    version.lines().find_map(|line| {
        let rest = line.trim().strip_prefix("MPICH Device:")?;
        let device = rest.split_whitespace().next()?;
        device.starts_with("ch").then(|| device.to_string())
    })
}

/// Whether a comma-separated MCA selection (`self,tcp`, `^openib`) lets
/// one of `names` in; no selection lets everything in.
fn selected(list: Option<&str>, names: &[&str]) -> bool {
    match list.map(str::trim) {
        None | Some("") => true,
        Some(l) => match l.strip_prefix('^') {
            Some(excluded) => !excluded.split(',').any(|b| names.contains(&b.trim())),
            None => l.split(',').any(|b| names.contains(&b.trim())),
        },
    }
}

/// Whether the job's ranks all share one host, when the launcher says.
fn all_local(facts: &RankFacts, var: &str) -> Option<bool> {
    let local: usize = (facts.env)(var)?.trim().parse().ok()?;
    Some(local == facts.world_size)
}

/// The path the job's messages take between two of its ranks (see the
/// module notes); `None` when it cannot be told.
pub fn data_path(facts: &RankFacts) -> Option<String> {
    let truthy = |v: Option<String>| {
        v.is_some_and(|v| matches!(v.trim().to_ascii_lowercase().as_str(), "1" | "yes" | "true"))
    };
    if let Some(major) = open_mpi_major(facts.library_version) {
        let pml = (facts.env)("OMPI_MCA_pml");
        match pml.as_deref().map(str::trim) {
            Some("ucx") => return Some("pml:ucx".into()),
            Some("cm") => return Some("pml:cm".into()),
            Some("ob1") => {}
            // The UCX PML may win over ob1 on a host with RDMA devices.
            _ if facts.rdma_devices => return None,
            _ => {}
        }
        let btl = (facts.env)("OMPI_MCA_btl");
        let shm = if major >= 5 { "sm" } else { "vader" };
        let shm_ok = selected(btl.as_deref(), &["vader", "sm"]);
        let tcp_ok = selected(btl.as_deref(), &["tcp"]);
        let only_tcp = btl.as_deref().is_some_and(|l| {
            !l.starts_with('^') && l.split(',').all(|b| matches!(b.trim(), "self" | "tcp"))
        });
        return match all_local(facts, "OMPI_COMM_WORLD_LOCAL_SIZE") {
            Some(true) if shm_ok => Some(format!("btl:{shm}")),
            Some(true) if tcp_ok && only_tcp => Some("btl:tcp".into()),
            // Across hosts only a selection of TCP alone is certain.
            Some(false) if tcp_ok && only_tcp => Some("btl:tcp".into()),
            _ => None,
        };
    }
    let device = mpich_device(facts.library_version)?;
    let nolocal = truthy((facts.env)("MPIR_CVAR_NOLOCAL"));
    match all_local(facts, "MPI_LOCALNRANKS") {
        Some(true) if !nolocal => Some(format!("{device}/local")),
        Some(_) => Some(device),
        None => None,
    }
}

/// Whether the protocol limit `name` (an Open MPI MCA parameter or an
/// MPICH control variable, see [`super::protocol`]) belongs to the
/// mechanisms of `path`.
pub fn limit_in_use(path: &str, name: &str) -> bool {
    if let Some(btl) = path.strip_prefix("btl:") {
        return name.starts_with(&format!("btl_{btl}_"));
    }
    let (device, local) = match path.strip_suffix("/local") {
        Some(d) => (d, true),
        None => (path, false),
    };
    if device.starts_with("ch3") {
        return match local {
            true => name == "MPIR_CVAR_NEMESIS_SHM_EAGER_MAX_SZ",
            false => name == "MPIR_CVAR_CH3_EAGER_MAX_MSG_SIZE",
        };
    }
    match device.strip_prefix("ch4:") {
        Some(netmod) if !local => {
            name.starts_with(&format!("MPIR_CVAR_CH4_{}_", netmod.to_ascii_uppercase()))
        }
        _ => false,
    }
}

/// Whether `path` is certain to carry the messages through shared memory
/// (the variant forced onto TCP then does not measure TCP).
pub fn is_shared_memory(path: &str) -> bool {
    path == "btl:vader" || path == "btl:sm"
}

#[cfg(test)]
mod tests {
    use super::*;

    const OMPI4: &str =
        "Open MPI v4.1.4, package: Debian OpenMPI, ident: 4.1.4, repo rev: v4.1.4, May 26, 2022";
    const MPICH_UCX: &str = "MPICH Version:\t4.0.2\nMPICH Release date:\tThu Apr  7 12:34:45 CDT 2022\nMPICH ABI:\t14:2:2\nMPICH Device:\tch4:ucx\nMPICH configure:\t--with-device=ch4:ucx";

    fn path(version: &str, vars: &[(&str, &str)], rdma: bool) -> Option<String> {
        let env = |k: &str| {
            vars.iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        };
        data_path(&RankFacts {
            library_version: version,
            world_size: 2,
            rdma_devices: rdma,
            env: &env,
        })
    }

    #[test]
    fn open_mpi_default_is_shared_memory_and_the_variant_tcp() {
        let local = ("OMPI_COMM_WORLD_LOCAL_SIZE", "2");
        assert_eq!(path(OMPI4, &[local], false).as_deref(), Some("btl:vader"));
        let v5 = "Open MPI v5.0.3, package: Open MPI";
        assert_eq!(path(v5, &[local], false).as_deref(), Some("btl:sm"));
        let tcp = ("OMPI_MCA_btl", "self,tcp");
        assert_eq!(
            path(OMPI4, &[local, tcp], false).as_deref(),
            Some("btl:tcp")
        );
        // Excluding shared memory leaves other BTLs possible: uncertain.
        let not_shm = ("OMPI_MCA_btl", "^vader");
        assert_eq!(path(OMPI4, &[local, not_shm], false), None);
        // Across hosts, TCP only when it is the one selected.
        let apart = ("OMPI_COMM_WORLD_LOCAL_SIZE", "1");
        assert_eq!(
            path(OMPI4, &[apart, tcp], false).as_deref(),
            Some("btl:tcp")
        );
        assert_eq!(path(OMPI4, &[apart], false), None);
        // With RDMA devices the UCX PML may take over, unless ob1 is asked for.
        assert_eq!(path(OMPI4, &[local], true), None);
        let ob1 = ("OMPI_MCA_pml", "ob1");
        assert_eq!(
            path(OMPI4, &[local, ob1], true).as_deref(),
            Some("btl:vader")
        );
        let ucx = ("OMPI_MCA_pml", "ucx");
        assert_eq!(
            path(OMPI4, &[local, ucx], false).as_deref(),
            Some("pml:ucx")
        );
    }

    #[test]
    fn mpich_device_as_built() {
        let local = ("MPI_LOCALNRANKS", "2");
        assert_eq!(
            path(MPICH_UCX, &[local], false).as_deref(),
            Some("ch4:ucx/local")
        );
        let nolocal = ("MPIR_CVAR_NOLOCAL", "1");
        assert_eq!(
            path(MPICH_UCX, &[local, nolocal], false).as_deref(),
            Some("ch4:ucx")
        );
        let ch3 = MPICH_UCX.replace("ch4:ucx", "ch3:nemesis");
        assert_eq!(
            path(&ch3, &[local], false).as_deref(),
            Some("ch3:nemesis/local")
        );
        // The launcher did not say where the ranks are: unknown.
        assert_eq!(path(MPICH_UCX, &[], false), None);
        assert_eq!(path("Intel(R) MPI Library 2021.6", &[local], false), None);
    }

    #[test]
    fn only_the_limits_of_the_path() {
        let names = [
            "btl_vader_eager_limit",
            "btl_tcp_eager_limit",
            "btl_sm_max_send_size",
            "MPIR_CVAR_CH3_EAGER_MAX_MSG_SIZE",
            "MPIR_CVAR_CH4_OFI_EAGER_MAX_MSG_SIZE",
            "MPIR_CVAR_CH4_SHM_POSIX_IQUEUE_CELL_SIZE",
            "MPIR_CVAR_NEMESIS_SHM_EAGER_MAX_SZ",
        ];
        let kept = |p: &str| -> Vec<&str> {
            names
                .iter()
                .copied()
                .filter(|n| limit_in_use(p, n))
                .collect()
        };
        assert_eq!(kept("btl:tcp"), ["btl_tcp_eager_limit"]);
        assert_eq!(kept("btl:vader"), ["btl_vader_eager_limit"]);
        assert_eq!(kept("btl:sm"), ["btl_sm_max_send_size"]);
        assert!(kept("pml:ucx").is_empty());
        // A CH4 build never gets CH3's eager limit; on one host, which of
        // its shared memory or its network module carries is not known.
        assert!(kept("ch4:ucx/local").is_empty());
        assert!(kept("ch4:ucx").is_empty());
        assert_eq!(kept("ch4:ofi"), ["MPIR_CVAR_CH4_OFI_EAGER_MAX_MSG_SIZE"]);
        assert!(kept("ch4:ofi/local").is_empty());
        assert_eq!(
            kept("ch3:nemesis/local"),
            ["MPIR_CVAR_NEMESIS_SHM_EAGER_MAX_SZ"]
        );
        assert_eq!(kept("ch3:sock"), ["MPIR_CVAR_CH3_EAGER_MAX_MSG_SIZE"]);
        assert!(is_shared_memory("btl:vader") && !is_shared_memory("btl:tcp"));
        assert!(!is_shared_memory("ch4:ucx/local"));
    }
}
