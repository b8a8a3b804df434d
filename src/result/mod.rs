//! The result file: wulf's public interface.
//!
//! A result is one JSON document per sweep (one transport, one mode). The
//! schema is versioned (`schema_version`), documented field by field in
//! `docs/results-schema.md`, and every struct rejects unknown fields so that a
//! file from a newer, incompatible wulf is refused loudly rather than
//! misread. Files are written atomically: a temporary file in the target
//! directory, flushed, then renamed over the destination.

mod any;
pub mod bounds;
pub mod collective;
mod conditions;
mod confirmation;
mod envelope;
pub mod hpl;
pub mod json_schema;
mod lab;
mod left_out;
mod link;
mod mpi_info;
mod npb;
pub mod npb_outcome;
mod read;
mod run_to_run;
mod schema;
mod thresholds;
pub mod validate;
mod wait_mode;
mod wake_up;
mod write;

pub use any::{parse_any, read_any, read_any_kind, AnyResult, ReadAny, KINDS};
pub use conditions::Conditions;
pub use confirmation::{CheckedEdge, CheckedEvent, Confirmation, RemeasuredPoint};
pub use lab::{LabLink, LabPlacement};
pub use left_out::SizesLeftOut;
pub use link::{LinkEfficiency, LinkEnd};
pub mod matrix;
mod matrix_figures;
mod matrix_read;
pub use mpi_info::{MpiInfo, ProtocolLimit};
pub mod study;
pub use npb::{
    fill_speedups, FailedCheck, NpbNodeSlots, NpbNodes, NpbResult, NpbRun, RankPlacement,
    FOREIGN_CPUS_WARN, NPB_KIND, NPB_SCHEMA_VERSION,
};
pub use read::{
    is_npb_result, kind_of, parse_result, read_npb_result, read_result, read_text, read_versioned,
    MAX_RESULT_BYTES,
};
pub use run_to_run::{BandSpread, RunToRun};
pub use schema::*;
pub use study::{
    is_study_result, read_study_result, StudyCaseResult, StudyNasCase, StudyNasStack, StudyRatio,
    StudyResult, StudyRow, StudyTable, STUDY_KIND, STUDY_SCHEMA_VERSION,
};
pub use thresholds::{
    periodic_threshold_value, threshold_entry, thresholds_value, COPIES_KEY, THRESHOLDS_KEY,
};
pub use wait_mode::WaitMode;
pub use wake_up::WakeUp;
pub use write::{
    target_of, write_atomically, write_atomically_with, write_json, write_result, Target,
};
