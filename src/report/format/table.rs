//! Plain-text tables for the terminal.

use std::fmt::Write;

use crate::report::floor;
use crate::report::summary::physical_limit;
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
        // One floor for the sweep, the least it measured (see
        // `report::floor`); below it, the reason instead of a multiple.
        if let Some(f) = floor::run_floor_ns([r]) {
            match floor::multiple(l, f) {
                Some(x) => {
                    let _ = write!(s, ", {x:.2}x the cache-line floor of {}", format_ns(f));
                }
                None => {
                    let _ = write!(s, ", {} of {}", floor::BELOW_REASON, format_ns(f));
                }
            }
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
        let limits = r
            .points
            .iter()
            .find(|p| p.bytes == at)
            .and_then(|p| p.limits);
        let memcpy = limits.and_then(|l| l.memcpy_bits_per_s);
        if let (Some(f), Some(m)) = (r.summary.peak_memcpy_fraction, memcpy) {
            let _ = write!(
                s,
                ", {f:.2} of memcpy bandwidth there ({})",
                format_bits_per_s(m)
            );
        }
        let c2c = limits.and_then(|l| l.c2c_bits_per_s);
        if let (Some(f), Some(c)) = (r.summary.peak_c2c_fraction, c2c) {
            let _ = write!(
                s,
                ", {f:.2} of the {}core-to-core single copy ({})",
                if r.options.nocache { "cold " } else { "" },
                format_bits_per_s(c)
            );
        }
        // A peak above a limit of the machine is shown with its reason: a
        // warm cache (shm once read 5.7x its core-to-core copy), or why not.
        if let Some(why) = crate::report::summary::above_limit(r) {
            let _ = write!(s, "\n           above a limit: {}", why.reason());
        }
        s.push('\n');
    }
    // Across a network: the peak against the path's TCP goodput limit.
    if let Some(l) = physical_limit(r) {
        let share = l
            .peak_fraction
            .map(|f| format!("peak {f:.2} of "))
            .unwrap_or_default();
        let _ = writeln!(
            s,
            "  link     {share}{}, the {}",
            format_bits_per_s(l.bits_per_s),
            l.name
        );
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

/// The "x floor" cell: the latency's multiple of the run's one cache-line
/// floor `floor_ns`, or "below" where the latency is under it (the floor
/// met busier moments): never an impossible "0.83x", never a silent "-"
/// that reads like "not measured", and every row against the same floor
/// (rows against their own sweeps' floors implied floors from 166 ns to
/// 12.8 us beside a 157 ns cache-line row).
fn floor_cell(r: &SweepResult, floor_ns: Option<f64>) -> String {
    match (r.summary.latency_ns, floor_ns.filter(|_| floor::applies(r))) {
        (Some(l), Some(f)) => floor::multiple(l, f)
            .map(|x| format!("{x:.2}x"))
            .unwrap_or_else(|| "below".into()),
        _ => "-".into(),
    }
}

/// A row's name: transport and mode, and "cold" for a `--nocache` result,
/// so warm and cold rows of one transport stand side by side, each with
/// its "of c2c" against its own (warm or cold) core-to-core limit.
fn row_label(r: &SweepResult) -> String {
    let cold = if r.options.nocache { " cold" } else { "" };
    format!("{} {}{cold}", r.transport, r.mode)
}

/// One row per result, side by side: the summary `wulf run` prints. For
/// intra-node results, latency as a multiple of the cache-line floor and
/// peak as a fraction of memcpy bandwidth and of the core-to-core single
/// copy (`c2c`) at the peak size stand beside the figures; when a
/// result crossed a network link with a known limit, an "of link" column
/// gives the peak as a fraction of the path's TCP goodput limit.
pub fn comparison_table(results: &[SweepResult]) -> String {
    let mut s = String::new();
    // Wide enough for the longest label, e.g. "mpi:openmpi(tcp) pingpong".
    let w = results
        .iter()
        .map(|r| row_label(r).len())
        .max()
        .unwrap_or(0)
        .max(14);
    let link_fraction = |r: &SweepResult| physical_limit(r).and_then(|l| l.peak_fraction);
    // Only tables with such a result get the column.
    let with_link = results.iter().any(|r| link_fraction(r).is_some());
    let run_floor = floor::run_floor_ns(results);
    let _ = write!(
        s,
        "{:<w$} {:>10} {:>8} {:>14} {:>9} {:>6} {:>10} {:>9} {:>7} {:>9}",
        "transport",
        "latency",
        "x floor",
        "peak",
        "of memcpy",
        "of c2c",
        "at size",
        "cpu ns/B",
        "noisy",
        "complete"
    );
    if with_link {
        let _ = write!(s, " {:>7}", "of link");
    }
    s.push('\n');
    for r in results {
        let peak_point = r
            .summary
            .peak_bytes
            .and_then(|b| r.points.iter().find(|p| p.bytes == b));
        let _ = write!(
            s,
            "{:<w$} {:>10} {:>8} {:>14} {:>9} {:>6} {:>10} {:>9} {:>7} {:>9}",
            row_label(r),
            r.summary
                .latency_ns
                .map(format_ns)
                .unwrap_or_else(|| "-".into()),
            floor_cell(r, run_floor),
            r.summary
                .peak_bits_per_s
                .map(format_bits_per_s)
                .unwrap_or_else(|| "-".into()),
            limit_cell(r, r.summary.peak_memcpy_fraction),
            limit_cell(r, r.summary.peak_c2c_fraction),
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
        if with_link {
            let f = link_fraction(r).map(|f| format!("{f:.2}"));
            let _ = write!(s, " {:>7}", f.as_deref().unwrap_or("-"));
        }
        s.push('\n');
    }
    s.push_str(&table_notes(results, run_floor));
    s
}

/// A peak's share of a limit, marked with the reason when above it (see
/// [`table_notes`]).
fn limit_cell(r: &SweepResult, fraction: Option<f64>) -> String {
    match (fraction, crate::report::summary::above_limit(r)) {
        (Some(f), Some(why)) if f > 1.0 => format!("{f:.2}{}", why.mark()),
        (Some(f), _) => format!("{f:.2}"),
        (None, _) => "-".into(),
    }
}

/// The lines under the comparison table: the one floor every "x floor"
/// is against, and the reason of each mark on a figure above a limit.
fn table_notes(results: &[SweepResult], run_floor: Option<f64>) -> String {
    let mut s = String::new();
    if let Some(f) = run_floor {
        let _ = writeln!(
            s,
            "x floor: latency against the run's cache-line floor, {} (the least it measured); \
             below: {}",
            format_ns(f),
            floor::BELOW_REASON
        );
    }
    let mut said = Vec::new();
    for why in results
        .iter()
        .filter_map(crate::report::summary::above_limit)
    {
        if !said.contains(&why) {
            said.push(why);
            let _ = writeln!(s, "{}: above a limit: {}", why.mark(), why.reason());
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::LinkEfficiency;
    use crate::sys::{Interface, IpVersion};

    fn fixture() -> SweepResult {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/tcp-pingpong.json"
        );
        crate::result::read_result(std::path::Path::new(path)).unwrap()
    }

    /// A sweep over a veth shaped to 100 Mbit/s by htb on the peer's side:
    /// no memory limits, a link block.
    fn over_shaped_veth() -> SweepResult {
        let mut r = fixture();
        for p in &mut r.points {
            p.limits = None;
        }
        r.summary = crate::result::Summary::from_points(&r.points);
        let veth = |name: &str, shaped: Option<u64>| Interface {
            name: name.into(),
            is_virtual: Some(true),
            mtu_bytes: Some(1500),
            speed_mbit_per_s: Some(10_000),
            qdisc: shaped.map(|_| "htb".into()),
            shaped_rate_bits_per_s: shaped,
            ..Interface::default()
        };
        r.link = LinkEfficiency::for_path(
            Some(&veth("wva", Some(100_000_000))),
            Some(&veth("wvb", Some(100_000_000))),
            r.mode,
            IpVersion::V4,
            true,
            Some(90e6),
        );
        r
    }

    #[test]
    fn a_peak_above_a_limit_says_the_cache_was_warm() {
        // The fixture resends one 256 KiB buffer within a 32 MiB cache.
        let mut r = fixture();
        r.summary.peak_c2c_fraction = Some(2.2);
        let text = summary_lines(&r);
        assert!(
            text.contains("above a limit: a warm-cache figure"),
            "{text}"
        );
        // Below every limit, or with rotated buffers: no such line.
        r.summary.peak_c2c_fraction = Some(0.9);
        assert!(!summary_lines(&r).contains("warm-cache"));
        r.summary.peak_c2c_fraction = Some(2.2);
        r.options.nocache = true;
        assert!(!summary_lines(&r).contains("warm-cache"));
    }

    #[test]
    fn a_latency_below_the_floor_is_flagged_in_the_table() {
        let mut r = fixture();
        let latency = r.points[0].median_ns;
        let mut l = r.points[0].limits.unwrap_or_default();
        l.floor_ns = Some(latency / 0.83);
        r.points[0].limits = Some(l);
        r.summary = crate::result::Summary::from_points(&r.points);
        assert_eq!(r.summary.latency_floor_multiple, None);
        let table = comparison_table(&[r.clone()]);
        let row = table.lines().nth(1).unwrap();
        assert!(row.contains("below"), "{table}");
        assert!(!table.contains("0.83x"), "{table}");
        // Above the floor: its multiple.
        l.floor_ns = Some(latency / 2.0);
        r.points[0].limits = Some(l);
        r.summary = crate::result::Summary::from_points(&r.points);
        assert!(comparison_table(&[r]).contains("2.00x"));
    }

    #[test]
    fn warm_and_cold_rows_stand_side_by_side() {
        let mut warm = fixture();
        let peak = warm.summary.peak_bytes.unwrap();
        for p in warm.points.iter_mut().filter(|p| p.bytes == peak) {
            let mut l = p.limits.unwrap_or_default();
            l.c2c_bits_per_s = Some(1e11);
            p.limits = Some(l);
        }
        warm.summary.peak_c2c_fraction = Some(0.5);
        let mut cold = warm.clone();
        cold.options.nocache = true;
        cold.summary.peak_c2c_fraction = Some(0.8);
        let table = comparison_table(&[warm.clone(), cold.clone()]);
        let label = format!("{} {}", warm.transport, warm.mode);
        let rows: Vec<&str> = table.lines().filter(|l| l.starts_with(&label)).collect();
        assert_eq!(rows.len(), 2, "{table}");
        assert!(
            !rows[0].contains(" cold") && rows[1].contains(" cold"),
            "{table}"
        );
        assert!(rows[1].contains("0.80"), "{table}");
        assert!(summary_lines(&cold).contains("of the cold core-to-core"));
        assert!(!summary_lines(&warm).contains("cold core-to-core"));
    }

    #[test]
    fn a_shaped_path_shows_the_link_not_memory_limits() {
        let r = over_shaped_veth();
        let text = summary_lines(&r);
        assert!(!text.contains("floor"), "{text}");
        assert!(!text.contains("memcpy"), "{text}");
        assert!(
            text.contains(
                "link     peak 0.94 of 95.6 Mbit/s, the TCP goodput of wva on the measuring end"
            ),
            "{text}"
        );
        assert!(text.contains("100 Mbit/s link shaped by htb"), "{text}");
        assert!(text.contains("shaper framing"), "{text}");

        let table = comparison_table(&[fixture(), r]);
        let lines: Vec<&str> = table.lines().collect();
        assert!(lines[0].ends_with("of link"), "{table}");
        assert!(lines[1].ends_with(" -"), "{table}");
        assert!(lines[2].ends_with("0.94"), "{table}");
        // Without any link the table keeps its usual columns.
        assert!(!comparison_table(&[fixture()]).contains("of link"));
    }
}

#[cfg(test)]
mod floor_tests {
    use super::*;

    /// A file whose stored multiple is below 1 (written before it was
    /// withheld) prints the reason, never "0.21x the floor", in the summary
    /// and the comparison table.
    #[test]
    fn a_multiple_below_one_is_never_printed() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/tcp-pingpong.json"
        );
        let mut r = crate::result::read_result(std::path::Path::new(path)).unwrap();
        let latency = r.summary.latency_ns.unwrap();
        let floor = latency / 0.21;
        r.points[0].limits = Some(crate::result::Limits {
            floor_ns: Some(floor),
            ..Default::default()
        });
        r.summary.latency_floor_multiple = Some(0.21);
        let text = summary_lines(&r);
        assert!(!text.contains("0.21x"), "{text}");
        assert!(text.contains("below the run's cache-line floor"), "{text}");
        assert!(!comparison_table(&[r.clone()]).contains("0.21x"));
        // At or above 1 the multiple is printed.
        r.points[0].limits.as_mut().unwrap().floor_ns = Some(latency / 3.0);
        r.summary.latency_floor_multiple = Some(3.0);
        let text = summary_lines(&r);
        assert!(text.contains("3.00x the cache-line floor"), "{text}");
        assert!(comparison_table(&[r]).contains("3.00x"));
    }
}
