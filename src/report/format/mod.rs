//! The text formats: what goes into a terminal, a spreadsheet, gnuplot, a
//! NetPIPE script, a wiki or a monitoring system.
//!
//! Each is a pure function from results to text, so that the commands that
//! print while measuring (`wulf run`, `wulf sweep`, `wulf matrix`, `wulf
//! npb`, `wulf collective`) and `wulf report`, which reads the results back,
//! write the same bytes for the same results. The formats `wulf report`
//! offers are also an [`Exporter`](super::Exporter) each ([`csv::Csv`],
//! [`dat::Dat`], [`npout::Npout`], [`markdown::Markdown`],
//! [`openmetrics::Openmetrics`]); the terminal tables ([`table`],
//! [`npb_table`], [`matrix_text`], [`collective_table`]) are what the
//! commands print and what the Markdown export wraps in code blocks.

pub mod collective_table;
pub mod csv;
pub mod dat;
pub mod markdown;
pub mod matrix_csv;
pub mod matrix_text;
pub mod npb_table;
pub mod npout;
pub mod openmetrics;
pub mod table;
