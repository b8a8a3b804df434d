//! The JSON Schema of every result kind, generated from the serde types
//! (schemars), so that the schema cannot drift from what wulf reads: the
//! files under `docs/schema/` are snapshots of [`schemas`], compared by a
//! test (`tests/fast/result_schema.rs`), and any change to the on-disk
//! format shows as a reviewed diff of them.
//!
//! Types a result holds from lower modules (the machine description in
//! `sys`, the load records and CPU costs in `load`) derive their schema
//! where they are defined, so they are described field by field too.

use schemars::Schema;

use super::collective::{CollectiveResult, COLLECTIVE_KIND};
use super::matrix::{MatrixResult, MATRIX_KIND};
use super::{NpbResult, StudyResult, SweepResult, NPB_KIND, STUDY_KIND, SWEEP_KIND};

/// The schema of each result kind, by the value of its `kind` field.
pub fn schemas() -> Vec<(&'static str, Schema)> {
    vec![
        (SWEEP_KIND, schemars::schema_for!(SweepResult)),
        (NPB_KIND, schemars::schema_for!(NpbResult)),
        (MATRIX_KIND, schemars::schema_for!(MatrixResult)),
        (COLLECTIVE_KIND, schemars::schema_for!(CollectiveResult)),
        (STUDY_KIND, schemars::schema_for!(StudyResult)),
        (
            super::hpl::HPL_KIND,
            schemars::schema_for!(super::hpl::HplResult),
        ),
    ]
}
