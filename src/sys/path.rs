//! Whether a peer is "this machine": the one rule that decides when the
//! memory limits (the cache-line floor, memcpy bandwidth) apply to a
//! measurement and when the network link's limit does.
//!
//! Host names do not tell: two network namespaces of one machine report the
//! same host name while their traffic crosses a veth and a shaper, and two
//! machines may share a name. A peer is this machine only when
//!
//! * it runs under the same kernel: its boot id equals ours (network
//!   namespaces and containers share the kernel's, other machines and
//!   virtual machines do not), and
//! * the route to its address goes through the loopback interface (its
//!   address is one of our namespace's own), so no network interface, and no
//!   qdisc on one, lies on the data path.
//!
//! Unknown boot ids (files written before they were recorded, a system
//! without /proc) never count as equal.

use std::net::IpAddr;

use super::host::Host;
use super::interface::route_for_peer;

/// Live decision, while measuring: is the peer at `peer_addr`, described by
/// `peer`, on this machine (as `local` describes it)? Asks the kernel for
/// the route to `peer_addr` now.
pub fn same_machine(local: &Host, peer: &Host, peer_addr: IpAddr) -> bool {
    let via_loopback = route_for_peer(peer_addr).map(|r| r.loopback);
    same_machine_rule(
        local.boot_id.as_deref(),
        peer.boot_id.as_deref(),
        via_loopback,
    ) == Some(true)
}

/// `ip` as the host it names: an IPv4 client on a dual-stack socket shows
/// as ::ffff:a.b.c.d, which is a.b.c.d.
pub fn plain_ip(ip: std::net::IpAddr) -> std::net::IpAddr {
    match ip {
        std::net::IpAddr::V6(v6) => v6.to_ipv4_mapped().map(std::net::IpAddr::V4).unwrap_or(ip),
        v4 => v4,
    }
}

/// Decision from what a result recorded (for reading files later, perhaps
/// elsewhere): the two boot ids and whether `local`'s path to the peer
/// crossed an interface (`Host::path_crosses_interface`). `None` when the
/// record cannot tell (a file written before these fields existed).
pub fn recorded_same_machine(local: &Host, peer: &Host) -> Option<bool> {
    same_machine_rule(
        local.boot_id.as_deref(),
        peer.boot_id.as_deref(),
        local.path_crosses_interface.map(|crosses| !crosses),
    )
}

/// The rule in three-valued logic: same kernel AND path through loopback.
/// Either half known false decides `false`; both known true decide `true`;
/// anything else is `None`.
pub fn same_machine_rule(
    local_boot_id: Option<&str>,
    peer_boot_id: Option<&str>,
    via_loopback: Option<bool>,
) -> Option<bool> {
    let same_kernel = match (local_boot_id, peer_boot_id) {
        (Some(a), Some(b)) => Some(a == b),
        _ => None,
    };
    match (same_kernel, via_loopback) {
        (Some(false), _) | (_, Some(false)) => Some(false),
        (Some(true), Some(true)) => Some(true),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BOOT_A: &str = "0f0e3f4c-2b7a-4c1d-9a53-6f1b2c3d4e5f";
    const BOOT_B: &str = "8a9b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d";

    fn host(name: &str, boot: Option<&str>, crosses: Option<bool>) -> Host {
        let mut h = Host::probe();
        h.hostname = name.into();
        h.boot_id = boot.map(String::from);
        h.path_crosses_interface = crosses;
        h
    }

    #[test]
    fn rule_needs_the_same_kernel_and_a_loopback_path() {
        let a = Some(BOOT_A);
        let b = Some(BOOT_B);
        assert_eq!(same_machine_rule(a, a, Some(true)), Some(true));
        // Same kernel, but the path crosses a veth into another namespace.
        assert_eq!(same_machine_rule(a, a, Some(false)), Some(false));
        // Another kernel: another machine or a virtual machine, even if the
        // route looked local (a forwarded port).
        assert_eq!(same_machine_rule(a, b, Some(true)), Some(false));
        assert_eq!(same_machine_rule(a, b, None), Some(false));
        // Unknown halves never make a machine the same.
        assert_eq!(same_machine_rule(None, a, Some(true)), None);
        assert_eq!(same_machine_rule(a, None, Some(true)), None);
        assert_eq!(same_machine_rule(a, a, None), None);
        assert_eq!(same_machine_rule(None, None, Some(false)), Some(false));
    }

    #[test]
    fn recorded_decision_ignores_host_names() {
        // Two namespaces of one machine: same name, same kernel, a veth.
        let me = host("node1", Some(BOOT_A), Some(true));
        let peer = host("node1", Some(BOOT_A), None);
        assert_eq!(recorded_same_machine(&me, &peer), Some(false));
        // A local peer under another name (a container with its own UTS
        // namespace, reached through loopback): the same machine.
        let me = host("node1", Some(BOOT_A), Some(false));
        let peer = host("container7", Some(BOOT_A), None);
        assert_eq!(recorded_same_machine(&me, &peer), Some(true));
        // Two machines sharing a name.
        let peer = host("node1", Some(BOOT_B), None);
        assert_eq!(recorded_same_machine(&me, &peer), Some(false));
        // A file from before boot ids were recorded.
        let old = host("node1", None, None);
        assert_eq!(recorded_same_machine(&old, &old), None);
    }

    #[test]
    fn live_decision_asks_for_the_route() {
        let me = Host::probe();
        let mut peer = Host::probe();
        peer.hostname = "another-name".into();
        if me.boot_id.is_none() {
            return; // no /proc: nothing can be the same machine
        }
        assert!(same_machine(&me, &peer, "127.0.0.1".parse().unwrap()));
        // Same host name, another kernel.
        let mut other = me.clone();
        other.boot_id = Some(BOOT_B.into());
        assert!(!same_machine(&me, &other, "127.0.0.1".parse().unwrap()));
        // A documentation address (TEST-NET-3) routes out of an interface,
        // if there is a route at all: never the same machine.
        assert!(!same_machine(&me, &peer, "203.0.113.9".parse().unwrap()));
    }
}
