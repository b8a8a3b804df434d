//! The collective part of the HTML report: for each `wulf collective`
//! result, a section with the time-against-size chart (backends as
//! series), a table with a row per size and a column per backend (each
//! cell's tooltip gives the interval, the ranks' average and fastest rank,
//! and the trials), then each backend's algorithm, library and errors, and
//! the command line. Every text from the file is escaped.

use std::fmt::Write;

use anyhow::Result;

use super::details::{esc, shell_line};
use crate::report::chart::collective::time_vs_size;
use crate::report::chart::sweep::color_hex;
use crate::result::collective::{CollectivePoint, CollectiveResult};
use crate::units::{format_bytes, format_ns};

/// One section per collective result.
pub(super) fn collective_sections(h: &mut String, results: &[CollectiveResult]) -> Result<()> {
    for (i, r) in results.iter().enumerate() {
        section(h, r, &format!("collective{}", i + 1))?;
    }
    Ok(())
}

fn section(h: &mut String, r: &CollectiveResult, id: &str) -> Result<()> {
    let vias: Vec<&str> = r.runs.iter().map(|x| x.via.as_str()).collect();
    let _ = write!(
        h,
        "<section id={id} class=npb><h2>Collective: {} on {} processes{}</h2>\n<p class=sub>time per \
         operation: the slowest rank's mean over a block of operations, median of the kept trials \
         (95% interval within &plusmn;{:.0}% or flagged noisy); budget {} s per backend; backends {}</p>\n",
        esc(&r.collective),
        r.nprocs,
        if r.complete {
            ""
        } else {
            " <span class=bad>incomplete</span>"
        },
        100.0 * r.precision,
        r.budget_s,
        esc(&vias.join(", "))
    );
    notes(h, r);
    if let Some(svg) = time_vs_size(r)? {
        let _ = write!(
            h,
            "<div class=grid><figure id={id}-time><h3>{} time vs message size</h3>\n{}\n<figcaption>\
             Median time per operation of each backend, both axes logarithmic; whiskers: the median's \
             95% interval; open circles: noisy sizes. mpi:NAME runs the library's own algorithm, \
             wulf's transports (shm, tcp...) the plain one listed below.</figcaption></figure></div>\n",
            esc(&r.collective),
            svg.trim()
        );
    }
    table(h, r);
    details(h, r);
    h.push_str("</section>\n");
    Ok(())
}

/// Failures, incompleteness and warnings, in one list.
fn notes(h: &mut String, r: &CollectiveResult) {
    let mut items: Vec<String> = r
        .runs
        .iter()
        .filter_map(|x| {
            let e = x.error.as_deref()?;
            Some(format!(
                "<li><span class=bad>{}: {}</span></li>",
                esc(&x.via),
                esc(e)
            ))
        })
        .collect();
    if let Some(why) = &r.incomplete_reason {
        items.push(format!("<li class=w>incomplete: {}</li>", esc(why)));
    }
    items.extend(
        r.warnings
            .iter()
            .map(|w| format!("<li class=w>{}</li>", esc(w))),
    );
    if !items.is_empty() {
        let _ = write!(h, "<ul class=highlights>\n{}\n</ul>\n", items.join("\n"));
    }
}

/// A row per size, a column per backend (its colour as in the chart).
fn table(h: &mut String, r: &CollectiveResult) {
    let mut sizes: Vec<u64> = r
        .runs
        .iter()
        .flat_map(|x| x.points.iter().map(|p| p.bytes))
        .collect();
    sizes.sort_unstable();
    sizes.dedup();
    if sizes.is_empty() {
        return;
    }
    h.push_str("<table class=npb><thead><tr><th>size</th>");
    for (k, run) in r.runs.iter().enumerate() {
        let _ = write!(
            h,
            "<th class=num><span class=swatch style=\"background:{}\"></span>{}</th>",
            color_hex(k),
            esc(&run.via)
        );
    }
    h.push_str("</tr></thead><tbody>\n");
    for bytes in sizes {
        let _ = write!(h, "<tr><td class=num>{}</td>", format_bytes(bytes));
        for run in &r.runs {
            match run.points.iter().find(|p| p.bytes == bytes) {
                Some(p) => {
                    let _ = write!(
                        h,
                        "<td class=num title=\"{}\">{}</td>",
                        esc(&tip(p)),
                        cell(p)
                    );
                }
                None => h.push_str("<td class=num>-</td>"),
            }
        }
        h.push_str("</tr>\n");
    }
    h.push_str("</tbody></table>\n");
}

fn cell(p: &CollectivePoint) -> String {
    let t = esc(&format_ns(p.median_ns));
    if p.noisy {
        format!("<span class=bad>{t}*</span>")
    } else {
        t
    }
}

/// The tooltip of a cell: what the median stands on.
fn tip(p: &CollectivePoint) -> String {
    format!(
        "95% CI {} to {}; ranks' average {}, fastest rank {}; {} trials x {} operations{}",
        format_ns(p.ci_low_ns),
        format_ns(p.ci_high_ns),
        format_ns(p.ranks_avg_median_ns),
        format_ns(p.ranks_min_median_ns),
        p.trials_ns.len(),
        p.repeats,
        if p.noisy { "; noisy" } else { "" }
    )
}

/// Each backend's algorithm and library, then the command line.
fn details(h: &mut String, r: &CollectiveResult) {
    h.push_str("<details><summary>Backends, libraries and command line</summary>\n<ul>\n");
    for run in &r.runs {
        let library = run
            .mpi
            .as_ref()
            .map(|m| format!("; {}", m.library_version.lines().next().unwrap_or_default()))
            .unwrap_or_default();
        let wait = run
            .wait
            .map(|w| format!("; ranks wait: {w:?}").to_lowercase())
            .unwrap_or_default();
        let _ = writeln!(
            h,
            "<li><b>{}</b>: {}{}{}</li>",
            esc(&run.via),
            esc(&run.algorithm),
            esc(&library),
            esc(&wait)
        );
    }
    let _ = write!(
        h,
        "</ul>\n<p>{} ({}), wulf {}, {}:</p><pre>{}</pre></details>\n",
        esc(&r.host.hostname),
        esc(&r.started_at),
        esc(&r.tool_version),
        r.lab
            .as_ref()
            .map(|l| esc(&l.describe()))
            .unwrap_or_else(|| "one node".into()),
        esc(&shell_line(&r.command_line))
    );
}
