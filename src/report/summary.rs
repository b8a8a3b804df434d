//! What every report format shares: a label per result that tells
//! overlaid results apart, and one summary row per result with the figures
//! of the studies' tables (latency, peak, size at peak, n_1/2, saturation
//! point, CPU cost, noisy points).

use crate::analysis::Analysis;
use crate::result::{LinkEfficiency, LinkEnd, SweepResult};
use crate::units::{format_bits_per_s, format_bytes};

/// A result's figures as the summary tables show them. Rates in bit/s (SI),
/// times in ns, sizes in bytes; `None` where a figure does not exist.
#[derive(Debug, Clone, PartialEq)]
pub struct SummaryRow {
    /// The configuration: transport, mode and what distinguishes it from
    /// the other results shown beside it (see [`labels`]).
    pub label: String,
    /// Median one-way time at the smallest size.
    pub latency_ns: Option<f64>,
    /// Highest median throughput.
    pub peak_bits_per_s: Option<f64>,
    /// Size where the peak occurs.
    pub peak_bytes: Option<u64>,
    /// Smallest size reaching half the peak.
    pub n_half_bytes: Option<u64>,
    /// Smallest size from which time grows linearly with size.
    pub saturation_bytes: Option<u64>,
    /// CPU time of both ends together per byte moved, at the peak size.
    pub cpu_ns_per_byte: Option<f64>,
    /// Points whose interval did not converge in budget.
    pub noisy_points: u64,
    /// Points measured.
    pub points: usize,
    /// False when the run was cut short.
    pub complete: bool,
    /// An in-process baseline: a limit of the machine to read the
    /// transports against, not a transport (left out of the highlights).
    pub reference: bool,
    /// The physical limit the result was measured against, and the peak as a
    /// fraction of it.
    pub limit: Option<PhysicalLimit>,
    /// The peak was measured as NetPIPE measures: the same buffer resent,
    /// small enough to stay in the last-level cache the two ends share, so
    /// the receiver may read lines it still holds and the figure can exceed
    /// what fresh data moves (`--nocache` measures cold buffers).
    pub warm_cache: bool,
}

/// The share of the time at the largest size above which the per-message
/// latency makes that size latency-bound: the message gets less than 80%
/// of the bandwidth it leads to, and larger sizes would show more. The
/// saturation point's threshold (docs/methodology.md), so the two agree.
pub const LATENCY_BOUND_SHARE: f64 = 0.2;

/// The per-message latency's share of the time at the largest size
/// measured, with that size: the smallest size's median (alpha, what every
/// message pays) over the largest size's. The advice to measure larger
/// sizes rests on it, not on whether a saturation point was found: that
/// rule's chords trip on noisy points, and a tcp sweep whose 8 MiB
/// messages took 14 ms against a 46 us alpha (a 0.3% share) was once told
/// its largest sizes were "still latency-bound" (issue 49). `None` without
/// two sizes with positive times.
pub fn latency_share_at_largest(r: &SweepResult) -> Option<(u64, f64)> {
    let timed = || r.points.iter().filter(|p| p.median_ns > 0.0);
    let smallest = timed().min_by_key(|p| p.bytes)?;
    let largest = timed().max_by_key(|p| p.bytes)?;
    (largest.bytes > smallest.bytes).then(|| {
        (
            largest.bytes,
            (smallest.median_ns / largest.median_ns).min(1.0),
        )
    })
}

/// A physical limit a result carries, for the efficiency chart and column.
#[derive(Debug, Clone, PartialEq)]
pub struct PhysicalLimit {
    /// What the limit is, e.g. "TCP goodput of eth0 (1000 Mbit/s, MTU 1500)".
    pub name: String,
    /// The limit, bit/s.
    pub bits_per_s: f64,
    /// Measured peak / limit.
    pub peak_fraction: Option<f64>,
}

