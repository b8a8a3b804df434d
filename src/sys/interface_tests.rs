//! Tests of the interface fingerprint: parsing, PCIe, shapers, loopback.

use super::*;

#[test]
fn speeds_parse() {
    assert_eq!(parse_speed("10000"), Some(10000));
    assert_eq!(parse_speed("-1"), None);
    assert_eq!(parse_speed("4294967295"), None);
    assert_eq!(parse_speed("0"), None);
    assert_eq!(parse_link_speed("8.0 GT/s PCIe"), Some(8.0));
    assert_eq!(parse_link_speed("2.5 GT/s"), Some(2.5));
    assert_eq!(parse_link_speed("Unknown"), None);
}

#[test]
fn pcie_rates() {
    // Gen1 x1: 2.5 GT/s * 8/10 = 2000 Mbit/s.
    assert_eq!(pcie_mbit_per_s(2.5, 1), Some(2000.0));
    // Gen3 x8: 8 GT/s * 128/130 * 8 = 63015.38... Mbit/s.
    let g3 = pcie_mbit_per_s(8.0, 8).unwrap();
    assert!((g3 - 63015.38).abs() < 0.01);
    assert_eq!(pcie_mbit_per_s(8.0, 0), None);
}

fn nic(speed: u64, gt: f64, lanes: u32, max_gt: f64, max_lanes: u32) -> Interface {
    Interface {
        name: "eth9".into(),
        speed_mbit_per_s: Some(speed),
        pcie: Some(PcieLink {
            address: "0000:01:00.0".into(),
            current_speed_gt_per_s: Some(gt),
            current_width_lanes: Some(lanes),
            max_speed_gt_per_s: Some(max_gt),
            max_width_lanes: Some(max_lanes),
        }),
        ..Interface::default()
    }
}

#[test]
fn pcie_warning() {
    // 10 GbE on Gen1 x1 (2 Gbit/s): warned, and the slot is named.
    let w = pcie_limits_link(&nic(10_000, 2.5, 1, 8.0, 8)).unwrap();
    assert!(
        w.contains("2000 Mbit/s") && w.contains("10000 Mbit/s"),
        "{w}"
    );
    assert!(w.contains("slower slot"), "{w}");
    // Same but the device cannot do better: no slot remark.
    let w = pcie_limits_link(&nic(10_000, 2.5, 1, 2.5, 1)).unwrap();
    assert!(!w.contains("slower slot"), "{w}");
    // Gigabit on Gen1 x1 is fine.
    assert_eq!(pcie_limits_link(&nic(1000, 2.5, 1, 2.5, 1)), None);
    // Unknown bus or speed: no warning.
    assert_eq!(pcie_limits_link(&Interface::default()), None);
}

/// A fake sysfs: a virtio NIC whose PCI function has PCIe link
/// attributes, under a PCIe bridge that has its own (which must not be
/// reported).
#[test]
fn pcie_link_found_by_walking_up_to_the_pci_function() {
    use std::os::unix::fs::symlink;
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("devices");
    let bus_pci = tmp.path().join("bus/pci");
    let bus_virtio = tmp.path().join("bus/virtio");
    let bridge = root.join("pci0000:00/0000:00:01.0");
    let func = bridge.join("0000:01:00.0");
    let virtio = func.join("virtio2");
    let net = tmp.path().join("class/net/eth9");
    for d in [&bus_pci, &bus_virtio, &virtio, &net] {
        std::fs::create_dir_all(d).unwrap();
    }
    symlink(&bus_pci, bridge.join("subsystem")).unwrap();
    symlink(&bus_pci, func.join("subsystem")).unwrap();
    symlink(&bus_virtio, virtio.join("subsystem")).unwrap();
    symlink(&virtio, net.join("device")).unwrap();
    let write = |dir: &Path, f: &str, v: &str| std::fs::write(dir.join(f), v).unwrap();
    write(&bridge, "current_link_speed", "16.0 GT/s PCIe\n");
    write(&bridge, "current_link_width", "16\n");
    write(&func, "current_link_speed", "2.5 GT/s PCIe\n");
    write(&func, "current_link_width", "1\n");
    write(&func, "max_link_speed", "8.0 GT/s PCIe\n");
    write(&func, "max_link_width", "8\n");

    let link = pcie_link(&net, &root).expect("PCIe link of the function");
    assert_eq!(link.address, "0000:01:00.0");
    assert_eq!(link.current_speed_gt_per_s, Some(2.5));
    assert_eq!(link.current_width_lanes, Some(1));
    assert_eq!(link.max_speed_gt_per_s, Some(8.0));
    assert_eq!(link.max_width_lanes, Some(8));

    // Conventional PCI: the function has no link attributes, and the
    // bridge's are not borrowed.
    for f in [
        "current_link_speed",
        "current_link_width",
        "max_link_speed",
        "max_link_width",
    ] {
        std::fs::remove_file(func.join(f)).unwrap();
    }
    assert_eq!(pcie_link(&net, &root), None);
    // No device at all (a virtual interface).
    assert_eq!(pcie_link(&tmp.path().join("class/net/none"), &root), None);
}

