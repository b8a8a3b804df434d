//! Terminal tables of the measurement conditions: the whole CPU cost next
//! to getrusage's, the loads that ran, and `--loaded-vs-unloaded` pairs.

use std::fmt::Write;

use crate::result::{Conditions, NpbResult, SweepResult};
use crate::units::{format_bytes, format_ns};

/// What a whole-cost figure of `method` counts, for table headings.
fn method_words(method: Option<&str>) -> &'static str {
    match method {
        Some("kernel") => "the kernel's busy time in /proc/stat, every CPU, less the background",
        _ => "cyclesoak: what the idle-class soakers lost, every CPU, everything",
    }
}

/// Per size: whole CPU per byte and per message against getrusage's, or
/// None when the sweep did not measure the whole cost. With the soakers,
/// the kernel's figure stands beside theirs.
pub fn whole_table(r: &SweepResult) -> Option<String> {
    let first = r.points.iter().find_map(|p| p.cpu_whole.as_ref())?;
    let side_by_side = first.kernel_cpu_ns.is_some();
    let mut s = String::new();
    let _ = writeln!(
        s,
        "whole CPU cost ({}):",
        method_words(first.method.as_deref())
    );
    let _ = write!(
        s,
        "{:>10}  {:>12}  {:>14}  {:>15}  {:>13}  {:>9}",
        "size", "whole ns/B", "getrusage ns/B", "whole/getrusage", "whole ns/msg", "machine"
    );
    let _ = writeln!(
        s,
        "{}",
        if side_by_side {
            "  kernel ns/B"
        } else {
            "  ticks"
        }
    );
    let mut withheld: Vec<&str> = Vec::new();
    for p in &r.points {
        let Some(w) = &p.cpu_whole else { continue };
        if let Some(why) = &w.withheld {
            let _ = writeln!(
                s,
                "{:>10}  {:>12}  {:>14.3}  (withheld: see below)",
                format_bytes(p.bytes),
                "withheld",
                w.getrusage_ns_per_byte.unwrap_or(f64::NAN),
            );
            if !withheld.contains(&why.as_str()) {
                withheld.push(why);
            }
            continue;
        }
        let _ = write!(
            s,
            "{:>10}  {:>12.3}  {:>14.3}  {:>15}  {:>13.0}  {:>8.0}%",
            format_bytes(p.bytes),
            w.ns_per_byte.unwrap_or(f64::NAN),
            w.getrusage_ns_per_byte.unwrap_or(f64::NAN),
            w.whole_over_getrusage
                .map(|x| format!("{x:.2}"))
                .unwrap_or_else(|| "-".into()),
            w.ns_per_message.unwrap_or(f64::NAN),
            w.machine_share * 100.0
        );
        let extra = match (w.kernel_cpu_ns, w.ns_per_byte, w.busy_ticks) {
            (Some(k), Some(per_byte), _) if w.cpu_ns > 0.0 => {
                format!("  {:>11.3}", per_byte * k / w.cpu_ns)
            }
            (Some(_), _, _) => format!("  {:>11}", "-"),
            (None, _, Some(t)) => format!("  {t:>5}"),
            (None, _, None) => String::new(),
        };
        let _ = writeln!(s, "{extra}");
    }
    for why in withheld {
        let _ = writeln!(s, "  whole cost withheld: {why}");
    }
    if let Some(b) = r
        .conditions
        .as_ref()
        .and_then(|c| c.kernel_baseline.as_ref())
    {
        let _ = writeln!(
            s,
            "  background subtracted: {:.2} CPUs of {} (measured over {:.0} ms{}); a tick is {}",
            b.background_cpus(),
            b.cpu_count(),
            b.span_ms,
            if b.includes_loads {
                ", loads running"
            } else {
                ""
            },
            format_ns(b.ns_per_tick)
        );
    }
    if let Some(cal) = r.conditions.as_ref().and_then(|c| c.soaker.as_ref()) {
        let _ = writeln!(
            s,
            "  soaker calibration: {} CPUs, worst spread {:.1}% over {} windows{}",
            cal.cpus.len(),
            cal.worst_spread() * 100.0,
            cal.windows,
            if cal.trusted {
                ""
            } else {
                " (UNTRUSTED: the machine was not idle)"
            }
        );
    }
    Some(s)
}

/// One line per load that ran.
pub fn loads_text(c: &Conditions) -> String {
    let peer = crate::load::Loads::describe(&c.peer_loads).replace("load: ", "peer load: ");
    crate::load::Loads::describe(&c.loads) + &peer
}

