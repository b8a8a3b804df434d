//! The variants of an MPI held to one of its paths: the registry of
//! `mpi:NAME(VARIANT)` rows, what each asks the launcher for, and how the
//! path in use is read back from the library's own report.
//!
//! Open MPI reaches the layers beneath it through its PML: `ob1` over its
//! BTLs (`tcp`: the TCP BTL), `ucx` over UCX (`ucx-tcp`, `ucx-shm`, with
//! `UCX_TLS` set as the `ucx(...)` transports set it), `cm` over an MTL
//! (`ofi-tcp`, `ofi-shm`: libfabric's provider). MPICH's ch4:ucx takes
//! `UCX_TLS` likewise (`tcp`, `ucx-shm`). The `tcp` variants are the ones
//! wulf always had; the others are the layers study's rows.
//!
//! Checked, not assumed: a variant's job is started with the library's
//! own report switched on (Open MPI's `pml_base_verbose` and
//! `mtl_ofi_verbose`, UCX's `UCX_LOG_LEVEL=info`, which prints each
//! endpoint's lanes), and [`Variant::check`] reads the launcher's output:
//! the PML selected, the provider the MTL opened, the UCX lanes of the
//! endpoints. A path the library refused or did not report is an error
//! that says so.
//!
//! Open MPI 4.1's UCX PML serves only Mellanox devices unless told
//! otherwise (`pml_ucx_devices`, `pml_ucx_tls`): the `ucx-*` variants say
//! `any`, or a host without RDMA devices would refuse them.

use super::discover::Flavor;

/// What a variant's path is made of, and so how it is checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layer {
    /// Open MPI's ob1 over the TCP BTL, or MPICH's UCX held to TCP by the
    /// forced-TCP variant of old: the rank's own `data_path` says it.
    Tcp,
    /// UCX, its lanes limited to these transports (UCX's names).
    Ucx(&'static [&'static str]),
    /// libfabric through Open MPI's `mtl ofi`, this provider.
    Ofi(&'static str),
}

/// One `mpi:NAME(VARIANT)` row.
#[derive(Debug, PartialEq, Eq)]
pub struct Variant {
    /// The name in parentheses (`tcp`, `ucx-shm`...).
    pub name: &'static str,
    /// The family it applies to.
    pub flavor: Flavor,
    /// What the row measures, for `wulf sweep --help` and listings.
    pub about: &'static str,
    /// Launcher arguments that select the path.
    pub args: &'static [&'static str],
    /// Launcher arguments that make the library report the path it took.
    pub report_args: &'static [&'static str],
    /// The layer beneath the MPI.
    pub layer: Layer,
    /// The transport beneath it in `wulf study layers` (the same layer
    /// measured alone), and whether that is on shared memory.
    pub beneath: (&'static str, bool),
}

/// Open MPI's UCX PML on any device, with UCX_TLS = `tls`.
macro_rules! ompi_ucx {
    ($tls:literal) => {
        &[
            "--mca",
            "pml",
            "ucx",
            "--mca",
            "pml_ucx_devices",
            "any",
            "--mca",
            "pml_ucx_tls",
            "any",
            "-x",
            concat!("UCX_TLS=", $tls),
        ]
    };
}

/// Open MPI's cm PML over libfabric's `prov` alone.
macro_rules! ompi_ofi {
    ($prov:literal) => {
        &[
            "--mca",
            "pml",
            "cm",
            "--mca",
            "mtl",
            "ofi",
            "--mca",
            "mtl_ofi_provider_include",
            $prov,
        ]
    };
}

const OMPI_UCX_REPORT: &[&str] = &[
    "--mca",
    "pml_base_verbose",
    "10",
    "-x",
    "UCX_LOG_LEVEL=info",
];
const OMPI_OFI_REPORT: &[&str] = &[
    "--mca",
    "pml_base_verbose",
    "10",
    "--mca",
    "mtl_ofi_verbose",
    "100",
];
const MPICH_UCX_REPORT: &[&str] = &["-genv", "UCX_LOG_LEVEL", "info"];

