//! NAS traffic as NPB sends it, checked on the wire: CG's bytes in a
//! private network namespace's loopback against the result's own count
//! and NPB's formula (issue 31, items 2 and 4), and the TCP-forced Open
//! MPI variant in a namespace whose only interface is the loopback (item
//! 6). Root: `unshare -n` makes the namespace, so no other traffic shares
//! its loopback.

use crate::common;

use std::process::Command;

/// Runs `wulf ARGS` in a new network namespace with its loopback up and
/// returns (the loopback's transmitted bytes over the run, the output).
fn in_private_loopback(args: &[&str]) -> (u64, std::process::Output) {
    let script = "ip link set lo up || exit 90; \
         tx() { awk '/lo:/{print $10}' /proc/net/dev; }; \
         b=$(tx); \"$0\" \"$@\"; rc=$?; a=$(tx); echo LO_TX=$((a - b)) >&2; exit $rc";
    let out = Command::new("unshare")
        .args(["-n", "sh", "-c", script, common::wulf_bin()])
        .args(args)
        .output()
        .expect("unshare");
    let err = common::stderr(&out);
    let tx = err
        .lines()
        .find_map(|l| l.strip_prefix("LO_TX="))
        .unwrap_or_else(|| panic!("no loopback count: {err}"))
        .trim()
        .parse()
        .unwrap();
    (tx, out)
}

fn root() -> bool {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    if !root {
        if std::env::var_os("WULF_REQUIRE_LAB").is_some() {
            panic!("root tests required but not root");
        }
        eprintln!("SKIPPED: needs root for unshare -n");
    }
    root
}

#[test]
fn cg_sends_npb_s_bytes_on_the_wire() {
    if !root() {
        return;
    }
    let _serial = common::serial();
    let dir = common::tempdir();
    let json = common::file(&dir, "cg.json");
    let (lo_tx_bytes, out) = in_private_loopback(&[
        "npb",
        "cg",
        "--class",
        "S",
        "--np",
        "2",
        "--via",
        "tcp",
        "--repetitions",
        "1",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", common::stderr(&out));
    let r = common::json(&json);
    let o = &r["runs"][0]["outcomes"][0];
    let sent = o["sent_bytes"].as_u64().expect("sent_bytes");
    assert!(o["sent_messages"].as_u64().unwrap() > 0);
    // NPB: class S (na 1400) on a 1 x 2 grid sends one column block of
    // 700 values per rank and product (its transpose stays home), 26
    // products per outer iteration, 15 timed iterations; the dot products'
    // scalars come on top.
    let products = 8 * 700 * 2 * 26 * 15;
    assert!(
        (products..products + products / 50).contains(&sent),
        "sent {sent} B against NPB's {products} B of products"
    );
    // The wire carries the timed section, one untimed conj_grad (16 in
    // all), headers and the set-up: more, but not twice as much.
    let timed_and_untimed = sent * 16 / 15;
    assert!(
        lo_tx_bytes >= timed_and_untimed && lo_tx_bytes < timed_and_untimed * 13 / 10,
        "loopback {lo_tx_bytes} B against {timed_and_untimed} B counted"
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("mean message bytes"), "{text}");
}

#[test]
fn open_mpi_over_tcp_runs_where_the_loopback_is_the_only_interface() {
    if !root() || !common::have("openmpi") {
        return;
    }
    let _serial = common::serial();
    let (_, out) = in_private_loopback(&[
        "npb",
        "is",
        "--class",
        "S",
        "--np",
        "2",
        "--via",
        "mpi:openmpi(tcp)",
        "--repetitions",
        "1",
    ]);
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        common::stderr(&out)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("verified"));
}
