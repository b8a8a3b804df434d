//! `wulf report`: results drawn as an HTML report or exported as CSV,
//! gnuplot data, NetPIPE np.out columns or a Markdown table.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Result;

use crate::cli::{ReportArgs, ReportFormat};
use crate::report;
use crate::result::{read_result, write_atomically, SweepResult};

/// Read every result file, failing on the first that is unreadable or not a
/// result of this schema (the error names the file).
pub fn read_results(paths: &[PathBuf]) -> Result<Vec<SweepResult>> {
    paths.iter().map(|p| read_result(p)).collect()
}

/// The format an output path implies by its extension.
pub fn format_of_path(path: &Path) -> Option<ReportFormat> {
    let name = path.file_name()?.to_str()?.to_ascii_lowercase();
    let ext = name.rsplit_once('.').map(|(_, e)| e).unwrap_or("");
    match ext {
        "html" | "htm" => Some(ReportFormat::Html),
        "csv" => Some(ReportFormat::Csv),
        "dat" => Some(ReportFormat::Dat),
        "out" => Some(ReportFormat::Npout),
        "md" | "markdown" => Some(ReportFormat::Markdown),
        _ => None,
    }
}

/// The bytes of `results` in `format`.
pub fn render(results: &[SweepResult], format: ReportFormat) -> Result<Vec<u8>> {
    Ok(match format {
        ReportFormat::Html => report::html::to_html(results)?.into_bytes(),
        ReportFormat::Csv => report::csv::to_csv(results)?,
        ReportFormat::Dat => report::dat::to_dat(results).into_bytes(),
        ReportFormat::Markdown => report::markdown::to_markdown(results).into_bytes(),
        ReportFormat::Npout => match results {
            [one] => report::npout::to_npout(one).into_bytes(),
            _ => {
                return Err(crate::error::usage(format!(
                    "np.out holds one run; give one result file (got {})",
                    results.len()
                )))
            }
        },
    })
}

/// Run `wulf report`.
pub fn execute(args: &ReportArgs) -> Result<()> {
    let format = args
        .format
        .or_else(|| args.output.as_deref().and_then(format_of_path))
        .unwrap_or(ReportFormat::Html);
    if format == ReportFormat::Npout && args.results.len() != 1 {
        return Err(crate::error::usage(format!(
            "--format npout: np.out holds one run; give one result file (got {})",
            args.results.len()
        )));
    }
    let results = read_results(&args.results)?;
    let bytes = render(&results, format)?;
    let out = match (&args.output, format) {
        (Some(p), _) => p.clone(),
        (None, ReportFormat::Html) => PathBuf::from("report.html"),
        (None, _) => PathBuf::from("-"),
    };
    if out.as_os_str() == "-" {
        std::io::stdout().write_all(&bytes)?;
        return Ok(());
    }
    write_atomically(&out, &bytes)?;
    println!("report: {}", out.display());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_follow_extensions() {
        assert_eq!(
            format_of_path(Path::new("a/r.HTML")),
            Some(ReportFormat::Html)
        );
        assert_eq!(
            format_of_path(Path::new("np.out")),
            Some(ReportFormat::Npout)
        );
        assert_eq!(format_of_path(Path::new("r.dat")), Some(ReportFormat::Dat));
        assert_eq!(
            format_of_path(Path::new("r.md")),
            Some(ReportFormat::Markdown)
        );
        assert_eq!(format_of_path(Path::new("r")), None);
    }
}