/// The physical limit of a result, when it carries one. Today that is the
/// `link` block (the TCP goodput of the network path). This is the one place
/// to read further limits (e.g. an intra-node memory-copy limit) when the
/// schema gains them, so every report format picks them up.
pub fn physical_limit(r: &SweepResult) -> Option<PhysicalLimit> {
    let link = r.link.as_ref()?;
    if !(link.limit_bits_per_s.is_finite() && link.limit_bits_per_s > 0.0) {
        return None;
    }
    let framing = match link.framing {
        crate::sys::Framing::Ethernet => "Ethernet framing",
        crate::sys::Framing::Shaper => "shaper framing",
    };
    let shaped = link
        .shaper
        .as_ref()
        .map(|q| format!(" shaped by {q}"))
        .unwrap_or_default();
    let link_text = format!(
        "{} ({} Mbit/s link{shaped}, MTU {}, {framing})",
        link_where(link),
        link.limit.link_speed_mbit_per_s,
        link.limit.mtu_bytes
    );
    // A path faster one way than the other, or a bidirectional sweep, has a
    // limit of its own beside the bottleneck link's goodput.
    let bottleneck = link.limit.goodput_mbit_per_s(link.framing) * 1e6;
    let name = match (link.to_peer_bits_per_s, link.from_peer_bits_per_s) {
        (Some(to), Some(from))
            if (link.limit_bits_per_s - bottleneck).abs() > 1e-3 * bottleneck =>
        {
            format!(
                "{} TCP limit of the path, {} to the peer and {} back; bottleneck {link_text}",
                r.mode,
                format_bits_per_s(to),
                format_bits_per_s(from)
            )
        }
        _ => format!("TCP goodput of {link_text}"),
    };
    Some(PhysicalLimit {
        name,
        bits_per_s: link.limit_bits_per_s,
        peak_fraction: link.peak_fraction,
    })
}

/// The bottleneck's interface and whose it is, e.g. "veth1 on the peer".
pub fn link_where(link: &LinkEfficiency) -> String {
    let whose = match link.end {
        Some(LinkEnd::Client) => " on the measuring end",
        Some(LinkEnd::Server) => " on the peer",
        None => "",
    };
    format!("{}{whose}", link.interface)
}

/// The summary row of one result, from its analysis.
pub fn summary_row(label: &str, r: &SweepResult, a: &Analysis) -> SummaryRow {
    let cpu = a.peak_bytes.and_then(|b| {
        let p = r.points.iter().find(|p| p.bytes == b)?;
        Some(p.cpu_client.ns_per_byte + p.cpu_server.ns_per_byte)
    });
    SummaryRow {
        label: label.to_string(),
        latency_ns: a.latency_ns,
        peak_bits_per_s: a.peak_bits_per_s,
        peak_bytes: a.peak_bytes,
        n_half_bytes: a.n_half_bytes,
        saturation_bytes: a.saturation_bytes,
        cpu_ns_per_byte: cpu.filter(|c| c.is_finite()),
        noisy_points: r.summary.noisy_points,
        points: r.points.len(),
        complete: r.complete,
        reference: limit_role(r).is_some(),
        limit: physical_limit(r),
        warm_cache: warm_cache_peak(r, a.peak_bytes),
    }
}

/// Whether the peak at `peak_bytes` was a warm-cache figure: buffers not
/// rotated (`--nocache` off), both ends on this host with no peer or lab
/// between them, and the message within the last-level cache. Unknown
/// cache size: not claimed.
pub(crate) fn warm_cache_peak(r: &SweepResult, peak_bytes: Option<u64>) -> bool {
    let same_host = r.options.peer.is_none() && r.placement.lab.is_none();
    let fits = match (peak_bytes, r.host.llc_bytes) {
        (Some(b), Some(llc)) => b <= llc,
        _ => false,
    };
    !r.options.nocache && same_host && fits
}

/// Why a peak above a limit of the machine can be, with the mark a table
/// cell carries for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AboveLimit {
    /// A warm-cache figure (see [`warm_cache_peak`]).
    WarmCache,
    /// A bidirectional figure counts both directions.
    BothDirections,
    /// Neither: the limit met a busier moment than the peak, or the cache
    /// the ends share is unknown.
    Unexplained,
}

impl AboveLimit {
    /// The mark after the figure in a table cell.
    pub fn mark(self) -> char {
        match self {
            AboveLimit::WarmCache => 'w',
            AboveLimit::BothDirections => 'b',
            AboveLimit::Unexplained => '?',
        }
    }

    /// The reason, in words.
    pub fn reason(self) -> &'static str {
        match self {
            AboveLimit::WarmCache => {
                "a warm-cache figure, the same buffer resent within the last-level cache \
                 (--nocache measures cold buffers)"
            }
            AboveLimit::BothDirections => "a bidirectional figure, both directions counted",
            AboveLimit::Unexplained => {
                "not explained by a warm cache the run knows of: the limit was measured at a \
                 busier moment than the peak, or the cache the ends share is unknown"
            }
        }
    }
}

