//! The envelope every result document opens with, declared once.
//!
//! Each kind (sweep, NPB, study, collective, matrix) starts with the same
//! fields: `kind`, `schema_version`, `tool_version`, `complete`,
//! `incomplete_reason`, `command_line`, `started_at`, `wall_s`. They were
//! copied into five structs; [`result_document!`] now declares them. A
//! shared struct with `#[serde(flatten)]` would say it with less macro,
//! but serde's `flatten` does not work with `deny_unknown_fields` (the
//! outer struct can no longer tell an unknown field from one of the
//! flattened struct's), and every result must reject unknown fields. The
//! macro keeps the fields at the top level and in the order files have
//! always had, so what is written does not change.
//!
//! The fields whose meaning differs by kind (what `complete` promises,
//! what `wall_s` times, the version constant) take their doc comments and
//! serde attributes from the caller, so the generated schema describes
//! each kind in its own words.

/// Declare a result struct: `envelope { kind, schema_version,
/// tool_version, complete, wall_s }`, each with its doc comment and
/// attributes, declares the envelope's fields (`incomplete_reason`,
/// `command_line` and `started_at` have the same meaning everywhere and
/// are added between `complete` and `wall_s`); the fields after it are the
/// kind's own.
macro_rules! result_document {
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            envelope {
                $(#[$kind:meta])* kind,
                $(#[$version:meta])* schema_version,
                $(#[$tool:meta])* tool_version,
                $(#[$complete:meta])* complete,
                $(#[$wall:meta])* wall_s,
            }
            $($fields:tt)*
        }
    ) => {
        $(#[$meta])*
        pub struct $name {
            $(#[$kind])*
            pub kind: String,
            $(#[$version])*
            pub schema_version: u32,
            $(#[$tool])*
            pub tool_version: String,
            $(#[$complete])*
            pub complete: bool,
            /// Why it is incomplete, when it is.
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub incomplete_reason: Option<String>,
            /// The command line, argument by argument.
            pub command_line: Vec<String>,
            /// Start time, RFC 3339 in UTC.
            pub started_at: String,
            $(#[$wall])*
            pub wall_s: f64,
            $($fields)*
        }
    };
}

pub(super) use result_document;
