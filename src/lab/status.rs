//! `wulf lab status`: each lab's nodes, addresses, MTUs and shapers as the
//! kernel reports them now, not as they were asked for, so a hand-changed
//! MTU or a deleted qdisc shows.

use serde::{Deserialize, Serialize};

use super::shaper::{parse_readback, ShaperReadback};
use super::state::{self, LabState};
use super::system::{ip_in, tc_in};

/// One lab, read back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LabStatus {
    /// Name.
    pub name: String,
    /// Its /24.
    pub subnet: String,
    /// False while being built (or when its construction died).
    pub complete: bool,
    /// Made by a `--lab` command.
    pub temporary: bool,
    /// A temporary lab whose command is gone: remove it with `wulf lab down`.
    pub orphaned: bool,
    /// Random frame loss in the switch now, percent (from its nftables rule).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loss_percent: Option<f64>,
    /// A hub lab: its shared medium's shaper as read back now (see
    /// [`super::build`]); absent for a switch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hub: Option<ShaperReadback>,
    /// The nodes.
    pub nodes: Vec<NodeStatus>,
}

/// One node, read back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeStatus {
    /// Host name.
    pub name: String,
    /// Network namespace.
    pub netns: String,
    /// Address on eth0 now, if any.
    pub address: Option<String>,
    /// MTU of the node's eth0 now.
    pub mtu_bytes: Option<u32>,
    /// MTU of its switch port now.
    pub switch_port_mtu_bytes: Option<u32>,
    /// Shaper of node -> switch.
    pub uplink: Option<ShaperReadback>,
    /// Shaper of switch -> node.
    pub downlink: Option<ShaperReadback>,
}

/// Read lab `st` back from the kernel.
pub fn read(st: &LabState) -> LabStatus {
    LabStatus {
        name: st.name.clone(),
        subnet: st.subnet.clone(),
        complete: st.complete,
        temporary: st.temporary,
        orphaned: st.orphaned(),
        loss_percent: loss_now(&st.switch_netns),
        hub: st
            .impairments
            .hub
            .then(|| shaper(&st.switch_netns, "hub0"))
            .flatten(),
        nodes: st
            .nodes
            .iter()
            .map(|n| {
                let (address, mtu) = link_facts(&n.netns, "eth0");
                let (_, port_mtu) = link_facts(&st.switch_netns, &n.name);
                NodeStatus {
                    name: n.name.clone(),
                    netns: n.netns.clone(),
                    address,
                    mtu_bytes: mtu,
                    switch_port_mtu_bytes: port_mtu,
                    uplink: shaper(&n.netns, "eth0"),
                    downlink: shaper(&st.switch_netns, &n.name),
                }
            })
            .collect(),
    }
}

/// Every lab, read back.
pub fn read_all() -> Vec<LabStatus> {
    state::names()
        .iter()
        .filter_map(|n| state::load(n).ok())
        .map(|s| read(&s))
        .collect()
}

/// The loss rule `wulf lab up --loss` put in the switch, read back.
fn loss_now(switch_netns: &str) -> Option<f64> {
    let text =
        super::system::in_netns(switch_netns, "nft", &["list", "table", "bridge", "wulf"]).ok()?;
    parse_loss_rule(&text)
}

/// `numgen random mod 10000 < 2000 ... drop` -> 20 (percent); `<= 9999`
/// (how 100% is written) -> 100.
fn parse_loss_rule(text: &str) -> Option<f64> {
    let line = text
        .lines()
        .find(|l| l.contains("numgen random mod 10000 <"))?;
    let after = line.split("numgen random mod 10000 <").nth(1)?;
    let (inclusive, after) = match after.strip_prefix('=') {
        Some(rest) => (1.0, rest),
        None => (0.0, after),
    };
    let n: f64 = after.split_whitespace().next()?.parse().ok()?;
    Some((n + inclusive) / 100.0)
}

fn link_facts(netns: &str, dev: &str) -> (Option<String>, Option<u32>) {
    let Ok(text) = ip_in(netns, &["-j", "addr", "show", "dev", dev]) else {
        return (None, None);
    };
    let v: Vec<serde_json::Value> = serde_json::from_str(&text).unwrap_or_default();
    let Some(link) = v.first() else {
        return (None, None);
    };
    let mtu = link.get("mtu").and_then(|m| m.as_u64()).map(|m| m as u32);
    let addr = link
        .get("addr_info")
        .and_then(|a| a.as_array())
        .and_then(|a| {
            a.iter()
                .find(|i| i.get("family").and_then(|f| f.as_str()) == Some("inet"))
        })
        .and_then(|i| {
            Some(format!(
                "{}/{}",
                i.get("local")?.as_str()?,
                i.get("prefixlen")?.as_u64()?
            ))
        });
    (addr, mtu)
}

