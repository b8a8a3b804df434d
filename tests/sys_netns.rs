//! The interface fingerprint on a veth pair between two network namespaces
//! the test creates (and removes, even when it fails).
//!
//! The probing code must run inside the namespace: sysfs shows the interfaces
//! of the namespace it was mounted in, which `ip netns exec` arranges. So the
//! test re-runs its own binary there, selecting the ignored `netns_child`
//! test, which prints the host block as JSON for the parent to check.
//! Skipped, with a printed reason, only when not root or `ip` is missing.

use std::net::IpAddr;
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};

use wulf::sys::{interface_for_peer, pcie_limits_link, Framing, Host, IpVersion};

const ADDR_A: &str = "10.77.0.1";
const ADDR_B: &str = "10.77.0.2";
const PREFIX: &str = "/24";
/// Environment variable telling the child which peer to probe.
const PEER_ENV: &str = "WULF_TEST_NETNS_PEER";
/// Environment variable with the child's own address.
const SELF_ENV: &str = "WULF_TEST_NETNS_SELF";
/// Prefix of the child's JSON output lines.
const HOST_TAG: &str = "WULF_HOST_JSON:";
const SELF_TAG: &str = "WULF_SELF_IFACE:";

fn run(args: &[&str]) -> Output {
    Command::new("ip")
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("ip {args:?}: {e}"))
}

