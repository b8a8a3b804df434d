//! Building and removing a lab.
//!
//! Layout of a lab NAME with nodes node1 ... nodeN:
//!
//! ```text
//!   wlab-NAME-node1            wlab-NAME-sw             wlab-NAME-node2
//!   eth0 198.18.X.1 ---veth--- node1  [br0]  node2 ---veth--- eth0 198.18.X.2
//!   (htb: node -> switch)      (htb: switch -> node)
//! ```
//!
//! Each node is a network namespace plus its own UTS namespace (host name
//! `nodeI`, so MPI libraries see separate hosts and do not use shared
//! memory between them) and an `/etc/hosts` naming every node
//! (`/etc/netns/wlab-NAME-nodeI/hosts`, which `ip netns exec` mounts over
//! /etc/hosts). The switch is a bridge in its own namespace. A shaper sits
//! on both directions of every node's link (see [`super::shaper`]), so a
//! path node1 -> node3 crosses node1's uplink shaper and node3's downlink
//! shaper, as a frame crosses two ports of a real switch.
//!
//! A hub (`--medium hub`) adds one more shaper that every frame entering
//! the bridge crosses, whichever node sent it: each port's ingress is
//! redirected to an `ifb` device (`hub0` in the switch namespace) whose
//! htb has the link's rate, and from there the frame goes on into the
//! bridge. One budget for all nodes and both directions is the shared
//! half-duplex medium of Nguyen 2001's 10/100 hub, shared fairly between
//! the sending nodes (a class per node, [`super::hub`]); a full queue
//! drops, and collisions and back-off are not emulated (frames wait in
//! their node's queue instead). docs/guide/lab.md says so to the user.

use std::net::Ipv4Addr;

use anyhow::{Context, Result};

use super::shaper::ShaperParams;
use super::spec::{Impairments, LabSpec};
use super::state::{self, LabState, NodeState, NETNS_PREFIX};
use super::system::{self, ip_in, tc_in};

/// Build lab `name` from `spec`. On any failure everything made so far is
/// removed before the error is returned.
pub fn up(name: &str, spec: &LabSpec, temporary: bool) -> Result<LabState> {
    super::spec::validate_name(name).map_err(crate::error::usage)?;
    system::check_can_build()?;
    // Until the state is saved, no other `lab up` may choose a subnet.
    let allocating = state::allocation_lock()?;
    let taken = state::taken_subnets();
    let dir = state::claim(name)?;
    let (base, subnet) = state::free_subnet(&taken)
        .ok_or_else(|| anyhow::anyhow!("every /24 of 198.18.0.0/15 is taken by a lab"))?;
    let mut st = LabState {
        version: state::STATE_VERSION,
        name: name.to_string(),
        complete: false,
        temporary,
        creator_pid: std::process::id(),
        created_at: humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string(),
        subnet,
        switch_netns: format!("{NETNS_PREFIX}{name}-sw"),
        nodes: Vec::new(),
        impairments: spec.impairments.clone(),
    };
    for (i, link) in spec.links.iter().enumerate() {
        let node = format!("node{}", i + 1);
        let o = base.octets();
        st.nodes.push(NodeState {
            netns: format!("{NETNS_PREFIX}{name}-{node}"),
            uts_file: dir.join(format!("{node}.uts")),
            address: Ipv4Addr::new(o[0], o[1], o[2], (i + 1) as u8),
            shaper: ShaperParams::for_link(link.rate.bits_per_s, link.mtu_bytes),
            link: link.clone(),
            name: node,
        });
    }
    // Saved before anything exists, so `down` finds a half-built lab (and
    // the next `lab up` sees its subnet taken).
    let saved = state::save(&st);
    drop(allocating);
    saved?;
    match build(&st) {
        Ok(()) => {
            st.complete = true;
            state::save(&st)?;
            Ok(st)
        }
        Err(e) => {
            remove(name, Some(&st));
            Err(e.context(format!("cannot build lab {name}; nothing of it is left")))
        }
    }
}

fn build(st: &LabState) -> Result<()> {
    let sw = st.switch_netns.as_str();
    system::run("ip", &["netns", "add", sw])?;
    ip_in(sw, &["link", "set", "lo", "up"])?;
    check_impairments(sw, &st.impairments)?;
    ip_in(sw, &["link", "add", "br0", "type", "bridge"])?;
    ip_in(sw, &["link", "set", "br0", "up"])?;
    if st.impairments.hub {
        build_hub(st)?;
    }
    let hosts = hosts_file(st);
    for n in &st.nodes {
        // A signal during the build ends it here: `up` removes what was
        // made, and nothing is added after a forced clean-up removed it.
        if crate::exec::interrupted() {
            return Err(crate::error::WulfError::Interrupted.into());
        }
        build_node(st, n, &hosts).with_context(|| format!("node {}", n.name))?;
        if st.impairments.hub {
            into_hub(sw, &n.name).with_context(|| format!("node {} into the hub", n.name))?;
        }
    }
    if let Some(p) = st.impairments.loss_percent {
        add_loss(sw, p)?;
    }
    Ok(())
}