fn shaper(netns: &str, dev: &str) -> Option<ShaperReadback> {
    let q = tc_in(netns, &["-j", "qdisc", "show", "dev", dev]).ok()?;
    let c = tc_in(netns, &["class", "show", "dev", dev]).unwrap_or_default();
    parse_readback(&q, &c)
}

/// The status as text, one line per node.
pub fn format(labs: &[LabStatus]) -> String {
    if labs.is_empty() {
        return "no labs (wulf lab up makes one)\n".into();
    }
    let mut s = String::new();
    for l in labs {
        let mut flags = Vec::new();
        if !l.complete {
            flags.push("INCOMPLETE");
        }
        if l.temporary {
            flags.push("temporary");
        }
        if l.orphaned {
            flags.push("orphaned: its command died; wulf lab down removes it");
        }
        let flags = if flags.is_empty() {
            String::new()
        } else {
            format!(" ({})", flags.join(", "))
        };
        let loss = l
            .loss_percent
            .map(|p| format!(", {p}% frame loss in the switch"))
            .unwrap_or_default();
        let loss = match &l.hub {
            Some(h) => format!(
                "{loss}, a hub: every node shares one medium ({})",
                shaper_text(&Some(h.clone()))
            ),
            None => loss,
        };
        s.push_str(&format!(
            "lab {}: {} nodes, subnet {}{loss}{flags}\n",
            l.name,
            l.nodes.len(),
            l.subnet
        ));
        s.push_str(&format!(
            "  {:<8} {:<17} {:>6} {:>6}  {:<28} {:<28}\n",
            "node", "address", "mtu", "port", "node -> switch", "switch -> node"
        ));
        for n in &l.nodes {
            let opt = |v: Option<u32>| v.map_or("-".to_string(), |m| m.to_string());
            s.push_str(&format!(
                "  {:<8} {:<17} {:>6} {:>6}  {:<28} {:<28}\n",
                n.name,
                n.address.as_deref().unwrap_or("-"),
                opt(n.mtu_bytes),
                opt(n.switch_port_mtu_bytes),
                shaper_text(&n.uplink),
                shaper_text(&n.downlink)
            ));
        }
    }
    s
}

fn shaper_text(s: &Option<ShaperReadback>) -> String {
    match s {
        None => "unreadable".into(),
        Some(r) => match (r.rate_bits_per_s, r.burst_bytes) {
            (Some(rate), Some(b)) => format!("{} {} burst {b} B", r.qdisc, rate_text(rate)),
            (Some(rate), None) => format!("{} {}", r.qdisc, rate_text(rate)),
            _ => format!("{} (not shaped)", r.qdisc),
        },
    }
}

/// `100 Mbit/s`, `2.5 Gbit/s`.
pub fn rate_text(bits_per_s: u64) -> String {
    let b = bits_per_s as f64;
    if b >= 1e9 {
        format!("{} Gbit/s", trim(b / 1e9))
    } else if b >= 1e6 {
        format!("{} Mbit/s", trim(b / 1e6))
    } else {
        format!("{} kbit/s", trim(b / 1e3))
    }
}

fn trim(v: f64) -> String {
    let s = format!("{v:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_print_plainly() {
        assert_eq!(rate_text(100_000_000), "100 Mbit/s");
        assert_eq!(rate_text(2_500_000_000), "2.5 Gbit/s");
        assert_eq!(rate_text(1_000_000_000), "1 Gbit/s");
    }

    #[test]
    fn a_total_loss_rule_is_read_back() {
        let t = "\t\tnumgen random mod 10000 <= 9999 counter packets 0 bytes 0 drop";
        assert_eq!(parse_loss_rule(t), Some(100.0));
    }

    #[test]
    fn loss_rule_is_read_back() {
        let t = "table bridge wulf {\n\tchain loss {\n\t\tnumgen random mod 10000 < 250 counter packets 1 bytes 2 drop\n\t}\n}";
        assert_eq!(parse_loss_rule(t), Some(2.5));
        assert_eq!(parse_loss_rule("table bridge wulf {}"), None);
    }

    #[test]
    fn no_labs_says_how_to_make_one() {
        assert!(format(&[]).contains("wulf lab up"));
    }
}
