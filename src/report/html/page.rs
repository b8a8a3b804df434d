//! The HTML report: one self-contained file (inline CSS, inline SVG charts,
//! a few lines of inline script) that opens offline in any browser.
//!
//! Layout, top to bottom: the answer (`answer`: the best latency
//! and peak, which transport is fastest at which sizes, how far from the
//! limits, what to change); the summary table of the studies
//! (configuration, latency, peak, size at peak, n_1/2, saturation point,
//! CPU cost, noisy points; baselines marked as limits), in a scroll
//! container so that a narrow window scrolls it rather than cutting it;
//! the warnings, one line per kind with the texts folded
//! (`warnings`); the charts (`charts`: the transports overlaid,
//! the baselines as limits, memcpy's memory hierarchy, intra-node
//! transports against memcpy and the cache-line floor, efficiency against
//! a link when one is known); the confirmed switch-overs and drop-outs
//! with their likely causes (the other candidates folded) and the Hockney
//! segments with their intervals; then a section per NPB result (`wulf
//! npb`: Mop/s and speedup charts and tables, [`super::npb`]), per
//! collective result (`wulf collective`: time against size,
//! [`super::collective`]); and the machines (each described once) and each
//! result's placement, options and command line. The output depends only
//! on the results (no clock, no environment), so it can be snapshot-tested.

use std::fmt::Write;

use anyhow::Result;

use super::answer::{highlights, transport_items};
use super::charts::charts_section;
use super::details::{anomalies, esc, note_sweeps, sweep_details};
use super::machines::{matrix_details, note_matrices, Book};
use super::npb::{note_npb, npb_labels, npb_machines, npb_sections};
use super::study::study_sections;
use crate::analysis::Analysis;
use crate::report::chart::sweep::{color_hex, Series};
use crate::report::input::ReportInput;
use crate::report::summary::{
    labels, num_or_dash, physical_limit, size_or_dash, summary_row, SummaryRow,
};
use crate::units::format_bytes;

/// The report over `input` as one HTML document, a section per kind of
/// result: the sweep sections (summary, warnings, charts, events) when there
/// are sweeps, then a section per NPB result ([`super::npb`]), per
/// collective result ([`super::collective`]), per study ([`super::study`])
/// and per link matrix ([`super::matrix`]), then the machines and command
/// lines of all.
pub fn to_html(input: &ReportInput) -> Result<String> {
    let ReportInput {
        sweeps: results,
        npb,
        studies,
        matrices,
        collectives,
        hpl,
    } = *input;
    let names = labels(results);
    let npb_names = npb_labels(npb);
    let analyses: Vec<Analysis> = results.iter().map(Analysis::of).collect();
    let rows: Vec<SummaryRow> = results
        .iter()
        .zip(&analyses)
        .zip(&names)
        .map(|((r, a), l)| summary_row(l, r, a))
        .collect();
    let mut series = Vec::new();
    let (mut d_no, mut s_no) = (1, 1);
    for (i, r) in results.iter().enumerate() {
        series.push(Series {
            label: &names[i],
            color: i,
            result: r,
            analysis: &analyses[i],
            first_dropout_no: d_no,
            first_switchover_no: s_no,
            limit_bits_per_s: physical_limit(r).map(|l| l.bits_per_s),
            limit_role: crate::report::summary::limit_role(r),
        });
        d_no += analyses[i].dropouts.len();
        s_no += analyses[i].switchovers.len();
    }

    let mut h = String::with_capacity(1 << 20);
    h.push_str(HEAD);
    let all_names: Vec<String> = names.iter().chain(&npb_names).cloned().collect();
    let _ = write!(
        h,
        "<title>{}</title>\n</head>\n<body>\n",
        esc(&title(&all_names))
    );
    h.push_str(ERROR_TRAP);
    header(&mut h, input);
    // A report of NPB results (or studies) only has no sweep sections: empty
    // tables and charts without data would only say "nothing here" five times.
    let others = !npb.is_empty()
        || !studies.is_empty()
        || !matrices.is_empty()
        || !collectives.is_empty()
        || !hpl.is_empty();
    if !results.is_empty() || !others {
        let answer = transport_items(results, &names, &rows, &analyses);
        highlights(&mut h, &answer);
        summary_table(&mut h, &rows);
        super::warnings::warnings(&mut h, results, &names);
        charts_section(&mut h, &series)?;
        anomalies(&mut h, &series);
    }
    let colours = crate::report::chart::npb::Colours::new(results, npb);
    npb_sections(&mut h, npb, &npb_names, &colours)?;
    super::collective::collective_sections(&mut h, collectives)?;
    super::hpl::hpl_section(&mut h, hpl)?;
    study_sections(&mut h, studies)?;
    super::matrix::matrix_sections(&mut h, matrices);
    h.push_str("<section id=machines><h2>Machines and command lines</h2>\n");
    // Every machine once, whichever results ran on it, then each result.
    let mut book = Book::default();
    let sweeps_on = note_sweeps(&mut book, results, &names);
    let npb_on = note_npb(&mut book, npb, &npb_names);
    let matrices_on = note_matrices(&mut book, matrices);
    book.write(&mut h, results.len() + npb.len() + matrices.len());
    sweep_details(&mut h, results, &names, &sweeps_on);
    npb_machines(&mut h, npb, &npb_names, &npb_on);
    matrix_details(&mut h, matrices, &matrices_on);
    h.push_str("</section>\n");
    h.push_str(FOOT);
    Ok(h)
}

