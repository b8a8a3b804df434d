//! Human-readable text for `wulf info`: the host block and its interfaces,
//! one topic per line, "unknown" where nothing could be read.

use std::fmt::Write;

use super::host::Host;
use super::interface::{pcie_limits_link, Interface};
use super::link_limit::IpVersion;
use super::tcp_sysctl::TcpSysctls;
use crate::units::format_bytes;

const UNKNOWN: &str = "unknown";

/// How the binding line of [`Host::describe_text`] starts (a report keeps
/// it out of the machine's block: it belongs to one result's process).
pub const BOUND_KEY: &str = "bound ";

fn opt<T: ToString>(v: &Option<T>) -> String {
    v.as_ref()
        .map(|x| x.to_string())
        .unwrap_or_else(|| UNKNOWN.into())
}

fn on_off(v: Option<bool>) -> &'static str {
    match v {
        Some(true) => "on",
        Some(false) => "off",
        None => UNKNOWN,
    }
}

fn bytes(v: Option<u64>) -> String {
    v.map(format_bytes).unwrap_or_else(|| UNKNOWN.into())
}

fn triple(v: Option<[u64; 3]>) -> String {
    v.map(|[a, b, c]| {
        format!(
            "min {} default {} max {}",
            format_bytes(a),
            format_bytes(b),
            format_bytes(c)
        )
    })
    .unwrap_or_else(|| UNKNOWN.into())
}

fn loads(l: &[f64; 3]) -> String {
    format!("{:.2} {:.2} {:.2}", l[0], l[1], l[2])
}

impl Host {
    /// A multi-line, human-readable description (what `wulf info` prints).
    pub fn describe_text(&self) -> String {
        let mut out = String::new();
        let mut line = |k: &str, v: String| {
            let _ = writeln!(out, "{k:<13}{v}");
        };
        line("host", self.hostname.clone());
        line("cpu", opt(&self.cpu_model));
        let mut topo = format!("{} logical CPUs", self.cpus);
        if let (Some(s), Some(c), Some(t)) = (self.sockets, self.cores, self.threads_per_core) {
            let _ = write!(topo, ": {s} socket(s), {c} core(s), {t} thread(s) per core");
        }
        line("cpus", topo);
        // The binding is the process's, not the machine's: said apart, and
        // only when it leaves CPUs out (an MPI rank bound to one core).
        if let Some(bound) = self.bound_cpus.filter(|&b| b < self.cpus) {
            line(
                BOUND_KEY.trim_end(),
                format!("this process may run on {bound} of the {} CPUs", self.cpus),
            );
        }
        let caches = match &self.caches {
            Some(cs) => cs
                .iter()
                .map(|c| {
                    let kind = match c.kind.as_str() {
                        "Data" => "d",
                        "Instruction" => "i",
                        _ => "",
                    };
                    let shared = match c.shared_by_cpus {
                        Some(n) if n > 1 => format!(" (shared by {n} CPUs)"),
                        _ => String::new(),
                    };
                    format!("L{}{kind} {}{shared}", c.level, format_bytes(c.size_bytes))
                })
                .collect::<Vec<_>>()
                .join(", "),
            None => UNKNOWN.into(),
        };
        line("caches", caches);
        line("numa nodes", opt(&self.numa_nodes));
        line("memory", bytes(self.memory_total_bytes));
        line("kernel", self.kernel.clone());
        // Tells whether two ends run under one kernel (see sys::path).
        line("boot id", opt(&self.boot_id));
        line("clock source", opt(&self.clock_source));
        let mut load = format!("{} (before)", loads(&self.load_before));
        if let Some(after) = &self.load_after {
            let _ = write!(load, ", {} (after)", loads(after));
        }
        line("load", load);
        for l in tcp_lines(&self.tcp_sysctls) {
            line("tcp", l);
        }
        for i in &self.interfaces {
            out.push_str(&i.describe_text());
        }
        out
    }
}

fn tcp_lines(t: &TcpSysctls) -> Vec<String> {
    let ts = match t.timestamps {
        Some(0) => "off".to_string(),
        Some(v) => format!("on ({v})"),
        None => UNKNOWN.into(),
    };
    vec![
        format!(
            "core rmem default {} max {}, wmem default {} max {}",
            bytes(t.core_rmem_default_bytes),
            bytes(t.core_rmem_max_bytes),
            bytes(t.core_wmem_default_bytes),
            bytes(t.core_wmem_max_bytes)
        ),
        format!("tcp_rmem {}", triple(t.tcp_rmem_bytes)),
        format!("tcp_wmem {}", triple(t.tcp_wmem_bytes)),
        format!(
            "congestion control {}, timestamps {ts}, window scaling {}, sack {}",
            opt(&t.congestion_control),
            on_off(t.window_scaling),
            on_off(t.sack)
        ),
    ]
}

