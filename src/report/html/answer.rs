//! The first screen of the report: a few sentences that answer what a
//! reader came for before any table. Which transport is fastest at which
//! sizes (and where the lead is within noise), how far the best figures
//! are from the machine's and the links' limits, and what to change
//! before trusting or extending the run.
//!
//! Every sentence is read from the results and their analyses; nothing
//! here measures; [`highlights`] writes them all, the best latency and peak
//! (with the warm-cache caveat) first.

use std::fmt::Write;

use crate::analysis::Analysis;
use crate::report::summary::{
    latency_share_at_largest, size_or_dash, SummaryRow, LATENCY_BOUND_SHARE,
};
use crate::result::SweepResult;
use crate::units::{format_bits_per_s, format_bytes, format_ns};

use super::details::esc;

/// A result as the answer reads it: its label, its points, and its row.
pub(super) struct Entry<'a> {
    /// The result's label (as in the summary table).
    pub label: &'a str,
    /// The measurements.
    pub result: &'a SweepResult,
    /// Its summary row.
    pub row: &'a SummaryRow,
}

/// One size's leader: (size, leader's index, beyond noise).
type Lead = (u64, usize, bool);

/// Most ranges "fastest by size" names before it summarises instead.
const MAX_RANGES: usize = 4;

/// Share of noisy points from which the answer advises a longer budget.
const NOISY_ADVICE_SHARE: f64 = 0.25;

/// A peak below this share of its link's limit is named as far from it.
const FAR_FROM_LIMIT: f64 = 0.5;

/// Throughput interval (low, median, high) of a point, bit/s: the median
/// time's 95% interval turned into rates.
fn rate_interval(r: &SweepResult, p: &crate::result::Point) -> Option<(f64, f64, f64)> {
    let bits = r.mode.bytes_per_op(1) as f64 * 8.0 * p.bytes as f64;
    let ok = |t: f64| t.is_finite() && t > 0.0;
    if !(ok(p.median_ns) && p.bytes > 0) {
        return None;
    }
    let hi_ns = if ok(p.ci_high_ns) {
        p.ci_high_ns
    } else {
        p.median_ns
    };
    let lo_ns = if ok(p.ci_low_ns) {
        p.ci_low_ns
    } else {
        p.median_ns
    };
    Some((
        bits * 1e9 / hi_ns,
        bits * 1e9 / p.median_ns,
        bits * 1e9 / lo_ns,
    ))
}

/// The leader at every size that at least two of `entries` measured: the
/// highest median throughput, beyond noise when its interval lies above
/// every other's.
fn leads(entries: &[Entry]) -> Vec<Lead> {
    let mut sizes: Vec<u64> = entries
        .iter()
        .flat_map(|e| e.result.points.iter().map(|p| p.bytes))
        .collect();
    sizes.sort_unstable();
    sizes.dedup();
    let mut out = Vec::new();
    for b in sizes {
        let at: Vec<(usize, (f64, f64, f64))> = entries
            .iter()
            .enumerate()
            .filter_map(|(i, e)| {
                let p = e.result.points.iter().find(|p| p.bytes == b)?;
                Some((i, rate_interval(e.result, p)?))
            })
            .collect();
        if at.len() < 2 {
            continue;
        }
        let Some(&(best, (lo, _, _))) = at.iter().max_by(|a, b| a.1 .1.total_cmp(&b.1 .1)) else {
            continue;
        };
        let clear = at.iter().all(|(i, (_, _, hi))| *i == best || *hi < lo);
        out.push((b, best, clear));
    }
    out
}

