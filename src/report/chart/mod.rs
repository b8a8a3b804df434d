//! The SVG charts of the HTML report, drawn with plotters' SVG backend.
//!
//! Charts are text (an `<svg>` element) rather than pictures beside the
//! page, so the report stays one file that opens offline. They sit apart
//! from [`super::html`] because they know nothing of the page: every chart
//! is a pure function from results (or a study's or a kind's series) to SVG,
//! drawn in one [`frame`] so that every kind of result looks alike, and the
//! page only chooses which charts to draw and captions them.
//!
//! [`sweep`] holds the sweep charts and what the others share (the series,
//! the palette, the chart size); [`limit`] the machine's own limits;
//! [`cpu_throughput`], [`npb`] and [`collective`] one kind each.

pub mod collective;
pub mod cpu_cost;
pub mod cpu_throughput;
pub mod frame;
pub mod hpl;
pub mod limit;
pub mod npb;
pub mod sweep;
