//! The interface fingerprint on a veth pair between two network namespaces
//! the test creates (and removes, even when it fails), and measurements over
//! such a pair with a real htb shaper on one end.
//!
//! The probing code must run inside the namespace: sysfs shows the interfaces
//! of the namespace it was mounted in, which `ip netns exec` arranges. So the
//! first test re-runs its own binary there, selecting the ignored
//! `netns_child` test, which prints the host block as JSON for the parent to
//! check; the others run the wulf binary there. Skipped, with a printed
//! reason, only when not root or `ip` (or, for the shaper, `tc`) is missing.
//! Names start with `wulf-t-`; addresses come from 198.18.0.0/15, the
//! benchmarking range (RFC 2544).

use std::io::{BufRead, BufReader};
use std::net::IpAddr;
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};

use wulf::result::{LinkEnd, SweepResult};
use wulf::sys::{interface_for_peer, pcie_limits_link, Framing, Host, IpVersion};

const ADDR_A: &str = "198.18.0.1";
const ADDR_B: &str = "198.18.0.2";
const PREFIX: &str = "/24";
/// The shaper's rate: `tc ... htb rate 100mbit`.
const SHAPED_BITS_PER_S: u64 = 100_000_000;
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
            ns: [format!("wulf-t-{id}-a"), format!("wulf-t-{id}-b")],
            veth: [format!("wta{id}"), format!("wtb{id}")],
        }
    }

    /// Make both namespaces and the veth pair between them: end a in
    /// namespace a with ADDR_A, end b in b with ADDR_B, `mtu` on both.
    fn up(&self, mtu: &str) {
        let [na, nb] = [&self.ns[0], &self.ns[1]];
        let [va, vb] = [&self.veth[0], &self.veth[1]];
        ip(&["netns", "add", na]);
        ip(&["netns", "add", nb]);
        ip(&["link", "add", va, "type", "veth", "peer", "name", vb]);
        ip(&["link", "set", va, "netns", na]);
        ip(&["link", "set", vb, "netns", nb]);
        for (i, (v, addr)) in [(va, ADDR_A), (vb, ADDR_B)].into_iter().enumerate() {
            let ns = &self.ns[i];
            let with_prefix = format!("{addr}{PREFIX}");
            ip(&["-n", ns, "link", "set", "lo", "up"]);
            ip(&["-n", ns, "link", "set", v, "mtu", mtu]);
            ip(&["-n", ns, "addr", "add", &with_prefix, "dev", v]);
            ip(&["-n", ns, "link", "set", v, "up"]);
        }
    }

    /// Shape end `i`'s egress as the link lab does: a root htb whose default
    /// class 1:1 has rate and ceiling `rate`.
    fn shape_htb(&self, i: usize, rate: &str) {
        let dev = self.veth[i].as_str();
        for cmd in [
            &[
                "qdisc", "add", "dev", dev, "root", "handle", "1:", "htb", "default", "1",
            ][..],
            &[
                "class", "add", "dev", dev, "parent", "1:", "classid", "1:1", "htb", "rate", rate,
                "ceil", rate,
            ][..],
        ] {
            let mut args = vec!["tc"];
            args.extend_from_slice(cmd);
            let out = self.exec(i, &args);
            assert!(
                out.status.success(),
                "{}: {}",
                args.join(" "),
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }

    /// Run the wulf binary inside namespace `i`.
    fn wulf(&self, i: usize, args: &[&str]) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.ns[i], env!("CARGO_BIN_EXE_wulf")])
            .args(args);
        c
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
    lab.up("9000");
    let (na, va) = (&lab.ns[0], &lab.veth[0]);

    // Probe from inside namespace a, towards b.
    let me = std::env::current_exe().unwrap();
    let me = me.to_str().unwrap();
    let out = Command::new("ip")
        .args(["netns", "exec", na, me])
        .args([
            "--exact",
            &crate::common::test_name(module_path!(), "netns_child"),
        ])
        .args(["--ignored", "--nocapture"])
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
    // A veth has no queue of its own; nothing shapes it.
    assert_eq!(i.qdisc.as_deref(), Some("noqueue"), "{i:?}");
    assert_eq!(i.shaped_rate_bits_per_s, None);
    assert!(!i.is_shaped());
    // The path leaves through the veth; the kernel's boot id is read.
    assert_eq!(host.path_crosses_interface, Some(true));
    assert!(host.boot_id.is_some());
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

