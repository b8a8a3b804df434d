//! The HTML report: one self-contained page over a whole
//! [`ReportInput`], with a section per kind of result.
//!
//! One page for every kind, rather than a page per kind, because the point
//! of a report is to see results side by side: the machines and command
//! lines of all of them at the end, one header naming every host. [`page`]
//! assembles it ([`to_html`]); each kind's section is a module of its own
//! ([`npb`], [`collective`], [`study`], [`matrix`]; the sweeps' charts and
//! events in `charts` and `details`), drawing its charts with
//! [`super::chart`]. [`compare`] is `wulf compare --html`'s page, which
//! shares the escaping and the style.

use anyhow::Result;

use super::export::Exporter;
use super::input::ReportInput;

mod answer;
mod charts;
pub mod collective;
pub mod compare;
mod details;
mod hpl;
mod machines;
pub mod matrix;
mod matrix_figures;
pub mod npb;
mod npb_verdict;
pub mod page;
pub mod study;
mod warnings;

pub use answer::{answer_screen, answer_text};
pub use page::to_html;

/// `--format html`: the report page ([`to_html`]), every kind of result.
pub struct Html;

impl Exporter for Html {
    fn name(&self) -> &'static str {
        "html"
    }

    fn export(&self, input: &ReportInput<'_>) -> Result<Vec<u8>> {
        Ok(to_html(input)?.into_bytes())
    }
}
