//! A hub lab (`wulf lab up --medium hub`, issue 32 item 2): every node's
//! frames share one budget of the link rate, so two pairs streaming at
//! once share Fast Ethernet's 100 Mbit/s, and so do the two directions of
//! one pair (seed 004's 10/100 hub). On a switch the same two pairs get
//! about 100 Mbit/s each. The streams are plain Python sockets (not wulf),
//! bounded in bytes and by 30 s timeouts.

use crate::common;

use std::process::{Child, Stdio};

/// Sink (`sink`): accepts one connection on port 5001, reads to the end,
/// answers one byte. Sender (`send HOST BYTES`): sends BYTES, waits for
/// the answer, prints its start and end times (Unix seconds).
const STREAM_PY: &str = r#"
import socket, sys, time
if sys.argv[1] == "sink":
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("0.0.0.0", 5001)); s.listen(1); s.settimeout(30)
    c, _ = s.accept(); c.settimeout(30)
    while c.recv(1 << 16): pass
    c.sendall(b"x"); c.close()
else:
    host, n = sys.argv[2], int(sys.argv[3])
    for _ in range(50):
        try:
            c = socket.create_connection((host, 5001), timeout=30); break
        except OSError:
            time.sleep(0.1)
    buf = b"\0" * (1 << 16); start = time.time(); sent = 0
    while sent < n:
        sent += c.send(buf[: min(len(buf), n - sent)])
    c.shutdown(socket.SHUT_WR); c.recv(1)
    print(start, time.time())
"#;

const BYTES: u64 = 12_000_000;

fn in_node(lab: &str, node: &str, script: &std::path::Path, args: &[&str]) -> Child {
    common::wulf(&["lab", "exec", "--name", lab, node, "--", "python3"])
        .arg(script)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("wulf lab exec")
}

/// Streams BYTES over each (sender, receiver) pair at once and returns
/// the aggregate payload rate, Mbit/s, from the first start to the last end.
fn aggregate_mbit_per_s(lab: &str, script: &std::path::Path, pairs: &[(&str, &str)]) -> f64 {
    let sinks: Vec<Child> = pairs
        .iter()
        .map(|(_, to)| in_node(lab, to, script, &["sink"]))
        .collect();
    let n = BYTES.to_string();
    let senders: Vec<Child> = pairs
        .iter()
        .map(|(from, to)| in_node(lab, from, script, &["send", to, &n]))
        .collect();
    let mut spans = Vec::new();
    for s in senders {
        let out = s.wait_with_output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        assert!(out.status.success(), "{text}{}", common::stderr(&out));
        let t: Vec<f64> = text
            .split_whitespace()
            .map(|x| x.parse().unwrap())
            .collect();
        spans.push((t[0], t[1]));
    }
    for s in sinks {
        let out = s.wait_with_output().unwrap();
        assert!(out.status.success(), "{}", common::stderr(&out));
    }
    let start = spans.iter().map(|s| s.0).fold(f64::INFINITY, f64::min);
    let end = spans.iter().map(|s| s.1).fold(0.0, f64::max);
    (BYTES * pairs.len() as u64 * 8) as f64 / (end - start) / 1e6
}

/// A hub lab held for one test: its removal guard first, so that the lab
/// is gone before the suite's lock is let go (fields drop in order).
struct HubLab {
    _guard: common::LabGuard,
    _serial: std::sync::MutexGuard<'static, ()>,
    /// What `lab up` printed.
    text: String,
}

/// A four-node fe lab named `name` joined by a hub; None (skipped)
/// without labs or python3.
fn hub_lab(name: &str) -> Option<HubLab> {
    if !common::labs_possible() || !common::in_path("python3") {
        return None;
    }
    let serial = common::serial();
    let guard = common::LabGuard(name.into());
    let up = common::run(&[
        "lab", "up", "--name", name, "--nodes", "4", "--link", "fe", "--medium", "hub",
    ]);
    let text = String::from_utf8_lossy(&up.stdout).to_string();
    assert!(up.status.success(), "{text}{}", common::stderr(&up));
    Some(HubLab {
        _guard: guard,
        _serial: serial,
        text,
    })
}