/// Why the shaper tests cannot run here, if they cannot.
fn shaper_skip_reason() -> Option<String> {
    skip_reason().or_else(|| {
        let tc = Command::new("tc").arg("-V").output();
        (!tc.is_ok_and(|o| o.status.success()))
            .then(|| "the `tc` program (iproute2) is missing".into())
    })
}

/// A `wulf serve` inside a namespace, killed on drop (before the lab that
/// holds its namespace, being declared after it).
struct Serve {
    child: Child,
    port: u16,
}

impl Serve {
    fn start(lab: &Lab, i: usize, bind: &str) -> Serve {
        let mut child = lab
            .wulf(i, &["serve", "--bind", bind, "--port", "0", "--announce"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start wulf serve");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port = line
            .trim()
            .strip_prefix("WULF-LISTENING ")
            .and_then(|p| p.parse().ok());
        let Some(port) = port else {
            let _ = child.kill();
            let _ = child.wait();
            panic!("bad announce line {line:?}");
        };
        Serve { child, port }
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `wulf info --peer` on the shaped end reports the shaper's rate and the
/// htb qdisc, not the veth's nominal speed, in JSON and in text.
#[test]
fn info_reports_the_htb_rate() {
    if let Some(why) = shaper_skip_reason() {
        println!("SKIPPED info_reports_the_htb_rate: {why}");
        return;
    }
    let lab = Lab::new();
    lab.up("1500");
    lab.shape_htb(1, "100mbit");
    let out = lab
        .wulf(1, &["info", "--peer", ADDR_A, "--json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let host: Host = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(host.interfaces.len(), 1, "{host:?}");
    let i = &host.interfaces[0];
    assert_eq!(&i.name, &lab.veth[1]);
    assert_eq!(i.qdisc.as_deref(), Some("htb"));
    assert_eq!(i.shaped_rate_bits_per_s, Some(SHAPED_BITS_PER_S));
    assert!(i.is_shaped());
    assert_eq!(i.effective_speed_mbit_per_s(), Some(100.0));
    assert_eq!(i.framing(), Framing::Shaper);
    let l = i.link_limit(IpVersion::V4, true).unwrap();
    assert_eq!(l.link_speed_mbit_per_s, 100.0);
    assert_eq!(host.path_crosses_interface, Some(true));

    // The text: the shaped speed first, the nominal one (sysfs) beside it.
    let out = lab.wulf(1, &["info", "--peer", ADDR_A]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    print!("{text}");
    let nominal = lab.sysfs(1, "speed");
    let nominal = nominal
        .parse::<i64>()
        .ok()
        .filter(|s| *s > 0)
        .map_or("unknown".to_string(), |s| s.to_string());
    let want = format!("speed 100 Mbit/s (shaped: htb; nominal {nominal})");
    assert!(text.contains(&want), "no {want:?} in\n{text}");
    assert!(text.contains("behind the htb shaper"), "{text}");
    // The unshaped end says so.
    let out = lab
        .wulf(0, &["info", "--peer", ADDR_B, "--json"])
        .output()
        .unwrap();
    let other: Host = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(other.interfaces[0].qdisc.as_deref(), Some("noqueue"));
    assert_eq!(other.interfaces[0].shaped_rate_bits_per_s, None);
}

/// A sweep from one namespace to a `wulf serve` in the other, whose end is
/// shaped to 100 Mbit/s: the same host name and kernel on both ends, but a
/// veth and a shaper between them. The result must carry the link's limit
/// (the peer's shaper, shaper framing) and no memory limits.
#[test]
fn sweep_over_a_shaped_veth_uses_the_link_limit() {
    if let Some(why) = shaper_skip_reason() {
        println!("SKIPPED sweep_over_a_shaped_veth_uses_the_link_limit: {why}");
        return;
    }
    let lab = Lab::new();
    lab.up("1500");
    lab.shape_htb(1, "100mbit");
    let server = Serve::start(&lab, 1, ADDR_B);
    let peer = format!("{ADDR_B}:{}", server.port);
    let out = lab
        .wulf(
            0,
            &[
                "sweep",
                "tcp",
                "--peer",
                &peer,
                "--sizes",
                "1,64Ki",
                "--budget",
                "1s",
                "--quiet",
                "--timeout",
                "10s",
                "--json",
                "-",
            ],
        )
        .output()
        .unwrap();
    let table = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "sweep failed:\n{table}");
    eprint!("{table}");
    let r: SweepResult = serde_json::from_slice(&out.stdout).unwrap();
    let peer_host = r.peer_host.as_ref().expect("peer host");

    // One machine by name and kernel, two by path.
    assert_eq!(r.host.hostname, peer_host.hostname);
    assert!(r.host.boot_id.is_some());
    assert_eq!(r.host.boot_id, peer_host.boot_id);
    assert_eq!(r.host.path_crosses_interface, Some(true));
    assert_eq!(peer_host.path_crosses_interface, Some(true));
    assert_eq!(
        wulf::sys::recorded_same_machine(&r.host, peer_host),
        Some(false)
    );

    // No memory limits.
    assert_eq!(r.points.len(), 2);
    assert!(
        r.points.iter().all(|p| p.limits.is_none()),
        "{:?}",
        r.points
    );
    assert_eq!(r.summary.latency_floor_multiple, None);
    assert_eq!(r.summary.peak_memcpy_fraction, None);
    assert_eq!(r.definitions.efficiency, None);
    assert!(!table.contains("floor"), "{table}");
    assert!(!table.contains("memcpy"), "{table}");

    // The peer described its shaped interface, and it is the bottleneck.
    let theirs = &peer_host.interfaces[0];
    assert_eq!(&theirs.name, &lab.veth[1]);
    assert_eq!(theirs.shaped_rate_bits_per_s, Some(SHAPED_BITS_PER_S));
    let link = r.link.as_ref().expect("link block");
    assert_eq!(link.end, Some(LinkEnd::Server));
    assert_eq!(&link.interface, &lab.veth[1]);
    assert_eq!(link.shaper.as_deref(), Some("htb"));
    assert_eq!(link.limit.link_speed_mbit_per_s, 100.0);
    assert_eq!(link.framing, Framing::Shaper);
    assert_eq!(link.limit.shaped_bytes_per_frame, 1514);
    // 100 Mbit/s x payload per 1514-byte frame back from the peer.
    let back = 100e6 * link.limit.payload_per_frame_bytes as f64 / 1514.0;
    let from = link.from_peer_bits_per_s.unwrap();
    assert!((from - back).abs() < 1.0, "{link:?}");
    // A ping-pong: the harmonic mean with the unshaped way there.
    let to = link.to_peer_bits_per_s.unwrap();
    let harmonic = 2.0 / (1.0 / to + 1.0 / from);
    assert!((link.limit_bits_per_s - harmonic).abs() < 1.0, "{link:?}");
    let peak = r.summary.peak_bits_per_s.unwrap();
    let fraction = link.peak_fraction.unwrap();
    assert!((fraction - peak / link.limit_bits_per_s).abs() < 1e-9);
    // The shaper holds the peak under the path's limit (htb's small burst
    // allows a little over it at most).
    assert!(
        fraction > 0.0 && fraction < 1.1,
        "peak {peak} bit/s: {link:?}"
    );
    assert!(table.contains("link     peak"), "{table}");
    assert!(table.contains("shaped by htb"), "{table}");
    drop(server);
}
