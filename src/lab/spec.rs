//! What a lab is asked to be: how many nodes, each node's link rate and MTU,
//! and the impairments. Parsing only; nothing here touches the kernel.
//!
//! Two syntaxes describe the same thing. `wulf lab up` takes options
//! (`--link ge --link node3=fe --mtu 9000 --mtu node3=1500`); `--lab` on the
//! measuring commands takes one comma-separated word list
//! (`--lab ge,mtu=9000,node3=fe`) so a whole lab fits in one argument.

use serde::{Deserialize, Serialize};

/// Most nodes one lab may have: each is a namespace pair, a veth and two
/// shapers; beyond this the machine, not the link, would be measured.
pub const MAX_NODES: usize = 64;
/// Smallest MTU IPv4 allows on a link (RFC 791: 68) is impractical for TCP;
/// 576 is the smallest every host must accept.
pub const MIN_MTU_BYTES: u32 = 576;
/// Largest MTU a veth accepts.
pub const MAX_MTU_BYTES: u32 = 65_535;

/// The links `--link` and `--lab` know by name, with their rates (bits/s);
/// any other rate is given as tc writes it (`600mbit`).
pub const NAMED_LINKS: [(&str, u64); 4] = [
    ("fe", 100_000_000),
    ("ge", 1_000_000_000),
    ("10ge", 10_000_000_000),
    ("25ge", 25_000_000_000),
];

/// A link rate as the user named it and in bits per second.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkRate {
    /// What the user wrote (`fe`, `ge`, `10ge`, `600mbit`).
    pub name: String,
    /// The rate, bits/s (SI: 1 Mbit/s = 10^6 bit/s).
    pub bits_per_s: u64,
}

impl LinkRate {
    /// Parse `fe`, `ge`, `10ge` or a rate as tc writes it (`600mbit`,
    /// `2.5gbit`, `100000kbit`, `1000000bit`).
    pub fn parse(text: &str) -> Result<LinkRate, String> {
        let t = text.trim().to_ascii_lowercase();
        let named = NAMED_LINKS
            .iter()
            .find(|(name, _)| *name == t)
            .map(|&(_, bits)| bits);
        let bits_per_s = match named {
            Some(b) => b,
            None => parse_tc_rate(&t).ok_or_else(|| {
                format!("'{text}' is not a link: give fe, ge, 10ge or a rate such as 600mbit or 2.5gbit")
            })?,
        };
        if !(1_000..=400_000_000_000).contains(&bits_per_s) {
            return Err(format!(
                "'{text}': a link rate must be between 1kbit and 400gbit"
            ));
        }
        Ok(LinkRate {
            name: t,
            bits_per_s,
        })
    }
}

/// `600mbit`, `2.5gbit`, `100kbit`, `5000bit` (tc's units, bits per second).
fn parse_tc_rate(t: &str) -> Option<u64> {
    let (num, mult) = [
        ("tbit", 1e12),
        ("gbit", 1e9),
        ("mbit", 1e6),
        ("kbit", 1e3),
        ("bit", 1.0),
    ]
    .iter()
    .find_map(|(suffix, m)| t.strip_suffix(suffix).map(|n| (n, *m)))?;
    let v: f64 = num.parse().ok()?;
    (v.is_finite() && v > 0.0).then(|| (v * mult).round() as u64)
}

/// One node's link: its rate and MTU.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeLink {
    /// The shaped rate of the node's link, each direction.
    pub rate: LinkRate,
    /// MTU of the node's interface and of its switch port.
    pub mtu_bytes: u32,
}

/// Impairments on the switch (all nodes' traffic).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Impairments {
    /// One-way delay added per direction, microseconds (needs sch_netem).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay_us: Option<u64>,
    /// Jitter around the delay, microseconds (needs sch_netem).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jitter_us: Option<u64>,
    /// Random frame loss in the switch, percent (nftables' numgen).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loss_percent: Option<f64>,
    /// A hub instead of a switch (Nguyen 2001): every frame any node sends
    /// shares one budget of the link rate, so two pairs at once share it
    /// and traffic both ways halves (half duplex). Collisions are not
    /// emulated: frames queue for the medium instead of backing off.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub hub: bool,
}

/// Everything `wulf lab up` needs to build a lab.
#[derive(Debug, Clone, PartialEq)]
pub struct LabSpec {
    /// Number of nodes (node1 ... nodeN).
    pub nodes: usize,
    /// Each node's link, index 0 = node1.
    pub links: Vec<NodeLink>,
    /// Impairments.
    pub impairments: Impairments,
}

