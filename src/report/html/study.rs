//! The report's section for a study (`wulf study`): what it reproduces,
//! the lab it ran in, its tables, and one chart family per factor drawn
//! from the study's full sweeps with the report's own chart functions
//! (throughput vs size, signature, saturation): per MTU for
//! `mtu-buffers`, per transport and link for `fe-vs-ge`; for `lean-stacks`
//! one family per link and MTU, one line per transport, with the CPU
//! charts (Bounanos and Fleury 2007, Figs. 1-2: throughput, and throughput per unit of CPU).

use std::fmt::Write;

use anyhow::Result;

use super::details::esc;
use crate::analysis::Analysis;
use crate::report::chart::cpu_throughput;
use crate::report::chart::sweep::{self, Series};
use crate::report::input::LoadedStudy;
use crate::result::{StudyResult, StudyTable, SweepResult};

/// One section per study.
pub fn study_sections(h: &mut String, studies: &[LoadedStudy]) -> Result<()> {
    for (i, s) in studies.iter().enumerate() {
        section(h, s, &format!("study{}", i + 1))?;
    }
    Ok(())
}

fn section(h: &mut String, s: &LoadedStudy, id: &str) -> Result<()> {
    let r = &s.summary;
    let _ = write!(
        h,
        "<section id={id} class=study><h2>Study: {}{}</h2>\n<p class=sub>{} &middot; {} effort, {} sweeps in the link lab, {:.0} s</p>\n",
        esc(&r.study),
        if r.complete { "" } else { " <span class=bad>incomplete</span>" },
        esc(&r.about),
        esc(&r.effort),
        r.cases.len(),
        r.wall_s
    );
    for t in &r.tables {
        table(h, t);
    }
    let failed: Vec<String> = r
        .cases
        .iter()
        .filter_map(|c| {
            c.error
                .as_ref()
                .map(|e| format!("{}: {}", esc(&c.label), esc(e)))
        })
        .collect();
    if !failed.is_empty() || !r.warnings.is_empty() {
        h.push_str("<ul class=warnings>\n");
        for w in failed
            .iter()
            .chain(r.warnings.iter().map(|w| esc(w)).collect::<Vec<_>>().iter())
        {
            let _ = writeln!(h, "<li>{w}</li>");
        }
        h.push_str("</ul>\n");
    }
    let curves: Vec<&(String, SweepResult)> = s
        .sweeps
        .iter()
        .filter(|(label, _)| {
            r.cases
                .iter()
                .any(|c| &c.label == label && c.role == "curve")
        })
        .collect();
    if curves.is_empty() {
        h.push_str("</section>\n");
        return Ok(());
    }
    if r.study == "lean-stacks" {
        // One family per link and MTU: lines of one family share a link.
        let mut groups: Vec<(String, u32)> = Vec::new();
        for c in &r.cases {
            if !groups.contains(&(c.link.clone(), c.mtu_bytes)) {
                groups.push((c.link.clone(), c.mtu_bytes));
            }
        }
        for (link, mtu) in &groups {
            let members: Vec<&(String, SweepResult)> = curves
                .iter()
                .copied()
                .filter(|(label, _)| {
                    r.cases
                        .iter()
                        .any(|c| &c.label == label && &c.link == link && c.mtu_bytes == *mtu)
                })
                .collect();
            if !members.is_empty() {
                let _ = writeln!(h, "<h3>{}, MTU {mtu}</h3>", esc(link));
                chart_grid(h, r, &members, true)?;
            }
        }
    } else {
        chart_grid(h, r, &curves, false)?;
    }
    h.push_str("</section>\n");
    Ok(())
}

/// The chart family of `curves`, one line each; `cpu`: the throughput
/// and CPU charts (Bounanos and Fleury 2007, Figs. 1-2) instead of signature and saturation.
fn chart_grid(
    h: &mut String,
    r: &StudyResult,
    curves: &[&(String, SweepResult)],
    cpu: bool,
) -> Result<()> {
    let analyses: Vec<Analysis> = curves.iter().map(|(_, r)| Analysis::of(r)).collect();
    let labels: Vec<String> = curves.iter().map(|(l, _)| curve_label(r, l)).collect();
    let series: Vec<Series> = curves
        .iter()
        .enumerate()
        .map(|(i, (_, res))| Series {
            label: &labels[i],
            color: i,
            result: res,
            analysis: &analyses[i],
            first_dropout_no: 1,
            first_switchover_no: 1,
            limit_bits_per_s: None,
            limit_role: None,
        })
        .collect();
    let throughput = (
        "Throughput vs message size",
        sweep::throughput_vs_size(&series, None, sweep::throughput_wants_log(&series, None))?,
        "Median ping-pong throughput of each size, one line per factor level.",
    );
    let mut figures = vec![throughput];
    if cpu {
        figures.push((
            "CPU per byte",
            sweep::cpu_cost(&series)?,
            "CPU time per byte moved against size: the measuring end solid, the peer dashed (getrusage), the whole machine dotted (--cost whole).",
        ));
        if let Some(svg) = cpu_throughput::throughput_per_cpu(&series)? {
            figures.push((
                "Throughput per CPU-second",
                svg,
                "Bits moved per second of CPU time of both ends (Bounanos and Fleury 2007, Fig. 2).",
            ));
        }
    } else {
        figures.push((
            "Network signature",
            sweep::signature(&series)?,
            "Throughput against the time one message takes: the first point's time is the latency.",
        ));
        figures.push(("Saturation", sweep::saturation(&series)?, "Message size against time, both logarithmic: from the saturation point on, time grows linearly with size."));
    }
    h.push_str("<div class=grid>\n");
    for (name, svg, caption) in figures {
        let _ = write!(
            h,
            "<figure class=study-chart><h3>{name}</h3>\n{svg}\n<figcaption>{caption}</figcaption></figure>\n"
        );
    }
    h.push_str("</div>\n");
    Ok(())
}

/// `MTU 9000` for mtu-buffers curves, `tcp over fe` for fe-vs-ge.
fn curve_label(r: &StudyResult, label: &str) -> String {
    match r.cases.iter().find(|c| c.label == label) {
        Some(c) if r.study == "mtu-buffers" => format!("MTU {}", c.mtu_bytes),
        Some(c) if r.study == "lean-stacks" => c.transport.clone(),
        Some(c) => format!("{} over {}", c.transport, c.link),
        None => label.to_string(),
    }
}

fn table(h: &mut String, t: &StudyTable) {
    let _ = write!(
        h,
        "<table class=study-table><caption>{}</caption>\n<thead><tr><th>{}</th>",
        esc(&t.title),
        esc(&t.row_header)
    );
    for c in &t.columns {
        let _ = write!(h, "<th class=num>{}</th>", esc(c));
    }
    h.push_str("</tr></thead>\n<tbody>\n");
    for r in &t.rows {
        let _ = write!(h, "<tr><td>{}</td>", esc(&r.label));
        for (k, v) in r.cells.iter().enumerate() {
            let cell = v.map_or("-".to_string(), |v| format!("{v:.*}", t.decimals));
            // A noisy point's figure says so (issue 35 item 7).
            if v.is_some() && r.noisy.get(k).copied().unwrap_or(false) {
                let _ = write!(
                    h,
                    "<td class=num title=\"noisy: not within its precision in the budget\">{cell}~</td>"
                );
            } else {
                let _ = write!(h, "<td class=num>{cell}</td>");
            }
        }
        h.push_str("</tr>\n");
    }
    h.push_str("</tbody></table>\n");
}