/// UCX's shared-memory transports (`UCX_TLS=shm`: posix, sysv, and cma's
/// single copy).
const UCX_SHM: &[&str] = &["posix", "sysv", "cma", "xpmem", "knem"];

/// Every variant, in the order they are listed.
pub const VARIANTS: &[Variant] = &[
    Variant {
        name: "tcp",
        flavor: Flavor::OpenMpi,
        about: "MPI point-to-point forced onto TCP, ranks started by the MPI's own launcher",
        args: &["--mca", "btl", "self,tcp"],
        report_args: &[],
        layer: Layer::Tcp,
        beneath: ("tcp", false),
    },
    Variant {
        name: "ucx-tcp",
        flavor: Flavor::OpenMpi,
        about: "Open MPI over its UCX PML, UCX held to TCP (pml ucx, UCX_TLS=tcp)",
        args: ompi_ucx!("tcp,self"),
        report_args: OMPI_UCX_REPORT,
        layer: Layer::Ucx(&["tcp"]),
        beneath: ("ucx(tcp)", false),
    },
    Variant {
        name: "ucx-shm",
        flavor: Flavor::OpenMpi,
        about: "Open MPI over its UCX PML, UCX held to shared memory (pml ucx, UCX_TLS=shm)",
        args: ompi_ucx!("shm,self"),
        report_args: OMPI_UCX_REPORT,
        layer: Layer::Ucx(UCX_SHM),
        beneath: ("ucx(shm)", true),
    },
    Variant {
        name: "ofi-tcp",
        flavor: Flavor::OpenMpi,
        about: "Open MPI over libfabric's tcp provider (pml cm, mtl ofi)",
        args: ompi_ofi!("tcp"),
        report_args: OMPI_OFI_REPORT,
        layer: Layer::Ofi("tcp"),
        beneath: ("ofi(tcp)", false),
    },
    Variant {
        name: "ofi-shm",
        flavor: Flavor::OpenMpi,
        about: "Open MPI over libfabric's shm provider (pml cm, mtl ofi)",
        args: ompi_ofi!("shm"),
        report_args: OMPI_OFI_REPORT,
        layer: Layer::Ofi("shm"),
        beneath: ("ofi(shm)", true),
    },
    Variant {
        name: "tcp",
        flavor: Flavor::Mpich,
        about: "MPI point-to-point forced onto TCP, ranks started by the MPI's own launcher",
        args: &["-genv", "UCX_TLS", "tcp,self"],
        report_args: &[],
        layer: Layer::Tcp,
        beneath: ("ucx(tcp)", false),
    },
    Variant {
        name: "ucx-shm",
        flavor: Flavor::Mpich,
        about: "MPICH ch4:ucx, UCX held to shared memory (UCX_TLS=shm)",
        args: &["-genv", "UCX_TLS", "shm,self"],
        report_args: MPICH_UCX_REPORT,
        layer: Layer::Ucx(UCX_SHM),
        beneath: ("ucx(shm)", true),
    },
];

/// The variants of `flavor`, in listing order.
pub fn of(flavor: Flavor) -> impl Iterator<Item = &'static Variant> {
    VARIANTS.iter().filter(move |v| v.flavor == flavor)
}

/// Open MPI's PML, as its `pml_base_verbose` report names the one
/// selected (`select: component ucx selected`).
fn selected_pml(output: &str) -> Option<&str> {
    output.lines().find_map(|l| {
        let rest = l.split("select: component ").nth(1)?;
        let name = rest.strip_suffix(" selected")?.trim();
        ["ucx", "cm", "ob1"].contains(&name).then_some(name)
    })
}

/// The provider Open MPI's ofi MTL opened (`mtl:ofi:prov: tcp;ofi_rxm`).
fn ofi_provider(output: &str) -> Option<&str> {
    output
        .lines()
        .find_map(|l| l.split("mtl:ofi:prov: ").nth(1).map(str::trim))
}

