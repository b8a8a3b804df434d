//! The tables of an NPB result, as published studies print them (Farrell and Ong 2003's Tables
//! 7.1 to 7.3): one row per transport, one column per process count, for
//! total Mop/s, Mop/s per process and speedup, then the times and
//! verification of every run. Plain text for the terminal, and Markdown.

use std::fmt::Write;

use crate::result::{NpbResult, NpbRun};

/// A figure of a run for one table.
type Figure = fn(&NpbRun) -> Option<f64>;

/// The tables, for the terminal.
pub fn npb_tables(r: &NpbResult) -> String {
    render(r, false)
}

/// The same tables in Markdown, for pasting into tickets.
pub fn npb_markdown(r: &NpbResult) -> String {
    render(r, true)
}

/// The problem of the result's kernel and class in a few words (empty
/// for a kernel this wulf does not know).
pub fn problem(r: &NpbResult) -> String {
    r.kernel
        .parse::<crate::npb::Kernel>()
        .map(|k| k.problem(r.class))
        .unwrap_or_default()
}

fn render(r: &NpbResult, markdown: bool) -> String {
    let mut s = String::new();
    let grid = problem(r);
    let verified = if r.runs.iter().all(|x| x.outcomes.is_empty()) {
        "no run verified".to_string()
    } else {
        let n = r.repetitions;
        format!("best of {n} verified run{}", if n == 1 { "" } else { "s" })
    };
    let _ = writeln!(
        s,
        "{}NAS {} class {} ({grid}): {verified}{}",
        if markdown { "### " } else { "" },
        r.kernel.to_uppercase(),
        r.class,
        if r.complete { "" } else { " (INCOMPLETE)" }
    );
    if let Some(lab) = &r.lab {
        let _ = writeln!(s, "one process per node of {}", lab.describe());
    }
    if let Some(n) = &r.nodes {
        let nodes: Vec<String> = n
            .hosts
            .iter()
            .map(|h| format!("{} ({})", h.name, h.slots))
            .collect();
        let _ = writeln!(
            s,
            "ranks over {} nodes (slots), reached by {}: {}",
            n.hosts.len(),
            n.launch,
            nodes.join(", ")
        );
    }
    let tables: [(&str, Figure, usize); 4] = [
        ("total Mop/s", |x| x.best_mop_s, 1),
        ("Mop/s per process", |x| x.best_mop_s_per_process, 1),
        ("speedup against 1 process", |x| x.speedup, 2),
        ("median Mop/s", |x| x.median_mop_s, 1),
    ];
    // Bounanos and Fleury 2007's three rows under each kernel: what the kernel asks of
    // the transport, all ranks together, in the fastest repetition.
    let traffic: [(&str, Figure, usize); 3] = [
        ("communication MB/s", |x| x.communication().map(|c| c[0]), 1),
        ("messages/s", |x| x.communication().map(|c| c[1]), 0),
        ("mean message bytes", |x| x.communication().map(|c| c[2]), 0),
    ];
    let counted = r.runs.iter().any(|x| x.communication().is_some());
    let tables = tables
        .into_iter()
        .chain(traffic.into_iter().filter(|_| counted));
    for (title, figure, decimals) in tables {
        let _ = writeln!(s);
        table(&mut s, r, title, figure, decimals, markdown);
    }
    let _ = writeln!(s);
    runs_list(&mut s, r, markdown);
    if r.runs.iter().any(NpbRun::on_busy_machine) {
        let _ = writeln!(
            s,
            "* other work kept the machine busy during this run (see the warnings): not a quiet figure"
        );
    }
    for w in &r.warnings {
        let _ = writeln!(s, "{}warning: {w}", if markdown { "- " } else { "" });
    }
    s
}

/// `*` after a figure of a run made on a busy machine
/// ([`NpbRun::on_busy_machine`]).
fn busy_mark(run: &NpbRun) -> &'static str {
    if run.on_busy_machine() {
        "*"
    } else {
        ""
    }
}

