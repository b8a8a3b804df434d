//! The NPB part of the HTML report: for each `wulf npb` result (one kernel
//! and class), a section with the Mop/s and speedup charts, the tables of
//! Farrell and Ong 2003 (total Mop/s, Mop/s per process, speedup, parallel efficiency;
//! one row per transport, one column per process count) and every run's
//! time and verification; and, under "Machines and command lines", its
//! machine and command line.

use std::fmt::Write;

use anyhow::Result;

use super::details::{esc, shell_line};
use super::machines::{machine_label, run_lines, Book};
use crate::report::chart::npb::{
    has_failures, mops_vs_processes, process_counts, speedup_vs_processes, transports, Colours,
};
use crate::report::chart::sweep::color_hex;
use crate::result::{NpbResult, NpbRun};

/// A figure of a run for one table.
type Figure = fn(&NpbRun) -> Option<f64>;

/// The heading of a result: `NAS MG class S`.
pub fn npb_label(r: &NpbResult) -> String {
    format!("NAS {} class {}", r.kernel.to_uppercase(), r.class)
}

/// The labels of several results, `#1`, `#2` added where two share kernel
/// and class (two invocations of the same benchmark, e.g. before and after
/// a tuning).
pub fn npb_labels(results: &[NpbResult]) -> Vec<String> {
    let base: Vec<String> = results.iter().map(npb_label).collect();
    base.iter()
        .map(|b| (b, base.iter().filter(|o| *o == b).count()))
        .enumerate()
        .map(|(i, (b, n))| {
            if n > 1 {
                let k = base[..=i].iter().filter(|o| *o == b).count();
                format!("{b} #{k}")
            } else {
                b.clone()
            }
        })
        .collect()
}

/// `32^3` as `32<sup>3</sup>`: every caret followed by digits.
fn superscripts(text: &str) -> String {
    let mut out = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '^' && chars.peek().is_some_and(char::is_ascii_digit) {
            out.push_str("<sup>");
            while let Some(d) = chars.next_if(char::is_ascii_digit) {
                out.push(d);
            }
            out.push_str("</sup>");
        } else {
            out.push(c);
        }
    }
    out
}

/// One section per NPB result, each transport in its colour of the whole
/// report (`colours`).
pub(super) fn npb_sections(
    h: &mut String,
    results: &[NpbResult],
    names: &[String],
    colours: &Colours,
) -> Result<()> {
    for (i, (r, name)) in results.iter().zip(names).enumerate() {
        section(h, r, name, &format!("npb{}", i + 1), colours)?;
    }
    Ok(())
}