fn title(names: &[String]) -> String {
    match names {
        [] => "wulf report".into(),
        [one] => format!("wulf report: {one}"),
        _ => format!("wulf report: {} results", names.len()),
    }
}

fn header(h: &mut String, input: &ReportInput) {
    let ReportInput {
        sweeps: results,
        npb,
        studies,
        matrices,
        collectives,
        hpl,
    } = *input;
    let mut hosts: Vec<&str> = results
        .iter()
        .map(|r| r.host.hostname.as_str())
        .chain(npb.iter().map(|r| r.host.hostname.as_str()))
        .chain(collectives.iter().map(|r| r.host.hostname.as_str()))
        .chain(hpl.iter().map(|r| r.host.hostname.as_str()))
        .chain(studies.iter().map(|s| s.summary.host.hostname.as_str()))
        .chain(
            matrices
                .iter()
                .flat_map(|m| m.nodes.first().map(|n| n.name.as_str())),
        )
        .collect();
    hosts.dedup();
    let mut started: Vec<&str> = results
        .iter()
        .map(|r| r.started_at.as_str())
        .chain(npb.iter().map(|r| r.started_at.as_str()))
        .chain(collectives.iter().map(|r| r.started_at.as_str()))
        .chain(hpl.iter().map(|r| r.started_at.as_str()))
        .chain(studies.iter().map(|s| s.summary.started_at.as_str()))
        .chain(matrices.iter().map(|m| m.started_at.as_str()))
        .collect();
    started.sort();
    let when = match (started.first(), started.last()) {
        (Some(a), Some(b)) if a != b => format!("{a} to {b}"),
        (Some(a), _) => a.to_string(),
        _ => "-".into(),
    };
    let plural =
        |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    let what = match (results.len(), npb.len()) {
        (0, 0)
            if !hpl.is_empty()
                && collectives.is_empty()
                && studies.is_empty()
                && matrices.is_empty() =>
        {
            plural(hpl.len(), "Linpack run", "Linpack runs")
        }
        (0, 0) if !collectives.is_empty() && studies.is_empty() && matrices.is_empty() => {
            plural(collectives.len(), "collective result", "collective results")
        }
        (0, 0) if !matrices.is_empty() && studies.is_empty() => {
            plural(matrices.len(), "link matrix", "link matrices")
        }
        (0, 0) if !studies.is_empty() => plural(studies.len(), "study", "studies"),
        (n, 0) => plural(n, "result", "results"),
        (0, m) => plural(m, "NPB result", "NPB results"),
        (n, m) => format!(
            "{} and {}",
            plural(n, "sweep result", "sweep results"),
            plural(m, "NPB result", "NPB results")
        ),
    };
    let _ = write!(
        h,
        "<header><h1>wulf report</h1>\n<p class=sub>{} measured on {} ({}) &middot; drawn by wulf {}</p></header>\n",
        what,
        esc(&hosts.join(", ")),
        esc(&when),
        env!("CARGO_PKG_VERSION")
    );
}