/// The reason `r`'s peak exceeds memcpy's bandwidth or the core-to-core
/// copy at its size; `None` when it exceeds neither. Every figure above a
/// limit is printed with it, wherever it is printed (the terminal's
/// table once read "of c2c 10.12" unlabelled).
pub fn above_limit(r: &SweepResult) -> Option<AboveLimit> {
    let fractions = [r.summary.peak_memcpy_fraction, r.summary.peak_c2c_fraction];
    if !fractions.iter().any(|f| f.is_some_and(|f| f > 1.0)) {
        return None;
    }
    Some(if warm_cache_peak(r, r.summary.peak_bytes) {
        AboveLimit::WarmCache
    } else if r.mode == crate::result::Mode::Bidir {
        AboveLimit::BothDirections
    } else {
        AboveLimit::Unexplained
    })
}

/// The machine limit `r` measures when it is an in-process baseline: as
/// the file stores it (schema version 4), or for an older file, by the
/// name of the baseline that wrote it (a frozen table in `result`: the
/// report never asks the transport layer, so nothing is probed).
pub(super) fn limit_role(r: &SweepResult) -> Option<crate::result::LimitRole> {
    r.limit_role
        .or_else(|| crate::result::LimitRole::of_old_baseline(&r.transport))
}

/// One label per result: `transport mode`, followed by what tells it
/// apart from other results of the same transport and mode in the list
/// (socket buffers requested, Nagle, address family, cache-cold buffers,
/// offset, peer, host, MTU, tool version), and `#k` if two are still alike.
///
/// Of the options that differ within a group, only as many as tell its
/// results apart are named, the same ones for every result of the group
/// (chosen greedily, the one separating most results first): a dozen
/// results once made labels of five options each
/// ("tcp pingpong nocache=false peer=local host=vm mtu=65536") where one
/// or two suffice, and the first screen was mostly labels.
pub fn labels(results: &[SweepResult]) -> Vec<String> {
    let base: Vec<String> = results
        .iter()
        .map(|r| format!("{} {}", r.transport, r.mode))
        .collect();
    let mut out = base.clone();
    let mut done: Vec<&str> = Vec::new();
    for b in &base {
        if done.contains(&b.as_str()) {
            continue;
        }
        done.push(b);
        let members: Vec<usize> = (0..results.len()).filter(|&i| base[i] == *b).collect();
        let values: Vec<Vec<String>> = members
            .iter()
            .map(|&i| FEATURES.iter().map(|f| f(&results[i])).collect())
            .collect();
        for k in distinguishing(&values) {
            for (m, &i) in members.iter().enumerate() {
                out[i].push(' ');
                out[i].push_str(&values[m][k]);
            }
        }
    }
    // Still alike (the same configuration run twice): number them.
    let snapshot = out.clone();
    for (i, label) in out.iter_mut().enumerate() {
        let same: Vec<usize> = (0..snapshot.len())
            .filter(|&j| snapshot[j] == snapshot[i])
            .collect();
        if same.len() > 1 {
            let k = same.iter().position(|&j| j == i).unwrap_or(0) + 1;
            label.push_str(&format!(" #{k}"));
        }
    }
    out
}

/// The features (indices into each row of `values`, one row per result of
/// a group) that tell the rows apart, in [`FEATURES`] order: greedily the
/// one leaving the fewest rows alike, until no feature helps.
fn distinguishing(values: &[Vec<String>]) -> Vec<usize> {
    let alike = |chosen: &[usize]| {
        let keys: Vec<Vec<&String>> = values
            .iter()
            .map(|row| chosen.iter().map(|&k| &row[k]).collect())
            .collect();
        (0..keys.len())
            .filter(|&i| keys.iter().filter(|k| **k == keys[i]).count() > 1)
            .count()
    };
    let mut chosen: Vec<usize> = Vec::new();
    loop {
        let now = alike(&chosen);
        let best = (0..FEATURES.len())
            .filter(|k| !chosen.contains(k))
            .map(|k| {
                let mut with = chosen.clone();
                with.push(k);
                (k, alike(&with))
            })
            .min_by_key(|&(k, n)| (n, k));
        match best {
            Some((k, n)) if n < now => chosen.push(k),
            _ => break,
        }
    }
    chosen.sort_unstable();
    chosen
}

