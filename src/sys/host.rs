//! The host block of a result: what the machine is, read cheaply (a few
//! dozen small sysfs and procfs reads, well under 20 ms) so that every run can
//! carry it.

use std::net::IpAddr;

use serde::{Deserialize, Serialize};

use super::interface::{describe_interface, route_for_peer, Interface};
use super::tcp_sysctl::TcpSysctls;
use super::topology::{self, Cache};

/// Description of one machine, as stored in results.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Host {
    /// Host name.
    pub hostname: String,
    /// CPU model name from /proc/cpuinfo, if readable.
    pub cpu_model: Option<String>,
    /// Logical CPUs online on the machine (not the probing process's
    /// binding: see `bound_cpus`).
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
    /// The running kernel's boot id (/proc/sys/kernel/random/boot_id): equal
    /// on both ends only when they run under the same kernel, whatever their
    /// host names (namespaces and containers share it, other machines and
    /// virtual machines do not).
    #[serde(default)]
    pub boot_id: Option<String>,
    /// Whether the route to the peer leaves through a network interface
    /// (true) or through loopback (false: the peer's address is one of this
    /// network namespace's own); `None` when no peer was probed or there is
    /// no route. See [`super::path`].
    #[serde(default)]
    pub path_crosses_interface: Option<bool>,
    /// The CPUs the probing process was allowed to run on (its affinity
    /// mask), recorded apart from the machine's `cpus`: an MPI rank bound to
    /// one core reads 1 here and the machine's count in `cpus`. `None` in
    /// files written before it was recorded (their `cpus` was this count).
    #[serde(default)]
    pub bound_cpus: Option<usize>,
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
            cpus: super::online_cpu_count(),
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
            boot_id: boot_id(),
            path_crosses_interface: None,
            bound_cpus: Some(super::cpu_count()),
        }
    }

    /// Add the description of the interface the route to `peer` uses (once:
    /// an interface already listed is not added again), and record whether
    /// that route crosses a network interface. Without a route nothing is
    /// added.
    pub fn with_interface_for_peer(mut self, peer: IpAddr) -> Host {
        let route = route_for_peer(peer);
        self.path_crosses_interface = route.as_ref().map(|r| !r.loopback);
        if let Some(r) = route {
            if !self.interfaces.iter().any(|i| i.name == r.interface) {
                self.interfaces.push(describe_interface(&r.interface));
            }
        }
        self
    }

    /// Add the description of the interface holding `local`, one of this
    /// machine's own addresses (where an agent serves): unlike
    /// [`Host::with_interface_for_peer`], an own address is not taken for a
    /// loopback path.
    pub fn with_interface_holding(mut self, local: IpAddr) -> Host {
        if let Some(name) = super::interface::interface_holding(local) {
            if !self.interfaces.iter().any(|i| i.name == name) {
                self.interfaces.push(describe_interface(&name));
            }
        }
        self
    }
}

/// The kernel's boot id: a random UUID drawn at every boot.
fn boot_id() -> Option<String> {
    let text = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
    Some(text.trim().to_string()).filter(|s| !s.is_empty())
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
        // Linux always has a boot id; the same one for every probe.
        let id = h.boot_id.expect("boot id");
        assert_eq!(id.len(), 36, "{id}");
        assert_eq!(Host::probe().boot_id.as_deref(), Some(id.as_str()));
        assert_eq!(h.path_crosses_interface, None);
        let bound = h.bound_cpus.expect("affinity mask");
        assert!(bound >= 1 && bound <= h.cpus, "{bound} of {}", h.cpus);
    }

    /// The fingerprint counts the machine's CPUs, not the binding: a thread
    /// pinned to one CPU (as `mpirun` binds a rank) still records every
    /// online CPU, and its binding apart.
    #[test]
    fn a_bound_process_records_the_machine_and_its_binding_apart() {
        let online = crate::sys::online_cpu_count();
        let h = std::thread::spawn(|| {
            crate::sys::pin_current_thread(0).expect("pin to CPU 0");
            Host::probe()
        })
        .join()
        .unwrap();
        assert_eq!((h.cpus, h.bound_cpus), (online, Some(1)));
    }

    #[test]
    fn loopback_peer_path_does_not_cross_an_interface() {
        let h = Host::probe().with_interface_for_peer("127.0.0.1".parse().unwrap());
        assert_eq!(h.path_crosses_interface, Some(false));
    }

    /// Result files written before the boot id and path existed still load.
    #[test]
    fn old_host_blocks_load() {
        let mut v = serde_json::to_value(Host::probe()).unwrap();
        let m = v.as_object_mut().unwrap();
        m.remove("boot_id");
        m.remove("path_crosses_interface");
        m.remove("bound_cpus");
        let h: Host = serde_json::from_value(v).unwrap();
        assert_eq!((h.boot_id, h.path_crosses_interface), (None, None));
        assert_eq!(h.bound_cpus, None);
    }
}
