//! The shaper on each direction of each node's link: its parameters (pure
//! arithmetic, documented here because getting them right is the point)
//! and the `tc` commands that install it.
//!
//! # Why htb, and why these numbers
//!
//! This kernel has tbf and htb but no netem, hfsc or fq, so no qdisc can
//! delay a frame by its own serialization time: a token bucket lets a frame
//! through at once when it holds enough tokens. Two consequences decide the
//! design:
//!
//! * **The bucket must be small**, or the link runs faster than its rate. A
//!   ping-pong leaves the link idle while it waits for the reply, the bucket
//!   refills, and the next message crosses at memory speed: with tbf's
//!   usual 1 Mbit burst a 1 Gbit/s link showed 1.98 Gbit/s at 192 KiB.
//!   Here the ceiling bucket (`cburst`) holds **one frame**, so after an
//!   idle period at most two frames (the one the bucket covers and the one
//!   htb lets it overdraw) pass without waiting; every later frame waits for
//!   its own serialization time at the link rate.
//! * **Frames must be frames.** Segmentation offloads (TSO, GSO) hand the
//!   qdisc 64 KiB super-packets, and htb charges a super-packet only after
//!   sending it whole. The lab turns TSO, GSO and GRO off on both ends of
//!   every veth, so the shaper sees what a real wire carries.
//!
//! With one-frame buckets, htb on this 2-vCPU VM delivered 95.6 Mbit/s of
//! TCP over `fe` at MTU 1500 (theoretical 95.64) and 992 Mbit/s over `ge`
//! at MTU 9000 (theoretical 992.7), measured with iperf3 across the lab.
//! tbf with a one-frame peak bucket (`peakrate`/`mtu`) lost 15-55% of the
//! rate to timer latency, because tbf cannot overdraw.
//!
//! # Formulas
//!
//! * frame = MTU + 14 bytes (the Ethernet header; what a qdisc on a veth
//!   counts per packet);
//! * `rate` = `ceil` = the link rate; `burst` = `cburst` = one frame;
//! * queue (a byte FIFO under the class) = max(100 frames, 10 ms at the
//!   rate): a switch port's buffer, deep enough that TCP fills the link and
//!   shallow enough that a queue builds no more than 10 ms of delay;
//! * `quantum` = one frame (a single class: no sharing to balance, and it
//!   silences htb's "quantum is big" warning at high rates);
//! * free burst after idle = 2 frames (see above), recorded in results.

use serde::{Deserialize, Serialize};

/// Bytes of Ethernet header a qdisc on a veth counts per packet.
pub const FRAME_HEADER_BYTES: u64 = 14;
/// Queue depth as time at the link rate.
const QUEUE_MS: u64 = 10;
/// Queue depth floor in frames.
const QUEUE_MIN_FRAMES: u64 = 100;

/// The shaper of one direction of one link.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShaperParams {
    /// Queueing discipline (`htb`).
    pub qdisc: String,
    /// Rate and ceiling, bits/s.
    pub rate_bits_per_s: u64,
    /// Bucket size of rate and ceiling, bytes (one frame).
    pub burst_bytes: u64,
    /// Depth of the FIFO under the class, bytes.
    pub queue_bytes: u64,
    /// Most bytes that can cross without waiting after the link was idle.
    pub free_burst_bytes: u64,
}

impl ShaperParams {
    /// The shaper for a link of `rate_bits_per_s` and `mtu_bytes`.
    pub fn for_link(rate_bits_per_s: u64, mtu_bytes: u32) -> ShaperParams {
        let frame = mtu_bytes as u64 + FRAME_HEADER_BYTES;
        let queue = (rate_bits_per_s / 8 * QUEUE_MS / 1000).max(QUEUE_MIN_FRAMES * frame);
        ShaperParams {
            qdisc: "htb".into(),
            rate_bits_per_s,
            burst_bytes: frame,
            queue_bytes: queue,
            free_burst_bytes: 2 * frame,
        }
    }

    /// The `tc` invocations (arguments after `tc -n NETNS`) that install this
    /// shaper as the root qdisc of `dev`.
    pub fn tc_commands(&self, dev: &str) -> Vec<Vec<String>> {
        let rate = format!("{}bit", self.rate_bits_per_s);
        let burst = self.burst_bytes.to_string();
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        vec![
            s(&[
                "qdisc", "replace", "dev", dev, "root", "handle", "1:", "htb", "default", "1",
            ]),
            s(&[
                "class", "add", "dev", dev, "parent", "1:", "classid", "1:1", "htb", "rate", &rate,
                "ceil", &rate, "burst", &burst, "cburst", &burst, "quantum", &burst,
            ]),
            s(&[
                "qdisc",
                "add",
                "dev",
                dev,
                "parent",
                "1:1",
                "handle",
                "10:",
                "bfifo",
                "limit",
                &self.queue_bytes.to_string(),
            ]),
        ]
    }
}

/// A shaper as the kernel reports it (`tc -j class show`), for `wulf lab
/// status`: what is configured, not what was asked for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShaperReadback {
    /// Root qdisc kind (`htb`, `tbf`, `noqueue` ...).
    pub qdisc: String,
    /// Ceiling (htb) or rate (tbf), bits/s, when shaped.
    pub rate_bits_per_s: Option<u64>,
    /// Ceiling bucket (htb `cburst`) or tbf burst, bytes.
    pub burst_bytes: Option<u64>,
}

