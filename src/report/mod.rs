//! The report: pure functions from results to bytes. Nothing here measures,
//! reads files or prints; commands load the results, hand them over as one
//! [`ReportInput`] and decide where the bytes go, so every output depends on
//! the results alone and can be snapshot-tested.
//!
//! Each `--format` of `wulf report` is an [`Exporter`] ([`exporter`] finds
//! one by its name). Text formats live in [`format`](mod@format), the HTML
//! page and its sections in [`html`], the SVG charts the page draws in
//! [`chart`]. What several of them share stays here: [`summary`] (the
//! figures of a summary row), [`floor`] (the run's one cache-line floor),
//! [`conditions`] (the measurement conditions)
//! and [`compare`] (the rendering of `wulf compare`).

pub mod chart;
pub mod compare;
pub mod conditions;
pub mod export;
pub mod floor;
pub mod format;
pub mod hpl;
pub mod html;
pub mod input;
pub mod summary;

pub use export::{exporter, Exporter, GivenFile};
pub use input::{LoadedStudy, ReportInput};
