//! The terminal tables of a collective result (`wulf collective`, and the
//! Markdown export of `wulf report`): per backend, one row per size with
//! the spread over ranks and the statistics; then one table with a column
//! per backend, the figure to compare.

use std::fmt::Write;

use crate::result::collective::{CollectivePoint, CollectiveResult};
use crate::units::{format_bytes, format_ns};

/// Width of a backend's column in the comparison table.
const COLUMN: usize = 16;

/// A budget as humantime prints it; a value no duration holds (a hostile
/// or damaged file: NaN, negative, 1e151 s) as a plain number of seconds,
/// never a panic.
fn budget_text(budget_s: f64) -> String {
    match std::time::Duration::try_from_secs_f64(budget_s) {
        Ok(d) => humantime::format_duration(d).to_string(),
        Err(_) => format!("{budget_s} s"),
    }
}

/// Both tables, as printed.
pub fn to_text(r: &CollectiveResult) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "wulf collective {}: {} processes, budget {} per backend\n",
        r.collective,
        r.nprocs,
        budget_text(r.budget_s)
    );
    for run in &r.runs {
        let _ = writeln!(out, "{} ({})", run.via, run.algorithm);
        if !run.points.is_empty() {
            let _ = writeln!(
                out,
                "{:>10} {:>11} {:>9} {:>11} {:>11} {:>14}",
                "size", "time", "95% CI", "ranks avg", "fastest", "trials x rep"
            );
        }
        for p in &run.points {
            let _ = writeln!(
                out,
                "{:>10} {:>11} {:>9} {:>11} {:>11} {:>14}{}",
                format_bytes(p.bytes),
                format_ns(p.median_ns),
                ci_text(p.relative_ci()),
                format_ns(p.ranks_avg_median_ns),
                format_ns(p.ranks_min_median_ns),
                format!("{} x {}", p.trials_ns.len(), p.repeats),
                if p.noisy { "  noisy" } else { "" }
            );
        }
        if let Some(e) = &run.error {
            let _ = writeln!(out, "  FAILED: {e}");
        }
        out.push('\n');
    }
    comparison(&mut out, r);
    for w in &r.warnings {
        let _ = writeln!(out, "warning: {w}");
    }
    if let Some(why) = &r.incomplete_reason {
        let _ = writeln!(out, "incomplete: {why}");
    }
    out
}

/// One row per size, one column per backend: the median time (the
/// slowest rank's), `*` where the point is noisy, `-` where not measured.
fn comparison(out: &mut String, r: &CollectiveResult) {
    let mut sizes: Vec<u64> = r
        .runs
        .iter()
        .flat_map(|run| run.points.iter().map(|p| p.bytes))
        .collect();
    sizes.sort_unstable();
    sizes.dedup();
    if sizes.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "{} time per operation (median; the slowest rank's mean per block):",
        r.collective
    );
    let _ = write!(out, "{:>10}", "size");
    for run in &r.runs {
        let _ = write!(out, "{:>w$}", run.via, w = COLUMN);
    }
    out.push('\n');
    let mut any_noisy = false;
    for bytes in sizes {
        let _ = write!(out, "{:>10}", format_bytes(bytes));
        for run in &r.runs {
            let cell = match run.points.iter().find(|p| p.bytes == bytes) {
                Some(p) => {
                    any_noisy |= p.noisy;
                    cell(p)
                }
                None => "-".into(),
            };
            let _ = write!(out, "{cell:>w$}", w = COLUMN);
        }
        out.push('\n');
    }
    if any_noisy {
        let _ = writeln!(
            out,
            "  * noisy: the median's 95% interval was not within +-{:.0}% when its budget ran out",
            100.0 * r.precision
        );
    }
}

/// The interval's half-width as a share of the median: `+-1.5%`; beyond
/// `>999%` the figure says nothing more (a bimodal point on a busy machine).
fn ci_text(relative: f64) -> String {
    if relative.is_finite() && relative < 10.0 {
        format!("+-{:.1}%", 100.0 * relative)
    } else {
        ">999%".into()
    }
}

fn cell(p: &CollectivePoint) -> String {
    format!(
        "{}{}",
        format_ns(p.median_ns),
        if p.noisy { "*" } else { " " }
    )
}

#[cfg(test)]
mod budget_tests {
    use super::budget_text;

    /// Found by `fuzz_sessions`: a budget of 3.18e151 s panicked in
    /// `Duration::from_secs_f64`.
    #[test]
    fn budgets_no_duration_holds_print_as_numbers() {
        assert_eq!(budget_text(2.0), "2s");
        let huge = budget_text(3.18e151);
        assert!(huge.starts_with("318") && huge.ends_with(" s"), "{huge}");
        assert_eq!(budget_text(f64::NAN), "NaN s");
        assert_eq!(budget_text(-1.0), "-1 s");
    }
}
