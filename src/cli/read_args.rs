//! Arguments of the commands that read result files: `wulf report` and
//! `wulf compare`.

use std::path::PathBuf;

use clap::{Args, ValueEnum};

/// Output formats of `wulf report`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ReportFormat {
    /// One self-contained HTML page with charts.
    Html,
    /// Every point of every result, one row each.
    Csv,
    /// gnuplot data, one block per result (`index N`).
    Dat,
    /// NetPIPE 3.7 np.out columns: bytes, Mbps (2^20 bit/s), seconds.
    Npout,
    /// The summary table in Markdown.
    Markdown,
    /// OpenMetrics gauges (latency, peak, n_1/2, noise per transport and
    /// peer; matrix cells) for node_exporter's textfile collector.
    Openmetrics,
}

/// `wulf report`.
#[derive(Debug, Clone, Args)]
pub struct ReportArgs {
    /// Result files (JSON) written by `wulf run`, `wulf sweep --json`,
    /// `wulf matrix` or `wulf npb` (NPB results: html and markdown formats
    /// only).
    #[arg(required = true, value_name = "RESULT.json")]
    pub results: Vec<PathBuf>,
    /// Output file ('-' for standard output). Default: report.html for
    /// HTML, standard output for the other formats.
    #[arg(short, long, value_name = "FILE", value_parser = crate::cli::output_file)]
    pub output: Option<PathBuf>,
    /// Output format. Default: from the output file's extension (.html,
    /// .csv, .dat, .out, .md, .prom), else html.
    #[arg(long, value_enum)]
    pub format: Option<ReportFormat>,
}

/// `wulf compare`.
#[derive(Debug, Clone, Args)]
pub struct CompareArgs {
    /// Result files. Without `--`: the first is the baseline (A) and each
    /// further file is compared against it in turn. With `--`: the files
    /// before it are repeated runs of A, those after it runs of B.
    #[arg(value_name = "RESULT.json")]
    pub files: Vec<PathBuf>,
    /// B's runs, after `--` (`wulf compare A1 A2 -- B1 B2`).
    #[arg(last = true, value_name = "B.json")]
    pub after: Vec<PathBuf>,
    /// Repeated runs of the baseline A (one transport and mode), as an
    /// alternative to `A... -- B...`.
    #[arg(long = "a", num_args = 1.., value_name = "FILE", conflicts_with_all = ["files", "after"], requires = "b")]
    pub a: Vec<PathBuf>,
    /// Repeated runs of B (with --a).
    #[arg(long = "b", num_args = 1.., value_name = "FILE", requires = "a")]
    pub b: Vec<PathBuf>,
    /// Exit with code 4 when B is shown slower than A by more than this
    /// percentage (e.g. 10 or 10%) in a band, the latency or the peak (the
    /// whole interval beyond the run-to-run band); with code 5 when nothing
    /// is shown but a verdict is inconclusive and such a slowdown cannot be
    /// excluded.
    #[arg(long, value_name = "PCT", value_parser = parse_percent)]
    pub fail_if_slower: Option<f64>,
    /// The run-to-run band to use (e.g. 10 or 10%) instead of the one
    /// estimated from the runs, recorded by `wulf run --repeat`, or read
    /// from single runs' trials.
    #[arg(long, value_name = "PCT", value_parser = parse_percent)]
    pub noise_floor: Option<f64>,
    /// The equivalence margin in percent: "no change" only when the change's
    /// interval, widened by the run-to-run band, lies within +-PCT.
    #[arg(long, value_name = "PCT", default_value = "10", value_parser = parse_percent)]
    pub margin: f64,
    /// Print Markdown tables (for tickets) instead of terminal tables.
    #[arg(long)]
    pub markdown: bool,
    /// Also write the comparison as a self-contained HTML page.
    #[arg(long, value_name = "FILE", value_parser = crate::cli::output_file)]
    pub html: Option<PathBuf>,
    /// 1 - the coverage of the change intervals (0.05: 95% intervals).
    #[arg(long, default_value = "0.05", value_parser = parse_level)]
    pub level: f64,
}

fn parse_percent(s: &str) -> Result<f64, String> {
    let t = s.trim().trim_end_matches('%');
    match t.parse::<f64>() {
        Ok(p) if p.is_finite() && p >= 0.0 => Ok(p),
        _ => Err(format!("'{s}' is not a percentage (e.g. 10 or 10%)")),
    }
}

fn parse_level(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(p) if p > 0.0 && p < 1.0 => Ok(p),
        _ => Err(format!(
            "'{s}': the level must be between 0 and 1 (e.g. 0.05)"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentages_and_levels() {
        assert_eq!(parse_percent("10"), Ok(10.0));
        assert_eq!(parse_percent("12.5%"), Ok(12.5));
        assert!(parse_percent("-1").is_err());
        assert!(parse_percent("ten").is_err());
        assert_eq!(parse_level("0.01"), Ok(0.01));
        assert!(parse_level("1").is_err());
    }
}