/// Consecutive sizes with one leader as (from, to, leader, beyond noise at
/// most of them); a single size led by another between two runs of one
/// leader is taken as noise and folded into them.
fn ranges(leads: &[Lead]) -> Vec<(u64, u64, usize, bool)> {
    let mut smooth: Vec<Lead> = leads.to_vec();
    for k in 1..smooth.len().saturating_sub(1) {
        let (prev, next) = (smooth[k - 1].1, smooth[k + 1].1);
        if prev == next && smooth[k].1 != prev {
            smooth[k] = (smooth[k].0, prev, false);
        }
    }
    let mut out: Vec<(u64, u64, usize, usize, usize)> = Vec::new();
    for (b, who, clear) in smooth {
        match out.last_mut() {
            Some(last) if last.2 == who => {
                last.1 = b;
                last.3 += usize::from(clear);
                last.4 += 1;
            }
            _ => out.push((b, b, who, usize::from(clear), 1)),
        }
    }
    out.into_iter()
        .map(|(a, b, who, clear, n)| (a, b, who, 2 * clear > n))
        .collect()
}

/// "Fastest by size": which transport leads where, and where the lead is
/// within noise. `None` with fewer than two transports sharing a size.
pub(super) fn fastest_by_size(entries: &[Entry]) -> Option<String> {
    let ranges = ranges(&leads(entries));
    if ranges.is_empty() {
        return None;
    }
    let part = |&(a, b, who, clear): &(u64, u64, usize, bool)| {
        let span = if a == b {
            format!("at {}", format_bytes(a))
        } else {
            format!("from {} to {}", format_bytes(a), format_bytes(b))
        };
        let noise = if clear { "" } else { " (within noise)" };
        format!("<b>{}</b> {span}{noise}", esc(entries[who].label))
    };
    if ranges.len() <= MAX_RANGES {
        let parts: Vec<String> = ranges.iter().map(part).collect();
        return Some(format!("Fastest by size: {}.", parts.join("; ")));
    }
    let (first, last) = (&ranges[0], &ranges[ranges.len() - 1]);
    Some(format!(
        "Fastest by size: {}; {}; the lead changes {} times between, mostly within noise \
         (see the throughput chart).",
        part(first),
        part(last),
        ranges.len() - 1
    ))
}

/// How far the transports are from the limits the results record: the
/// peak against the link's limit, the best latency against the cache-line
/// floor, the best peak against memcpy at its size.
pub(super) fn against_limits(entries: &[Entry]) -> Option<String> {
    let mut parts = Vec::new();
    let linked: Vec<(&Entry, f64)> = entries
        .iter()
        .filter_map(|e| Some((e, e.row.limit.as_ref()?.peak_fraction?)))
        .collect();
    if let (Some(lo), Some(hi)) = (
        linked.iter().min_by(|a, b| a.1.total_cmp(&b.1)),
        linked.iter().max_by(|a, b| a.1.total_cmp(&b.1)),
    ) {
        let pct = |f: f64| format!("{:.0}%", 100.0 * f);
        let above = if hi.1 > 1.0 {
            " (above the limit: a shaper's burst or a wrong limit, see the warnings)"
        } else {
            ""
        };
        parts.push(if linked.len() == 1 {
            format!(
                "the peak is {} of the link's limit{}{above}",
                pct(lo.1),
                if lo.0.row.warm_cache {
                    " (warm cache)"
                } else {
                    ""
                }
            )
        } else {
            format!(
                "peaks from {} of the link's limit ({}{}) to {} ({}{}){above}",
                pct(lo.1),
                esc(lo.0.label),
                warm_mark(lo.0),
                pct(hi.1),
                esc(hi.0.label),
                warm_mark(hi.0)
            )
        });
    }
    // One floor for the run, the one the table and the charts use.
    let run_floor = crate::report::floor::run_floor_ns(entries.iter().map(|e| e.result));
    let closest = run_floor.and_then(|floor| {
        entries
            .iter()
            .filter(|e| !e.row.reference && crate::report::floor::applies(e.result))
            .filter_map(|e| Some((e, crate::report::floor::multiple(e.row.latency_ns?, floor)?)))
            .min_by(|a, b| a.1.total_cmp(&b.1))
            .map(|(e, times)| (e, times, floor))
    });
    if let Some((e, times, floor)) = closest {
        parts.push(format!(
            "closest to the run's cache-line floor of {floor:.0} ns: {}, {times:.1}&times; it",
            esc(e.label)
        ));
    }
    // Against memcpy, a cold-buffer peak where one exists: a warm-cache
    // peak reads lines the receiver still holds and can pass memcpy of
    // fresh data, which says nothing about moving new data.
    let against_memcpy = |cold_only: bool| {
        entries
            .iter()
            .filter(|e| !cold_only || !e.row.warm_cache)
            .filter_map(|e| {
                let at = e.row.peak_bytes?;
                let p = e.result.points.iter().find(|p| p.bytes == at)?;
                let m = p.limits?.memcpy_bits_per_s.filter(|m| *m > 0.0)?;
                Some((e, e.row.peak_bits_per_s? / m))
            })
            .max_by(|a, b| a.1.total_cmp(&b.1))
    };
    if let Some((e, f)) = against_memcpy(true).or_else(|| against_memcpy(false)) {
        parts.push(format!(
            "the best peak against memcpy at its size is {:.0}% ({}{})",
            100.0 * f,
            esc(e.label),
            warm_mark(e)
        ));
    }
    if parts.is_empty() {
        return None;
    }
    Some(format!("Against the limits: {}.", parts.join("; ")))
}

