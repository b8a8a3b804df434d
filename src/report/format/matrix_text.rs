//! The terminal view of a matrix: both matrices (or the worst cells when
//! there are too many nodes to print), the node table and the findings.
//! A pure function from the result and its cells' figures to text (the
//! figures apart from the result: while measuring, the cells themselves
//! are on disk, see [`crate::cluster::cells`]).

use std::fmt::Write;

use crate::result::matrix::Pattern;
use crate::result::matrix::{intra_node, CellFigures, HostBound, LossyLink, MatrixResult};
use crate::units::format_bytes;

/// Most nodes whose full matrices are printed.
const FULL_MATRIX_NODES: usize = 12;
/// Worst cells listed when the matrices are not printed in full.
const WORST_CELLS: usize = 10;

/// The matrix result as text for a terminal; `cells` are the figures of
/// its cells ([`crate::result::matrix::figures_of`] of `r.cells` for a
/// result read from a file).
pub fn to_text(r: &MatrixResult, cells: &[CellFigures]) -> String {
    let mut s = String::new();
    let n = r.nodes.len();
    let how = match r.pattern {
        Pattern::Pairs => format!(
            "{} rounds, {}",
            r.rounds,
            if r.serial {
                "one pair at a time"
            } else {
                "pairs of a round at once"
            }
        ),
        p => format!("{} steps of the {} pattern", r.rounds, pattern_name(p)),
    };
    let _ = writeln!(
        s,
        "wulf matrix: {n} nodes over {} ({}), {how}; {:.1} s ({:.1} s measuring)",
        r.via, r.launch, r.wall_s, r.rounds_s
    );
    let name = |i: usize| r.nodes[i].name.as_str();
    if !r.analysis.steps.is_empty() {
        steps_table(&mut s, r);
    }
    if r.pattern == Pattern::Multipair {
        // Its cells repeat the same pairs: the steps say it all.
    } else if n <= FULL_MATRIX_NODES {
        let mut lat = vec![vec![None; n]; n];
        let mut bw = vec![vec![None; n]; n];
        let mut cut = vec![vec![false; n]; n];
        // The rounds' cells: the analysis judged them; re-measures confirm.
        for c in cells
            .iter()
            .filter(|c| c.from < n && c.to < n && !c.is_remeasure())
        {
            lat[c.from][c.to] = c.latency_ns();
            bw[c.from][c.to] = c.bits_per_s();
            cut[c.from][c.to] = c.cut();
        }
        let title = format!(
            "latency, {} ping-pong, one-way us (row: measuring node)",
            format_bytes(r.latency_bytes)
        );
        table(&mut s, &title, r, (&lat, &cut), |v| {
            format!("{:.1}", v / 1e3)
        });
        let title = format!(
            "bandwidth, {} stream, Mbit/s (row: sender)",
            format_bytes(r.bandwidth_bytes)
        );
        table(&mut s, &title, r, (&bw, &cut), |v| {
            format!("{:.1}", v / 1e6)
        });
        marks_legend(&mut s, r, &cut);
        send_receive_table(&mut s, r);
    } else {
        let mut worst: Vec<(usize, usize, f64)> = cells
            .iter()
            .filter_map(|c| Some((c.from, c.to, c.bits_per_s()?)))
            .collect();
        // The few lowest of up to a million cells: select, then sort those.
        if worst.len() > WORST_CELLS {
            worst.select_nth_unstable_by(WORST_CELLS, |a, b| a.2.total_cmp(&b.2));
            worst.truncate(WORST_CELLS);
        }
        worst.sort_by(|a, b| a.2.total_cmp(&b.2));
        let _ = writeln!(s, "\nlowest bandwidth cells:");
        for (a, b, v) in worst.iter().take(WORST_CELLS) {
            let _ = writeln!(s, "  {} -> {}: {:.1} Mbit/s", name(*a), name(*b), v / 1e6);
        }
    }
    let a = &r.analysis;
    if let (Some(l), Some(b)) = (&a.latency, &a.bandwidth) {
        let _ = writeln!(
            s,
            "\nall cells: latency median {:.1} us (MAD {:.1}), bandwidth median {:.1} Mbit/s (MAD {:.1})",
            l.median / 1e3,
            l.mad / 1e3,
            b.median / 1e6,
            b.mad / 1e6
        );
    }
    let mut findings: Vec<String> = a
        .lossy_links
        .iter()
        .map(|l| lossy_link_line(l, &name))
        .collect();
    if let Some(h) = &a.host_bound {
        findings.push(host_bound_line(h));
    }
    for sn in &a.slow_nodes {
        findings.push(format!(
            "slow node: {} ({} {} against {} between the other nodes; {:.0}% of its cells){}",
            name(sn.node),
            sn.metric,
            show(&sn.metric, sn.value),
            show(&sn.metric, sn.median),
            100.0 * sn.share_outlying,
            sn.cause
                .as_deref()
                .map(|c| format!("; cause: {c}"))
                .unwrap_or_default()
        ));
    }
    for c in a.outlier_cells.iter().filter(|c| !c.explained_by_node) {
        let lossy = a
            .lossy_links
            .iter()
            .any(|l| (l.a, l.b) == (c.from.min(c.to), c.from.max(c.to)));
        findings.push(format!(
            "slow link: {} -> {} {} {} (median {}){}",
            name(c.from),
            name(c.to),
            c.metric,
            show(&c.metric, c.value),
            show(&c.metric, c.median),
            if lossy { "; cause: its loss" } else { "" }
        ));
    }
    for p in &a.asymmetric_pairs {
        findings.push(format!(
            "asymmetric: {} <-> {} {} {} one way, {} the other",
            name(p.a),
            name(p.b),
            p.metric,
            show(&p.metric, p.a_to_b),
            show(&p.metric, p.b_to_a)
        ));
    }
    for d in &a.fingerprint_differences {
        let values: Vec<String> = d
            .values
            .iter()
            .map(|v| {
                let who: Vec<&str> = v.nodes.iter().map(|&i| name(i)).collect();
                format!("{} on {}", v.value, who.join(","))
            })
            .collect();
        findings.push(format!(
            "fingerprints differ: {}: {}",
            d.field,
            values.join("; ")
        ));
    }
    for node in r.nodes.iter().filter(|x| x.error.is_some()) {
        findings.push(format!(
            "missing: {}: {}",
            node.name,
            node.error.as_deref().unwrap_or("")
        ));
    }
    if a.unconfirmed > 0 {
        findings.push(format!(
            "not named: {} findings of the rounds that their cells' re-measures alone did not confirm",
            a.unconfirmed
        ));
    }
    let cut = cells.iter().filter(|c| c.cut()).count();
    if cut > 0 {
        findings.push(format!(
            "{cut} cells cut at their deadline (kept: the trials measured by then)"
        ));
    }
    let failed = cells.iter().filter(|c| c.error.is_some()).count();
    if failed > 0 {
        findings.push(format!(
            "{failed} cells failed (see the result's cells[].error)"
        ));
    }
    if findings.is_empty() {
        let _ = writeln!(
            s,
            "no lossy link, slow node, slow link, asymmetry or fingerprint difference found"
        );
    } else {
        let _ = writeln!(s);
        for f in findings {
            let _ = writeln!(s, "{f}");
        }
    }
    // What the run could not keep (the budget's deadline, steps cut short,
    // re-measures skipped): said on screen as in the result.
    for w in &r.warnings {
        let _ = writeln!(s, "warning: {w}");
    }
    s
}

