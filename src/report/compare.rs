//! `wulf compare` output: the differences of [`crate::analysis::compare`]
//! as terminal tables or Markdown, with the test that decided them stated.

use std::fmt::Write;

use crate::analysis::compare::{Comparison, FigureDiff, Verdict};
use crate::units::{format_bits_per_s, format_bytes, format_ns};

/// How the tables are drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    /// Aligned columns for a terminal.
    Text,
    /// Markdown tables for tickets.
    Markdown,
}

/// The statement of the method, printed with every comparison.
pub fn method_note(c: &Comparison) -> String {
    format!(
        "Test: two-sided Mann-Whitney U test on the kept trials of each size, Holm-corrected over the {} sizes \
         both results measured (family-wise level {}). Change: Hodges-Lehmann estimate of B's time / A's time, \
         the median over the band's sizes (+ means B is slower); for the figures, the change of the figure itself \
         (a lower peak or a higher latency means B is slower).",
        c.sizes.len(),
        c.level
    )
}

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
    let mut rows = vec![vec![
        "size band".to_string(),
        "sizes".into(),
        "time change".into(),
        "B slower".into(),
        "B faster".into(),
        "verdict".into(),
    ]];
    for b in &c.bands {
        rows.push(vec![
            b.name.into(),
            b.sizes.to_string(),
            b.time_ratio.map(pct).unwrap_or_else(|| "-".into()),
            b.slower.to_string(),
            b.faster.to_string(),
            b.verdict.text().into(),
        ]);
    }
    table(
        &mut s,
        &rows,
        &[false, true, true, true, true, false],
        style,
    );
    s.push('\n');
    let mut rows = vec![vec![
        "figure".to_string(),
        "A".into(),
        "B".into(),
        "change".into(),
        "verdict".into(),
    ]];
    for f in &c.figures {
        rows.push(vec![
            f.name.into(),
            value(f, f.a),
            value(f, f.b),
            f.change.map(|c| pct(1.0 + c)).unwrap_or_else(|| "-".into()),
            figure_verdict(f),
        ]);
    }
    table(&mut s, &rows, &[false, true, true, true, false], style);
    s.push('\n');
    let _ = writeln!(s, "{}", method_note(c));
    let mut extra = Vec::new();
    if c.only_in_a + c.only_in_b > 0 {
        extra.push(format!(
            "{} sizes only in A and {} only in B were not compared.",
            c.only_in_a, c.only_in_b
        ));
    }
    let noisy = c.sizes.iter().filter(|d| d.noisy).count();
    if noisy > 0 {
        extra.push(format!(
            "{noisy} of the compared sizes are noisy in A or B: their trials are spread wide, so only large differences show there."
        ));
    }
    for e in extra {
        let _ = writeln!(s, "{e}");
    }
    s
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
    match (f.verdict, f.tested_at_bytes, f.p_value) {
        (Verdict::Untested, _, _) => "not tested (derived from many sizes)".into(),
        (v, Some(at), Some(p)) => {
            format!("{} (p = {}, at {})", v.text(), pvalue(p), format_bytes(at))
        }
        (v, _, _) => v.text().into(),
    }
}

fn pct(ratio: f64) -> String {
    format!("{:+.1}%", 100.0 * (ratio - 1.0))
}

fn pvalue(p: f64) -> String {
    if p < 1e-3 {
        format!("{p:.1e}")
    } else {
        format!("{p:.3}")
    }
}

/// Draw `rows` (the first is the header); `right[i]` aligns column i right.
fn table(s: &mut String, rows: &[Vec<String>], right: &[bool], style: Style) {
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
    fn percentages_and_p_values() {
        assert_eq!(pct(1.2), "+20.0%");
        assert_eq!(pct(0.9), "-10.0%");
        assert_eq!(pvalue(0.5), "0.500");
        assert_eq!(pvalue(1.23e-5), "1.2e-5");
    }
}
