//! What a report draws: every kind of result, loaded once by the command and
//! handed to an exporter as one borrowed [`ReportInput`].
//!
//! One struct rather than an argument per kind: a new kind of result is a
//! new field here and a section in the exporters that draw it, not a new
//! entry point on every exporter and a new argument at every caller.

use crate::result::collective::CollectiveResult;
use crate::result::hpl::HplResult;
use crate::result::matrix::MatrixFigures;
use crate::result::{NpbResult, StudyResult, SweepResult};

/// A study summary with the sweep results it names, as read from disk.
pub struct LoadedStudy {
    /// The summary.
    pub summary: StudyResult,
    /// (case label, result) of each case whose file could be read.
    pub sweeps: Vec<(String, SweepResult)>,
}

/// Every result a report is drawn from, by kind, each kind in the order
/// given. Borrowed: the command owns the results (and may use them again,
/// `wulf run` prints them too); an exporter only reads.
///
/// Build it with the kinds at hand and `..Default::default()` for the rest.
#[derive(Clone, Copy, Default)]
pub struct ReportInput<'a> {
    /// Sweep results (`wulf run`, `wulf sweep`).
    pub sweeps: &'a [SweepResult],
    /// NPB results (`wulf npb`).
    pub npb: &'a [NpbResult],
    /// Study summaries with their sweeps (`wulf study`).
    pub studies: &'a [LoadedStudy],
    /// Link matrices (`wulf matrix`).
    pub matrices: &'a [MatrixFigures],
    /// Collective results (`wulf collective`).
    pub collectives: &'a [CollectiveResult],
    /// Linpack runs (`wulf hpl`, `wulf study linpack`).
    pub hpl: &'a [HplResult],
}

impl<'a> ReportInput<'a> {
    /// Sweep results and nothing else: what most callers have.
    pub fn of_sweeps(sweeps: &'a [SweepResult]) -> Self {
        ReportInput {
            sweeps,
            ..Default::default()
        }
    }
}
