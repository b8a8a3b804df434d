//! A Markdown summary for tickets and wikis: the summary table of the
//! report (configuration, latency, peak, size at peak, n_1/2, saturation
//! point, CPU cost, noisy points) and the switch-overs and drop-outs found.

use std::fmt::Write;

use super::npb_table::npb_markdown;
use super::{collective_table, matrix_text};
use crate::analysis::Analysis;
use crate::report::export::Exporter;
use crate::report::input::ReportInput;
use crate::report::summary::{labels, num_or_dash, size_or_dash, summary_row};
use crate::result::SweepResult;
use crate::units::format_bytes;

/// The Markdown summary of `results`.
pub fn to_markdown(results: &[SweepResult]) -> String {
    let names = labels(results);
    let analyses: Vec<Analysis> = results.iter().map(Analysis::of).collect();
    let mut s = String::new();
    s.push_str(
        "| configuration | latency (µs) | peak (Mbit/s) | size at peak | n_1/2 | saturation point | CPU ns/B | noisy points |\n\
         |---|--:|--:|--:|--:|--:|--:|--:|\n",
    );
    for ((r, a), name) in results.iter().zip(&analyses).zip(&names) {
        let row = summary_row(name, r, a);
        let _ = writeln!(
            s,
            "| {}{} | {} | {} | {} | {} | {} | {} | {} of {} |",
            cell(name),
            if r.complete { "" } else { " (incomplete)" },
            num_or_dash(row.latency_ns.map(|n| n / 1e3), 2),
            num_or_dash(row.peak_bits_per_s.map(|b| b / 1e6), 1),
            size_or_dash(row.peak_bytes),
            size_or_dash(row.n_half_bytes),
            row.saturation_bytes
                .map(format_bytes)
                .unwrap_or_else(|| "not reached".into()),
            num_or_dash(row.cpu_ns_per_byte, 3),
            row.noisy_points,
            row.points
        );
    }
    s.push_str(
        "\nLatency: median one-way time of the smallest message. Peak in SI units (1 Mbit/s = 10^6 bit/s). \
         CPU: both ends per byte moved, at the peak size. Noisy: points whose 95% interval missed the precision target.\n",
    );
    let mut notes = String::new();
    for (a, name) in analyses.iter().zip(&names) {
        for seg in a.segments.iter().skip(1) {
            let _ = writeln!(
                notes,
                "- {}: switch-over at {}{}{}",
                cell(name),
                format_bytes(seg.from_bytes),
                because(&seg.likely_cause),
                status(seg.confirmed)
            );
        }
        for d in &a.dropouts {
            let sizes = if d.from_bytes == d.to_bytes {
                format_bytes(d.from_bytes)
            } else {
                format!(
                    "{} to {}",
                    format_bytes(d.from_bytes),
                    format_bytes(d.to_bytes)
                )
            };
            let _ = writeln!(
                notes,
                "- {}: drop-out at {sizes}, {:.0}% below its neighbours{}{}",
                cell(name),
                100.0 * d.depth_fraction,
                because(&d.likely_cause),
                status(d.confirmed)
            );
        }
    }
    if !notes.is_empty() {
        s.push_str("\nSwitch-overs and drop-outs:\n\n");
        s.push_str(&notes);
    }
    s
}

fn because(c: &Option<String>) -> String {
    c.as_ref()
        .map(|c| format!(" (likely: {c})"))
        .unwrap_or_default()
}

/// Text safe inside a table cell.
fn cell(s: &str) -> String {
    s.replace('|', "\\|")
}

/// Whether the confirmation pass found the event again; nothing when no
/// pass ran (older results).
fn status(confirmed: Option<bool>) -> &'static str {
    match confirmed {
        Some(true) => " [confirmed by fresh trials]",
        Some(false) => " [not confirmed by fresh trials]",
        None => "",
    }
}

/// `--format markdown`: every kind, for a ticket or a wiki page. The sweeps'
/// summary table, each NPB result's tables (as `wulf npb` prints them), each
/// study's tables, each link matrix and collective result as its terminal
/// view in a code block.
pub struct Markdown;

impl Exporter for Markdown {
    fn name(&self) -> &'static str {
        "markdown"
    }

    fn export(&self, input: &ReportInput<'_>) -> anyhow::Result<Vec<u8>> {
        let (sweeps, npb) = (input.sweeps, input.npb);
        let mut out = Vec::new();
        // Without sweeps the summary table would be an empty table: only
        // when there are NPB results too is it left out.
        if npb.is_empty() && !sweeps.is_empty() {
            out = to_markdown(sweeps).into_bytes();
        } else if !npb.is_empty() {
            let mut parts: Vec<String> = Vec::new();
            if !sweeps.is_empty() {
                parts.push(to_markdown(sweeps));
            }
            parts.extend(npb.iter().map(npb_markdown));
            out = parts.join("\n").into_bytes();
        }
        for s in input.studies {
            out.extend(format!("## Study: {}\n\n", s.summary.study).into_bytes());
            out.extend(crate::study::tables::markdown(&s.summary.tables).into_bytes());
        }
        for m in input.matrices {
            let text = matrix_text::to_text(&m.result, &m.figures);
            out.extend(format!("\n## Link matrix\n\n```\n{text}```\n").into_bytes());
        }
        for c in input.collectives {
            let text = collective_table::to_text(c);
            out.extend(
                format!("\n## Collective: {}\n\n```\n{text}```\n", c.collective).into_bytes(),
            );
        }
        if !input.hpl.is_empty() {
            out.extend(format!("\n{}", crate::report::hpl::markdown(input.hpl)).into_bytes());
        }
        Ok(out)
    }
}