/// The lanes UCX reported for its endpoints to other processes
/// (`ep_cfg[1]: tag(sysv/memory cma/memory)`), each `transport/device`
/// once, in the order first seen; its endpoint to itself (`self/...`)
/// left out.
pub fn ucx_lanes(output: &str) -> Vec<String> {
    let mut lanes: Vec<String> = Vec::new();
    for line in output.lines().filter(|l| l.contains("ep_cfg[")) {
        let Some(inner) = line.split(" tag(").nth(1).and_then(|r| r.split(')').next()) else {
            continue;
        };
        for lane in inner.split_whitespace() {
            if !lane.starts_with("self/") && !lanes.iter().any(|l| l == lane) {
                lanes.push(lane.to_string());
            }
        }
    }
    lanes
}

/// Lines of `output` where the library says it refused the path, for the
/// error that explains the refusal.
pub fn refusal(output: &str) -> Option<String> {
    const MARKS: &[&str] = &[
        "cannot be selected",
        "No components were able to be opened",
        "Destination is unreachable",
        "init returned failure",
        "no active messages transport",
        "no provider found",
    ];
    let lines: Vec<&str> = output
        .lines()
        .filter(|l| MARKS.iter().any(|m| l.contains(m)))
        .map(str::trim)
        .collect();
    let mut unique: Vec<&str> = Vec::new();
    for l in lines {
        // Each rank says it; once is enough. Without the rank's prefix
        // and the source location (`../mtl_ofi_component.c:756: `).
        let text = l.split("] ").last().unwrap_or(l);
        let text = match text.split_once(": ") {
            Some((file, rest)) if file.contains(".c:") => rest,
            _ => text,
        };
        let text = text.trim_end_matches(['.', ';']);
        if !unique.contains(&text) {
            unique.push(text);
        }
    }
    (!unique.is_empty()).then(|| unique.join("; "))
}

impl Variant {
    /// The path as the library reported it in `output` (the launcher's
    /// output with [`Variant::report_args`]), checked against what the
    /// variant asks for: `pml:ucx tag(tcp/lo)`, `pml:cm mtl:ofi tcp;ofi_rxm`,
    /// `ch4:ucx tag(sysv/memory cma/memory)`. None for a variant whose path
    /// the rank records itself ([`Layer::Tcp`]); an error that says what
    /// was reported instead, or that nothing was.
    pub fn check(&self, output: &str) -> Option<Result<String, String>> {
        let pml = selected_pml(output);
        let reported = match self.layer {
            Layer::Tcp => return None,
            Layer::Ucx(allowed) => {
                let lanes = ucx_lanes(output);
                if lanes.is_empty() {
                    return Some(Err(
                        self.unreported("UCX reported no endpoint lanes", output)
                    ));
                }
                let stray: Vec<&String> = lanes
                    .iter()
                    .filter(|l| !allowed.iter().any(|a| l.split('/').next() == Some(a)))
                    .collect();
                let head = match self.flavor {
                    Flavor::OpenMpi if pml != Some("ucx") => {
                        return Some(Err(self.unreported("the UCX PML was not selected", output)))
                    }
                    Flavor::OpenMpi => "pml:ucx",
                    _ => "ch4:ucx",
                };
                let text = format!("{head} tag({})", lanes.join(" "));
                if !stray.is_empty() {
                    return Some(Err(format!(
                        "{}: UCX took lanes outside {}: {text}",
                        self.name,
                        allowed.join(",")
                    )));
                }
                text
            }
            Layer::Ofi(wanted) => {
                let Some(prov) = ofi_provider(output).filter(|_| pml == Some("cm")) else {
                    return Some(Err(self.unreported(
                        "Open MPI did not report the cm PML over an ofi provider",
                        output,
                    )));
                };
                if prov.split(';').next() != Some(wanted) {
                    return Some(Err(format!(
                        "{}: libfabric's provider was {prov}, not {wanted}",
                        self.name
                    )));
                }
                format!("pml:cm mtl:ofi {prov}")
            }
        };
        Some(Ok(reported))
    }