fn build_node(st: &LabState, n: &NodeState, hosts: &str) -> Result<()> {
    let sw = st.switch_netns.as_str();
    let ns = n.netns.as_str();
    let mtu = n.link.mtu_bytes.to_string();
    system::run("ip", &["netns", "add", ns])?;
    system::make_uts_namespace(&n.uts_file, &n.name)?;
    let etc = std::path::Path::new("/etc/netns").join(ns);
    std::fs::create_dir_all(&etc)?;
    std::fs::write(etc.join("hosts"), hosts)?;
    // The switch port is named after the node: `tc -n wlab-X-sw class show
    // dev node3` reads node3's downlink.
    ip_in(
        sw,
        &[
            "link", "add", &n.name, "mtu", &mtu, "type", "veth", "peer", "name", "eth0", "mtu",
            &mtu, "netns", ns,
        ],
    )?;
    ip_in(sw, &["link", "set", &n.name, "master", "br0", "up"])?;
    ip_in(ns, &["link", "set", "lo", "up"])?;
    ip_in(ns, &["link", "set", "eth0", "up"])?;
    let addr = format!("{}/24", n.address);
    ip_in(ns, &["addr", "add", &addr, "dev", "eth0"])?;
    for (netns, dev) in [(ns, "eth0"), (sw, n.name.as_str())] {
        // Frames, not 64 KiB super-packets, must reach the shaper.
        system::in_netns(
            netns,
            "ethtool",
            &["-K", dev, "tso", "off", "gso", "off", "gro", "off"],
        )?;
        install_shaper(netns, dev, &n.shaper, &st.impairments)?;
    }
    Ok(())
}

fn install_shaper(netns: &str, dev: &str, s: &ShaperParams, imp: &Impairments) -> Result<()> {
    let cmds = s.tc_commands(dev);
    for c in &cmds[..2] {
        let args: Vec<&str> = c.iter().map(String::as_str).collect();
        tc_in(netns, &args)?;
    }
    // The leaf queue: netem when a delay is asked for (it queues too),
    // else a byte FIFO.
    let leaf: Vec<String> = match imp.delay_us {
        Some(d) => {
            let frames = (s.queue_bytes / s.burst_bytes.max(1)).max(100).to_string();
            let mut v: Vec<String> = [
                "qdisc", "add", "dev", dev, "parent", "1:1", "handle", "10:", "netem", "limit",
            ]
            .iter()
            .map(|x| x.to_string())
            .collect();
            v.push(frames);
            v.push("delay".into());
            // Each direction crosses two shapers: half the delay on each.
            v.push(format!("{}us", d / 2));
            if let Some(j) = imp.jitter_us {
                v.push(format!("{}us", j / 2));
            }
            v
        }
        None => cmds[2].clone(),
    };
    let args: Vec<&str> = leaf.iter().map(String::as_str).collect();
    tc_in(netns, &args)?;
    Ok(())
}

/// The hub's device in the switch namespace.
const HUB_DEV: &str = "hub0";

/// The hub's shaper: an ifb device at the slowest node's link rate (a
/// hub runs every port at one speed) and the largest MTU, shared fairly
/// between the nodes ([`super::hub`]).
fn build_hub(st: &LabState) -> Result<()> {
    let sw = st.switch_netns.as_str();
    let rate = st
        .nodes
        .iter()
        .map(|n| n.link.rate.bits_per_s)
        .min()
        .unwrap_or(0);
    let mtu = st
        .nodes
        .iter()
        .map(|n| n.link.mtu_bytes)
        .max()
        .unwrap_or(1500);
    ip_in(sw, &["link", "add", HUB_DEV, "type", "ifb"])
        .context("a hub needs the ifb device (CONFIG_IFB)")?;
    ip_in(sw, &["link", "set", HUB_DEV, "mtu", &mtu.to_string(), "up"])?;
    let shaper = ShaperParams::for_link(rate, mtu);
    let addresses: Vec<Ipv4Addr> = st.nodes.iter().map(|n| n.address).collect();
    for c in super::hub::tc_commands(&shaper, HUB_DEV, &addresses) {
        let args: Vec<&str> = c.iter().map(String::as_str).collect();
        tc_in(sw, &args)?;
    }
    Ok(())
}

/// Sends every frame arriving from `port` through the hub's shaper before
/// the bridge sees it.
fn into_hub(sw: &str, port: &str) -> Result<()> {
    tc_in(
        sw,
        &["qdisc", "add", "dev", port, "handle", "ffff:", "ingress"],
    )?;
    tc_in(
        sw,
        &[
            "filter", "add", "dev", port, "parent", "ffff:", "protocol", "all", "u32", "match",
            "u32", "0", "0", "action", "mirred", "egress", "redirect", "dev", HUB_DEV,
        ],
    )?;
    Ok(())
}

