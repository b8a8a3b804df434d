//! `wulf hpl` results as tables: HPL's Gflop/s by link kind and node count
//! (Innocente et al. 2000's comparison, `wulf study linpack`), and one line per run
//! with its conditions (N, NB, P x Q, time, HPL's residual check). Pure:
//! the study command, the markdown exporter and the HTML report share it.

use std::fmt::Write;

use crate::report::chart::hpl::{line, links, node_counts};
use crate::result::hpl::{link_kind, HplResult};

/// One row of the grid: the link kind and its cell per node count.
pub type GridRow = (String, Vec<Option<f64>>);

/// The Gflop/s grid: the node counts, and a row per link kind with a cell
/// per node count, each the best passing run (None where none passed or
/// none ran).
pub fn grid_rows(results: &[HplResult]) -> (Vec<usize>, Vec<GridRow>) {
    let nps = node_counts(results);
    let rows = links(results)
        .into_iter()
        .map(|k| {
            let pts = line(results, &k);
            let cells = nps
                .iter()
                .map(|np| pts.iter().find(|p| p.0 == *np).map(|p| p.1))
                .collect();
            (k, cells)
        })
        .collect();
    (nps, rows)
}

fn cell(v: Option<f64>) -> String {
    v.map_or("-".into(), |g| format!("{g:.3}"))
}

/// The grid as aligned text.
pub fn grid_text(results: &[HplResult]) -> String {
    let (nps, rows) = grid_rows(results);
    let mut out = String::from("HPL Gflop/s (best passing run) by link and nodes\n");
    let _ = write!(out, "{:<10}", "link");
    for np in &nps {
        let _ = write!(
            out,
            " {:>10}",
            format!("{np} node{}", if *np == 1 { "" } else { "s" })
        );
    }
    out.push('\n');
    for (k, cells) in rows {
        let _ = write!(out, "{k:<10}");
        for c in cells {
            let _ = write!(out, " {:>10}", cell(c));
        }
        out.push('\n');
    }
    out
}

/// One line per run: link, nodes, N, NB, grid, Gflop/s, time, residual.
pub fn runs_text(results: &[HplResult]) -> String {
    let mut out = format!(
        "{:<10} {:>5} {:>7} {:>5} {:>7} {:>10} {:>9} {:>10}  check\n",
        "link", "nodes", "N", "NB", "P x Q", "Gflop/s", "time s", "residual"
    );
    for r in results {
        let _ = writeln!(
            out,
            "{:<10} {:>5} {:>7} {:>5} {:>7} {:>10.3} {:>9.3} {:>10.4}  {}",
            link_kind(r),
            r.np,
            r.n,
            r.nb,
            format!("{} x {}", r.p, r.q),
            r.gflops,
            r.time_s,
            r.scaled_residual,
            if r.passed { "PASSED" } else { "FAILED" }
        );
    }
    out
}

/// Both tables as markdown.
pub fn markdown(results: &[HplResult]) -> String {
    let (nps, rows) = grid_rows(results);
    let mut out = String::from("## Linpack (HPL)\n\nGflop/s, best passing run\n\n| link |");
    for np in &nps {
        let _ = write!(out, " {np} node{} |", if *np == 1 { "" } else { "s" });
    }
    out.push_str("\n|---|");
    out.push_str(&"---:|".repeat(nps.len()));
    out.push('\n');
    for (k, cells) in rows {
        let _ = write!(out, "| {} |", k.replace('|', "\\|"));
        for c in cells {
            let _ = write!(out, " {} |", cell(c));
        }
        out.push('\n');
    }
    let _ = write!(out, "\n```\n{}```\n", runs_text(results));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(link: Option<&str>, np: usize, gflops: f64, passed: bool) -> HplResult {
        let lab = link.map(|l| crate::result::LabPlacement {
            name: "t1".into(),
            client_node: "node1".into(),
            server_node: None,
            links: vec![crate::result::LabLink {
                node: "node1".into(),
                link: l.into(),
                rate_bits_per_s: 100_000_000,
                mtu_bytes: 1500,
                shaper: "htb".into(),
                burst_bytes: 1514,
                free_burst_bytes: 3028,
            }],
            medium: None,
        });
        let (p, q) = crate::result::hpl::grid(np);
        HplResult {
            kind: "hpl".into(),
            schema_version: 1,
            tool_version: "0".into(),
            command_line: vec![],
            started_at: "2026-11-27T12:00:00Z".into(),
            wall_s: 1.0,
            host: crate::sys::Host::probe(),
            np,
            n: 1000,
            nb: 80,
            p,
            q,
            n_from: "given".into(),
            gflops,
            time_s: 0.5,
            scaled_residual: 0.01,
            passed,
            launcher_command: vec![],
            lab,
            hpcc: Default::default(),
        }
    }

    #[test]
    fn the_grid_keeps_the_best_passing_run_per_link_and_node_count() {
        let rs = vec![
            run(Some("fe"), 1, 2.0, true),
            run(Some("fe"), 2, 1.1, true),
            run(Some("fe"), 2, 1.3, true),
            run(Some("ge"), 2, 9.0, false),
            run(Some("ge"), 4, 3.5, true),
            run(None, 1, 2.2, true),
        ];
        let (nps, rows) = grid_rows(&rs);
        assert_eq!(nps, vec![1, 2, 4]);
        assert_eq!(rows[0], ("fe".into(), vec![Some(2.0), Some(1.3), None]));
        // A failed residual check is no figure.
        assert_eq!(rows[1], ("ge".into(), vec![None, None, Some(3.5)]));
        assert_eq!(rows[2].0, "local");
        let text = grid_text(&rs);
        assert!(text.contains("4 nodes"), "{text}");
        assert!(runs_text(&rs).contains("FAILED"));
        let md = markdown(&rs);
        assert!(md.contains("| fe | 2.000 | 1.300 | - |"), "{md}");
    }
}