/// Each feature renders one option as `name=value`; a label shows the
/// features whose values differ within its transport and mode.
const FEATURES: [fn(&SweepResult) -> String; 10] = [
    |r| format!("sndbuf={}", transport_bytes(r, "sndbuf_requested_bytes")),
    |r| format!("rcvbuf={}", transport_bytes(r, "rcvbuf_requested_bytes")),
    |r| format!("nodelay={}", transport_text(r, "nodelay")),
    |r| format!("family={}", transport_text(r, "family")),
    |r| format!("nocache={}", r.options.nocache),
    |r| format!("offset={}", r.options.offset_bytes),
    |r| format!("peer={}", r.options.peer.as_deref().unwrap_or("local")),
    |r| format!("host={}", r.host.hostname),
    |r| {
        let mtu = r.host.interfaces.first().and_then(|i| i.mtu_bytes);
        format!("mtu={}", mtu.map(|m| m.to_string()).unwrap_or("?".into()))
    },
    |r| format!("wulf={}", r.tool_version),
];

fn transport_bytes(r: &SweepResult, key: &str) -> String {
    match r.options.transport.get(key).and_then(|v| v.as_u64()) {
        Some(b) => format_bytes(b).replace(' ', ""),
        None => "default".into(),
    }
}

fn transport_text(r: &SweepResult, key: &str) -> String {
    match r.options.transport.get(key) {
        Some(serde_json::Value::String(s)) => s.clone(),
        Some(serde_json::Value::Null) | None => "?".into(),
        Some(v) => v.to_string(),
    }
}

/// A size for tables: `-` when absent.
pub fn size_or_dash(b: Option<u64>) -> String {
    b.map(format_bytes).unwrap_or_else(|| "-".into())
}

/// A number with `decimals` places for tables: `-` when absent.
pub fn num_or_dash(v: Option<f64>, decimals: usize) -> String {
    v.map(|v| format!("{v:.decimals$}"))
        .unwrap_or_else(|| "-".into())
}

/// Marker of the per-sweep warning about noisy points (see
/// `sweep::engine::assemble`), which [`grouped_warnings`] folds into one.
const NOISY_MARK: &str = "(marked noisy)";

