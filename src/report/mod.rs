//! Exporters: pure functions from results to bytes, one file per format.
//! Nothing here measures, reads files or prints; commands decide where the
//! bytes go.

pub mod csv;
pub mod table;
