//! Plain-text tables for the terminal.

use std::fmt::Write;

use crate::result::{Mode, SweepResult};
use crate::units::{format_bits_per_s, format_bytes, format_ns};

/// The per-size table of one sweep followed by its summary.
pub fn sweep_table(r: &SweepResult) -> String {
    let time_label = if r.mode == Mode::Bidir {
        "exchange"
    } else {
        "one-way"
    };
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{:>10}  {:>10}  {:>13}  {:>8}  {:>11}  {:>9}  {:>9}",
        "size", time_label, "throughput", "95% CI", "trials x rep", "cpu A ns/B", "cpu B ns/B"
    );
    for p in &r.points {
        let ci_pct = 100.0 * (p.ci_high_ns - p.ci_low_ns) / 2.0 / p.median_ns;
        let _ = writeln!(
            s,
            "{:>10}  {:>10}  {:>13}  {:>7}%  {:>11}  {:>9.3}  {:>9.3}{}",
            format_bytes(p.bytes),
            format_ns(p.median_ns),
            format_bits_per_s(p.bits_per_s),
            format!("+-{ci_pct:.1}"),
            format!("{} x {}", p.trials, p.repeats),
            p.cpu_client.ns_per_byte,
            p.cpu_server.ns_per_byte,
            if p.noisy { "  noisy" } else { "" }
        );
        if let Some(t) = &p.tails {
            let _ = writeln!(
                s,
                "{:>10}  tails of {} round trips: p50 {}  p99 {}  p99.9 {}  max {}  (clock read {:.0} ns)",
                "",
                t.samples,
                format_ns(t.p50_ns),
                format_ns(t.p99_ns),
                format_ns(t.p999_ns),
                format_ns(t.max_ns),
                t.timer_cost_ns
            );
        }
    }
    s.push('\n');
    s.push_str(&summary_lines(r));
    s
}

/// The summary block of one sweep.
pub fn summary_lines(r: &SweepResult) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{} {} ({} points{})",
        r.transport,
        r.mode,
        r.points.len(),
        if r.complete { "" } else { ", INCOMPLETE" }
    );
    let first = r.points.first();
    if let Some(l) = r.summary.latency_ns {
        let _ = write!(
            s,
            "  latency  {} (median one-way time at {})",
            format_ns(l),
            format_bytes(first.map_or(0, |p| p.bytes))
        );
        let floor = first.and_then(|p| p.limits?.floor_ns);
        if let (Some(x), Some(f)) = (r.summary.latency_floor_multiple, floor) {
            let _ = write!(s, ", {x:.2}x the cache-line floor of {}", format_ns(f));
        }
        s.push('\n');
    }
    if let (Some(pk), Some(at)) = (r.summary.peak_bits_per_s, r.summary.peak_bytes) {
        let _ = write!(
            s,
            "  peak     {} at {}",
            format_bits_per_s(pk),
            format_bytes(at)
        );
        let memcpy = r
            .points
            .iter()
            .find(|p| p.bytes == at)
            .and_then(|p| p.limits?.memcpy_bits_per_s);
        if let (Some(f), Some(m)) = (r.summary.peak_memcpy_fraction, memcpy) {
            let _ = write!(
                s,
                ", {f:.2} of memcpy bandwidth there ({})",
                format_bits_per_s(m)
            );
        }
        s.push('\n');
    }
    for p in &r.summary.plateaus {
        let level = match p.cache_bytes {
            Some(b) => format!("{} ({})", p.level, format_bytes(b)),
            None => p.level.clone(),
        };
        let _ = writeln!(
            s,
            "  plateau  {:<14} {:>14}  median of {} sizes from {} to {}",
            level,
            format_bits_per_s(p.median_bits_per_s),
            p.points,
            format_bytes(p.min_bytes),
            format_bytes(p.max_bytes)
        );
    }
    let _ = writeln!(
        s,
        "  noisy    {} of {} points",
        r.summary.noisy_points,
        r.points.len()
    );
    if let Some(lab) = &r.placement.lab {
        let _ = writeln!(s, "  placed   {}", lab.describe());
    }
    if let Some(m) = &r.mpi {
        let version = m.library_version.lines().next().unwrap_or("");
        let _ = writeln!(s, "  mpi      {version}");
        let _ = writeln!(s, "  launcher {}", m.launcher_command.join(" "));
    }
    for w in &r.warnings {
        let _ = writeln!(s, "  warning: {w}");
    }
    s
}

/// One row per result, side by side: the summary `wulf run` prints. For
/// intra-node results, latency as a multiple of the cache-line floor and
/// peak as a fraction of memcpy bandwidth stand beside the figures.
pub fn comparison_table(results: &[SweepResult]) -> String {
    let mut s = String::new();
    // Wide enough for the longest label, e.g. "mpi:openmpi(tcp) pingpong".
    let w = results
        .iter()
        .map(|r| r.transport.len() + 1 + r.mode.to_string().len())
        .max()
        .unwrap_or(0)
        .max(14);
    let _ = writeln!(
        s,
        "{:<w$} {:>10} {:>8} {:>14} {:>9} {:>10} {:>9} {:>7} {:>9}",
        "transport",
        "latency",
        "x floor",
        "peak",
        "of memcpy",
        "at size",
        "cpu ns/B",
        "noisy",
        "complete"
    );
    for r in results {
        let peak_point = r
            .summary
            .peak_bytes
            .and_then(|b| r.points.iter().find(|p| p.bytes == b));
        let _ = writeln!(
            s,
            "{:<w$} {:>10} {:>8} {:>14} {:>9} {:>10} {:>9} {:>7} {:>9}",
            format!("{} {}", r.transport, r.mode),
            r.summary
                .latency_ns
                .map(format_ns)
                .unwrap_or_else(|| "-".into()),
            r.summary
                .latency_floor_multiple
                .map(|x| format!("{x:.2}x"))
                .unwrap_or_else(|| "-".into()),
            r.summary
                .peak_bits_per_s
                .map(format_bits_per_s)
                .unwrap_or_else(|| "-".into()),
            r.summary
                .peak_memcpy_fraction
                .map(|f| format!("{f:.2}"))
                .unwrap_or_else(|| "-".into()),
            r.summary
                .peak_bytes
                .map(format_bytes)
                .unwrap_or_else(|| "-".into()),
            peak_point
                .map(|p| format!("{:.3}", p.cpu_client.ns_per_byte + p.cpu_server.ns_per_byte))
                .unwrap_or_else(|| "-".into()),
            format!("{}/{}", r.summary.noisy_points, r.points.len()),
            if r.complete { "yes" } else { "NO" }
        );
    }
    s
}
