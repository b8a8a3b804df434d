//! The summary of `wulf run` across nodes: the nodes and what differs
//! between them, the tcp matrix in brief and each MPI's in a line, the
//! pair sweeps, multi-pair, allreduce and NAS MG. A pure function of the
//! results to text.

use crate::result::collective::CollectiveResult;
use crate::result::matrix::MatrixFigures;
use crate::result::matrix::Pattern;
use crate::result::{NpbResult, SweepResult};
use crate::units::{format_bits_per_s, format_bytes, format_ns};

/// The summary: nodes and what differs, the matrix in brief, the pair
/// sweeps, multi-pair and MG.
pub fn summary(
    matrices: &[MatrixFigures],
    sweeps: &[SweepResult],
    sweep_pairs: &[String],
    collectives: &[CollectiveResult],
    npb: &[NpbResult],
) -> String {
    use std::fmt::Write;
    let mut s = String::from("\nwulf run across nodes: summary\n");
    let is_pairs = |m: &&MatrixFigures| m.pattern == Pattern::Pairs;
    // The tcp matrix in full; the MPIs' in a line each.
    let pairs = matrices
        .iter()
        .filter(is_pairs)
        .find(|m| m.via == "tcp")
        .or_else(|| matrices.iter().find(is_pairs));
    if let Some(m) = pairs {
        let nodes: Vec<&str> = m.nodes.iter().map(|n| n.name.as_str()).collect();
        let _ = writeln!(s, "  nodes ({}): {}", m.launch, nodes.join(", "));
        let a = &m.analysis;
        if a.fingerprint_differences.is_empty() {
            let _ = writeln!(s, "  fingerprints: alike");
        }
        for d in &a.fingerprint_differences {
            let values: Vec<String> = d
                .values
                .iter()
                .map(|v| {
                    let on: Vec<&str> = v.nodes.iter().map(|&i| nodes[i]).collect();
                    format!("{} on {}", v.value, on.join(","))
                })
                .collect();
            let _ = writeln!(
                s,
                "  fingerprints differ: {}: {}",
                d.field,
                values.join("; ")
            );
        }
        if let (Some(l), Some(b)) = (&a.latency, &a.bandwidth) {
            let _ = writeln!(
                s,
                "  matrix: latency median {} (MAD {}), bandwidth median {} (MAD {}), {} cells{}",
                format_ns(l.median),
                format_ns(l.mad),
                format_bits_per_s(b.median),
                format_bits_per_s(b.mad),
                m.figures.len(),
                if m.complete { "" } else { ", INCOMPLETE" }
            );
        }
        for n in &a.slow_nodes {
            let _ = writeln!(s, "  slow node: {} ({})", nodes[n.node], n.metric);
        }
        for c in &a.outlier_cells {
            if !c.explained_by_node {
                let _ = writeln!(
                    s,
                    "  slow link: {} -> {} ({})",
                    nodes[c.from], nodes[c.to], c.metric
                );
            }
        }
    }
    for m in matrices
        .iter()
        .filter(is_pairs)
        .filter(|m| pairs.is_none_or(|p| !std::ptr::eq(*m, p)))
    {
        let (l, b) = (&m.analysis.latency, &m.analysis.bandwidth);
        let _ = writeln!(
            s,
            "  matrix over {}: latency median {}, bandwidth median {}, {} cells{}{}",
            m.via,
            l.map_or("-".into(), |l| format_ns(l.median)),
            b.map_or("-".into(), |b| format_bits_per_s(b.median)),
            m.figures.len(),
            if m.analysis.slow_nodes.is_empty() {
                String::new()
            } else {
                format!(", {} slow node(s)", m.analysis.slow_nodes.len())
            },
            if m.complete { "" } else { ", INCOMPLETE" }
        );
    }
    for (r, pair) in sweeps.iter().zip(sweep_pairs) {
        let a = crate::analysis::Analysis::of(r);
        let _ = writeln!(
            s,
            "  tcp sweep, {pair}: latency {}, peak {}",
            a.latency_ns.map(format_ns).unwrap_or_else(|| "-".into()),
            a.peak_bits_per_s
                .map(format_bits_per_s)
                .unwrap_or_else(|| "-".into()),
        );
    }
    for m in matrices.iter().filter(|m| m.pattern != Pattern::Pairs) {
        for st in &m.analysis.steps {
            let rate = st.rate_messages_per_s.map_or(String::new(), |r| {
                format!(", {} messages {r:.0}/s", format_bytes(m.latency_bytes))
            });
            let _ = writeln!(
                s,
                "  multi-pair: {} pairs, aggregate {}, slowest pair {}{rate}",
                st.pairs,
                format_bits_per_s(st.aggregate_bits_per_s),
                format_bits_per_s(st.min_bits_per_s)
            );
        }
    }
    for r in collectives {
        for run in &r.runs {
            let figures = match &run.error {
                Some(e) => format!("FAILED: {e}"),
                None => run
                    .points
                    .iter()
                    .map(|p| format!("{} {}", format_bytes(p.bytes), format_ns(p.median_ns)))
                    .collect::<Vec<_>>()
                    .join(", "),
            };
            let _ = writeln!(
                s,
                "  {} over {} np={}: {figures}",
                r.collective, run.via, r.nprocs
            );
        }
    }
    for r in npb {
        for run in &r.runs {
            let figure = match (&run.error, run.best_mop_s) {
                (Some(e), _) => format!("FAILED: {e}"),
                (None, Some(m)) => format!("{m:.1} Mop/s"),
                _ => "-".into(),
            };
            let _ = writeln!(
                s,
                "  NAS {} class {} {} np={}: {figure}",
                r.kernel.to_uppercase(),
                r.class,
                run.via,
                run.nprocs
            );
        }
    }
    s
}