/// Process counts in the order first run, and transports likewise.
fn axes(r: &NpbResult) -> (Vec<usize>, Vec<&str>) {
    let mut nps: Vec<usize> = Vec::new();
    let mut vias: Vec<&str> = Vec::new();
    for run in &r.runs {
        if !nps.contains(&run.nprocs) {
            nps.push(run.nprocs);
        }
        if !vias.contains(&run.via.as_str()) {
            vias.push(&run.via);
        }
    }
    nps.sort_unstable();
    (nps, vias)
}

fn table(s: &mut String, r: &NpbResult, title: &str, figure: Figure, decimals: usize, md: bool) {
    let (nps, vias) = axes(r);
    let width = vias
        .iter()
        .map(|v| v.len())
        .max()
        .unwrap_or(0)
        .max(title.len());
    let mut header = vec![format!("{title:<width$}")];
    header.extend(nps.iter().map(|n| format!("{:>9}", format!("np={n}"))));
    row(s, &header, md);
    if md {
        let mut rule = vec!["---".to_string()];
        rule.extend(nps.iter().map(|_| "---:".to_string()));
        row(s, &rule, md);
    }
    for via in vias {
        let mut cells = vec![format!("{via:<width$}")];
        for &np in &nps {
            let run = r.runs.iter().find(|x| x.via == via && x.nprocs == np);
            let cell = match run {
                None => "".to_string(),
                Some(x) if x.error.is_some() => "failed".to_string(),
                Some(x) => figure(x)
                    .map(|v| format!("{v:.decimals$}{}", busy_mark(x)))
                    .unwrap_or_else(|| "-".to_string()),
            };
            cells.push(format!("{cell:>9}"));
        }
        row(s, &cells, md);
    }
}

fn row(s: &mut String, cells: &[String], md: bool) {
    if md {
        let _ = writeln!(s, "| {} |", cells.join(" | "));
    } else {
        let _ = writeln!(s, "{}", cells.join("  ").trim_end());
    }
}

/// One line per run: times, CPU share, verification, or the error.
fn runs_list(s: &mut String, r: &NpbResult, md: bool) {
    let bullet = if md { "- " } else { "  " };
    let _ = writeln!(
        s,
        "{}",
        if md {
            "runs:"
        } else {
            "runs (best time, CPU of the timed section, verification):"
        }
    );
    for run in &r.runs {
        let label = format!("{} np={}", run.via, run.nprocs);
        match (
            &run.error,
            run.outcomes
                .iter()
                .min_by(|a, b| a.time_s.total_cmp(&b.time_s)),
        ) {
            (Some(e), _) => {
                let _ = writeln!(s, "{bullet}{label:<24} FAILED: {e}");
            }
            (None, Some(o)) => {
                let _ = writeln!(
                    s,
                    "{bullet}{label:<24} {:>9.4} s  cpu {:>5.0}%  grid {}x{}x{}  verified (rel. error {:.1e})",
                    o.time_s,
                    100.0 * o.cpu_time_s / o.time_s,
                    o.proc_grid[0],
                    o.proc_grid[1],
                    o.proc_grid[2],
                    o.relative_error
                );
            }
            (None, None) => {
                let _ = writeln!(s, "{bullet}{label:<24} no runs");
            }
        }
        if let Some(p) = &run.placement {
            let _ = writeln!(s, "{bullet}  ranks on nodes: {}", placement_line(p));
        }
    }
}

/// `node1 0-1, node2 2-3`: the ranks on each node, in rank order, and
/// where a rank's process saw another host name, that name.
fn placement_line(p: &[crate::result::RankPlacement]) -> String {
    let mut parts: Vec<(String, usize, usize)> = Vec::new();
    for x in p {
        match parts.last_mut() {
            Some((node, _, last)) if *node == x.node && *last + 1 == x.rank => *last = x.rank,
            _ => parts.push((x.node.clone(), x.rank, x.rank)),
        }
    }
    let mut line = parts
        .iter()
        .map(|(node, a, b)| match a == b {
            true => format!("{node} {a}"),
            false => format!("{node} {a}-{b}"),
        })
        .collect::<Vec<_>>()
        .join(", ");
    // A host name other than the node's: simulated nodes, or a node
    // known by another name (its full domain name).
    let mut seen: Vec<&str> = p
        .iter()
        .filter(|x| !x.hostname.is_empty() && x.hostname != x.node)
        .map(|x| x.hostname.as_str())
        .collect();
    seen.dedup();
    if !seen.is_empty() {
        line.push_str(&format!(
            " (the processes' host names: {})",
            seen.join(", ")
        ));
    }
    line
}

