//! What the machine is: the fingerprint stored with every result, and the
//! small operating-system services the measurement needs (CPU pinning,
//! per-thread CPU accounting, cache sizes).
//!
//! Everything here reads /proc and /sys or asks the kernel directly (the
//! ethtool ioctl, rtnetlink for queueing disciplines); nothing runs a
//! subprocess. What cannot be read is reported
//! as unknown (`None`), never as an error: a container without /sys must
//! still be able to measure.
//!
//! * [`Host`]: CPU, caches, NUMA, memory, kernel, clock source, load, TCP
//!   sysctls and the interfaces used; [`Host::describe_text`] for `wulf info`;
//! * [`interface`]: which interface reaches a peer and what it is;
//! * [`qdisc`]: the interface's root queueing discipline and shaping rate;
//! * [`path`]: whether a peer is this machine (same kernel, loopback path);
//! * [`link_limit`]: the theoretical TCP goodput of a link;
//! * [`net_counters`]: TCP retransmissions and interface drops;
//! * [`thread_run_delay_ns`]: how long this thread waited for a CPU;
//!   [`HelperCpu`]: how long a transport's helper processes ran.

pub mod control_mark;
mod cpu;
mod describe;
pub mod dynlib;
mod ethtool;
mod host;
pub mod interface;
pub mod link_limit;
pub mod net_counters;
pub mod path;
pub mod procs;
pub mod qdisc;
pub mod random;
mod schedstat;
mod tcp_sysctl;
mod topology;

pub use cpu::{cpu_count, online_cpu_count, pin_current_thread, thread_cpu_time, CpuTime};
pub use describe::BOUND_KEY;
pub use host::{last_level_cache_bytes, load_average, Host};
pub use interface::{
    describe_interface, interface_for_peer, pcie_limits_link, route_for_peer, Coalesce, Interface,
    Offloads, PcieLink, Route,
};
pub use link_limit::{tcp_goodput_limit, Framing, IpVersion, LinkLimit};
pub use path::{recorded_same_machine, same_machine};
pub use schedstat::{run_delay_since, thread_run_delay_ns, HelperCpu};
pub use tcp_sysctl::TcpSysctls;
pub(crate) use topology::memory_total_bytes;
pub use topology::Cache;

/// The memory page size (sysconf), 4096 when it cannot be read: the unit
/// in which the kernel pins, maps and buffers memory, named by the causes
/// of page-boundary steps.
pub fn page_bytes() -> u64 {
    nix::unistd::sysconf(nix::unistd::SysconfVar::PAGE_SIZE)
        .ok()
        .flatten()
        .filter(|&p| p > 0)
        .unwrap_or(4096) as u64
}