/// The host-bound verdict as one line (the terminal's and the HTML's
/// findings say it in the same words): the rounds reached only part of
/// their links while the hosts' CPUs were busy, and what the nodes were
/// judged from instead.
pub fn host_bound_line(h: &HostBound) -> String {
    let judged = if h.alone_cells > 0 {
        let alone = h.alone_link_share.unwrap_or(1.0);
        format!(
            "the nodes are judged from {} cells measured alone{}",
            h.alone_cells,
            if alone < crate::analysis::matrix_host::HOST_BOUND_LINK_SHARE {
                format!(
                    ", which reach {alone:.2} of their links: the host limits even one pair, \
                     and a link slower by less than that is out of sight"
                )
            } else {
                String::new()
            }
        )
    } else {
        "no cell could be measured alone, so no node is judged".to_string()
    };
    format!(
        "host-bound: cells reach {:.2} of their links' goodput while the hosts' CPUs are {:.0}% busy: \
         the hosts limit this matrix; {judged}",
        h.link_share,
        100.0 * h.cpu_busy_share,
    )
}

/// A lossy link as one line: the cause named with its figure
/// (`lossy link: node3 <-> node6: 2.1% of segments lost ...`).
pub fn lossy_link_line<'a>(l: &LossyLink, name: &dyn Fn(usize) -> &'a str) -> String {
    let drops = if l.interface_drops > 0 {
        format!(", {} interface drops or errors", l.interface_drops)
    } else {
        String::new()
    };
    let spurious = if l.spurious_segs > 0 {
        format!(", {} more retransmitted that had arrived", l.spurious_segs)
    } else {
        String::new()
    };
    format!(
        "lossy link: {} <-> {}: {:.1}% of segments lost ({} of {}{spurious}{drops}; \
         the other links of both nodes at most {:.2}%)",
        name(l.a),
        name(l.b),
        100.0 * l.retrans_share,
        l.retrans_segs.saturating_sub(l.spurious_segs),
        l.out_segs,
        100.0 * l.others_share
    )
}

