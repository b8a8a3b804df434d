//! The sizes at which an MPI library changes protocol (eager to
//! rendezvous, one fragment to several), read from the library at run time
//! so that a drop-out or switch-over can be named after the limit that
//! causes it.
//!
//! * Open MPI: `ompi_info --param all all --level 9 --parsable` lists every
//!   MCA parameter as `mca:FRAMEWORK:COMPONENT:param:NAME:value:VALUE`,
//!   with the `OMPI_MCA_*` environment applied. The byte transfer layers'
//!   `*_eager_limit` (largest message sent without a handshake),
//!   `*_rndv_eager_limit` (data sent with the rendezvous request) and
//!   `*_max_send_size` (fragment size of a pipelined send) are kept for
//!   the layers a two-rank job uses: `vader` / `sm` (shared memory) and
//!   `tcp` (`self` carries only a rank's messages to itself).
//! * MPICH: `mpivars` prints every control variable through the MPI tool
//!   information interface (MPI_T) as `NAME=VALUE`, with the
//!   `MPIR_CVAR_*` environment applied. The eager limits
//!   (`*_EAGER_MAX_MSG_SIZE`, `*_EAGER_MAX_SZ`) and CH4's shared-memory
//!   cell size (`CH4_SHM_POSIX_IQUEUE_CELL_SIZE`: a larger message no
//!   longer fits one cell) are kept when positive (-1 means "the library
//!   decides", which says nothing).
//!
//! Only the limits of the path the ranks used become thresholds the
//! analysis names (see [`super::path`] and [`state_thresholds`]); the
//! result's `mpi.protocol_limits` keeps all of them.
//!
//! Launcher arguments that set the same parameters (`--mca NAME VALUE`,
//! `-genv NAME VALUE`) override what the tools print, as they override the
//! library's defaults. Either tool may be missing or fail: then no limits
//! are recorded, and the analysis says "no known threshold" rather than
//! guess.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use super::discover::{in_path, run_with_timeout, Flavor, MpiInstall};
pub use crate::result::ProtocolLimit;

/// Longest wait for `ompi_info` or `mpivars`.
const TOOL_TIMEOUT: Duration = Duration::from_secs(20);

/// What changes at the size of `limit`, in a few words.
pub fn what(limit: &ProtocolLimit) -> String {
    let n = limit.name.to_ascii_lowercase();
    let change = if n.contains("rndv_eager") {
        "data sent with the rendezvous request"
    } else if n.contains("eager") {
        "eager limit: larger messages use the rendezvous protocol and its handshake"
    } else if n.contains("max_send_size") {
        "fragment size: larger messages are sent in several fragments"
    } else if n.contains("cell_size") {
        "shared-memory cell: larger messages no longer fit one cell"
    } else {
        "protocol limit"
    };
    format!("MPI {} = {} B, {change}", limit.name, limit.bytes)
}

/// Whether an Open MPI parameter name is one of the limits kept.
fn open_mpi_kept(name: &str) -> bool {
    let layer = ["btl_vader_", "btl_sm_", "btl_tcp_"]
        .iter()
        .any(|p| name.starts_with(p));
    let limit = ["_eager_limit", "_max_send_size"]
        .iter()
        .any(|s| name.ends_with(s));
    layer && limit
}

/// Whether an MPICH control variable is one of the limits kept.
fn mpich_kept(name: &str) -> bool {
    name.starts_with("MPIR_CVAR_")
        && (name.ends_with("_EAGER_MAX_MSG_SIZE")
            || name.ends_with("_EAGER_MAX_SZ")
            || name == "MPIR_CVAR_CH4_SHM_POSIX_IQUEUE_CELL_SIZE")
}

/// The limits in `ompi_info --parsable` output.
pub fn parse_ompi_info(text: &str) -> Vec<ProtocolLimit> {
    text.lines()
        .filter_map(|line| {
            let f: Vec<&str> = line.trim().split(':').collect();
            // mca:btl:vader:param:btl_vader_eager_limit:value:4096
            if f.len() != 7 || f[0] != "mca" || f[3] != "param" || f[5] != "value" {
                return None;
            }
            let bytes = f[6].parse::<u64>().ok().filter(|&b| b > 0)?;
            open_mpi_kept(f[4]).then(|| ProtocolLimit {
                name: f[4].to_string(),
                bytes,
            })
        })
        .collect()
}

/// The limits in `mpivars` output (`\tNAME   =VALUE\tSCOPE...`).
pub fn parse_mpivars(text: &str) -> Vec<ProtocolLimit> {
    let mut out: Vec<ProtocolLimit> = text
        .lines()
        .filter_map(|line| {
            let (name, rest) = line.trim_start().split_once('=')?;
            let name = name.trim();
            let value = rest.split(|c: char| c.is_whitespace()).next()?;
            let bytes = value.parse::<i64>().ok().filter(|&b| b > 0)? as u64;
            mpich_kept(name).then(|| ProtocolLimit {
                name: name.to_string(),
                bytes,
            })
        })
        .collect();
    // mpivars lists some variables twice (by category).
    out.dedup();
    out
}

