//! `wulf compare` output: the differences of [`crate::analysis::compare`]
//! as terminal tables or Markdown, with the test that decided them stated.

use std::fmt::Write;

use crate::analysis::compare::{Comparison, FigureDiff, Floor, FloorSource, Verdict};
use crate::stats::hier_bootstrap::RatioInterval;
use crate::units::{format_bits_per_s, format_bytes, format_ns};

/// How the tables are drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    /// Aligned columns for a terminal.
    Text,
    /// Markdown tables for tickets.
    Markdown,
}

/// The statement of the method and of the floor's origin, printed with
/// every comparison, one paragraph per line.
pub fn notes(c: &Comparison) -> Vec<String> {
    let coverage = 100.0 * (1.0 - c.level);
    let mut out = Vec::new();
    if c.single_runs() {
        out.push(format!(
            "One run per side: the {coverage:.0}% interval counts only the trials of each run (a bootstrap \
             over them), which share their run's conditions; the run-to-run band comes from the files' \
             recorded floor or the runs' own trials and size-to-size changes, which cannot see a shift \
             common to a whole run (its CPU placement). Several runs per side (`wulf run --repeat 3`) settle it."
        ));
    } else {
        out.push(format!(
            "{} run(s) of A, {} of B: the {coverage:.0}% interval is a hierarchical bootstrap over runs, then \
             trials (Kalibera & Jones, ISMM 2013), so it includes the variation between runs.",
            c.runs_a, c.runs_b
        ));
    }
    out.push(format!(
        "Change: B's time / A's time - 1 over the {} sizes every run measured (per band the geometric mean \
         of the sizes' median times, then over runs; + means B is slower). Verdicts: a change when the \
         whole interval lies beyond the run-to-run band; \"no change\" when the interval widened by the band \
         lies within +-{:.0}% (--margin); \"inconclusive\" otherwise.",
        c.sizes,
        100.0 * c.margin
    ));
    out.push(
        "Figures: each row's change and interval are of that figure, B's / A's - 1: for the latency a \
         time (+ means B is slower), for the peak a rate (- means B is slower), read on both sides at the \
         size where the two together are fastest, so swapping A and B swaps the columns. A figure is one \
         size of a band: it has at least its band's run-to-run band, and shows no change its band does not."
            .to_string(),
    );
    let floors = c
        .bands
        .iter()
        .map(|b| b.floor)
        .chain(c.figures.iter().filter_map(|f| f.floor));
    let mut said = Vec::new();
    for f in floors {
        let word = f.source.word();
        if said.contains(&word) {
            continue;
        }
        said.push(word);
        out.push(match f.source {
            FloorSource::Given => "Band given on the command line (--noise-floor).".into(),
            FloorSource::Runs { .. } => "Band \"runs\": t(0.975, df) * s * sqrt(1/runs A + 1/runs B), s the \
                 spread of ln(band time) between the runs of a side."
                .into(),
            FloorSource::Recorded { repetitions } => format!(
                "Band \"recorded\": the floor of one run against one that `wulf run --repeat {repetitions}` \
                 recorded in the files."
            ),
            FloorSource::Trials { .. } => "Band \"trials\": 2 x the larger of sqrt(2) x the spread of the \
                 runs' trials (median absolute deviation of ln time) and the spread of the change from one \
                 size to the next."
                .into(),
            FloorSource::Drift { .. } => "Band \"drift\": 2 x the root mean square of the runs' drift in \
                 the band (the median change of the sizes their confirmation pass measured again, later in the \
                 run): the one view a single run gives of a shift common to the whole run."
                .into(),
            FloorSource::Unclean => "Band \"unknown (unclean runs)\": one run per side, made on a busy \
                 machine (load at or above its CPUs) or with most points noisy: a whole run shifts together \
                 there (A/A pairs of such runs differed 3-fold with tight trials), so no verdict can be given. \
                 Rerun on a quiet machine, or give several runs per side (`wulf run --repeat 3`)."
                .into(),
            FloorSource::LinkBound { share } => format!(
                "Band \"link-bound\": one run per side, both at {share:.2} or more of their shaped link's \
                 goodput limit over the sizes compared (the geometric mean of the points' shares; 0.9 or more \
                 counts, no point above 1.02): a run cannot go faster than its link, so a whole run's shift is \
                 at most 1 / {share:.2} - 1."
            ),
            FloorSource::FarBeyond {
                log_spread,
                log_machine,
            } => format!(
                "Band \"far beyond the noise\": one run per side with no run-to-run band (unclean runs), but at \
                 least 3/4 of the band's sizes have both runs' 95% intervals apart in the change's direction: a \
                 change is shown when its interval lies beyond 2 x the larger within-run spread (ln(q90/q10) of \
                 the trials, here {:.0}%) and 2 x the runs' drift{}; never for runs made on a busy machine, and \
                 \"no change\" is never claimed from it.",
                100.0 * log_spread.exp_m1(),
                if log_machine > 0.0 {
                    format!(
                        ", widened by the machine's own shift between the runs (their cache-line floors \
                         differ by {:.0}%)",
                        100.0 * log_machine.exp_m1()
                    )
                } else {
                    String::new()
                }
            ),
            FloorSource::Machine { log_shift } => format!(
                "Band \"machine shift\": one run per side whose cache-line floors (the least one-way time of a \
                 cache-line ping-pong between the same two CPUs, measured in each run) differ by {:.0}%: the \
                 machine itself moved between the runs (a VM's slow mode, its vCPUs' placement), which shifts \
                 everything a run measures, so the one-run band is widened by that shift and only a change \
                 beyond it is shown.",
                100.0 * log_shift.exp_m1()
            ),
            FloorSource::Minimum => "Band \"minimum\": 3%, below which the trials' intervals cannot \
                 separate two medians."
                .into(),
            FloorSource::OneRun => "Band \"one run\": 15%, the least of one run against one with no \
                 recorded floor: a whole run's shift (its CPU placement) that its trials and drift cannot \
                 see reached +9.8% in an A/A pair of shm runs."
                .into(),
        });
    }
    if c.only_in_a + c.only_in_b > 0 {
        out.push(format!(
            "{} sizes only in A's runs and {} only in B's were not compared.",
            c.only_in_a, c.only_in_b
        ));
    }
    if c.noisy_sizes > 0 {
        out.push(format!(
            "{} of the compared sizes are noisy in some run: their trials are spread wide.",
            c.noisy_sizes
        ));
    }
    out
}