impl Interface {
    /// A multi-line, human-readable description, including the TCP goodput
    /// limit (IPv4, timestamps on) and the PCIe warning when they apply.
    pub fn describe_text(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "interface    {}{}",
            self.name,
            if self.is_virtual == Some(true) {
                " (virtual)"
            } else {
                ""
            }
        );
        let mut line = |k: &str, v: String| {
            let _ = writeln!(out, "  {k:<11}{v}");
        };
        line(
            "driver",
            format!(
                "{} version {}, firmware {}, bus {}",
                opt(&self.driver),
                opt(&self.driver_version),
                opt(&self.firmware_version),
                opt(&self.bus_info)
            ),
        );
        let speed = speed_text(self);
        line(
            "link",
            format!(
                "MTU {}, speed {speed}, duplex {}, qdisc {}",
                opt(&self.mtu_bytes),
                opt(&self.duplex),
                opt(&self.qdisc)
            ),
        );
        let pcie = match &self.pcie {
            Some(p) => {
                let gen = |s: Option<f64>, w: Option<u32>| format!("{} GT/s x{}", opt(&s), opt(&w));
                format!(
                    "{}: {} (max {})",
                    p.address,
                    gen(p.current_speed_gt_per_s, p.current_width_lanes),
                    gen(p.max_speed_gt_per_s, p.max_width_lanes)
                )
            }
            None => "none or unknown".into(),
        };
        line("pcie", pcie);
        let o = &self.offloads;
        line(
            "offloads",
            format!(
                "tso {}, gso {}, gro {}, lro {}, rx-checksum {}, tx-checksum {}, scatter-gather {}",
                on_off(o.tso),
                on_off(o.gso),
                on_off(o.gro),
                on_off(o.lro),
                on_off(o.rx_checksum),
                on_off(o.tx_checksum),
                on_off(o.scatter_gather)
            ),
        );
        let co = match &self.coalesce {
            Some(c) => format!(
                "rx {} us / {} frames{}, tx {} us / {} frames{}",
                c.rx_usecs,
                c.rx_max_frames,
                if c.adaptive_rx { " (adaptive)" } else { "" },
                c.tx_usecs,
                c.tx_max_frames,
                if c.adaptive_tx { " (adaptive)" } else { "" }
            ),
            None => UNKNOWN.into(),
        };
        line("coalescing", co);
        if let Some(l) = self.link_limit(IpVersion::V4, true) {
            let text = if self.is_shaped() {
                // Behind a shaper only the shaper's accounting applies.
                format!(
                    "{:.2} Mbit/s behind the {} shaper (IPv4, timestamps)",
                    l.goodput_shaped_mbit_per_s,
                    self.qdisc.as_deref().unwrap_or("root")
                )
            } else {
                format!(
                    "{:.2} Mbit/s on Ethernet, {:.2} Mbit/s behind a shaper (IPv4, timestamps)",
                    l.goodput_ethernet_mbit_per_s, l.goodput_shaped_mbit_per_s
                )
            };
            line("tcp limit", text);
        }
        if let Some(w) = pcie_limits_link(self) {
            line("WARNING", w);
        }
        out
    }
}

/// The link speed as `wulf info` shows it: the shaper's rate when a shaper
/// sets it, with the nominal speed beside it (`speed 1000 Mbit/s (shaped:
/// htb; nominal 10000)`); a virtual device's own speed is only a label.
fn speed_text(i: &Interface) -> String {
    if i.is_shaped() {
        if let Some(mbit) = i.effective_speed_mbit_per_s() {
            return format!(
                "{} Mbit/s (shaped: {}; nominal {})",
                mbit_text(mbit),
                i.qdisc.as_deref().unwrap_or(UNKNOWN),
                opt(&i.speed_mbit_per_s)
            );
        }
    }
    let nominal = if i.is_virtual == Some(true) {
        " (nominal)"
    } else {
        ""
    };
    i.speed_mbit_per_s
        .map(|s| format!("{s} Mbit/s{nominal}"))
        .unwrap_or_else(|| UNKNOWN.into())
}

/// Mbit/s without a fraction when whole (a shaper's rate in bit/s need not
/// be a whole number of Mbit/s).
fn mbit_text(mbit: f64) -> String {
    if mbit.fract() == 0.0 {
        format!("{mbit:.0}")
    } else {
        format!("{mbit:.3}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_mentions_every_topic_and_unknowns() {
        let mut h = Host::probe();
        h.clock_source = None;
        h.interfaces.push(Interface {
            name: "eth7".into(),
            mtu_bytes: Some(1500),
            speed_mbit_per_s: Some(100),
            ..Interface::default()
        });
        let t = h.describe_text();
        for k in [
            "host",
            "cpu",
            "caches",
            "numa nodes",
            "memory",
            "kernel",
            "boot id",
            "clock source",
            "load",
            "tcp",
            "interface    eth7",
            "offloads",
            "94.15 Mbit/s on Ethernet",
        ] {
            assert!(t.contains(k), "missing {k:?} in\n{t}");
        }
        assert!(t.contains("clock source unknown"), "{t}");
    }

    #[test]
    fn shaped_speed_is_shown_with_the_nominal_one() {
        let mut i = Interface {
            name: "veth1".into(),
            is_virtual: Some(true),
            mtu_bytes: Some(1500),
            speed_mbit_per_s: Some(10_000),
            qdisc: Some("htb".into()),
            shaped_rate_bits_per_s: Some(1_000_000_000),
            ..Interface::default()
        };
        let t = i.describe_text();
        assert!(
            t.contains("speed 1000 Mbit/s (shaped: htb; nominal 10000)"),
            "{t}"
        );
        // 1000 * 1448 / 1514 = 956.406...
        assert!(t.contains("956.41 Mbit/s behind the htb shaper"), "{t}");
        assert!(!t.contains("9.9"), "no limit from the nominal speed: {t}");
        i.shaped_rate_bits_per_s = None;
        i.qdisc = Some("noqueue".into());
        assert!(i.describe_text().contains("speed 10000 Mbit/s (nominal)"));
        assert_eq!(mbit_text(2.5), "2.500");
    }
}