/// The pattern's name as on the command line.
pub fn pattern_name(p: Pattern) -> &'static str {
    match p {
        Pattern::Pairs => "pairs",
        Pattern::Shift => "shift",
        Pattern::Bisection => "bisection",
        Pattern::Multipair => "multipair",
    }
}

fn steps_table(s: &mut String, r: &MatrixResult) {
    let steps = &r.analysis.steps;
    // Columns only for what was measured: the small-message stream
    // (multipair), the pairs alone (shift, bisection).
    let rate = steps.iter().any(|st| st.rate_messages_per_s.is_some());
    let alone = steps.iter().any(|st| st.alone_median_bits_per_s.is_some());
    let _ = write!(
        s,
        "\n{:>5} {:>6} {:>16} {:>14} {:>16} {:>18}",
        "step", "pairs", "aggregate Mbit/s", "slowest Mbit/s", "median Mbit/s", "ping-pongs/s"
    );
    if rate {
        let small = format!("{} msgs/s", format_bytes(r.latency_bytes));
        let large = format!("{} msgs/s", format_bytes(r.bandwidth_bytes));
        let _ = write!(s, " {small:>16} {large:>14}");
    }
    if alone {
        let _ = write!(s, " {:>14}", "alone Mbit/s");
    }
    let _ = writeln!(s);
    for st in steps {
        let _ = write!(
            s,
            "{:>5} {:>6} {:>16.1} {:>14.1} {:>16.1} {:>18.0}",
            st.step + 1,
            st.pairs,
            st.aggregate_bits_per_s / 1e6,
            st.min_bits_per_s / 1e6,
            st.median_bits_per_s / 1e6,
            st.pingpong_rate_per_s
        );
        if rate {
            let large = st.aggregate_bits_per_s / 8.0 / r.bandwidth_bytes.max(1) as f64;
            let _ = write!(
                s,
                " {:>16} {large:>14.0}",
                opt(st.rate_messages_per_s, 1.0, 0)
            );
        }
        if alone {
            let _ = write!(s, " {:>14}", opt(st.alone_median_bits_per_s, 1e6, 1));
        }
        let _ = writeln!(s);
    }
    contention_table(s, r);
}