/// The warnings of `results` (labelled by `names`) for a reader: every
/// warning as (label, text), except that the noisy-points warnings of all
/// sweeps become one line naming the worst (the highest share of noisy
/// points) first, so a run of ten transports does not print ten
/// near-identical lines.
pub fn grouped_warnings(
    results: &[SweepResult],
    names: &[String],
) -> Vec<(Option<String>, String)> {
    let mut out = Vec::new();
    let mut noisy: Vec<(&str, u64, usize)> = Vec::new();
    for (r, name) in results.iter().zip(names) {
        // One entry a sweep, however many of its warnings carry the mark
        // (`wulf run` once listed "memcpy 106/106, memcpy 106/106").
        if r.warnings.iter().any(|w| w.contains(NOISY_MARK)) {
            noisy.push((name, r.summary.noisy_points, r.points.len()));
        }
        for w in r.warnings.iter().filter(|w| !w.contains(NOISY_MARK)) {
            out.push((Some(name.clone()), w.clone()));
        }
    }
    let share = |n: u64, of: usize| n as f64 / of.max(1) as f64;
    noisy.sort_by(|a, b| share(b.1, b.2).total_cmp(&share(a.1, a.2)));
    if let Some((worst, n, of)) = noisy.first() {
        let others: Vec<String> = noisy[1..]
            .iter()
            .map(|(name, n, of)| format!("{name} {n}/{of}"))
            .collect();
        let rest = if others.is_empty() {
            String::new()
        } else {
            format!("; also {}", others.join(", "))
        };
        out.insert(
            0,
            (
                None,
                format!(
                    "noisy points (interval wider than the precision target within the budget): worst {worst}, \
                     {n} of {of}{rest}; a larger --budget or a quieter machine helps"
                ),
            ),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture() -> SweepResult {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/tcp-pingpong.json"
        );
        crate::result::read_result(std::path::Path::new(path)).unwrap()
    }

    #[test]
    fn a_stored_limit_role_decides_and_older_files_fall_back_on_the_name() {
        use crate::result::LimitRole;
        let mut r = fixture();
        assert_eq!(limit_role(&r), None, "tcp measures no limit");
        // An older file (no stored role) of a baseline: looked up by name.
        r.transport = "c2c-2copy".into();
        assert_eq!(limit_role(&r), Some(LimitRole::C2cTwoCopy));
        // A stored role is taken as it is, whatever the name says.
        r.transport = "renamed".into();
        r.limit_role = Some(LimitRole::CachelineFloor);
        assert_eq!(limit_role(&r), Some(LimitRole::CachelineFloor));
    }

    #[test]
    fn labels_name_only_what_differs() {
        let a = fixture();
        let mut b = a.clone();
        b.options
            .transport
            .insert("sndbuf_requested_bytes".into(), 65536.into());
        let mut c = a.clone();
        c.transport = "unix".into();
        assert_eq!(
            labels(&[a.clone(), b, c]),
            [
                "tcp pingpong sndbuf=default",
                "tcp pingpong sndbuf=64KiB",
                "unix pingpong"
            ]
        );
        assert_eq!(
            labels(&[a.clone(), a.clone()]),
            ["tcp pingpong #1", "tcp pingpong #2"]
        );
        assert_eq!(labels(std::slice::from_ref(&a)), ["tcp pingpong"]);
        // Two options differ, one tells the results apart: only it is named.
        let mut d = a.clone();
        d.host.hostname = "node1".into();
        d.options.offset_bytes = 64;
        assert_eq!(
            labels(&[a, d]),
            ["tcp pingpong offset=0", "tcp pingpong offset=64"]
        );
    }

    #[test]
    fn a_sweep_with_two_noisy_warnings_is_listed_once() {
        let mut r = fixture();
        r.warnings = vec![
            "3 of 9 points did not reach +-2.0% within the budget (marked noisy)".into(),
            "in 4 of 9 blocks an end waited for a CPU (marked noisy): other work".into(),
            "something else".into(),
        ];
        let names = ["memcpy".to_string(), "tcp".to_string()];
        let out = grouped_warnings(&[r.clone(), r], &names);
        let noisy = &out[0].1;
        assert_eq!(noisy.matches("memcpy").count(), 1, "{noisy}");
        assert_eq!(noisy.matches("tcp").count(), 1, "{noisy}");
        assert_eq!(out.len(), 3, "{out:?}");
    }

    #[test]
    fn summary_row_takes_cpu_at_the_peak() {
        let r = fixture();
        let a = Analysis::of(&r);
        let row = summary_row("x", &r, &a);
        let p = r
            .points
            .iter()
            .find(|p| Some(p.bytes) == a.peak_bytes)
            .unwrap();
        assert_eq!(
            row.cpu_ns_per_byte,
            Some(p.cpu_client.ns_per_byte + p.cpu_server.ns_per_byte)
        );
        assert_eq!(row.noisy_points, r.summary.noisy_points);
        assert!(row.limit.is_none());
    }

    #[test]
    fn link_limits_name_the_bottleneck_and_the_path() {
        use crate::result::LinkEfficiency;
        use crate::sys::{Interface, IpVersion};
        let veth = |name: &str, shaped: Option<u64>| Interface {
            name: name.into(),
            is_virtual: Some(true),
            mtu_bytes: Some(1500),
            speed_mbit_per_s: Some(10_000),
            qdisc: shaped.map(|_| "htb".into()),
            shaped_rate_bits_per_s: shaped,
            ..Interface::default()
        };
        let mut r = fixture();
        let path = |c: &Interface, s: &Interface| {
            LinkEfficiency::for_path(Some(c), Some(s), r.mode, IpVersion::V4, true, Some(1e8))
        };
        // Shaped alike on both ends: the shaper's goodput.
        r.link = path(
            &veth("a0", Some(100_000_000)),
            &veth("b0", Some(100_000_000)),
        );
        let l = physical_limit(&r).unwrap();
        assert_eq!(
            l.name,
            "TCP goodput of a0 on the measuring end (100 Mbit/s link shaped by htb, MTU 1500, \
             shaper framing)"
        );
        // Shaped on the peer only: the ping-pong's own limit, and the
        // bottleneck.
        r.link = path(&veth("a0", None), &veth("b0", Some(100_000_000)));
        let l = physical_limit(&r).unwrap();
        assert!(
            l.name.starts_with(
                "pingpong TCP limit of the path, 9.56 Gbit/s to the peer and 95.6 Mbit/s back; \
                 bottleneck b0 on the peer (100 Mbit/s link shaped by htb"
            ),
            "{}",
            l.name
        );
        assert!((l.bits_per_s - 189.4e6).abs() < 0.1e6, "{l:?}");
    }
}