/// Apply `--mca NAME VALUE` and `-genv NAME VALUE` from the launcher's
/// arguments on top of `limits`.
pub fn apply_overrides(mut limits: Vec<ProtocolLimit>, args: &[String]) -> Vec<ProtocolLimit> {
    for w in args.windows(3) {
        let name = match w[0].as_str() {
            "--mca" | "-mca" if open_mpi_kept(&w[1]) => w[1].clone(),
            "-genv" | "-env" if mpich_kept(&w[1]) => w[1].clone(),
            _ => continue,
        };
        let Ok(bytes) = w[2].parse::<u64>() else {
            continue;
        };
        limits.retain(|l| l.name != name);
        if bytes > 0 {
            limits.push(ProtocolLimit { name, bytes });
        }
    }
    limits
}

/// Run `tool` (found beside the launcher, else in PATH) with `args`; its
/// standard output, or None when it is missing or fails.
fn run_tool(launcher: &Path, tool: &str, args: &[&str]) -> Option<String> {
    let beside = launcher
        .parent()
        .map(|d| d.join(tool))
        .filter(|p| p.is_file());
    let path = beside.or_else(|| in_path(tool))?;
    let out = run_with_timeout(Command::new(path).args(args), TOOL_TIMEOUT).ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The protocol limits of `install` as its launcher with `launcher_args`
/// will run it; empty when they cannot be read.
pub fn protocol_limits(install: &MpiInstall, launcher_args: &[String]) -> Vec<ProtocolLimit> {
    let read = match install.flavor {
        Flavor::OpenMpi => run_tool(
            &install.launcher,
            "ompi_info",
            &["--param", "all", "all", "--level", "9", "--parsable"],
        )
        .map(|t| parse_ompi_info(&t)),
        Flavor::Mpich => run_tool(&install.launcher, "mpivars", &[]).map(|t| parse_mpivars(&t)),
        Flavor::Other => None,
    };
    apply_overrides(read.unwrap_or_default(), launcher_args)
}

/// Add the `limits` of the mechanisms in use to the thresholds of the
/// sweep `result` (see [`crate::result::THRESHOLDS_KEY`]), so the analysis
/// can name events after them: only those of the data path rank 0
/// recorded ([`super::path::DATA_PATH_KEY`]: the tcp BTL's on the path
/// forced onto TCP, the shared-memory BTL's on the default one, never
/// CH3's for a CH4 build), none when no path was recorded (a wrong cause
/// is worse than none). `on_tcp`: the sweep is the variant forced onto
/// TCP; a path through shared memory then gets a warning, as the sweep
/// does not measure TCP.
pub fn state_thresholds(
    result: &mut crate::result::SweepResult,
    limits: &[ProtocolLimit],
    on_tcp: bool,
) {
    let path = result
        .options
        .transport
        .get(super::path::DATA_PATH_KEY)
        .and_then(|p| p.as_str())
        .map(str::to_string);
    let Some(path) = path else { return };
    if on_tcp && super::path::is_shared_memory(&path) {
        result.warnings.push(format!(
            "forced onto TCP, the ranks still exchanged their messages through shared memory \
             ({path}): this sweep does not measure TCP"
        ));
    }
    let list: Vec<(u64, String)> = limits
        .iter()
        .filter(|l| super::path::limit_in_use(&path, &l.name))
        .map(|l| (l.bytes, what(l)))
        .collect();
    if list.is_empty() {
        return;
    }
    result.options.transport.insert(
        crate::result::THRESHOLDS_KEY.into(),
        crate::result::thresholds_value(&list),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn open_mpi_limits_from_ompi_info() {
        let text = "mca:btl:vader:param:btl_vader_eager_limit:value:4096\n\
                    mca:btl:vader:param:btl_vader_eager_limit:source:default\n\
                    mca:btl:vader:param:btl_vader_max_send_size:value:32768\n\
                    mca:btl:tcp:param:btl_tcp_eager_limit:value:65536\n\
                    mca:btl:ofi:param:btl_ofi_eager_limit:value:0\n\
                    mca:btl:openib:param:btl_openib_eager_limit:value:12288\n\
                    mca:btl:self:param:btl_self_eager_limit:value:1024\n\
                    mca:pml:ob1:param:pml_ob1_free_list_num:value:4\n";
        let got = parse_ompi_info(text);
        let names: Vec<(&str, u64)> = got.iter().map(|l| (l.name.as_str(), l.bytes)).collect();
        assert_eq!(
            names,
            vec![
                ("btl_vader_eager_limit", 4096),
                ("btl_vader_max_send_size", 32768),
                ("btl_tcp_eager_limit", 65536)
            ]
        );
        assert!(what(&got[0]).contains("eager limit"), "{}", what(&got[0]));
        // A launcher argument overrides the library's value.
        let args: Vec<String> = ["--mca", "btl_vader_eager_limit", "8192", "-np", "2"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let over = apply_overrides(got, &args);
        assert!(over.contains(&ProtocolLimit {
            name: "btl_vader_eager_limit".into(),
            bytes: 8192
        }));
        assert_eq!(over.len(), 3);
    }

    #[test]
    fn mpich_limits_from_mpivars() {
        let text = "\tMPIR_CVAR_CH3_EAGER_MAX_MSG_SIZE=131072\tSCOPE_ALL_EQ\tNo-object\tMPI_INT\n\
                    \tMPIR_CVAR_CH4_OFI_EAGER_MAX_MSG_SIZE=-1\tSCOPE_LOCAL\tNo-object\tMPI_INT\n\
                    \tMPIR_CVAR_CH4_SHM_POSIX_IQUEUE_CELL_SIZE=69632\tSCOPE_ALL_EQ\n\
                    \tMPIR_CVAR_BCAST_SHORT_MSG_SIZE  =12288\tSCOPE_ALL_EQ\n\
                    \tMPIR_CVAR_CH3_EAGER_MAX_MSG_SIZE:\tSCOPE_ALL_EQ\n";
        let got = parse_mpivars(text);
        let names: Vec<(&str, u64)> = got.iter().map(|l| (l.name.as_str(), l.bytes)).collect();
        assert_eq!(
            names,
            vec![
                ("MPIR_CVAR_CH3_EAGER_MAX_MSG_SIZE", 131072),
                ("MPIR_CVAR_CH4_SHM_POSIX_IQUEUE_CELL_SIZE", 69632)
            ]
        );
        assert!(what(&got[1]).contains("cell"));
    }

    /// Only the limits of the recorded path become thresholds: Open MPI's
    /// tcp BTL's on the variant forced onto TCP, its shared-memory BTL's on
    /// the default path, none of CH3's for an MPICH built ch4:ucx, none
    /// when no path was recorded.
    #[test]
    fn thresholds_only_of_the_path_in_use() {
        let text = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/tcp-pingpong.json"
        ))
        .unwrap();
        let base: crate::result::SweepResult = serde_json::from_str(&text).unwrap();
        let limits: Vec<ProtocolLimit> = [
            ("btl_vader_eager_limit", 4096),
            ("btl_tcp_eager_limit", 65536),
            ("MPIR_CVAR_CH3_EAGER_MAX_MSG_SIZE", 131072),
            ("MPIR_CVAR_CH4_SHM_POSIX_IQUEUE_CELL_SIZE", 69632),
        ]
        .iter()
        .map(|&(name, bytes)| ProtocolLimit {
            name: name.into(),
            bytes,
        })
        .collect();
        let stated = |path: Option<&str>, on_tcp: bool| {
            let mut r = base.clone();
            r.options.transport.clear();
            r.warnings.clear();
            if let Some(p) = path {
                r.options
                    .transport
                    .insert(super::super::path::DATA_PATH_KEY.into(), p.into());
            }
            state_thresholds(&mut r, &limits, on_tcp);
            let named: Vec<u64> = r
                .options
                .transport
                .get(crate::result::THRESHOLDS_KEY)
                .and_then(|t| t.as_array().cloned())
                .unwrap_or_default()
                .iter()
                .filter_map(|t| t["bytes"].as_u64())
                .collect();
            (named, r.warnings.len())
        };
        assert_eq!(stated(Some("btl:tcp"), true), (vec![65536], 0));
        assert_eq!(stated(Some("btl:vader"), false), (vec![4096], 0));
        // MPICH built ch4:ucx: neither CH3's eager limit nor, on one host,
        // CH4's shared-memory cell (UCX may carry local messages).
        assert_eq!(stated(Some("ch4:ucx/local"), false), (vec![], 0));
        assert_eq!(stated(Some("ch4:ucx"), true), (vec![], 0));
        assert_eq!(stated(Some("ch3:sock"), false), (vec![131072], 0));
        assert_eq!(stated(None, false), (vec![], 0));
        // Forced onto TCP yet through shared memory: said in a warning.
        assert_eq!(stated(Some("btl:vader"), true), (vec![4096], 1));
    }

    /// The libraries installed here answer (skipped when one is missing).
    #[test]
    fn installed_libraries_state_their_limits() {
        for flavor in [Flavor::OpenMpi, Flavor::Mpich] {
            let Ok(install) = super::super::discover::builtin(flavor) else {
                continue;
            };
            let limits = protocol_limits(&install, &[]);
            assert!(!limits.is_empty(), "{}: no limits read", flavor.name());
            assert!(limits.iter().all(|l| l.bytes > 0));
        }
    }
}
