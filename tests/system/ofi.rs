//! The `ofi` transports (libfabric's tagged interface on FI_EP_RDM
//! endpoints, libfabric.so.1 loaded at run time) on this machine: each
//! provider sweeps every mode with its bytes checked, and records the
//! provider, endpoint type, protocol, fabric and domain libfabric chose,
//! which must be the provider asked for (a result says which path it took,
//! not which one was asked for). Skips with a line where libfabric is
//! missing, unless WULF_REQUIRE_OFI=1 (CI), where it fails.

use crate::common;

#[test]
fn every_ofi_provider_sweeps_every_mode_checked_and_records_what_libfabric_chose() {
    if !common::have_ofi() {
        return;
    }
    let _serial = common::serial();
    // (transport, the provider chain it must record, its protocol)
    for (t, provider, protocol) in [
        ("ofi(tcp)", "tcp;ofi_rxm", "FI_PROTO_RXM"),
        ("ofi(shm)", "shm", "FI_PROTO_SHM"),
        ("ofi(udp)", "udp;ofi_rxd", "FI_PROTO_RXD"),
    ] {
        for mode in ["pingpong", "stream", "bidir"] {
            let r = common::sweep_every_size(
                &[
                    "sweep",
                    t,
                    "--mode",
                    mode,
                    "--sizes",
                    "1,4Ki,1Mi",
                    "--integrity",
                    "--no-perturb",
                    "--timeout",
                    "10s",
                ],
                3.0,
            );
            assert_eq!(r["transport"], t);
            assert_eq!(r["options"]["integrity"], true);
            let points = r["points"].as_array().unwrap();
            assert_eq!(points.len(), 3, "{t} {mode}");
            assert!(points
                .iter()
                .all(|p| p["median_ns"].as_f64().unwrap() > 0.0));
            let settings = &r["options"]["transport"];
            for end in [settings, &settings["server"]] {
                assert_eq!(end["ofi_provider"], provider, "{t} {mode}: {end}");
                assert_eq!(end["ofi_endpoint_type"], "FI_EP_RDM", "{t}");
                assert_eq!(end["ofi_protocol"], protocol, "{t}");
                assert_eq!(end["ofi_interface"], "tagged", "{t}");
                assert!(end["ofi_version"].as_str().unwrap().starts_with("1."));
                assert!(!end["ofi_domain"].as_str().unwrap().is_empty(), "{t}");
                assert!(!end["ofi_fabric"].as_str().unwrap().is_empty(), "{t}");
            }
        }
    }
}

#[test]
fn a_provider_libfabric_is_told_to_hide_fails_with_libfabric_s_reason() {
    if !common::have_ofi() {
        return;
    }
    // FI_PROVIDER limits the providers libfabric offers: asking for tcp
    // when only shm is allowed must fail promptly, in libfabric's words.
    let err = common::sweep_failing_with_env("ofi(tcp)", "FI_PROVIDER", "shm");
    assert!(err.contains("fi_getinfo") && err.contains("tcp"), "{err}");
}
