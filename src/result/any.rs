//! One reader for every kind of result file.
//!
//! A file is read once: its text (bounded by [`super::MAX_RESULT_BYTES`]), a
//! lenient pass over the header (`kind`, `schema_version`) to choose the
//! type, then one strict decode of that type that names the failing field,
//! and the kind's checks. Before this reader, `wulf report` opened and
//! parsed each file up to five times to find out what it was. A document
//! without `kind` is a sweep result (sweeps named none before schema
//! version 4); a `kind` this wulf does not know is refused by name.
//!
//! Matrix files too large to read whole are the one exception to "read
//! the text": their kind is found from a reader and their cells are read
//! streaming as figures, as [`super::matrix::read_matrix_figures`] does.

use std::path::Path;

use anyhow::{bail, Result};

use super::collective::{collective_from, CollectiveResult, COLLECTIVE_KIND};
use super::hpl::{hpl_from, HplResult, HPL_KIND};
use super::matrix::{MatrixFigures, MATRIX_KIND};
use super::matrix_read::{is_streamed_size, matrix_from, streamed_figures};
use super::read::{header, npb_from, read_text, sweep_from, Header};
use super::study::{study_from, StudyResult, STUDY_KIND};
use super::{NpbResult, SweepResult, NPB_KIND, SWEEP_KIND};

/// The kinds [`parse_any`] reads, in the words of their `kind` field.
pub const KINDS: [&str; 6] = [
    SWEEP_KIND,
    NPB_KIND,
    MATRIX_KIND,
    COLLECTIVE_KIND,
    STUDY_KIND,
    HPL_KIND,
];

/// A result file of any kind, read and checked. Boxed: the kinds differ
/// in size by kilobytes.
#[derive(Debug, Clone)]
pub enum AnyResult {
    /// A sweep (`wulf sweep`, `wulf run`; no `kind` before version 4).
    Sweep(Box<SweepResult>),
    /// A `wulf npb` result.
    Npb(Box<NpbResult>),
    /// A link matrix, as the figures reports draw (see
    /// [`MatrixFigures`]).
    Matrix(Box<MatrixFigures>),
    /// A `wulf collective` result.
    Collective(Box<CollectiveResult>),
    /// A `wulf study` summary (its sweeps are files of their own).
    Study(Box<StudyResult>),
    /// A `wulf hpl` result (HPL's Gflop/s over the interconnect).
    Hpl(Box<HplResult>),
}

impl AnyResult {
    /// The value of the file's `kind` field (`sweep` also for older
    /// sweep files, which have none).
    pub fn kind(&self) -> &'static str {
        match self {
            AnyResult::Sweep(_) => SWEEP_KIND,
            AnyResult::Npb(_) => NPB_KIND,
            AnyResult::Matrix(_) => MATRIX_KIND,
            AnyResult::Collective(_) => COLLECTIVE_KIND,
            AnyResult::Study(_) => STUDY_KIND,
            AnyResult::Hpl(_) => HPL_KIND,
        }
    }
}

/// What reading one file gave: its `kind` as the header states it (also
/// when the rest of the file is invalid, so a caller can refuse a kind
/// before it reports a decoding error) and the result or the error.
#[derive(Debug)]
pub struct ReadAny {
    /// The header's `kind` when it is a string; `None` for a sweep file
    /// older than version 4, or a file whose header cannot be read.
    pub kind: Option<String>,
    /// The result, or why it cannot be read (naming the file and field).
    pub result: Result<AnyResult>,
}

/// Parse and check a result of any kind from its text; `origin` names it
/// in errors (a path). Matrices come whole (their trials kept), as figures.
pub fn parse_any(text: &str, origin: &str) -> Result<AnyResult> {
    let h = header(text, origin)?;
    from_header(&h, text, origin)
}

/// The result in `text` of the kind its header `h` names.
fn from_header(h: &Header, text: &str, origin: &str) -> Result<AnyResult> {
    Ok(match h.kind_str() {
        None if h.kind.is_none() => AnyResult::Sweep(Box::new(sweep_from(h, text, origin)?)),
        Some(SWEEP_KIND) => AnyResult::Sweep(Box::new(sweep_from(h, text, origin)?)),
        Some(NPB_KIND) => AnyResult::Npb(Box::new(npb_from(h, text, origin)?)),
        Some(MATRIX_KIND) => {
            AnyResult::Matrix(Box::new(MatrixFigures::from(matrix_from(h, text, origin)?)))
        }
        Some(COLLECTIVE_KIND) => AnyResult::Collective(Box::new(collective_from(h, text, origin)?)),
        Some(STUDY_KIND) => AnyResult::Study(Box::new(study_from(h, text, origin)?)),
        Some(HPL_KIND) => AnyResult::Hpl(Box::new(hpl_from(h, text, origin)?)),
        _ => {
            let kind = h.kind.as_ref().map(|k| k.to_string()).unwrap_or_default();
            bail!(
                "{origin} is a result of kind {kind}, which this wulf does not read \
                 (it reads the kinds {})",
                KINDS.join(", ")
            )
        }
    })
}

/// Read a result file of any kind (see the module's doc).
pub fn read_any(path: &Path) -> Result<AnyResult> {
    read_any_kind(path).result
}

/// [`read_any`], also telling the header's `kind` when the file is
/// refused.
pub fn read_any_kind(path: &Path) -> ReadAny {
    let large = std::fs::metadata(path)
        .map(|m| is_streamed_size(m.len()))
        .unwrap_or(false);
    if large {
        if let Some(figures) = streamed_figures(path) {
            return ReadAny {
                kind: Some(MATRIX_KIND.into()),
                result: figures.map(|f| AnyResult::Matrix(Box::new(f))),
            };
        }
    }
    // read_text refuses a large file that is not a matrix, naming its size.
    let origin = path.display().to_string();
    let text = match read_text(path) {
        Ok(t) => t,
        Err(e) => {
            return ReadAny {
                kind: None,
                result: Err(e),
            }
        }
    };
    match header(&text, &origin) {
        Ok(h) => ReadAny {
            kind: h.kind_str().map(str::to_string),
            result: from_header(&h, &text, &origin),
        },
        Err(e) => ReadAny {
            kind: None,
            result: Err(e),
        },
    }
}