/// `--loaded-vs-unloaded` sweeps measured in interleaved pairs
/// (unloaded, loaded, unloaded, ...): per size the median one-way time of
/// each condition (median over the pairs), the change with its 95%
/// interval over the pairs' ratios, and a verdict only where the interval
/// excludes no change; the CPU per byte of both.
pub fn sweep_pair_table(unloaded: &[SweepResult], loaded: &[SweepResult]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{:>10}  {:>10}  {:>10}  {:>8}  {:>19}  {:>22}  {:>13}  {:>13}",
        "size",
        "unloaded",
        "loaded",
        "change",
        "95% interval",
        "verdict",
        "cpu ns/B unl",
        "cpu ns/B load"
    );
    let Some(first) = unloaded.first() else {
        return s;
    };
    let at = |rs: &[SweepResult], bytes: u64| -> Vec<crate::result::Point> {
        rs.iter()
            .filter_map(|r| r.points.iter().find(|p| p.bytes == bytes).cloned())
            .collect()
    };
    let median = |v: Vec<f64>| {
        let mut v = v;
        v.sort_by(f64::total_cmp);
        crate::stats::quantile_sorted(&v, 0.5)
    };
    let cpu = |p: &crate::result::Point| p.cpu_client.ns_per_byte + p.cpu_server.ns_per_byte;
    for u0 in &first.points {
        let (us, ls) = (at(unloaded, u0.bytes), at(loaded, u0.bytes));
        let pairs: Vec<(f64, f64)> = us
            .iter()
            .zip(&ls)
            .map(|(u, l)| (u.median_ns, l.median_ns))
            .collect();
        if pairs.is_empty() {
            continue;
        }
        let change = crate::stats::paired::paired_change(&pairs);
        let (interval, verdict) = match change {
            Some(c) => (
                format!("{:+.1}% .. {:+.1}%", c.low * 100.0, c.high * 100.0),
                match c.direction() {
                    1 => "slower under load",
                    -1 => "faster under load",
                    _ => "no change beyond noise",
                },
            ),
            None => ("-".to_string(), "too few pairs"),
        };
        let mid = |ps: &[crate::result::Point]| median(ps.iter().map(|p| p.median_ns).collect());
        let (u, l) = (mid(&us), mid(&ls));
        let _ = writeln!(
            s,
            "{:>10}  {:>10}  {:>10}  {:>+7.1}%  {:>19}  {:>22}  {:>13.3}  {:>13.3}",
            format_bytes(u0.bytes),
            format_ns(u),
            format_ns(l),
            change.map_or((l / u - 1.0) * 100.0, |c| c.change * 100.0),
            interval,
            verdict,
            median(us.iter().map(cpu).collect()),
            median(ls.iter().map(cpu).collect())
        );
    }
    let _ = writeln!(
        s,
        "({} interleaved pairs; a verdict only where the 95% interval over the pairs excludes no change)",
        pairs_count(unloaded, loaded)
    );
    s
}

fn pairs_count(unloaded: &[SweepResult], loaded: &[SweepResult]) -> usize {
    unloaded.len().min(loaded.len())
}

