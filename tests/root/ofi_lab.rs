//! libfabric between the nodes of a temporary lab (`wulf sweep ofi(tcp)
//! --lab fe`): each provider that can cross hosts completes every mode
//! with its bytes checked, over the nodes' interface (the domain libfabric
//! chose is eth0 on both ends, the fabric the lab's subnet), and crosses
//! the 100 Mbit/s link: its 64 KiB point is below the link's rate, which a
//! path through the root namespace would beat. Its ping-pong runs with the
//! default wait, which in a lab node is yield (spinning ends keep the
//! link's softirq work off their CPUs). Skips with a line where
//! libfabric is absent, unless WULF_REQUIRE_OFI=1 (CI).

use crate::common::{self, serial};

#[test]
fn ofi_crosses_the_lab_link_checked_on_the_node_interface() {
    let _s = serial();
    if !common::labs_possible() || !common::have_ofi() {
        return;
    }
    for t in ["ofi(tcp)", "ofi(udp)"] {
        // Ping-pong with the default wait (yield in a lab node), the
        // others blocking.
        for (mode, wait) in [
            ("pingpong", None),
            ("stream", Some("block")),
            ("bidir", Some("block")),
        ] {
            let mut args = vec!["sweep", t, "--lab", "fe", "--mode", mode];
            args.extend(["--sizes", "1,64Ki", "--integrity"]);
            if let Some(w) = wait {
                args.extend(["--wait", w]);
            }
            let r = common::sweep_every_size(&args, 2.0);
            assert_eq!(r["complete"], true, "{t} {mode}");
            assert_eq!(r["options"]["wait"], wait.unwrap_or("yield"), "{t} {mode}");
            assert_eq!(r["options"]["integrity"], true);
            let settings = &r["options"]["transport"];
            for end in [settings, &settings["server"]] {
                assert_eq!(end["ofi_domain"], "eth0", "{t} {mode}: {end}");
                let fabric = end["ofi_fabric"].as_str().unwrap();
                assert!(fabric.starts_with("198.1"), "{t} {mode}: fabric {fabric}");
                assert_eq!(end["ofi_endpoint_type"], "FI_EP_RDM");
            }
            let p = &r["placement"]["lab"];
            assert_eq!(
                (p["client_node"].as_str(), p["server_node"].as_str()),
                (Some("node1"), Some("node2"))
            );
            common::assert_over_fe_link(&r, t, mode);
        }
    }
}