/// Refuse impairments the kernel cannot make, before anything else is
/// built: never a silent no-op.
fn check_impairments(sw: &str, imp: &Impairments) -> Result<()> {
    if imp.delay_us.is_some() && !system::has_qdisc(sw, &["netem", "delay", "1ms"]) {
        return Err(crate::error::usage(
            "delay and jitter are unavailable on this kernel: they need the netem queueing discipline (sch_netem), which it lacks",
        ));
    }
    if imp.loss_percent.is_some() && !system::on_path("nft") {
        return Err(crate::error::usage(
            "loss is unavailable here: it needs nftables' `nft` command (apt-get install nftables)",
        ));
    }
    Ok(())
}

/// Random frame loss in the bridge: nftables' bridge family, drop when a
/// random number mod 10000 falls below the loss in hundredths of a percent.
/// wulf's own control connections (DSCP CS6,
/// [`crate::sys::control_mark`]) pass first: the loss is for the measured
/// traffic, and TCP's multi-second resend timeouts on a lost control
/// segment outlasted a peer's `--timeout`. So does address resolution
/// (ARP, IPv6 neighbour discovery): three lost requests in a row left a
/// connection "no route to host" before its first byte.
fn add_loss(sw: &str, percent: f64) -> Result<()> {
    let (op, cutoff) = loss_comparison(percent);
    let cutoff = cutoff.to_string();
    system::in_netns(sw, "nft", &["add", "table", "bridge", "wulf"])?;
    system::in_netns(
        sw,
        "nft",
        &["add chain bridge wulf loss { type filter hook forward priority 0 ; }"],
    )?;
    let dscp = crate::sys::control_mark::CONTROL_DSCP;
    for passes in [
        format!("ip dscp {dscp}"),
        format!("ip6 dscp {dscp}"),
        "ether type arp".to_string(),
        "icmpv6 type { nd-neighbor-solicit, nd-neighbor-advert }".to_string(),
    ] {
        let rule = format!("add rule bridge wulf loss {passes} accept");
        system::in_netns(sw, "nft", &[rule.as_str()])?;
    }
    system::in_netns(
        sw,
        "nft",
        &[
            "add", "rule", "bridge", "wulf", "loss", "numgen", "random", "mod", "10000", op,
            &cutoff, "counter", "drop",
        ],
    )?;
    Ok(())
}

/// The comparison of the loss rule for `percent` (0 to 100): the random
/// number (0 to 9999) below the loss in hundredths of a percent, or at
/// most 9999 for 100% (nft refuses the constant 10000 as beyond the
/// range of `mod 10000`: `--loss 100` once failed so).
fn loss_comparison(percent: f64) -> (&'static str, u64) {
    match ((percent * 100.0).round() as u64).min(10_000) {
        10_000 => ("<=", 9_999),
        cutoff => ("<", cutoff),
    }
}

fn hosts_file(st: &LabState) -> String {
    let mut s = String::from("127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n");
    for n in &st.nodes {
        s.push_str(&format!("{}\t{}\n", n.address, n.name));
    }
    s
}

/// Remove lab `name`: every process inside its namespaces, the namespaces
/// (which takes their links and shapers along), the UTS bind mounts, the
/// hosts files and the state. Works from the state file when there is one
/// and from the naming convention when there is not (a crash before the
/// state was written), and never fails half-way: each step is attempted.
pub fn remove(name: &str, known: Option<&LabState>) {
    let loaded = known.cloned().or_else(|| state::load(name).ok());
    let prefix = format!("{NETNS_PREFIX}{name}-");
    let mut namespaces: Vec<String> = system::netns_names()
        .into_iter()
        .filter(|n| n.starts_with(&prefix) && is_lab_suffix(&n[prefix.len()..]))
        .collect();
    if let Some(st) = &loaded {
        namespaces.extend(st.nodes.iter().map(|n| n.netns.clone()));
        namespaces.push(st.switch_netns.clone());
    }
    namespaces.sort();
    namespaces.dedup();
    for ns in &namespaces {
        system::kill_processes_in(ns);
        system::run_quietly("ip", &["netns", "del", ns]);
        let _ = std::fs::remove_dir_all(std::path::Path::new("/etc/netns").join(ns));
    }
    let dir = state::lab_dir(name);
    if let Ok(rd) = std::fs::read_dir(&dir) {
        for e in rd.flatten() {
            if e.path().extension().is_some_and(|x| x == "uts") {
                system::remove_uts_namespace(&e.path());
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `sw` or `nodeN`: what a lab's namespace names end with.
fn is_lab_suffix(s: &str) -> bool {
    s == "sw"
        || s.strip_prefix("node")
            .is_some_and(|n| n.parse::<u32>().is_ok())
}

/// Remove every lab: those with state, and namespaces with the lab prefix
/// whose lab has none (left by a crash).
pub fn remove_all() -> Vec<String> {
    let mut labs = state::names();
    for ns in system::netns_names() {
        if let Some(rest) = ns.strip_prefix(NETNS_PREFIX) {
            if let Some((lab, suffix)) = rest.rsplit_once('-') {
                if is_lab_suffix(suffix) && !labs.iter().any(|l| l == lab) {
                    labs.push(lab.to_string());
                }
            }
        }
    }
    for l in &labs {
        remove(l, None);
    }
    labs
}