/// ", warm cache" after a result whose peak was measured resending one
/// buffer that stays in the cache, so no figure against a limit hides it.
fn warm_mark(e: &Entry) -> &'static str {
    if e.row.warm_cache {
        ", warm cache"
    } else {
        ""
    }
}

/// What to change before trusting or extending the run, from what the
/// results say: noise, a busy machine, sizes that never left the latency
/// regime, links far from their limits, runs cut short.
pub(super) fn to_change(entries: &[Entry]) -> Option<String> {
    let mut todo: Vec<String> = Vec::new();
    let incomplete: Vec<String> = entries
        .iter()
        .filter(|e| !e.row.complete)
        .map(|e| esc(e.label))
        .collect();
    if !incomplete.is_empty() {
        todo.push(format!(
            "rerun what was cut short ({})",
            incomplete.join(", ")
        ));
    }
    let (noisy, points) = entries.iter().fold((0u64, 0usize), |(n, p), e| {
        (n + e.row.noisy_points, p + e.row.points)
    });
    let busy = entries
        .iter()
        .filter(|e| e.result.warnings.iter().any(|w| w.starts_with("slow mode")))
        .count();
    if points > 0 && noisy as f64 / points as f64 >= NOISY_ADVICE_SHARE || busy > 0 {
        let busy = if busy > 0 {
            format!(
                ", and {busy} result{} ran slower than copying explains: a busy machine",
                if busy == 1 { "" } else { "s" }
            )
        } else {
            String::new()
        };
        todo.push(format!(
            "rerun with a larger <code>--budget</code> on a quieter machine ({noisy} of {points} \
             points are noisy{busy})"
        ));
    }
    let latency_bound: Vec<String> = entries
        .iter()
        .filter_map(|e| {
            let (bytes, share) = latency_share_at_largest(e.result)?;
            (share > LATENCY_BOUND_SHARE).then(|| {
                format!(
                    "{} (latency {:.0}% of the time at {})",
                    esc(e.label),
                    100.0 * share,
                    format_bytes(bytes)
                )
            })
        })
        .collect();
    if !latency_bound.is_empty() {
        todo.push(format!(
            "measure larger sizes for {}: the largest are still latency-bound",
            short_list(&latency_bound)
        ));
    }
    let far: Vec<String> = entries
        .iter()
        .filter(|e| {
            e.row
                .limit
                .as_ref()
                .and_then(|l| l.peak_fraction)
                .is_some_and(|f| f < FAR_FROM_LIMIT)
        })
        .map(|e| esc(e.label))
        .collect();
    if !far.is_empty() {
        todo.push(format!(
            "find what holds {} below half its link (socket buffers, MTU, the events below)",
            short_list(&far)
        ));
    }
    if todo.is_empty() {
        return None;
    }
    Some(format!("To change: {}.", todo.join("; ")))
}

/// Up to three names, then how many more.
fn short_list(names: &[String]) -> String {
    match names.len() {
        0..=3 => names.join(", "),
        n => format!("{} and {} more", names[..3].join(", "), n - 3),
    }
}