/// The band table, header first.
pub fn band_rows(c: &Comparison) -> Vec<Vec<String>> {
    let mut rows = vec![vec![
        "size band".to_string(),
        "sizes".into(),
        "A".into(),
        "B".into(),
        "time change".into(),
        interval_header(c),
        "run-to-run band".into(),
        "verdict".into(),
    ]];
    for b in &c.bands {
        rows.push(vec![
            b.name.into(),
            b.sizes.to_string(),
            format_ns(b.a_ns),
            format_ns(b.b_ns),
            pct(b.interval.ratio),
            interval(&b.interval),
            floor(&b.floor),
            b.verdict.text().into(),
        ]);
    }
    rows
}

/// The figure table, header first. Each row's change and interval are of
/// its own figure (the peak's of its rate, the inverse of the time's), so
/// they point the same way.
pub fn figure_rows(c: &Comparison) -> Vec<Vec<String>> {
    let mut rows = vec![vec![
        "figure".to_string(),
        "A".into(),
        "B".into(),
        "change".into(),
        interval_header(c),
        "run-to-run band".into(),
        "verdict".into(),
    ]];
    for f in &c.figures {
        rows.push(vec![
            f.name.into(),
            value(f, f.a),
            value(f, f.b),
            f.change.map(|c| pct(1.0 + c)).unwrap_or_else(|| "-".into()),
            f.own_interval()
                .as_ref()
                .map(interval)
                .unwrap_or_else(|| "-".into()),
            f.floor.as_ref().map(floor).unwrap_or_else(|| "-".into()),
            figure_verdict(f),
        ]);
    }
    rows
}