fn section(h: &mut String, r: &NpbResult, name: &str, id: &str, colours: &Colours) -> Result<()> {
    let grid = match crate::report::format::npb_table::problem(r) {
        p if p.is_empty() => p,
        p => format!("{}; ", superscripts(&esc(&p))),
    };
    let _ = write!(
        h,
        "<section id={id} class=npb><h2>{}{}</h2>\n<p class=sub>{grid}best of {} verified repetition{} per run; \
         transports {}; processes {}</p>\n",
        esc(name),
        if r.complete {
            ""
        } else {
            " <span class=bad>incomplete</span>"
        },
        r.repetitions,
        if r.repetitions == 1 { "" } else { "s" },
        esc(&transports(r).join(", ")),
        process_counts(r)
            .iter()
            .map(|n| n.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    );
    highlights(h, r);

    let failed = if has_failures(r) {
        " Crosses on the bottom axis: failed runs (listed below)."
    } else {
        ""
    };
    h.push_str("<div class=grid>\n");
    let _ = write!(
        h,
        "<figure id={id}-mops><h3>Total Mop/s vs processes</h3>\n{}\n<figcaption>Rate of the best \
         verified repetition of each run, all processes together (NPB's Mop/s: the kernel's \
         operation count over the timed section), one line per transport.{failed}</figcaption></figure>\n",
        mops_vs_processes(r, colours)?.trim()
    );
    match speedup_vs_processes(r, colours)? {
        Some(svg) => {
            let _ = write!(
                h,
                "<figure id={id}-speedup><h3>Speedup vs processes</h3>\n{}\n<figcaption>Best time of \
                 the one-process run over the best time of each run, both axes logarithmic; dashed: \
                 the ideal, speedup = processes. Below 1, the parallel run is slower than one \
                 process.{failed}</figcaption></figure>\n",
                svg.trim()
            );
        }
        None => {
            let _ = writeln!(
                h,
                "<figure id={id}-speedup class=empty><h3>Speedup vs processes</h3><p>No speedup: \
                 the result has no successful one-process run to compare with.</p></figure>"
            );
        }
    }
    h.push_str("</div>\n<div class=tables>\n");
    let tables: [(&str, &str, Figure, usize); 4] = [
        ("total Mop/s", "best repetition", |x| x.best_mop_s, 1),
        (
            "Mop/s per process",
            "total over the process count",
            |x| x.best_mop_s_per_process,
            1,
        ),
        ("speedup", "against one process", |x| x.speedup, 2),
        (
            "parallel efficiency",
            "speedup / processes; 1 is perfect",
            |x| x.parallel_efficiency,
            2,
        ),
    ];
    for (title, tip, figure, decimals) in tables {
        table(h, r, (title, tip), figure, decimals, colours);
    }
    h.push_str("</div>\n");
    runs_list(h, r);
    h.push_str("</section>\n");
    Ok(())
}

/// The best run in one sentence, as the sweep part's highlights do, then
/// the failures and the result's warnings, in one list.
fn highlights(h: &mut String, r: &NpbResult) {
    let best = r
        .runs
        .iter()
        .filter(|x| x.error.is_none())
        .filter_map(|x| Some((x, x.best_mop_s?)))
        .max_by(|a, b| a.1.total_cmp(&b.1));
    let failed = r.runs.iter().filter(|x| x.error.is_some()).count();
    let mut items = Vec::new();
    if let Some((run, mops)) = best {
        let speedup = run
            .speedup
            .map(|s| format!(", speedup {s:.2}"))
            .unwrap_or_default();
        items.push(format!(
            "<li>Highest rate: <b>{}</b> with {} process{}, <b>{mops:.1} Mop/s</b>{speedup}{}.</li>",
            esc(&run.via),
            run.nprocs,
            if run.nprocs == 1 { "" } else { "es" },
            super::npb_verdict::lead(r, run)
        ));
    }
    if failed > 0 {
        items.push(format!(
            "<li><span class=bad>{failed} of {} runs failed</span> (see the list of runs).</li>",
            r.runs.len()
        ));
    }
    if !r.complete {
        items.push(format!(
            "<li class=w>incomplete{} &mdash; the runs present are verified, others are missing</li>",
            r.incomplete_reason
                .as_deref()
                .map(|w| format!(" ({})", esc(w)))
                .unwrap_or_default()
        ));
    }
    let (about_runs, others) = run_warnings(r);
    items.extend(
        others
            .iter()
            .map(|w| format!("<li class=w>{}</li>", esc(w))),
    );
    if !items.is_empty() {
        let _ = write!(h, "<ul class=highlights>\n{}\n</ul>\n", items.join("\n"));
    }
    warning_groups(h, &about_runs);
}

/// The result's warnings, split: those about one run ("KERNEL VIA np=N:
/// ...", as (run, the rest)) and the others, whole.
fn run_warnings(r: &NpbResult) -> (Vec<(String, String)>, Vec<String>) {
    let runs: Vec<String> = r
        .runs
        .iter()
        .map(|x| format!("{} {} np={}", r.kernel, x.via, x.nprocs))
        .collect();
    let (mut about, mut others) = (Vec::new(), Vec::new());
    for w in r
        .warnings
        .iter()
        .cloned()
        .chain(super::npb_verdict::one_process_warning(r))
    {
        let run = runs.iter().find_map(|run| {
            let rest = w.strip_prefix(run.as_str())?.strip_prefix(": ")?;
            Some((run.clone(), rest.to_string()))
        });
        match run {
            Some(pair) => about.push(pair),
            None => others.push(w),
        }
    }
    (about, others)
}

/// The warnings about single runs grouped by kind as the sweep part's
/// are: a run of every kernel over four transports once printed 64 lines
/// ("mg tcp np=1: other work kept 1.72 CPUs busy ..."), 4,500 px at 800 px
/// wide; now one line per kind, the runs named, the texts folded.
fn warning_groups(h: &mut String, about_runs: &[(String, String)]) {
    let mut groups = super::warnings::Groups::default();
    for (run, text) in about_runs {
        groups.add(run, text);
    }
    let mut items = String::new();
    groups.write(&mut items, "run");
    if !items.is_empty() {
        let _ = write!(h, "<ul class=warn>\n{items}</ul>\n");
    }
}

/// One table: a row per transport (its colour as in the charts), a column
/// per process count; a failed run says so, with its error as a tooltip.
fn table(
    h: &mut String,
    r: &NpbResult,
    (title, tip): (&str, &str),
    figure: Figure,
    decimals: usize,
    colours: &Colours,
) {
    let nps = process_counts(r);
    let _ = write!(
        h,
        "<table class=npb><thead><tr><th title=\"{}\">{title}</th>",
        esc(tip)
    );
    for n in &nps {
        let _ = write!(h, "<th class=num>np={n}</th>");
    }
    h.push_str("</tr></thead><tbody>\n");
    for via in transports(r) {
        let _ = write!(
            h,
            "<tr><td class=nw><span class=swatch style=\"background:{}\"></span>{}</td>",
            color_hex(colours.of(via)),
            esc(via)
        );
        for &np in &nps {
            let cell = match r.runs.iter().find(|x| x.via == via && x.nprocs == np) {
                None => String::new(),
                Some(x) if x.error.is_some() => format!(
                    "<span class=bad title=\"{}\">failed</span>",
                    esc(x.error.as_deref().unwrap_or_default())
                ),
                Some(x) => figure(x)
                    .map(|v| format!("{v:.decimals$}"))
                    .unwrap_or_else(|| "-".into()),
            };
            let _ = write!(h, "<td class=num>{cell}</td>");
        }
        h.push_str("</tr>\n");
    }
    h.push_str("</tbody></table>\n");
}

/// Every run: best and median rate, best time, CPU share of the timed
/// section, process grid and verification, or the error.
fn runs_list(h: &mut String, r: &NpbResult) {
    h.push_str(
        "<details><summary>Every run: times, CPU and verification</summary>\n<table class=list><thead><tr>\
         <th>transport</th><th>processes</th><th>best time (s)</th><th>median Mop/s</th>\
         <th title=\"CPU time over wall time of the timed section, best repetition\">CPU</th>\
         <th>process grid</th><th>verification</th></tr></thead><tbody>\n",
    );
    for run in &r.runs {
        let _ = write!(
            h,
            "<tr><td>{}</td><td class=num>{}</td>",
            esc(&run.via),
            run.nprocs
        );
        let best = run
            .outcomes
            .iter()
            .min_by(|a, b| a.time_s.total_cmp(&b.time_s));
        match (&run.error, best) {
            (Some(e), _) => {
                let _ = write!(
                    h,
                    "<td colspan=5><span class=bad>failed</span>: {}</td>",
                    esc(e)
                );
            }
            (None, Some(o)) => {
                let _ = write!(
                    h,
                    "<td class=num>{:.4}</td><td class=num>{}</td><td class=num>{:.0}%</td>\
                     <td class=num>{}&times;{}&times;{}</td><td>{} (relative error {:.1e})</td>",
                    o.time_s,
                    run.median_mop_s
                        .map(|m| format!("{m:.1}"))
                        .unwrap_or_else(|| "-".into()),
                    100.0 * o.cpu_time_s / o.time_s,
                    o.proc_grid[0],
                    o.proc_grid[1],
                    o.proc_grid[2],
                    if o.verified {
                        "verified"
                    } else {
                        "<span class=bad>not verified</span>"
                    },
                    o.relative_error
                );
            }
            (None, None) => h.push_str("<td colspan=5 class=dim>no repetitions</td>"),
        }
        h.push_str("</tr>\n");
    }
    h.push_str("</tbody></table></details>\n");
}

/// Note each NPB result's machine in `book`; returns each one's "M1".
pub(super) fn note_npb(book: &mut Book, results: &[NpbResult], names: &[String]) -> Vec<String> {
    results
        .iter()
        .zip(names)
        .map(|(r, name)| machine_label(book.note(&r.host, "NAS run", name), None))
        .collect()
}

/// Each result's command line and machine, in the same form as a sweep's
/// (the machine itself is described once, above, by [`Book::write`]).
pub(super) fn npb_machines(h: &mut String, results: &[NpbResult], names: &[String], on: &[String]) {
    for ((r, name), on) in results.iter().zip(names).zip(on) {
        let _ = writeln!(
            h,
            "<details><summary><b>{}</b> &middot; {} ({on}) &middot; started {} &middot; {:.1} s</summary>",
            esc(name),
            esc(&r.host.hostname),
            esc(&r.started_at),
            r.wall_s
        );
        let _ = writeln!(
            h,
            "<p><b>Command line</b></p><pre class=cmd>{}</pre>",
            esc(&shell_line(&r.command_line))
        );
        if let Some(run) = run_lines(&r.host) {
            let _ = writeln!(h, "<p><b>Run</b>: {}</p>", esc(&run));
        }
        h.push_str("</details>\n");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Warnings about each run of a result group by kind, filed under the
    /// run they name: twelve "other work kept" warnings make one line.
    #[test]
    fn warnings_about_runs_are_grouped_by_kind() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/npb-mg-S.json");
        let mut r: NpbResult =
            serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        let runs: Vec<String> = r
            .runs
            .iter()
            .map(|x| format!("mg {} np={}", x.via, x.nprocs))
            .collect();
        for (i, run) in runs.iter().cycle().take(12).enumerate() {
            // As plan::npb_foreign::warning words it.
            r.warnings.push(format!(
                "{run}: other work kept {:.2} CPUs busy during the run (from /proc/stat, less \
                 wulf's own processes): the machine was not quiet",
                1.0 + i as f64 / 10.0
            ));
        }
        let mut h = String::new();
        highlights(&mut h, &r);
        // The load's warnings: one line; the oversubscription warning,
        // about no one run, as it was.
        assert_eq!(h.matches("<li><details>").count(), 1, "{h}");
        assert!(h.contains("<li class=w>4 processes on 2 CPUs"), "{h}");
        assert!(
            h.contains("&middot; 6 runs: mg shm np=1, mg shm np=2, mg shm np=4 and 3 more"),
            "{h}"
        );
        assert!(
            h.contains("<li><b>mg tcp np=4</b>: other work kept 2.10 CPUs busy"),
            "{h}"
        );
    }
}