/// The answer over sweep `results` labelled `names`, with their summary
/// `rows` and `analyses` (as the page has them): the sentences of
/// [`items`], about the transports only (the in-process baselines are
/// references, not competitors), as HTML fragments.
pub(super) fn transport_items(
    results: &[SweepResult],
    names: &[String],
    rows: &[SummaryRow],
    analyses: &[Analysis],
) -> Vec<String> {
    let (t_rows, t_analyses): (Vec<SummaryRow>, Vec<Analysis>) = rows
        .iter()
        .zip(analyses)
        .filter(|(row, _)| !row.reference)
        .map(|(row, a)| (row.clone(), a.clone()))
        .unzip();
    let entries: Vec<Entry> = results
        .iter()
        .zip(names)
        .zip(rows)
        .filter(|(_, row)| !row.reference)
        .map(|((result, label), row)| Entry { label, result, row })
        .collect();
    items(&t_rows, &t_analyses, &entries)
}

/// The sentences a reader gets before any table, as a list.
pub(super) fn highlights(h: &mut String, items: &[String]) {
    if !items.is_empty() {
        let _ = write!(
            h,
            "<ul class=highlights>\n<li>{}</li>\n</ul>\n",
            items.join("</li>\n<li>")
        );
    }
}

/// The answer over sweep `results` as plain text, one paragraph per
/// sentence of the report's first screen, for a terminal (`wulf run`
/// prints it last). The same sentences as the page: [`transport_items`]
/// with the markup taken out.
pub fn answer_text(results: &[SweepResult]) -> Vec<String> {
    let names = crate::report::summary::labels(results);
    let analyses: Vec<Analysis> = results.iter().map(Analysis::of).collect();
    let rows: Vec<SummaryRow> = results
        .iter()
        .zip(&analyses)
        .zip(&names)
        .map(|((r, a), l)| crate::report::summary::summary_row(l, r, a))
        .collect();
    transport_items(results, &names, &rows, &analyses)
        .iter()
        .map(|item| plain(item))
        .collect()
}

/// Width the terminal answer wraps at.
const SCREEN_WIDTH: usize = 78;

/// The answer as the last screen of `wulf run`: a heading, then each
/// sentence of [`answer_text`] as a bullet wrapped at [`SCREEN_WIDTH`]
/// with a hanging indent. Empty when there is nothing to say.
pub fn answer_screen(results: &[SweepResult]) -> String {
    let items = answer_text(results);
    if items.is_empty() {
        return String::new();
    }
    let mut screen = String::from("\nThe answer (the report opens with it):\n");
    for item in items {
        let mut line = String::from("  -");
        for word in item.split_whitespace() {
            if line.len() + 1 + word.len() > SCREEN_WIDTH && line.trim() != "-" {
                screen.push_str(&line);
                screen.push('\n');
                line = String::from("   ");
            }
            line.push(' ');
            line.push_str(word);
        }
        screen.push_str(&line);
        screen.push('\n');
    }
    screen
}

/// An answer's HTML fragment as text: tags dropped, the entities this
/// module and [`esc`] write turned back into characters.
fn plain(html: &str) -> String {
    let mut text = String::with_capacity(html.len());
    let mut in_tag = false;
    for c in html.chars() {
        match c {
            '<' => in_tag = true,
            '>' if in_tag => in_tag = false,
            _ if !in_tag => text.push(c),
            _ => {}
        }
    }
    [
        ("&times;", "x"),
        ("&lt;", "<"),
        ("&gt;", ">"),
        ("&quot;", "\""),
        ("&#39;", "'"),
        ("&amp;", "&"),
    ]
    .iter()
    .fold(text, |t, (entity, c)| t.replace(entity, c))
}