fn summary_table(h: &mut String, rows: &[SummaryRow]) {
    let with_limit = rows.iter().any(|r| r.limit.is_some());
    h.push_str(
        "<section id=summary><h2>Summary</h2>\n<div class=scroll>\n<table class=summary>\n<thead><tr>",
    );
    let mut cols = vec![
        ("configuration", ""),
        ("latency (µs)", "median one-way time of the smallest message"),
        ("peak (Mbit/s)", "highest median throughput, 1 Mbit/s = 10^6 bit/s"),
        ("size at peak", "message size where the peak occurs"),
        ("n<sub>1/2</sub>", "smallest size that reaches half the peak throughput"),
        ("saturation point", "smallest size from which time grows linearly with size (latency share of at most 1/5 on its Hockney segment)"),
        ("CPU ns/B", "CPU time of both ends per byte moved, at the peak size"),
        ("noisy points", "points whose 95% interval did not get within the precision target in budget"),
    ];
    if with_limit {
        cols.push((
            "peak / limit",
            "measured peak as a share of the physical limit",
        ));
    }
    for (name, tip) in &cols {
        if tip.is_empty() {
            let _ = write!(h, "<th>{name}</th>");
        } else {
            let _ = write!(h, "<th title=\"{}\">{name}</th>", esc(tip));
        }
    }
    h.push_str("</tr></thead>\n<tbody>\n");
    for (i, r) in rows.iter().enumerate() {
        let _ = write!(
            h,
            "<tr><td><span class=swatch style=\"background:{}\"></span>{}{}</td>",
            color_hex(i),
            esc(&r.label),
            if !r.complete {
                " <span class=bad>incomplete</span>"
            } else if r.reference {
                " <span class=dim title=\"an in-process baseline: a limit of the machine, not a transport\">(limit)</span>"
            } else {
                ""
            }
        );
        let cells = [
            num_or_dash(r.latency_ns.map(|n| n / 1e3), 2),
            num_or_dash(r.peak_bits_per_s.map(|b| b / 1e6), 1),
            size_or_dash(r.peak_bytes),
            size_or_dash(r.n_half_bytes),
            r.saturation_bytes
                .map(format_bytes)
                .unwrap_or_else(|| "not reached".into()),
            num_or_dash(r.cpu_ns_per_byte, 3),
            format!("{} of {}", r.noisy_points, r.points),
        ];
        for c in cells {
            let _ = write!(h, "<td class=num>{}</td>", esc(&c));
        }
        if with_limit {
            let v = r
                .limit
                .as_ref()
                .and_then(|l| l.peak_fraction)
                .map(|f| format!("{:.1}%", 100.0 * f))
                .unwrap_or_else(|| "-".into());
            let _ = write!(h, "<td class=num>{v}</td>");
        }
        h.push_str("</tr>\n");
    }
    h.push_str("</tbody></table>\n</div>\n");
    h.push_str(
        "<p class=note>Figures from the medians of the kept trials; rates in SI units (1 Mbit/s = 10<sup>6</sup> bit/s). \
         \"not reached\": no saturation point was found in the sizes measured (whether larger sizes would show more, the answer says from the latency's share of the time at the largest). \
         Rules: see docs/methodology.md, \"Analysis rules\".</p>\n</section>\n",
    );
}

