//! UCX between the nodes of a temporary lab (`wulf sweep ucx(tcp) --lab
//! fe`): each selection that can cross hosts completes every mode with its
//! bytes checked, over TCP lanes on the node's interface (UCX's own choice
//! leaves shared memory out inside lab nodes, which UCX would take for one
//! host), and crosses the 100 Mbit/s link: its 64 KiB point is below the
//! link's rate, which a path through shared memory would beat. Skips with
//! a line where UCX is absent, unless WULF_REQUIRE_UCX=1 (CI).

use serde_json::Value;

use crate::common::{self, serial};

#[test]
fn ucx_crosses_the_lab_link_checked_over_tcp_lanes() {
    let _s = serial();
    if !common::labs_possible() || !common::have_ucx() {
        return;
    }
    for t in ["ucx(tcp)", "ucx"] {
        for mode in ["pingpong", "stream", "bidir"] {
            let out = common::run(&[
                "sweep",
                t,
                "--lab",
                "fe",
                "--mode",
                mode,
                "--sizes",
                "1,64Ki",
                "--budget",
                "1s",
                "--wait",
                "block",
                "--integrity",
                "--quiet",
                "--json",
                "-",
            ]);
            let err = common::stderr(&out);
            assert!(out.status.success(), "{t} {mode}: {err}");
            let r: Value = serde_json::from_slice(&out.stdout).expect("a JSON result");
            assert_eq!(r["complete"], true, "{t} {mode}");
            assert_eq!(r["options"]["integrity"], true);
            let settings = &r["options"]["transport"];
            for end in [settings, &settings["server"]] {
                let lanes = end["ucx_lanes"].as_array().expect("lanes recorded");
                assert!(
                    !lanes.is_empty() && lanes.iter().all(|l| l == "tcp/eth0"),
                    "{t} {mode}: lanes {lanes:?}, not the node's interface"
                );
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
