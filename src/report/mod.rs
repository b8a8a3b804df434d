//! Exporters: pure functions from results to bytes, one file per format.
//! Nothing here measures, reads files or prints; commands decide where the
//! bytes go.
//!
//! Formats: [`html`] (the report, with [`charts`]), [`csv`], [`dat`]
//! (gnuplot), [`npout`] (NetPIPE 3.7 columns), [`markdown`] (summary
//! table), [`openmetrics`] (gauges for monitoring), [`table`]
//! (terminal), [`npb_table`] (NAS kernel tables), [`npb_html`] and
//! [`npb_charts`] (NAS results in the HTML report), [`collective_table`],
//! [`collective_html`] and [`collective_charts`] (`wulf collective`'s
//! tables and its section of the report), [`study_html`] (a study's
//! section), [`limit_charts`] (memcpy's memory hierarchy and the
//! transports against the machine's limits), and [`compare`] (the rendering of
//! `wulf compare`); [`summary`] holds what several of them share.

pub mod chart_frame;
pub mod charts;
pub mod collective_charts;
pub mod collective_html;
pub mod collective_table;
pub mod compare;
pub mod compare_html;
pub mod conditions;
pub mod cpu_throughput_chart;
pub mod csv;
pub mod dat;
pub mod html;
mod html_charts;
mod html_details;
pub mod limit_charts;
pub mod markdown;
pub mod matrix_csv;
pub mod matrix_html;
pub mod matrix_text;
pub mod npb_charts;
pub mod npb_html;
pub mod npb_table;
pub mod npout;
pub mod openmetrics;
pub mod study_html;
pub mod summary;
pub mod table;