/// Per-node overrides before the node count is known.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LinkOptions {
    /// The link of every node without its own (`ge` when none is given).
    pub default_rate: Option<LinkRate>,
    /// The MTU of every node without its own (1500 when none is given).
    pub default_mtu_bytes: Option<u32>,
    /// `nodeN=SPEC` link overrides.
    pub rates: Vec<(usize, LinkRate)>,
    /// `nodeN=BYTES` MTU overrides.
    pub mtus: Vec<(usize, u32)>,
    /// Impairments.
    pub impairments: Impairments,
}

impl LinkOptions {
    /// Take one `--link` value: `SPEC` or `nodeN=SPEC`.
    pub fn add_link(&mut self, text: &str) -> Result<(), String> {
        match text.split_once('=') {
            Some((node, rate)) => self.rates.push((node_index(node)?, LinkRate::parse(rate)?)),
            None => self.default_rate = Some(LinkRate::parse(text)?),
        }
        Ok(())
    }

    /// Take one `--mtu` value: `BYTES` or `nodeN=BYTES`.
    pub fn add_mtu(&mut self, text: &str) -> Result<(), String> {
        match text.split_once('=') {
            Some((node, mtu)) => self.mtus.push((node_index(node)?, parse_mtu(mtu)?)),
            None => self.default_mtu_bytes = Some(parse_mtu(text)?),
        }
        Ok(())
    }

    /// Parse `--lab`'s word list: `ge`, `mtu=9000`, `node3=fe`,
    /// `mtu.node3=1500`, `loss=1`, `delay=100us`, `jitter=10us`,
    /// `medium=hub` (or `hub`).
    pub fn parse_compact(text: &str) -> Result<LinkOptions, String> {
        let mut o = LinkOptions::default();
        for word in text.split(',').map(str::trim).filter(|w| !w.is_empty()) {
            match word.split_once('=') {
                None if word == "hub" => o.impairments.hub = true,
                None => o.add_link(word)?,
                Some(("mtu", v)) => o.add_mtu(v)?,
                Some((k, v)) if k.starts_with("mtu.") => {
                    o.mtus.push((node_index(&k[4..])?, parse_mtu(v)?))
                }
                Some(("loss", v)) => o.impairments.loss_percent = Some(parse_loss(v)?),
                Some(("delay", v)) => o.impairments.delay_us = Some(parse_us(v)?),
                Some(("jitter", v)) => o.impairments.jitter_us = Some(parse_us(v)?),
                Some(("medium", "hub")) => o.impairments.hub = true,
                Some(("medium", "switch")) => o.impairments.hub = false,
                Some(("medium", v)) => {
                    return Err(format!("'{v}' is not a medium: give switch or hub"))
                }
                Some((k, _)) if k.starts_with("node") => o.add_link(word)?,
                Some((k, _)) => {
                    return Err(format!(
                        "'{word}': unknown lab setting '{k}' (use a link such as ge, mtu=BYTES, nodeN=LINK, mtu.nodeN=BYTES, loss=PCT, delay=TIME, jitter=TIME, medium=hub)"
                    ))
                }
            }
        }
        Ok(o)
    }

    /// The lab of `nodes` nodes these options describe; an override for a
    /// node beyond `nodes` is an error rather than ignored.
    pub fn for_nodes(&self, nodes: usize) -> Result<LabSpec, String> {
        if !(1..=MAX_NODES).contains(&nodes) {
            return Err(format!("a lab has 1 to {MAX_NODES} nodes, not {nodes}"));
        }
        let rate = self
            .default_rate
            .clone()
            .unwrap_or_else(|| LinkRate::parse("ge").expect("ge parses"));
        let mtu = self.default_mtu_bytes.unwrap_or(1500);
        let mut links = vec![
            NodeLink {
                rate,
                mtu_bytes: mtu,
            };
            nodes
        ];
        for (i, r) in &self.rates {
            links
                .get_mut(*i)
                .ok_or_else(|| format!("node{} is not in a lab of {nodes} nodes", i + 1))?
                .rate = r.clone();
        }
        for (i, m) in &self.mtus {
            links
                .get_mut(*i)
                .ok_or_else(|| format!("node{} is not in a lab of {nodes} nodes", i + 1))?
                .mtu_bytes = *m;
        }
        if let Some(p) = self.impairments.jitter_us {
            if self.impairments.delay_us.is_none() && p > 0 {
                return Err("jitter needs a delay (delay=TIME)".into());
            }
        }
        Ok(LabSpec {
            nodes,
            links,
            impairments: self.impairments.clone(),
        })
    }
}

/// `node3` -> 2.
fn node_index(text: &str) -> Result<usize, String> {
    text.trim()
        .strip_prefix("node")
        .and_then(|n| n.parse::<usize>().ok())
        .filter(|n| (1..=MAX_NODES).contains(n))
        .map(|n| n - 1)
        .ok_or_else(|| format!("'{text}' is not a node: give node1 ... node{MAX_NODES}"))
}