/// The sentences a reader gets before any table: the best latency and
/// peak, how many anomalies were found, then which transport is fastest
/// where, how far from the limits, and what to change.
fn items(rows: &[SummaryRow], analyses: &[Analysis], entries: &[Entry]) -> Vec<String> {
    let mut items: Vec<String> = Vec::new();
    let by = |f: fn(&SummaryRow) -> Option<f64>| {
        let mut v: Vec<(&SummaryRow, f64)> = rows.iter().filter_map(|r| Some((r, f(r)?))).collect();
        v.sort_by(|a, b| a.1.total_cmp(&b.1));
        v
    };
    let lat = by(|r| r.latency_ns);
    match (lat.first(), lat.last()) {
        (Some(lo), Some(hi)) if lat.len() > 1 => items.push(format!(
            "Lowest latency: <b>{}</b>, {} (highest: {}, {}).",
            esc(&lo.0.label),
            format_ns(lo.1),
            esc(&hi.0.label),
            format_ns(hi.1)
        )),
        (Some(one), _) => items.push(format!("Latency: <b>{}</b>.", format_ns(one.1))),
        _ => {}
    }
    let peak = by(|r| r.peak_bits_per_s);
    // Of equal peaks, name the first result given. A warm-cache peak (the
    // same buffer resent within the cache: shm once read 5.7x its c2c
    // limit) is not what moving fresh data gives, so where a cold-buffer
    // result exists the highlight is its peak, and a warm one is said to
    // be warm.
    let highest = |cold_only: bool| {
        peak.iter()
            .filter(|(r, _)| !cold_only || !r.warm_cache)
            .min_by(|a, b| b.1.total_cmp(&a.1))
    };
    let best = highest(true).or_else(|| highest(false));
    let warm_above = highest(false).filter(|w| best.is_some_and(|b| w.1 > b.1));
    if let Some((r, p)) = best {
        let share = r
            .limit
            .as_ref()
            .and_then(|l| l.peak_fraction)
            .map(|f| format!(", {:.1}% of the physical limit", 100.0 * f))
            .unwrap_or_default();
        let half = r
            .n_half_bytes
            .map(|n| format!("; half of it from {} on", format_bytes(n)))
            .unwrap_or_default();
        let who = if peak.len() > 1 {
            format!("Highest peak: <b>{}</b>, ", esc(&r.label))
        } else {
            "Peak: ".into()
        };
        let warm = if r.warm_cache {
            " (warm cache: the same buffer resent within the last-level cache, as NetPIPE \
             does; <code>--nocache</code> measures cold buffers)"
                .to_string()
        } else {
            warm_above
                .map(|(w, wp)| {
                    format!(
                        " with cold buffers (warm-cache peaks, the same buffer resent within \
                         the cache, reach {}: {})",
                        format_bits_per_s(*wp),
                        esc(&w.label)
                    )
                })
                .unwrap_or_default()
        };
        items.push(format!(
            "{who}<b>{}</b> at {}{warm}{share}{half}.",
            format_bits_per_s(*p),
            size_or_dash(r.peak_bytes)
        ));
    }
    let dropouts: usize = analyses
        .iter()
        .map(|a| a.confirmed_dropouts().count())
        .sum();
    let switchovers: usize = analyses
        .iter()
        .map(|a| a.confirmed_switchovers().count())
        .sum();
    let named = analyses
        .iter()
        .flat_map(|a| {
            a.confirmed_dropouts()
                .map(|d| &d.likely_cause)
                .chain(a.confirmed_switchovers().map(|s| &s.likely_cause))
        })
        .filter(|c| c.is_some())
        .count();
    if dropouts + switchovers > 0 {
        items.push(format!(
            "Confirmed {dropouts} drop-out{} and {switchovers} switch-over{} (measured again after the sweep), \
             {named} events with a likely cause: confirmed ones marked D and S on the charts, all \
             <a href=\"#anomalies\">listed below</a>.",
            if dropouts == 1 { "" } else { "s" },
            if switchovers == 1 { "" } else { "s" },
        ));
    }
    items.extend(fastest_by_size(entries));
    items.extend(against_limits(entries));
    items.extend(to_change(entries));
    items
}

#[cfg(test)]
#[path = "answer_tests.rs"]
mod tests;