/// `--loaded-vs-unloaded` for NAS kernels, in the form of Bounanos and Fleury 2007's
/// Tables 1 and 2: kernel rows, transport columns, unloaded and loaded
/// best Mop/s at the largest process count, the relative change of each,
/// and each transport against tcp under both conditions.
pub fn npb_pair_table(unloaded: &[NpbResult], loaded: &[NpbResult]) -> String {
    use crate::report::format::npb_table::kernels_table;
    let mut s = String::new();
    let _ = write!(s, "UNLOADED\n{}\n", kernels_table(unloaded));
    let _ = write!(s, "LOADED\n{}\n", kernels_table(loaded));
    let best = |rs: &[NpbResult], kernel: &str, via: &str, np: usize| {
        rs.iter()
            .filter(|r| r.kernel == kernel)
            .flat_map(|r| &r.runs)
            .find(|x| x.via == via && x.nprocs == np)
            .and_then(|x| x.best_mop_s)
    };
    let np = unloaded
        .iter()
        .chain(loaded)
        .map(|r| r.runs.iter().map(|x| x.nprocs).max().unwrap_or(1))
        .min()
        .unwrap_or(1);
    let mut vias: Vec<String> = Vec::new();
    for run in unloaded.iter().flat_map(|r| &r.runs) {
        if !vias.contains(&run.via) {
            vias.push(run.via.clone());
        }
    }
    let pct = |x: Option<f64>| {
        x.map(|v| format!("{:+.1}%", v * 100.0))
            .unwrap_or_else(|| "-".into())
    };
    let header = |s: &mut String, title: &str| {
        let _ = write!(s, "{title}\n{:<6}", "kernel");
        for v in &vias {
            let _ = write!(s, "  {v:>12}");
        }
        s.push('\n');
    };
    header(&mut s, &format!("loaded against unloaded (np={np}):"));
    for r in unloaded {
        let _ = write!(s, "{:<6}", r.kernel.to_uppercase());
        for v in &vias {
            let change = match (
                best(unloaded, &r.kernel, v, np),
                best(loaded, &r.kernel, v, np),
            ) {
                (Some(u), Some(l)) if u > 0.0 => Some(l / u - 1.0),
                _ => None,
            };
            let _ = write!(s, "  {:>12}", pct(change));
        }
        s.push('\n');
    }
    s.push_str(&npb_pair_intervals(unloaded, loaded, np));
    if vias.iter().any(|v| v == "tcp") {
        for (title, rs) in [("unloaded", unloaded), ("loaded", loaded)] {
            header(&mut s, &format!("\nagainst tcp, {title} (np={np}):"));
            for r in rs {
                let _ = write!(s, "{:<6}", r.kernel.to_uppercase());
                let tcp = best(rs, &r.kernel, "tcp", np);
                for v in &vias {
                    let rel = match (tcp, best(rs, &r.kernel, v, np)) {
                        (Some(t), Some(x)) if t > 0.0 => Some(x / t - 1.0),
                        _ => None,
                    };
                    let _ = write!(s, "  {:>12}", pct(rel));
                }
                s.push('\n');
            }
        }
    }
    s
}

/// NAS runs with `--cost whole`: the whole CPU of each combination, or
/// None when none was measured.
pub fn npb_whole_text(r: &NpbResult) -> Option<String> {
    let mut s = String::new();
    for run in &r.runs {
        let Some(w) = &run.cpu_whole else { continue };
        if let Some(why) = &w.withheld {
            let _ = writeln!(
                s,
                "  {:<24} withheld: {why}",
                format!("{} np={}", run.via, run.nprocs)
            );
            continue;
        }
        let _ = writeln!(
            s,
            "  {:<24} {:>8.3} CPU-s over {:>7.3} s ({:>3.0}% of the machine)",
            format!("{} np={}", run.via, run.nprocs),
            w.cpu_ns * 1e-9,
            w.wall_ns as f64 * 1e-9,
            w.machine_share * 100.0
        );
    }
    let method = r
        .runs
        .iter()
        .find_map(|run| run.cpu_whole.as_ref())
        .and_then(|w| w.method.as_deref());
    (!s.is_empty()).then(|| {
        format!(
            "whole CPU of each combination ({}; start-up and verification included):\n{s}",
            method_words(method)
        )
    })
}

/// The NAS runs' repetitions were interleaved (unloaded, loaded, ...):
/// per kernel and transport at `np`, the change of Mop/s with its 95%
/// interval over the pairs and a verdict only where it excludes no change.
fn npb_pair_intervals(unloaded: &[NpbResult], loaded: &[NpbResult], np: usize) -> String {
    let mut s = String::new();
    for u in unloaded {
        let Some(l) = loaded.iter().find(|l| l.kernel == u.kernel) else {
            continue;
        };
        for ur in u.runs.iter().filter(|r| r.nprocs == np) {
            let Some(lr) = l.runs.iter().find(|r| r.via == ur.via && r.nprocs == np) else {
                continue;
            };
            let pairs: Vec<(f64, f64)> = ur
                .outcomes
                .iter()
                .zip(&lr.outcomes)
                .map(|(a, b)| (a.mop_s, b.mop_s))
                .collect();
            let line = match crate::stats::paired::paired_change(&pairs) {
                Some(c) => format!(
                    "{:+.1}% (95%: {:+.1}% .. {:+.1}%, {} pairs) {}",
                    c.change * 100.0,
                    c.low * 100.0,
                    c.high * 100.0,
                    c.pairs,
                    match c.direction() {
                        1 => "faster under load",
                        -1 => "slower under load",
                        _ => "no change beyond noise",
                    }
                ),
                None => "fewer than 2 pairs: no interval (--repetitions 3 or more)".to_string(),
            };
            let _ = writeln!(s, "  {:<6} {:<14} {line}", u.kernel.to_uppercase(), ur.via);
        }
    }
    if s.is_empty() {
        return s;
    }
    format!("\nloaded against unloaded, Mop/s over interleaved repetitions (np={np}):\n{s}")
}
