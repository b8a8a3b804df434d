//! The exporter trait and the list of exporters: one per `--format` of
//! `wulf report`, found by the format's name.
//!
//! A format is an object rather than an arm of a `match` in the command so
//! that everything about it sits in one place: which files it takes (and
//! the usage error for one it cannot hold), and how it writes a
//! [`ReportInput`]. Adding a format is a type that implements [`Exporter`]
//! and a line in [`EXPORTERS`]; the command needs no change beyond the CLI
//! enum's new variant.
//!
//! Exporters are found by name, not by the CLI's `ReportFormat`: `cli` and
//! `report` are on the same layer (ARCHITECTURE.md), so neither imports the
//! other, and the command joins them with the name clap gives each variant.

use std::path::Path;

use anyhow::Result;

use super::format::openmetrics::Openmetrics;
use super::format::{csv::Csv, dat::Dat, markdown::Markdown, npout::Npout};
use super::html::Html;
use super::input::ReportInput;
use crate::result::collective::COLLECTIVE_KIND;
use crate::result::matrix::MATRIX_KIND;
use crate::result::{NPB_KIND, STUDY_KIND};

/// A file given to the report, as its header describes it before it is read
/// in full: enough to refuse it by kind (naming it) before an error in
/// reading some other file could hide that refusal.
#[derive(Clone, Copy, Debug)]
pub struct GivenFile<'a> {
    /// Where it is, to name it in an error.
    pub path: &'a Path,
    /// The `kind` its header names (`None` for a sweep result written before
    /// results had kinds, or a file without a readable header).
    pub kind: Option<&'a str>,
}

/// One output format of the report: pure, from results to bytes.
pub trait Exporter {
    /// The format's name on the command line (`--format NAME`), also the
    /// name in its usage errors.
    fn name(&self) -> &'static str;

    /// Refuse, before anything is read in full, files this format cannot
    /// hold (by their kind) or a number of files it cannot hold, with a
    /// usage error naming the first such file. Takes every file by default.
    fn admit(&self, files: &[GivenFile<'_>]) -> Result<()> {
        let _ = files;
        Ok(())
    }

    /// The bytes of `input` in this format.
    fn export(&self, input: &ReportInput<'_>) -> Result<Vec<u8>>;
}

/// Every exporter, in the order `wulf report --help` lists the formats. A
/// `const`, not a `static`: a list, not process state.
pub const EXPORTERS: [&dyn Exporter; 6] = [&Html, &Csv, &Dat, &Npout, &Markdown, &Openmetrics];

/// The exporter of the format called `name` (see [`Exporter::name`]).
pub fn exporter(name: &str) -> Option<&'static dyn Exporter> {
    EXPORTERS.iter().copied().find(|e| e.name() == name)
}

/// [`Exporter::admit`] for the formats that hold the points of sweep
/// results only (CSV, gnuplot data, np.out): the first file of another
/// kind is a usage error naming it. Sweep files are the only ones without
/// one of these kinds (their header may lack a kind).
pub(crate) fn admit_sweeps_only(name: &str, files: &[GivenFile<'_>]) -> Result<()> {
    const OTHERS: [&str; 5] = [
        NPB_KIND,
        STUDY_KIND,
        MATRIX_KIND,
        COLLECTIVE_KIND,
        crate::result::hpl::HPL_KIND,
    ];
    match files.iter().find(|f| f.kind.is_some_and(|k| OTHERS.contains(&k))) {
        Some(f) => Err(crate::error::usage(format!(
            "{} is an NPB result, a study summary, a link matrix, a collective or an HPL result: the {} format holds the points of sweep \
             results only; they go into the html or markdown formats",
            f.path.display(),
            name
        ))),
        None => Ok(()),
    }
}

/// The check behind [`admit_sweeps_only`] for an input built without
/// files (a caller other than `wulf report`): results of another kind are a
/// usage error rather than left out without a word.
pub(crate) fn sweeps_only(name: &str, input: &ReportInput<'_>) -> Result<()> {
    let others = !input.npb.is_empty()
        || !input.studies.is_empty()
        || !input.matrices.is_empty()
        || !input.collectives.is_empty()
        || !input.hpl.is_empty();
    if others {
        return Err(crate::error::usage(format!(
            "the {name} format holds the points of sweep results only; NPB results, study \
             summaries, link matrices and collective results go into the html or markdown formats"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique() {
        for (i, e) in EXPORTERS.iter().enumerate() {
            assert!(EXPORTERS[..i].iter().all(|o| o.name() != e.name()));
        }
        assert!(exporter("pdf").is_none());
    }

    #[test]
    fn sweep_formats_refuse_other_kinds_by_name() {
        let files = [
            GivenFile {
                path: Path::new("a.json"),
                kind: None,
            },
            GivenFile {
                path: Path::new("m.json"),
                kind: Some(MATRIX_KIND),
            },
        ];
        let e = exporter("csv").unwrap().admit(&files).unwrap_err();
        assert!(e.to_string().starts_with("m.json is an NPB result"), "{e}");
        assert!(exporter("html").unwrap().admit(&files).is_ok());
        assert!(exporter("markdown").unwrap().admit(&files).is_ok());
    }
}