const HEAD: &str = r#"<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="wulf">
<style>
body{font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;color:#222;margin:0 auto;max-width:1300px;padding:0 20px 40px}
header{border-bottom:2px solid #1f77b4;margin-bottom:8px}
h1{margin:18px 0 2px;font-size:26px}
h2{margin:28px 0 10px;font-size:20px;border-bottom:1px solid #ddd;padding-bottom:3px}
h3{margin:0 0 4px;font-size:16px}
.sub{color:#555;margin:0 0 10px}
table{border-collapse:collapse;margin:6px 0;display:block;overflow-x:auto;max-width:100%}
.scroll{overflow-x:auto;max-width:100%}
.scroll table{display:table}
caption{text-align:left;padding:2px 0}
th,td{padding:4px 10px;border-bottom:1px solid #e3e3e3;text-align:left;vertical-align:top}
th{background:#f4f6f8;font-weight:600}
th[title]{cursor:help;text-decoration:underline dotted #999}
td.nw{white-space:nowrap}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
.swatch{display:inline-block;width:12px;height:12px;border-radius:2px;margin-right:6px;vertical-align:-1px}
.bad{color:#b00;font-weight:600}
.dim{color:#888}
.note{color:#555;font-size:13px;max-width:1100px}
.highlights{font-size:16px;margin:10px 0 0;padding-left:22px}
.highlights li{margin:2px 0}
p{overflow-wrap:anywhere}
.warn li{color:#8a4b00}
.toggles label{margin-right:14px;cursor:pointer;white-space:nowrap}
.grid{display:grid;grid-template-columns:repeat(auto-fit,minmax(560px,1fr));gap:18px}
.tables{display:flex;flex-wrap:wrap;gap:6px 28px;margin-top:12px}
.npb .grid{margin-top:14px}
.highlights li.w{color:#8a4b00}
figure{margin:0;padding:10px;border:1px solid #e3e3e3;border-radius:6px;background:#fff}
figure svg{display:block;max-width:100%;height:auto}
figure[data-scale=lin] .ylog,figure[data-scale=log] .ylin{display:none}
.scale{margin:0 0 4px;font-size:13px;color:#555}
.scale label{margin-right:12px;cursor:pointer}
figure.empty p{color:#666}
figcaption{color:#555;font-size:13px;margin-top:4px}
pre{background:#f7f7f7;padding:8px 10px;border-radius:4px;overflow-x:auto;font-size:13px}
pre.cmd{white-space:pre-wrap}
details{margin:8px 0}
summary{cursor:pointer}
#js-errors{color:#b00}
@media (max-width:900px){body{padding:0 10px 30px}th,td{padding:3px 6px}table.summary{font-size:13px}.grid{grid-template-columns:1fr}}
.warn details{margin:0}.warn summary{color:#8a4b00}.warn ul{margin:4px 0}
@media print{.toggles{display:none}figure{break-inside:avoid}}
</style>
"#;

/// First thing in the body: script errors become visible text (and so show
/// up in the browser test's dumped DOM).
const ERROR_TRAP: &str = r#"<pre id="js-errors" hidden></pre>
<script>addEventListener("error",function(e){var d=document.getElementById("js-errors");d.hidden=false;d.textContent+="script error: "+e.message+"\n";});</script>
"#;

/// Series toggles: a result's elements are found by its colour, which no
/// other result and no axis uses. Only within the sweep charts: the NPB
/// charts reuse the palette for their transports.
const FOOT: &str = r#"<footer><p class=note>Generated by wulf. Self-contained: no network access is needed to view this file.</p></footer>
<script>
document.querySelectorAll("input[data-color]").forEach(function(cb){
  cb.addEventListener("change",function(){
    var c=cb.getAttribute("data-color");
    document.querySelectorAll('#charts svg [stroke="'+c+'"], #charts svg [fill="'+c+'"]').forEach(function(el){
      el.style.visibility=cb.checked?"":"hidden";
    });
  });
});
document.querySelectorAll("input[name=tscale]").forEach(function(r){
  r.addEventListener("change",function(){
    document.getElementById("throughput").setAttribute("data-scale",r.value);
  });
});
document.body.setAttribute("data-ready","yes");
</script>
</body>
</html>
"#;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_without_points_still_make_a_page() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/unix-pingpong.json"
        );
        let full = crate::result::read_result(std::path::Path::new(path)).unwrap();
        for keep in [0, 1, 2] {
            let mut r = full.clone();
            r.points.truncate(keep);
            r.complete = false;
            r.incomplete_reason = Some("interrupted".into());
            r.summary = crate::result::Summary::from_points(&r.points);
            let mut b = r.clone();
            b.mode = crate::result::Mode::Bidir;
            let html = to_html(&ReportInput::of_sweeps(&[r, b])).unwrap();
            assert!(html.contains("incomplete run (interrupted)"));
            // Five charts, the throughput chart twice (linear and log),
            // and throughput per CPU time once there is a CPU figure.
            let charts = if keep == 0 { 6 } else { 7 };
            assert_eq!(html.matches("<svg").count(), charts, "{keep} points");
            assert!(html.contains("time per message (bidir: exchange)"));
        }
    }

    #[test]
    fn a_warm_cache_peak_is_said_to_be_warm_and_a_cold_one_leads() {
        let read = |name: &str| {
            let path = format!("{}/tests/fixtures/{name}.json", env!("CARGO_MANIFEST_DIR"));
            crate::result::read_result(std::path::Path::new(&path)).unwrap()
        };
        let (unix, tcp) = (read("unix-pingpong"), read("tcp-pingpong"));
        // Both fixtures resend one buffer within the 32 MiB cache: warm.
        let html = to_html(&ReportInput::of_sweeps(std::slice::from_ref(&unix))).unwrap();
        assert!(html.contains("Peak: <b>"), "{html}");
        assert!(
            html.contains("(warm cache: the same buffer resent"),
            "{html}"
        );
        // Rotated buffers: the cold result leads, the warm one is named.
        // tcp's warm peak (59 Gbit/s) is above unix's (rotated buffers).
        let mut cold = unix;
        cold.options.nocache = true;
        let html = to_html(&ReportInput::of_sweeps(&[tcp.clone(), cold])).unwrap();
        let line = html
            .lines()
            .find(|l| l.contains("Highest peak"))
            .expect("a highlight");
        assert!(line.contains("Highest peak: <b>unix"), "{line}");
        assert!(
            line.contains("with cold buffers (warm-cache peaks"),
            "{line}"
        );
        assert!(line.contains("59.01 Gbit/s: tcp"), "{line}");
        // A peer between the ends: no claim about caches.
        let mut remote = tcp;
        remote.options.peer = Some("198.18.0.2:5201".into());
        let html = to_html(&ReportInput::of_sweeps(&[remote])).unwrap();
        assert!(!html.contains("warm cache"), "{html}");
    }

    #[test]
    fn an_empty_list_still_makes_a_page() {
        let html = to_html(&ReportInput::default()).unwrap();
        assert!(html.starts_with("<!DOCTYPE html>"));
        assert!(html.ends_with("</html>\n"));
    }
}