/// Right-aligned columns of [`band_rows`].
pub const BAND_RIGHT: [bool; 8] = [false, true, true, true, true, true, true, false];
/// Right-aligned columns of [`figure_rows`].
pub const FIGURE_RIGHT: [bool; 7] = [false, true, true, true, true, true, false];

/// The comparison of `b_name` against the baseline `a_name`.
pub fn render(c: &Comparison, a_name: &str, b_name: &str, style: Style) -> String {
    let mut s = String::new();
    match style {
        Style::Text => {
            let _ = writeln!(s, "A (baseline): {a_name}\nB:            {b_name}\n");
        }
        Style::Markdown => {
            let _ = writeln!(s, "**A** (baseline): `{a_name}`  \n**B**: `{b_name}`\n");
        }
    }
    table(&mut s, &band_rows(c), &BAND_RIGHT, style);
    s.push('\n');
    table(&mut s, &figure_rows(c), &FIGURE_RIGHT, style);
    s.push('\n');
    for n in notes(c) {
        let _ = writeln!(s, "{n}");
    }
    s
}

fn interval_header(c: &Comparison) -> String {
    format!("{:.0}% interval", 100.0 * (1.0 - c.level))
}

fn interval(i: &RatioInterval) -> String {
    format!("{} .. {}", pct(i.low), pct(i.high))
}

fn floor(f: &Floor) -> String {
    format!("{} ({})", f.band_text(), f.source.word())
}

fn value(f: &FigureDiff, v: Option<f64>) -> String {
    match (f.name, v) {
        (_, None) if f.name == "saturation" => "not reached".into(),
        (_, None) => "-".into(),
        ("latency", Some(v)) => format_ns(v),
        ("peak", Some(v)) => format_bits_per_s(v),
        (_, Some(v)) => format_bytes(v as u64),
    }
}

fn figure_verdict(f: &FigureDiff) -> String {
    match (f.verdict, f.tested_at_bytes) {
        (Verdict::Untested, _) => "not tested (derived from many sizes)".into(),
        (v, Some(at)) => format!("{} (at {})", v.text(), format_bytes(at)),
        (v, None) => v.text().into(),
    }
}

fn pct(ratio: f64) -> String {
    format!("{:+.1}%", 100.0 * (ratio - 1.0))
}

/// Draw `rows` (the first is the header); `right[i]` aligns column i right.
pub fn table(s: &mut String, rows: &[Vec<String>], right: &[bool], style: Style) {
    match style {
        Style::Markdown => {
            for (i, r) in rows.iter().enumerate() {
                let _ = writeln!(s, "| {} |", r.join(" | "));
                if i == 0 {
                    let rule: Vec<&str> = right
                        .iter()
                        .map(|&r| if r { "--:" } else { "---" })
                        .collect();
                    let _ = writeln!(s, "|{}|", rule.join("|"));
                }
            }
        }
        Style::Text => {
            let widths: Vec<usize> = (0..rows[0].len())
                .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
                .collect();
            for r in rows {
                let cells: Vec<String> = r
                    .iter()
                    .enumerate()
                    .map(|(c, v)| {
                        if right[c] {
                            format!("{v:>w$}", w = widths[c])
                        } else {
                            format!("{v:<w$}", w = widths[c])
                        }
                    })
                    .collect();
                let _ = writeln!(s, "{}", cells.join("   ").trim_end());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_tables_align() {
        let mut s = String::new();
        let rows = vec![
            vec!["a".to_string(), "n".into()],
            vec!["long".to_string(), "12".into()],
        ];
        table(&mut s, &rows, &[false, true], Style::Text);
        assert_eq!(s, "a       n\nlong   12\n");
        let mut m = String::new();
        table(&mut m, &rows, &[false, true], Style::Markdown);
        assert_eq!(m, "| a | n |\n|---|--:|\n| long | 12 |\n");
    }

    #[test]
    fn percentages() {
        assert_eq!(pct(1.2), "+20.0%");
        assert_eq!(pct(0.9), "-10.0%");
    }
}