fn parse_mtu(text: &str) -> Result<u32, String> {
    text.trim()
        .parse::<u32>()
        .ok()
        .filter(|m| (MIN_MTU_BYTES..=MAX_MTU_BYTES).contains(m))
        .ok_or_else(|| {
            format!("'{text}' is not an MTU: give bytes from {MIN_MTU_BYTES} to {MAX_MTU_BYTES} (1500, 9000)")
        })
}

fn parse_loss(text: &str) -> Result<f64, String> {
    let t = text.trim().trim_end_matches('%');
    t.parse::<f64>()
        .ok()
        .filter(|p| (0.0..=100.0).contains(p))
        .ok_or_else(|| format!("'{text}' is not a loss: give a percentage from 0 to 100"))
}

fn parse_us(text: &str) -> Result<u64, String> {
    crate::units::parse_duration(text).map(|d| d.as_micros() as u64)
}

/// Check a lab name: it becomes part of namespace and file names, so only
/// letters, digits, '-' and '_', starting with a letter or digit, at most
/// 20 characters (no path or shell characters can slip through).
pub fn validate_name(name: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && name.len() <= 20
        && name
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphanumeric())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if ok {
        Ok(())
    } else {
        Err(format!(
            "'{name}' is not a lab name: use 1 to 20 letters, digits, '-' or '_', starting with a letter or digit"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_parse() {
        assert_eq!(LinkRate::parse("fe").unwrap().bits_per_s, 100_000_000);
        assert_eq!(LinkRate::parse("GE").unwrap().bits_per_s, 1_000_000_000);
        assert_eq!(LinkRate::parse("10ge").unwrap().bits_per_s, 10_000_000_000);
        assert_eq!(LinkRate::parse("600mbit").unwrap().bits_per_s, 600_000_000);
        assert_eq!(
            LinkRate::parse("2.5gbit").unwrap().bits_per_s,
            2_500_000_000
        );
        assert!(LinkRate::parse("fast").is_err());
        assert!(LinkRate::parse("0mbit").is_err());
        assert!(LinkRate::parse("10bit").is_err());
    }

    #[test]
    fn options_and_overrides() {
        let mut o = LinkOptions::default();
        o.add_link("ge").unwrap();
        o.add_link("node3=fe").unwrap();
        o.add_mtu("9000").unwrap();
        o.add_mtu("node3=1500").unwrap();
        let s = o.for_nodes(3).unwrap();
        assert_eq!(s.links[0].rate.bits_per_s, 1_000_000_000);
        assert_eq!(s.links[0].mtu_bytes, 9000);
        assert_eq!(s.links[2].rate.name, "fe");
        assert_eq!(s.links[2].mtu_bytes, 1500);
        assert!(o.for_nodes(2).unwrap_err().contains("node3"));
        assert!(o.for_nodes(0).is_err());
        assert!(o.add_mtu("100").is_err());
        assert!(o.add_link("nodeX=fe").is_err());
    }

    #[test]
    fn a_hub_is_a_medium() {
        for text in ["fe,hub", "fe,medium=hub"] {
            let o = LinkOptions::parse_compact(text).unwrap();
            assert!(o.impairments.hub, "{text}");
        }
        assert!(!LinkOptions::parse_compact("fe").unwrap().impairments.hub);
        let e = LinkOptions::parse_compact("fe,medium=coax").unwrap_err();
        assert!(e.contains("switch or hub"), "{e}");
    }

    #[test]
    fn compact_syntax() {
        let o = LinkOptions::parse_compact("ge,mtu=9000,node2=fe,mtu.node2=1500,loss=1").unwrap();
        let s = o.for_nodes(2).unwrap();
        assert_eq!(s.links[0].mtu_bytes, 9000);
        assert_eq!(s.links[1].rate.name, "fe");
        assert_eq!(s.links[1].mtu_bytes, 1500);
        assert_eq!(s.impairments.loss_percent, Some(1.0));
        assert!(LinkOptions::parse_compact("ge,speed=1").is_err());
        assert!(LinkOptions::parse_compact("jitter=5us")
            .unwrap()
            .for_nodes(2)
            .is_err());
        // Defaults: ge, MTU 1500.
        let d = LinkOptions::default().for_nodes(2).unwrap();
        assert_eq!(d.links[1].rate.bits_per_s, 1_000_000_000);
        assert_eq!(d.links[1].mtu_bytes, 1500);
    }

    #[test]
    fn names() {
        assert!(validate_name("lab1").is_ok());
        assert!(validate_name("my_lab-2").is_ok());
        for bad in [
            "",
            "-x",
            "a/b",
            "a b",
            "x;rm",
            "..",
            "abcdefghijklmnopqrstu",
        ] {
            assert!(validate_name(bad).is_err(), "{bad}");
        }
    }
}