/// Read the shaper from `tc -j qdisc show dev X` (JSON; rates in bytes
/// per second) and `tc class show dev X` (text, as tc prints htb classes).
pub fn parse_readback(qdisc_json: &str, class_text: &str) -> Option<ShaperReadback> {
    let qdiscs: Vec<serde_json::Value> = serde_json::from_str(qdisc_json).ok()?;
    let root = qdiscs
        .iter()
        .find(|q| q.get("root").and_then(|r| r.as_bool()) == Some(true))
        .or_else(|| qdiscs.first())?;
    let kind = root.get("kind")?.as_str()?.to_string();
    let num = |v: &serde_json::Value, k: &str| v.get(k).and_then(|x| x.as_u64());
    let (rate, burst) = match kind.as_str() {
        "tbf" => {
            let o = root.get("options")?;
            (num(o, "rate").map(|r| r * 8), num(o, "burst"))
        }
        "htb" => {
            // `tc -j class show` prints htb classes as text, not JSON.
            let line = class_text
                .lines()
                .find(|l| l.contains(" root"))
                .or_else(|| class_text.lines().next())
                .unwrap_or("");
            (
                text_after(line, "ceil").and_then(|t| parse_tc_rate_text(&t)),
                text_after(line, "cburst").and_then(|t| parse_tc_size_text(&t)),
            )
        }
        _ => (None, None),
    };
    Some(ShaperReadback {
        qdisc: kind,
        rate_bits_per_s: rate,
        burst_bytes: burst,
    })
}

/// The word after `key` in tc's text output.
fn text_after(line: &str, key: &str) -> Option<String> {
    let mut words = line.split_whitespace();
    words.find(|w| *w == key)?;
    words.next().map(str::to_string)
}

/// `1Gbit`, `100Mbit`, `600Kbit`, `5000bit` (tc prints SI rates).
fn parse_tc_rate_text(t: &str) -> Option<u64> {
    let lower = t.to_ascii_lowercase();
    let (num, mult) = [("gbit", 1e9), ("mbit", 1e6), ("kbit", 1e3), ("bit", 1.0)]
        .iter()
        .find_map(|(suffix, m)| lower.strip_suffix(suffix).map(|n| (n.to_string(), *m)))?;
    num.parse::<f64>().ok().map(|v| (v * mult).round() as u64)
}

/// `9000b`, `1250Kb`, `2Mb` (tc prints sizes in binary units).
fn parse_tc_size_text(t: &str) -> Option<u64> {
    let (num, mult) = [("Mb", 1u64 << 20), ("Kb", 1 << 10), ("b", 1)]
        .iter()
        .find_map(|(suffix, m)| t.strip_suffix(suffix).map(|n| (n, *m)))?;
    num.parse::<f64>()
        .ok()
        .map(|v| (v * mult as f64).round() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameters_follow_the_formulas() {
        let fe = ShaperParams::for_link(100_000_000, 1500);
        assert_eq!(fe.burst_bytes, 1514);
        assert_eq!(fe.free_burst_bytes, 3028);
        // 10 ms at 100 Mbit/s is 125000 B, below 100 frames (151400 B).
        assert_eq!(fe.queue_bytes, 151_400);
        let ge = ShaperParams::for_link(1_000_000_000, 9000);
        assert_eq!(ge.burst_bytes, 9014);
        assert_eq!(ge.queue_bytes, 1_250_000);
        let ten = ShaperParams::for_link(10_000_000_000, 1500);
        assert_eq!(ten.queue_bytes, 12_500_000);
        let cmds = fe.tc_commands("eth0");
        assert_eq!(cmds.len(), 3);
        assert!(cmds[1]
            .join(" ")
            .contains("rate 100000000bit ceil 100000000bit burst 1514 cburst 1514"));
        assert!(cmds[2].join(" ").ends_with("bfifo limit 151400"));
    }

    #[test]
    fn readback_of_htb_and_tbf() {
        let q = r#"[{"kind":"htb","handle":"1:","root":true,"refcnt":2,"options":{"r2q":10,"default":"0x1","direct_packets_stat":0,"direct_qlen":1000}},{"kind":"bfifo","handle":"10:","parent":"1:1","options":{"limit":151400}}]"#;
        let c = "class htb 1:1 root leaf 10: prio 0 rate 100Mbit ceil 100Mbit burst 1514b cburst 1514b \n";
        let r = parse_readback(q, c).unwrap();
        assert_eq!(r.qdisc, "htb");
        assert_eq!(r.rate_bits_per_s, Some(100_000_000));
        assert_eq!(r.burst_bytes, Some(1514));
        let t = r#"[{"kind":"tbf","handle":"8001:","root":true,"refcnt":3,"options":{"rate":125000000,"burst":125000,"lat":7927}}]"#;
        let r = parse_readback(t, "[]").unwrap();
        assert_eq!(r.rate_bits_per_s, Some(1_000_000_000));
        let n = r#"[{"kind":"noqueue","handle":"0:","root":true,"refcnt":2,"options":{}}]"#;
        assert_eq!(parse_readback(n, "[]").unwrap().rate_bits_per_s, None);
        assert!(parse_readback("garbage", "[]").is_none());
        assert_eq!(parse_tc_size_text("1250Kb"), Some(1_280_000));
        assert_eq!(parse_tc_rate_text("2500Mbit"), Some(2_500_000_000));
    }
}