#[test]
fn a_hub_shares_one_link_among_all_pairs_and_both_directions() {
    let name = "t-hub";
    let Some(lab) = hub_lab(name) else {
        return;
    };
    let text = &lab.text;
    assert!(
        text.contains("a hub: every node shares one medium (htb 100 Mbit/s"),
        "{text}"
    );
    let dir = common::tempdir();
    let script = common::file(&dir, "stream.py");
    std::fs::write(&script, STREAM_PY).unwrap();
    // The medium carries 100 Mbit/s of frames in all, headers and the
    // receivers' acknowledgements included: the payload of every stream
    // together stays below it (a switch gives each pair its own 100).
    let two_pairs = aggregate_mbit_per_s(name, &script, &[("node1", "node2"), ("node3", "node4")]);
    assert!(
        two_pairs < 101.0,
        "two pairs on a hub moved {two_pairs:.1} Mbit/s together"
    );
    let both_ways = aggregate_mbit_per_s(name, &script, &[("node1", "node2"), ("node2", "node1")]);
    assert!(
        both_ways < 101.0,
        "both directions on a hub moved {both_ways:.1} Mbit/s together"
    );
    eprintln!("hub: two pairs {two_pairs:.1} Mbit/s, both directions {both_ways:.1} Mbit/s");
}

/// Sink (`sink W0 W1`): accepts one connection on port 5002 and counts
/// the bytes it receives between the Unix times W0 and W1, printed at the
/// end of the stream. Sender (`send HOST END`): sends until the Unix time
/// END, then closes.
const WINDOW_PY: &str = r#"
import socket, sys, time
if sys.argv[1] == "sink":
    w0, w1 = float(sys.argv[2]), float(sys.argv[3])
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("0.0.0.0", 5002)); s.listen(1); s.settimeout(30)
    c, _ = s.accept(); c.settimeout(30); n = 0
    while True:
        b = c.recv(1 << 16)
        if not b: break
        if w0 <= time.time() <= w1: n += len(b)
    print(n)
else:
    host, end = sys.argv[2], float(sys.argv[3])
    for _ in range(50):
        try:
            c = socket.create_connection((host, 5002), timeout=30); break
        except OSError:
            time.sleep(0.1)
    buf = b"\0" * (1 << 16)
    while time.time() < end:
        c.send(buf)
    c.close()
"#;

/// The most a pair's share of two may stray from one half: the hub's
/// single FIFO once split 0.41/0.59, 0.85/0.15 and 0.26/0.74 over 6 s
/// (issue 49 item 15); fair per sending node, two streams over 6 s stay
/// within 0.43 .. 0.57.
const FAIR_TOLERANCE: f64 = 0.07;

/// Two pairs streaming at once through the hub for 9 s: each pair's
/// bytes received in the same 6 s window (from 2 s on, past slow start)
/// are half of both pairs' within [`FAIR_TOLERANCE`], three times over.
#[test]
fn two_flows_through_the_hub_share_it_evenly() {
    let name = "t-hubfair";
    let Some(_lab) = hub_lab(name) else {
        return;
    };
    let dir = common::tempdir();
    let script = common::file(&dir, "window.py");
    std::fs::write(&script, WINDOW_PY).unwrap();
    let pairs = [("node1", "node2"), ("node3", "node4")];
    for round in 1..=3 {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs_f64();
        let (w0, w1, end) = (now + 2.0, now + 8.0, now + 9.0);
        let sinks: Vec<Child> = pairs
            .iter()
            .map(|(_, to)| {
                in_node(
                    name,
                    to,
                    &script,
                    &["sink", &w0.to_string(), &w1.to_string()],
                )
            })
            .collect();
        let senders: Vec<Child> = pairs
            .iter()
            .map(|(from, to)| in_node(name, from, &script, &["send", to, &end.to_string()]))
            .collect();
        for s in senders {
            let out = s.wait_with_output().unwrap();
            assert!(out.status.success(), "{}", common::stderr(&out));
        }
        let bytes: Vec<f64> = sinks
            .into_iter()
            .map(|s| {
                let out = s.wait_with_output().unwrap();
                assert!(out.status.success(), "{}", common::stderr(&out));
                String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
            })
            .collect();
        let total = bytes[0] + bytes[1];
        let share = bytes[0] / total;
        let mbit = total * 8.0 / 6.0 / 1e6;
        eprintln!(
            "round {round}: shares {share:.3}/{:.3}, together {mbit:.1} Mbit/s",
            1.0 - share
        );
        // Both moved, and together no more than the medium carries.
        assert!(total > 0.0 && mbit < 101.0, "together {mbit:.1} Mbit/s");
        assert!(
            (share - 0.5).abs() <= FAIR_TOLERANCE,
            "round {round}: two flows through the hub split {share:.3}/{:.3}",
            1.0 - share
        );
    }
}