#[test]
fn loopback_is_found_and_described() {
    assert_eq!(
        interface_for_peer("127.0.0.1".parse().unwrap()).as_deref(),
        Some("lo")
    );
    let lo = describe_interface("lo");
    assert_eq!(lo.driver, None);
    assert_eq!(lo.speed_mbit_per_s, None);
    assert_eq!(lo.pcie, None);
    assert_eq!(lo.is_virtual, Some(true));
    assert!(lo.mtu_bytes.is_some());
    // Loopback's root qdisc is noqueue unless someone shaped it.
    assert!(lo.qdisc.is_some(), "{lo:?}");
    assert_eq!(lo.framing(), Framing::Shaper);
}

#[test]
fn a_shaper_sets_the_speed_and_the_framing() {
    let veth = Interface {
        name: "veth0".into(),
        is_virtual: Some(true),
        mtu_bytes: Some(1500),
        speed_mbit_per_s: Some(10_000),
        qdisc: Some("htb".into()),
        shaped_rate_bits_per_s: Some(100_000_000),
        ..Interface::default()
    };
    assert!(veth.is_shaped());
    assert_eq!(veth.effective_speed_mbit_per_s(), Some(100.0));
    assert_eq!(veth.framing(), Framing::Shaper);
    let l = veth.link_limit(IpVersion::V4, true).unwrap();
    assert_eq!(l.link_speed_mbit_per_s, 100.0);
    // 100 * 1448 / 1514, see link_limit.
    assert!((l.goodput_shaped_mbit_per_s - 95.64).abs() < 0.005);
    // Traffic coming in is not held by the egress shaper.
    let inbound = veth.without_shaper();
    assert!(!inbound.is_shaped());
    assert_eq!(inbound.effective_speed_mbit_per_s(), Some(10_000.0));
    assert_eq!(inbound.qdisc.as_deref(), Some("htb"));

    // A real NIC: a shaper slower than the wire sets speed and framing;
    // one faster than the wire does not.
    let nic = Interface {
        name: "eth0".into(),
        is_virtual: Some(false),
        mtu_bytes: Some(1500),
        speed_mbit_per_s: Some(1000),
        qdisc: Some("tbf".into()),
        shaped_rate_bits_per_s: Some(250_000_000),
        ..Interface::default()
    };
    assert!(nic.is_shaped());
    assert_eq!(nic.effective_speed_mbit_per_s(), Some(250.0));
    assert_eq!(nic.framing(), Framing::Shaper);
    let fast = Interface {
        shaped_rate_bits_per_s: Some(10_000_000_000),
        ..nic.clone()
    };
    assert!(!fast.is_shaped());
    assert_eq!(fast.effective_speed_mbit_per_s(), Some(1000.0));
    assert_eq!(fast.framing(), Framing::Ethernet);
    // A shaped rate without a known nominal speed is the speed.
    let unknown = Interface {
        speed_mbit_per_s: None,
        ..nic
    };
    assert_eq!(unknown.effective_speed_mbit_per_s(), Some(250.0));
}

/// Interface blocks written before the qdisc fields existed still load.
#[test]
fn old_interface_blocks_load() {
    let i: Interface =
        serde_json::from_str(r#"{"name": "eth0", "speed_mbit_per_s": 1000}"#).unwrap();
    assert_eq!((i.qdisc.as_deref(), i.shaped_rate_bits_per_s), (None, None));
    assert_eq!(i.effective_speed_mbit_per_s(), Some(1000.0));
}

#[test]
fn hostile_names_are_not_read() {
    let i = describe_interface("../../../etc");
    assert_eq!(i.mtu_bytes, None);
    assert_eq!(describe_interface("no-such-if0").mtu_bytes, None);
}
