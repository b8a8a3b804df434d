//! The JSON Schema of every result kind, generated from the serde types
//! (schemars), so that the schema cannot drift from what wulf reads: the
//! files under `docs/schema/` are snapshots of [`schemas`], compared by a
//! test (`tests/result_json_schema.rs`), and any change to the on-disk
//! format shows as a reviewed diff of them.
//!
//! A few fields hold types defined outside this module (the machine
//! description in `sys`, the load records in `load`). They are described
//! here by name and by their section of `docs/results-schema.md`, without
//! their fields: deriving the schema on them belongs to their own modules.

use std::borrow::Cow;

use schemars::{JsonSchema, Schema, SchemaGenerator};

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
    ]
}

/// A schema for a type outside the result module: its name and where
/// docs/results-schema.md describes it, any value accepted.
macro_rules! described_elsewhere {
    ($($(#[$doc:meta])* $name:ident => $rust:literal, $section:literal;)*) => {$(
        $(#[$doc])*
        pub(crate) struct $name;

        impl JsonSchema for $name {
            fn schema_name() -> Cow<'static, str> {
                stringify!($name).into()
            }

            fn json_schema(_: &mut SchemaGenerator) -> Schema {
                schemars::json_schema!({
                    "description": concat!(
                        "`", $rust, "`: fields described in docs/results-schema.md, ",
                        $section, " (its schema is not generated yet)"
                    )
                })
            }
        }
    )*};
}

described_elsewhere! {
    /// `crate::sys::Host`, the machine description.
    Host => "crate::sys::Host", "`host`";
    /// `crate::sys::LinkLimit`, a link's goodput limit.
    LinkLimit => "crate::sys::LinkLimit", "`link`";
    /// `crate::sys::Framing`, the framing at the bottleneck.
    Framing => "crate::sys::Framing", "`link`";
    /// `crate::load::LoadRecord`, one background load.
    LoadRecord => "crate::load::LoadRecord", "`conditions`";
    /// `crate::load::soaker::Calibration`, the soakers' calibration.
    Calibration => "crate::load::soaker::Calibration", "`conditions`";
    /// `crate::load::kernel::KernelBaseline`, the whole-cost background.
    KernelBaseline => "crate::load::kernel::KernelBaseline", "`conditions`";
    /// `crate::load::whole::WholeCpu`, a whole-machine CPU cost.
    WholeCpu => "crate::load::whole::WholeCpu", "`points[]` (`cpu_whole`)";
}
