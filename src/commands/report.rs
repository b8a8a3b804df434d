//! `wulf report`: results drawn as an HTML report or exported as CSV,
//! gnuplot data, NetPIPE np.out columns, a Markdown table or OpenMetrics
//! gauges (sweeps and link matrices) for monitoring.
//!
//! NPB result files (`wulf npb`) may be given among the sweep results: the
//! HTML report draws them, Markdown gives their tables (as `wulf npb`
//! prints them); CSV, gnuplot data and np.out hold sweep points only, so an
//! NPB file there is a usage error naming it.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Result;
use clap::ValueEnum;

use crate::cli::{ReportArgs, ReportFormat};
use crate::plan::results::stop_if_interrupted;
use crate::report;
use crate::report::{Exporter, GivenFile, LoadedStudy, ReportInput};
use crate::result::collective::{CollectiveResult, COLLECTIVE_KIND};
use crate::result::hpl::{HplResult, HPL_KIND};
use crate::result::matrix::{MatrixFigures, MATRIX_KIND};
use crate::result::{
    read_any_kind, read_result, write_atomically, AnyResult, NpbResult, ReadAny, SweepResult,
    STUDY_KIND,
};

/// Read every result file, sweep or NPB (told apart by the NPB file's
/// `kind`), keeping the order within each kind.
pub fn read_any(paths: &[PathBuf]) -> Result<(Vec<SweepResult>, Vec<NpbResult>)> {
    let read: Vec<ReadAny> = paths.iter().map(|p| read_any_kind(p)).collect();
    let all = load(paths, read)?;
    Ok((all.sweeps, all.npb))
}

/// Read every result file: sweeps, NPB results and study summaries (each
/// with the sweep files it names, relative to its own directory; one that
/// is missing is left out of the charts, its table cells stay).
pub fn read_all(paths: &[PathBuf]) -> Result<Loaded> {
    load(paths, paths.iter().map(|p| read_any_kind(p)).collect())
}

/// Whether `read` is a file whose `kind` is one of `kinds`, as its header
/// says (also when the rest of it is invalid).
fn is_kind(read: &ReadAny, kinds: &[&str]) -> bool {
    read.kind.as_deref().is_some_and(|k| kinds.contains(&k))
}

/// The results of `paths`, each read once (`read`, in the same order),
/// sorted by kind. Errors come as they did when each kind had its own
/// reader: the first failing matrix, collective or study file in order,
/// then the first failing sweep or NPB file.
fn load(paths: &[PathBuf], read: Vec<ReadAny>) -> Result<Loaded> {
    let (mut plain, mut studies, mut matrices) = (Vec::new(), Vec::new(), Vec::new());
    let (mut collectives, mut sweeps, mut npb) = (Vec::new(), Vec::new(), Vec::new());
    let mut hpl = Vec::new();
    let read: Vec<(&PathBuf, ReadAny)> = paths.iter().zip(read).collect();
    for (p, r) in read {
        if !is_kind(&r, &[COLLECTIVE_KIND, MATRIX_KIND, STUDY_KIND, HPL_KIND]) {
            plain.push(r.result);
            continue;
        }
        match r.result? {
            AnyResult::Collective(c) => collectives.push(*c),
            AnyResult::Hpl(r) => hpl.push(*r),
            AnyResult::Matrix(m) => matrices.push(*m),
            AnyResult::Study(summary) => {
                let dir = p.parent().unwrap_or(Path::new("."));
                let sweeps = summary
                    .cases
                    .iter()
                    .filter_map(|c| {
                        let f = c.file.as_ref()?;
                        read_result(&dir.join(f)).ok().map(|r| (c.label.clone(), r))
                    })
                    .collect();
                studies.push(LoadedStudy {
                    summary: *summary,
                    sweeps,
                });
            }
            // The header's kind chose the decoder: no other kind comes back.
            other => unreachable!(
                "a {} file read as a {}",
                r.kind.unwrap_or_default(),
                other.kind()
            ),
        }
    }
    for r in plain {
        match r? {
            AnyResult::Sweep(s) => sweeps.push(*s),
            AnyResult::Npb(n) => npb.push(*n),
            other => unreachable!(
                "a file without a matrix, collective or study kind read as a {}",
                other.kind()
            ),
        }
    }
    Ok(Loaded {
        sweeps,
        npb,
        studies,
        matrices,
        collectives,
        hpl,
    })
}

/// Every result `wulf report` was given, by kind: the owner of what a
/// [`ReportInput`] borrows.
pub struct Loaded {
    /// Sweep results.
    pub sweeps: Vec<SweepResult>,
    /// NPB results.
    pub npb: Vec<NpbResult>,
    /// Study summaries with their sweeps.
    pub studies: Vec<LoadedStudy>,
    /// Link matrices.
    pub matrices: Vec<MatrixFigures>,
    /// Collective results (`wulf collective`).
    pub collectives: Vec<CollectiveResult>,
    /// Linpack runs (`wulf hpl`).
    pub hpl: Vec<HplResult>,
}

impl Loaded {
    /// The report's view of these results.
    pub fn input(&self) -> ReportInput<'_> {
        ReportInput {
            sweeps: &self.sweeps,
            npb: &self.npb,
            studies: &self.studies,
            matrices: &self.matrices,
            collectives: &self.collectives,
            hpl: &self.hpl,
        }
    }
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
        // node_exporter's textfile collector reads `*.prom` files.
        "prom" => Some(ReportFormat::Openmetrics),
        _ => None,
    }
}

/// The exporter of `format`, found by the name clap gives the variant on
/// the command line (the report layer knows no CLI types).
pub fn exporter_of(format: ReportFormat) -> &'static dyn Exporter {
    let value = format
        .to_possible_value()
        .expect("every --format is listed (none is skipped)");
    report::exporter(value.get_name()).expect("every --format has an exporter")
}

/// Run `wulf report`.
pub fn execute(args: &ReportArgs) -> Result<()> {
    let format = args
        .format
        .or_else(|| args.output.as_deref().and_then(format_of_path))
        .unwrap_or(ReportFormat::Html);
    let exporter = exporter_of(format);
    // Each file is read once, here; refusals by kind come before any
    // error in reading one, as when they had readers of their own.
    let mut read: Vec<ReadAny> = Vec::with_capacity(args.results.len());
    for p in &args.results {
        stop_if_interrupted()?;
        read.push(read_any_kind(p));
    }
    // A read cut short by the signal fails: say why, not what failed.
    stop_if_interrupted()?;
    let given: Vec<GivenFile> = args
        .results
        .iter()
        .zip(&read)
        .map(|(path, r)| GivenFile {
            path,
            kind: r.kind.as_deref(),
        })
        .collect();
    exporter.admit(&given)?;
    let all = load(&args.results, read)?;
    stop_if_interrupted()?;
    let bytes = exporter.export(&all.input())?;
    stop_if_interrupted()?;
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
        assert_eq!(
            format_of_path(Path::new("wulf.prom")),
            Some(ReportFormat::Openmetrics)
        );
        assert_eq!(format_of_path(Path::new("r")), None);
    }

    #[test]
    fn every_format_has_its_exporter() {
        for f in ReportFormat::value_variants() {
            let name = f.to_possible_value().unwrap().get_name().to_string();
            assert_eq!(exporter_of(*f).name(), name);
        }
        assert_eq!(
            report::export::EXPORTERS.len(),
            ReportFormat::value_variants().len()
        );
    }
}