    /// Why the path could not be confirmed: the library's refusal where it
    /// printed one.
    fn unreported(&self, what: &str, output: &str) -> String {
        match refusal(output) {
            Some(why) => format!("the library refused the {} path: {why}", self.name),
            None => format!("{}: {what}", self.name),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn variant(flavor: Flavor, name: &str) -> &'static Variant {
        of(flavor).find(|v| v.name == name).unwrap()
    }

    const OMPI_UCX_SHM: &str = "[vm:03456] select: component ucx selected\n\
        [1795969691.802381] [vm:4082 :0] ucp_worker.c:1763 UCX  INFO    ep_cfg[0]: tag(self/memory0 cma/memory)\n\
        [1795969691.802535] [vm:4082 :0] ucp_worker.c:1763 UCX  INFO    ep_cfg[1]: tag(sysv/memory cma/memory)\n";

    #[test]
    fn ucx_lanes_are_checked_against_the_selection() {
        let shm = variant(Flavor::OpenMpi, "ucx-shm");
        assert_eq!(
            shm.check(OMPI_UCX_SHM),
            Some(Ok("pml:ucx tag(cma/memory sysv/memory)".into()))
        );
        // The same lanes where TCP was asked for: refused, with what was seen.
        let tcp = variant(Flavor::OpenMpi, "ucx-tcp");
        let err = tcp.check(OMPI_UCX_SHM).unwrap().unwrap_err();
        assert!(
            err.contains("outside tcp") && err.contains("sysv/memory"),
            "{err}"
        );
        // ob1 selected: not the UCX PML, whatever UCX printed.
        let ob1 = OMPI_UCX_SHM.replace("component ucx", "component ob1");
        assert!(shm.check(&ob1).unwrap().is_err());
        let mpich = variant(Flavor::Mpich, "ucx-shm");
        let lines = "UCX  INFO    ep_cfg[0]: tag(sysv/memory cma/memory) rma(self/memory0) am(sysv/memory)\n";
        assert_eq!(
            mpich.check(lines),
            Some(Ok("ch4:ucx tag(sysv/memory cma/memory)".into()))
        );
        assert!(variant(Flavor::OpenMpi, "tcp")
            .check(OMPI_UCX_SHM)
            .is_none());
    }

    #[test]
    fn ofi_provider_and_refusals() {
        let ok = "[vm:1] select: component cm selected\n[vm:1] ../mtl_ofi_component.c:337: mtl:ofi:prov: tcp;ofi_rxm\n";
        let tcp = variant(Flavor::OpenMpi, "ofi-tcp");
        assert_eq!(tcp.check(ok), Some(Ok("pml:cm mtl:ofi tcp;ofi_rxm".into())));
        let shm = variant(Flavor::OpenMpi, "ofi-shm");
        assert!(shm.check(ok).unwrap().unwrap_err().contains("not shm"));
        let refused = "[vm:04318] select: init returned failure for component cm\n\
            [vm:04318] PML cm cannot be selected\n[vm:04319] PML cm cannot be selected\n";
        let err = shm.check(refused).unwrap().unwrap_err();
        assert!(
            err.starts_with("the library refused the ofi-shm path"),
            "{err}"
        );
        assert_eq!(err.matches("PML cm cannot be selected").count(), 1, "{err}");
        assert!(tcp
            .check("")
            .unwrap()
            .unwrap_err()
            .contains("did not report"));
    }

    #[test]
    fn names_are_unique_per_flavor() {
        for f in [Flavor::OpenMpi, Flavor::Mpich] {
            let names: Vec<&str> = of(f).map(|v| v.name).collect();
            let mut sorted = names.clone();
            sorted.sort();
            sorted.dedup();
            assert_eq!(sorted.len(), names.len(), "{names:?}");
            assert_eq!(names.first(), Some(&"tcp"), "tcp first, as before");
        }
        assert_eq!(of(Flavor::Other).count(), 0);
    }
}
