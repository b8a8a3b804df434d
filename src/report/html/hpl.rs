//! The Linpack part of the HTML report: one section for every `wulf hpl`
//! result given (a `wulf study linpack` directory, or single runs), with
//! the Gflop/s-against-nodes chart (a line per link kind), the grid of the
//! best passing rates and a row per run with its conditions. Every text
//! from the files is escaped.

use std::fmt::Write;

use anyhow::Result;

use super::details::esc;
use crate::report::chart::hpl::gflops_vs_nodes;
use crate::report::hpl::grid_rows;
use crate::result::hpl::{link_kind, HplResult};

/// The section, when there are HPL results.
pub(super) fn hpl_section(h: &mut String, results: &[HplResult]) -> Result<()> {
    if results.is_empty() {
        return Ok(());
    }
    let _ = write!(
        h,
        "<section id=linpack class=npb><h2>Linpack (HPL): Gflop/s by link and nodes</h2>\n\
         <p class=sub>the real HPL inside HPC Challenge, one MPI process per node; {} run{}; \
         a rate counts only when HPL's own residual check passed</p>\n",
        results.len(),
        if results.len() == 1 { "" } else { "s" }
    );
    if let Some(svg) = gflops_vs_nodes(results)? {
        let _ = write!(
            h,
            "<div class=grid><figure id=linpack-gflops><h3>HPL Gflop/s vs nodes</h3>\n{}\n\
             <figcaption>HPL's rate (its operation count 2/3 N&sup3; + 2 N&sup2; over its time), \
             the best passing run per link kind and node count; crosses: runs whose residual \
             check failed.</figcaption></figure></div>\n",
            svg.trim()
        );
    }
    let (nps, rows) = grid_rows(results);
    h.push_str("<table class=npb><thead><tr><th>link</th>");
    for np in &nps {
        let _ = write!(h, "<th>{np} node{}</th>", if *np == 1 { "" } else { "s" });
    }
    h.push_str("</tr></thead><tbody>\n");
    for (k, cells) in rows {
        let _ = write!(h, "<tr><td>{}</td>", esc(&k));
        for c in cells {
            let _ = write!(
                h,
                "<td class=num>{}</td>",
                c.map_or("-".into(), |g| format!("{g:.3}"))
            );
        }
        h.push_str("</tr>\n");
    }
    h.push_str("</tbody></table>\n");
    h.push_str(
        "<table class=npb><thead><tr><th>link</th><th>nodes</th><th>N</th><th>NB</th>\
         <th>P x Q</th><th>Gflop/s</th><th>time [s]</th><th>scaled residual</th>\
         <th>check</th><th>started</th></tr></thead><tbody>\n",
    );
    for r in results {
        let _ = writeln!(
            h,
            "<tr><td>{}</td><td class=num>{}</td><td class=num>{}</td><td class=num>{}</td>\
             <td class=num>{} x {}</td><td class=num>{:.3}</td><td class=num>{:.3}</td>\
             <td class=num>{:.4}</td><td>{}</td><td>{}</td></tr>",
            esc(&link_kind(r)),
            r.np,
            r.n,
            r.nb,
            r.p,
            r.q,
            r.gflops,
            r.time_s,
            r.scaled_residual,
            if r.passed {
                "PASSED"
            } else {
                "<span class=bad>FAILED</span>"
            },
            esc(&r.started_at)
        );
    }
    h.push_str("</tbody></table>\n</section>\n");
    Ok(())
}