/// The process count of [`kernels_table`]: the largest that at least
/// half of the kernels ran. Not "every kernel": SP runs on square counts
/// only and EP on any, so `--np 1,2,3` would otherwise table np=1, where
/// nothing is communicated and transports cannot differ.
pub fn table_nprocs(results: &[NpbResult]) -> usize {
    let mut counts: Vec<usize> = results
        .iter()
        .flat_map(|r| r.runs.iter().map(|x| x.nprocs))
        .collect();
    counts.sort_unstable();
    counts.dedup();
    let ran = |np: usize| {
        results
            .iter()
            .filter(|r| r.runs.iter().any(|x| x.nprocs == np))
            .count()
    };
    counts
        .into_iter()
        .rev()
        .find(|&np| 2 * ran(np) >= results.len())
        .unwrap_or(1)
}

/// Bounanos and Fleury 2007's Table 1: one row per kernel, one column per transport, the
/// best Mop/s at the largest process count at least half the kernels ran
/// ([`table_nprocs`]; which shows at a glance which applications a
/// transport helps and which it does not). A kernel that did not run at
/// that count shows "n/a" and a line under the table says so.
pub fn kernels_table(results: &[NpbResult]) -> String {
    kernels_table_skipping(results, &[])
}

/// [`kernels_table`] with a row of "n/a" for each kernel that ran at no
/// count at all (`skipped`: its name and why, e.g. SP and BT given no
/// square count), and a line under the table saying why.
pub fn kernels_table_skipping(results: &[NpbResult], skipped: &[(String, String)]) -> String {
    let mut s = String::new();
    let np = table_nprocs(results);
    let mut vias: Vec<&str> = Vec::new();
    for run in results.iter().flat_map(|r| &r.runs) {
        if !vias.contains(&run.via.as_str()) {
            vias.push(&run.via);
        }
    }
    let class = results
        .first()
        .map(|r| r.class.to_string())
        .unwrap_or_default();
    let _ = writeln!(s, "total Mop/s by kernel, class {class}, np={np}:");
    let mut header = vec![format!("{:<6}", "kernel")];
    header.extend(vias.iter().map(|v| format!("{v:>12}")));
    row(&mut s, &header, false);
    for r in results {
        let mut cells = vec![format!("{:<6}", r.kernel.to_uppercase())];
        for via in &vias {
            let run = r.runs.iter().find(|x| x.via == *via && x.nprocs == np);
            let cell = match run {
                None if !r.runs.iter().any(|x| x.nprocs == np) => "n/a".to_string(),
                None => String::new(),
                Some(x) if x.error.is_some() => "failed".to_string(),
                Some(x) => x
                    .best_mop_s
                    .map(|m| format!("{m:.1}{}", busy_mark(x)))
                    .unwrap_or_else(|| "-".to_string()),
            };
            cells.push(format!("{cell:>12}"));
        }
        row(&mut s, &cells, false);
    }
    for (kernel, _) in skipped {
        let mut cells = vec![format!("{:<6}", kernel.to_uppercase())];
        cells.extend(vias.iter().map(|_| format!("{:>12}", "n/a")));
        row(&mut s, &cells, false);
    }
    let absent: Vec<String> = results
        .iter()
        .filter(|r| !r.runs.iter().any(|x| x.nprocs == np))
        .map(|r| r.kernel.to_uppercase())
        .collect();
    if !absent.is_empty() {
        let _ = writeln!(
            s,
            "n/a: {} did not run at np={np} (a count the kernel cannot use)",
            absent.join(", ")
        );
    }
    for (kernel, why) in skipped {
        let _ = writeln!(
            s,
            "n/a: {} ran at none of the counts given: {why}",
            kernel.to_uppercase()
        );
    }
    s
}