/// Each node's bandwidth as a sender under the pattern and alone.
fn contention_table(s: &mut String, r: &MatrixResult) {
    let rows = &r.analysis.contention;
    if rows.is_empty() {
        return;
    }
    let width = name_width(r, 4);
    let _ = writeln!(
        s,
        "\nsending under the pattern against the same pairs alone (medians):\n{:>width$} {:>18} {:>13} {:>6}",
        "node", "under load Mbit/s", "alone Mbit/s", "kept"
    );
    for c in rows {
        let _ = writeln!(
            s,
            "{:>width$} {:>18.1} {:>13.1} {:>5.0}%",
            r.nodes.get(c.node).map_or("?", |x| x.name.as_str()),
            c.loaded_bits_per_s / 1e6,
            c.alone_bits_per_s / 1e6,
            100.0 * c.kept
        );
    }
}

/// Width of a column of node names, at least `least`.
fn name_width(r: &MatrixResult, least: usize) -> usize {
    r.nodes
        .iter()
        .map(|x| x.name.len())
        .max()
        .unwrap_or(least)
        .max(least)
}

/// `v / scale` with `digits` decimals, or `-`.
fn opt(v: Option<f64>, scale: f64, digits: usize) -> String {
    v.map_or_else(|| "-".to_string(), |v| format!("{:.digits$}", v / scale))
}

fn show(metric: &str, v: f64) -> String {
    if metric == "latency" {
        format!("{:.1} us", v / 1e3)
    } else {
        format!("{:.1} Mbit/s", v / 1e6)
    }
}

/// What the marks after a cell's figure mean, when a table has any.
fn marks_legend(s: &mut String, r: &MatrixResult, cut: &[Vec<bool>]) {
    let n = r.nodes.len();
    let intra = (0..n).any(|i| (0..n).any(|j| i != j && intra_node(&r.nodes, i, j)));
    if intra {
        let _ = writeln!(
            s,
            "* intra-node: two processes of one host (--ppn); no link, no finding"
        );
    }
    if cut.iter().flatten().any(|&c| c) {
        let _ = writeln!(
            s,
            "~ cut at its deadline: the trials measured by then (partial)"
        );
    }
}

/// mpiGraph's send and receive views: per process, the median, lowest
/// and highest bandwidth of the inter-node cells it sent and received.
fn send_receive_table(s: &mut String, r: &MatrixResult) {
    let rows = &r.analysis.node_summary;
    if rows
        .iter()
        .all(|x| x.sent_bits_per_s.is_none() && x.received_bits_per_s.is_none())
    {
        return;
    }
    let width = name_width(r, 8);
    let _ = writeln!(
        s,
        "\nbandwidth per process, Mbit/s (median of its inter-node cells)\n{:>width$} {:>10} {:>10}",
        "", "sent", "received"
    );
    let show = |v: Option<f64>| v.map_or("?".to_string(), |v| format!("{:.1}", v / 1e6));
    for x in rows.iter().filter(|x| x.node < r.nodes.len()) {
        let _ = writeln!(
            s,
            "{:>width$} {:>10} {:>10}",
            r.nodes[x.node].name,
            show(x.sent_bits_per_s),
            show(x.received_bits_per_s)
        );
    }
}

fn table(
    s: &mut String,
    title: &str,
    r: &MatrixResult,
    (values, cut): (&[Vec<Option<f64>>], &[Vec<bool>]),
    fmt: impl Fn(f64) -> String,
) {
    let width = name_width(r, 8);
    let _ = writeln!(s, "\n{title}");
    let _ = write!(s, "{:>width$}", "");
    for node in &r.nodes {
        let _ = write!(s, " {:>width$}", node.name);
    }
    let _ = writeln!(s);
    for (i, row) in values.iter().enumerate() {
        let _ = write!(s, "{:>width$}", r.nodes[i].name);
        for (j, v) in row.iter().enumerate() {
            let mut cell = match v {
                _ if i == j => "-".to_string(),
                Some(v) => fmt(*v),
                None => "?".to_string(),
            };
            if i != j && intra_node(&r.nodes, i, j) {
                cell.push('*');
            }
            if cut[i][j] {
                cell.push('~');
            }
            let _ = write!(s, " {cell:>width$}");
        }
        let _ = writeln!(s);
    }
}