fn ip(args: &[&str]) {
    let out = run(args);
    assert!(
        out.status.success(),
        "ip {} failed: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Removes what the test made when dropped, also during a panic. Deleting a
/// namespace deletes the veth end inside it, and with it the pair; the link
/// deletions cover a failure before the ends were moved.
struct Lab {
    ns: [String; 2],
    veth: [String; 2],
}

impl Lab {
    /// Unique names per run (process id and a counter), short enough for the
    /// 15-byte interface name limit.
    fn new() -> Lab {
        static N: AtomicUsize = AtomicUsize::new(0);
        let id = format!(
            "{}x{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        );
        Lab {
            ns: [format!("wulf-sys-{id}-a"), format!("wulf-sys-{id}-b")],
            veth: [format!("wva{id}"), format!("wvb{id}")],
        }
    }

    fn exec(&self, i: usize, cmd: &[&str]) -> Output {
        let mut args = vec!["netns", "exec", &self.ns[i]];
        args.extend_from_slice(cmd);
        run(&args)
    }

    fn sysfs(&self, i: usize, attr: &str) -> String {
        let path = format!("/sys/class/net/{}/{attr}", self.veth[i]);
        let out = self.exec(i, &["cat", &path]);
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        for ns in &self.ns {
            let _ = run(&["netns", "del", ns]);
        }
        for v in &self.veth {
            let _ = Command::new("ip")
                .args(["link", "del", v])
                .stderr(std::process::Stdio::null())
                .output();
        }
    }
}

fn skip_reason() -> Option<String> {
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        return Some("not root: cannot create network namespaces".into());
    }
    if Command::new("ip").arg("-V").output().is_err() {
        return Some("the `ip` program (iproute2) is missing".into());
    }
    None
}

#[test]
fn veth_between_namespaces() {
    if let Some(why) = skip_reason() {
        println!("SKIPPED veth_between_namespaces: {why}");
        return;
    }
    let lab = Lab::new();
    let [na, nb] = [&lab.ns[0], &lab.ns[1]];
    let [va, vb] = [&lab.veth[0], &lab.veth[1]];
    ip(&["netns", "add", na]);
    ip(&["netns", "add", nb]);
    ip(&["link", "add", va, "type", "veth", "peer", "name", vb]);
    ip(&["link", "set", va, "netns", na]);
    ip(&["link", "set", vb, "netns", nb]);
    for (i, (v, addr)) in [(va, ADDR_A), (vb, ADDR_B)].into_iter().enumerate() {
        let ns = &lab.ns[i];
        let with_prefix = format!("{addr}{PREFIX}");
        ip(&["-n", ns, "link", "set", "lo", "up"]);
        ip(&["-n", ns, "link", "set", v, "mtu", "9000"]);
        ip(&["-n", ns, "addr", "add", &with_prefix, "dev", v]);
        ip(&["-n", ns, "link", "set", v, "up"]);
    }

    // Probe from inside namespace a, towards b.
    let me = std::env::current_exe().unwrap();
    let me = me.to_str().unwrap();
    let out = Command::new("ip")
        .args(["netns", "exec", na, me])
        .args(["--exact", "netns_child", "--ignored", "--nocapture"])
        .args(["--test-threads", "1"])
        .env(PEER_ENV, ADDR_B)
        .env(SELF_ENV, ADDR_A)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "child failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line = |tag: &str| {
        stdout
            .lines()
            // The harness prints "test netns_child ... " before the
            // child's first line, so the tag need not start a line.
            .find_map(|l| l.split_once(tag).map(|(_, rest)| rest))
            .unwrap_or_else(|| panic!("no {tag} line in child output:\n{stdout}"))
            .to_string()
    };
    let host: Host = serde_json::from_str(&line(HOST_TAG)).unwrap();
    print!("{}", host.describe_text());

    assert_eq!(host.interfaces.len(), 1, "{host:?}");
    let i = &host.interfaces[0];
    assert_eq!(&i.name, va, "route to the peer goes out of our veth end");
    assert_eq!(i.driver.as_deref(), Some("veth"));
    assert_eq!(i.mtu_bytes, Some(9000), "MTU set to 9000 on the veth");
    assert_eq!(i.is_virtual, Some(true));
    assert_eq!(i.pcie, None);
    // Speed and duplex exactly as sysfs says inside the namespace (veth
    // reports a nominal figure; which one is the kernel's business).
    let speed = lab.sysfs(0, "speed");
    let sysfs_speed = speed.parse::<i64>().ok().filter(|s| *s > 0);
    assert_eq!(
        i.speed_mbit_per_s,
        sysfs_speed.map(|s| s as u64),
        "sysfs speed {speed:?}"
    );
    let duplex = lab.sysfs(0, "duplex");
    assert_eq!(
        i.duplex.as_deref(),
        Some(duplex.as_str()).filter(|d| *d == "full" || *d == "half")
    );
    // The legacy ethtool offload queries answer on veth.
    assert!(
        i.offloads.tso.is_some() && i.offloads.gso.is_some(),
        "{i:?}"
    );
    // With speed and MTU known, the link limit follows from them.
    if let Some(speed) = i.speed_mbit_per_s {
        let l = i
            .link_limit(IpVersion::V4, true)
            .expect("speed and MTU known");
        assert_eq!(l.payload_per_frame_bytes, 9000 - 52);
        assert_eq!(l.link_speed_mbit_per_s, speed as f64);
        assert_eq!(i.framing(), Framing::Shaper);
        assert!(l.goodput_shaped_mbit_per_s < speed as f64);
    }
    assert_eq!(pcie_limits_link(i), None);
    // Our own address is reached through loopback, not the veth.
    assert_eq!(line(SELF_TAG), "lo");
    // The other end, checked from outside: MTU set there too.
    assert_eq!(lab.sysfs(1, "mtu"), "9000");
}

/// Runs inside the namespace, started by `veth_between_namespaces`; does
/// nothing when run any other way.
#[test]
#[ignore = "helper: run by veth_between_namespaces inside a namespace"]
fn netns_child() {
    let (Ok(peer), Ok(own)) = (std::env::var(PEER_ENV), std::env::var(SELF_ENV)) else {
        println!("netns_child: nothing to do outside veth_between_namespaces");
        return;
    };
    let peer: IpAddr = peer.parse().unwrap();
    let own: IpAddr = own.parse().unwrap();
    let host = Host::probe().with_interface_for_peer(peer);
    println!("{HOST_TAG}{}", serde_json::to_string(&host).unwrap());
    let own_iface = interface_for_peer(own).unwrap_or_default();
    println!("{SELF_TAG}{own_iface}");
}
