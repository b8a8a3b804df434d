//! CPU topology, caches, NUMA nodes, memory and clock source, read from sysfs
//! and procfs.
//!
//! Every reader returns `None` when the file is missing or unparsable: a
//! container or an unusual kernel must still be able to measure, it only
//! describes itself less.

use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;

const CPU_DIR: &str = "/sys/devices/system/cpu";

/// One CPU cache as seen from CPU 0.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Cache {
    /// Cache level (1 for L1, 2 for L2, ...).
    pub level: u32,
    /// "Data", "Instruction" or "Unified", as the kernel names it.
    pub kind: String,
    /// Capacity in bytes.
    pub size_bytes: u64,
    /// How many logical CPUs share this cache, when the kernel says.
    #[serde(default)]
    pub shared_by_cpus: Option<usize>,
}

/// Sockets, physical cores and hardware threads per core over the online
/// CPUs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Topology {
    pub sockets: usize,
    pub cores: usize,
    pub threads_per_core: usize,
}

/// Parse a kernel CPU list such as "0-3,8,10-11" into its members.
pub(crate) fn parse_cpu_list(s: &str) -> Option<Vec<usize>> {
    let s = s.trim();
    if s.is_empty() {
        return Some(Vec::new());
    }
    let mut out = Vec::new();
    for part in s.split(',') {
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b) = (
                    a.trim().parse::<usize>().ok()?,
                    b.trim().parse::<usize>().ok()?,
                );
                if b < a {
                    return None;
                }
                out.extend(a..=b);
            }
            None => out.push(part.trim().parse().ok()?),
        }
    }
    Some(out)
}

fn read_trim(path: &str) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
}

/// Count sockets, cores and threads from the topology directory of each
/// online CPU. Two sibling-list reads per CPU keep this cheap even on large
/// machines.
pub(crate) fn topology() -> Option<Topology> {
    let online = parse_cpu_list(&read_trim(&format!("{CPU_DIR}/online"))?)?;
    if online.is_empty() {
        return None;
    }
    let mut packages = BTreeSet::new();
    let mut cores = BTreeSet::new();
    for cpu in &online {
        let dir = format!("{CPU_DIR}/cpu{cpu}/topology");
        // A core is identified by the set of its hardware threads; core_id
        // alone repeats across sockets.
        let siblings = read_trim(&format!("{dir}/thread_siblings_list"))?;
        let package = read_trim(&format!("{dir}/physical_package_id"))?;
        cores.insert(siblings);
        packages.insert(package);
    }
    let threads_per_core = online.len().div_ceil(cores.len());
    Some(Topology {
        sockets: packages.len(),
        cores: cores.len(),
        threads_per_core,
    })
}

/// Caches of CPU 0, smallest level first.
pub(crate) fn caches() -> Option<Vec<Cache>> {
    let dir = std::fs::read_dir(format!("{CPU_DIR}/cpu0/cache")).ok()?;
    let mut out: Vec<Cache> = dir
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with("index"))
        .filter_map(|e| {
            let p = e.path();
            let read = |f: &str| {
                std::fs::read_to_string(p.join(f))
                    .ok()
                    .map(|s| s.trim().to_string())
            };
            Some(Cache {
                level: read("level")?.parse().ok()?,
                kind: read("type")?,
                size_bytes: super::host::parse_cache_size(&read("size")?)?,
                shared_by_cpus: read("shared_cpu_list")
                    .and_then(|l| parse_cpu_list(&l))
                    .map(|v| v.len()),
            })
        })
        .collect();
    if out.is_empty() {
        return None;
    }
    out.sort_by(|a, b| (a.level, &a.kind).cmp(&(b.level, &b.kind)));
    Some(out)
}

/// Number of online NUMA nodes; `None` on kernels built without NUMA.
pub(crate) fn numa_nodes() -> Option<usize> {
    let list = parse_cpu_list(&read_trim("/sys/devices/system/node/online")?)?;
    (!list.is_empty()).then_some(list.len())
}

/// Total memory in bytes from /proc/meminfo.
pub(crate) fn memory_total_bytes() -> Option<u64> {
    parse_meminfo_total(&std::fs::read_to_string("/proc/meminfo").ok()?)
}

fn parse_meminfo_total(text: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
    let mut it = line["MemTotal:".len()..].split_whitespace();
    let n: u64 = it.next()?.parse().ok()?;
    // /proc/meminfo says "kB" but means KiB.
    match it.next() {
        Some("kB") => Some(n * 1024),
        None => Some(n),
        Some(_) => None,
    }
}

/// The kernel's current clock source ("tsc", "kvm-clock", "hpet", ...). It
/// decides what a timestamp costs and how far it can be trusted.
pub(crate) fn clock_source() -> Option<String> {
    read_trim("/sys/devices/system/clocksource/clocksource0/current_clocksource")
        .filter(|s| !s.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists_parse() {
        assert_eq!(parse_cpu_list("0"), Some(vec![0]));
        assert_eq!(parse_cpu_list("0-3,8"), Some(vec![0, 1, 2, 3, 8]));
        assert_eq!(parse_cpu_list("0-1,4-5\n"), Some(vec![0, 1, 4, 5]));
        assert_eq!(parse_cpu_list(""), Some(vec![]));
        assert_eq!(parse_cpu_list("3-1"), None);
        assert_eq!(parse_cpu_list("x"), None);
    }

    #[test]
    fn meminfo_parses() {
        let text = "MemTotal:       24586912 kB\nMemFree: 1 kB\n";
        assert_eq!(parse_meminfo_total(text), Some(24586912 * 1024));
        assert_eq!(parse_meminfo_total("MemFree: 1 kB"), None);
    }

    #[test]
    fn this_machine_has_a_topology() {
        // Every field may legitimately be unknown elsewhere; on Linux with
        // sysfs these should all be present and self-consistent.
        if let Some(t) = topology() {
            assert!(t.sockets >= 1 && t.cores >= t.sockets && t.threads_per_core >= 1);
        }
        if let Some(c) = caches() {
            assert!(c.iter().all(|c| c.level >= 1 && c.size_bytes > 0));
        }
    }
}
