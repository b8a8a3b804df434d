//! The host block of a result: what the machine is, read cheaply (a few
//! dozen small sysfs and procfs reads, well under 20 ms) so that every run can
//! carry it.

use std::net::IpAddr;

use serde::{Deserialize, Serialize};

use super::interface::{describe_interface, interface_for_peer, Interface};
use super::tcp_sysctl::TcpSysctls;
use super::topology::{self, Cache};

/// Description of one machine, as stored in results.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Host {
    /// Host name.
    pub hostname: String,
    /// CPU model name from /proc/cpuinfo, if readable.
    pub cpu_model: Option<String>,
    /// Logical CPUs online.
    pub cpus: usize,
    /// Kernel release (`uname -r`).
    pub kernel: String,
    /// Last-level cache size in bytes, if the kernel reports it.
    pub llc_bytes: Option<u64>,
    /// 1, 5 and 15 minute load averages when the run started.
    pub load_before: [f64; 3],
    /// Load averages when the run ended.
    pub load_after: Option<[f64; 3]>,
    /// CPU sockets (packages) with online CPUs.
    #[serde(default)]
    pub sockets: Option<usize>,
    /// Physical cores over the online CPUs; `cpus` counts hardware threads.
    #[serde(default)]
    pub cores: Option<usize>,
    /// Hardware threads per core (2 with SMT on, 1 without).
    #[serde(default)]
    pub threads_per_core: Option<usize>,
    /// Caches as seen from CPU 0, lowest level first.
    #[serde(default)]
    pub caches: Option<Vec<Cache>>,
    /// Online NUMA nodes.
    #[serde(default)]
    pub numa_nodes: Option<usize>,
    /// Total memory in bytes.
    #[serde(default)]
    pub memory_total_bytes: Option<u64>,
    /// The kernel's clock source, e.g. "tsc" or "kvm-clock".
    #[serde(default)]
    pub clock_source: Option<String>,
    /// Socket-buffer and TCP sysctls of the probing process's namespace.
    #[serde(default)]
    pub tcp_sysctls: TcpSysctls,
    /// The network interfaces the measurement used (found from the route to
    /// the peer); empty for transports that use none.
    #[serde(default)]
    pub interfaces: Vec<Interface>,
}

impl Host {
    /// Read this machine's description now (load_after left empty, no
    /// interfaces: see [`Host::with_interface_for_peer`]).
    pub fn probe() -> Host {
        let uname = nix::sys::utsname::uname().ok();
        let topo = topology::topology();
        Host {
            hostname: nix::unistd::gethostname()
                .ok()
                .and_then(|h| h.into_string().ok())
                .unwrap_or_else(|| "unknown".into()),
            cpu_model: cpu_model(),
            cpus: super::cpu_count(),
            kernel: uname
                .map(|u| u.release().to_string_lossy().into_owned())
                .unwrap_or_else(|| "unknown".into()),
            llc_bytes: last_level_cache_bytes(),
            load_before: load_average().unwrap_or([0.0; 3]),
            load_after: None,
            sockets: topo.map(|t| t.sockets),
            cores: topo.map(|t| t.cores),
            threads_per_core: topo.map(|t| t.threads_per_core),
            caches: topology::caches(),
            numa_nodes: topology::numa_nodes(),
            memory_total_bytes: topology::memory_total_bytes(),
            clock_source: topology::clock_source(),
            tcp_sysctls: TcpSysctls::probe(),
            interfaces: Vec::new(),
        }
    }

    /// Add the description of the interface the route to `peer` uses (once:
    /// an interface already listed is not added again). Without a route
    /// nothing is added.
    pub fn with_interface_for_peer(mut self, peer: IpAddr) -> Host {
        if let Some(name) = interface_for_peer(peer) {
            if !self.interfaces.iter().any(|i| i.name == name) {
                self.interfaces.push(describe_interface(&name));
            }
        }
        self
    }
}

fn cpu_model() -> Option<String> {
    let text = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    text.lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_string())
}

/// The 1, 5 and 15 minute load averages from /proc/loadavg.
pub fn load_average() -> Option<[f64; 3]> {
    let text = std::fs::read_to_string("/proc/loadavg").ok()?;
    let mut it = text.split_whitespace().map(|f| f.parse::<f64>().ok());
    Some([it.next()??, it.next()??, it.next()??])
}

/// Size of the largest cache of CPU 0 in bytes, from sysfs.
pub fn last_level_cache_bytes() -> Option<u64> {
    let dir = std::fs::read_dir("/sys/devices/system/cpu/cpu0/cache").ok()?;
    dir.filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with("index"))
        .filter_map(|e| std::fs::read_to_string(e.path().join("size")).ok())
        .filter_map(|s| parse_cache_size(s.trim()))
        .max()
}

/// Parse a sysfs cache size ("32K", "1M", "512").
pub(crate) fn parse_cache_size(s: &str) -> Option<u64> {
    let (num, mult) = match s.chars().last()? {
        'K' => (&s[..s.len() - 1], 1024),
        'M' => (&s[..s.len() - 1], 1024 * 1024),
        'G' => (&s[..s.len() - 1], 1024 * 1024 * 1024),
        _ => (s, 1),
    };
    num.parse::<u64>().ok().map(|n| n * mult)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cache_sizes_parse() {
        assert_eq!(parse_cache_size("32K"), Some(32 * 1024));
        assert_eq!(parse_cache_size("32M"), Some(32 << 20));
        assert_eq!(parse_cache_size("512"), Some(512));
        assert_eq!(parse_cache_size("x"), None);
    }

    #[test]
    fn probe_reads_this_machine() {
        let h = Host::probe();
        assert!(h.cpus >= 1);
        assert!(!h.kernel.is_empty());
        assert!(h.load_before.iter().all(|l| *l >= 0.0));
    }
}
