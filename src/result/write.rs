//! Atomic reading and writing of result files.

use std::io::Write;
use std::path::Path;

use anyhow::{bail, Context, Result};

use super::npb::NPB_OLDEST_SCHEMA_VERSION;
use super::{NpbResult, SweepResult, NPB_KIND, NPB_SCHEMA_VERSION, SCHEMA_VERSION};

/// Write `bytes` to `path` atomically: a temporary file beside it, synced,
/// then renamed over `path`. A reader never sees a half-written file, and a
/// full disk leaves the old file (if any) intact and returns an error.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    std::fs::create_dir_all(dir)
        .with_context(|| format!("cannot create directory {}", dir.display()))?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir)
        .with_context(|| format!("cannot create a temporary file in {}", dir.display()))?;
    let mut perms = tmp.as_file().metadata()?.permissions();
    tmp.write_all(bytes)
        .and_then(|_| tmp.as_file().sync_all())
        .with_context(|| format!("cannot write {}", path.display()))?;
    // tempfile creates 0600 files; a result is not a secret.
    std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o644);
    tmp.as_file()
        .set_permissions(perms)
        .with_context(|| format!("cannot set permissions on {}", path.display()))?;
    tmp.persist(path)
        .with_context(|| format!("cannot rename the result into {}", path.display()))?;
    Ok(())
}

/// Serialise `result` as pretty JSON and write it atomically to `path`, or to
/// standard output when `path` is `-`.
pub fn write_result(path: &Path, result: &SweepResult) -> Result<()> {
    write_json(path, result)
}

/// Serialise any result document (sweep or NPB) as pretty JSON and write it
/// atomically to `path`, or to standard output when `path` is `-`.
pub fn write_json<T: serde::Serialize>(path: &Path, document: &T) -> Result<()> {
    let mut json = serde_json::to_vec_pretty(document)?;
    json.push(b'\n');
    if path.as_os_str() == "-" {
        std::io::stdout().write_all(&json)?;
        return Ok(());
    }
    write_atomically(path, &json)
}

/// Read and validate an NPB result file (`kind: "npb"`).
pub fn read_npb_result(path: &Path) -> Result<NpbResult> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let value: serde_json::Value =
        serde_json::from_str(&text).with_context(|| format!("{} is not JSON", path.display()))?;
    if value.get("kind").and_then(|k| k.as_str()) != Some(NPB_KIND) {
        bail!(
            "{} is not a wulf NPB result (kind is not \"npb\")",
            path.display()
        );
    }
    match value.get("schema_version").and_then(|v| v.as_u64()) {
        Some(v) if (NPB_OLDEST_SCHEMA_VERSION as u64..=NPB_SCHEMA_VERSION as u64).contains(&v) => {}
        v => bail!(
            "{} has NPB result schema version {v:?}; this wulf reads versions \
             {NPB_OLDEST_SCHEMA_VERSION} to {NPB_SCHEMA_VERSION}",
            path.display()
        ),
    }
    serde_json::from_value(value)
        .with_context(|| format!("{} does not match the NPB result schema", path.display()))
}

/// Whether the file at `path` is an NPB result rather than a sweep result
/// (false when it cannot be read: the sweep reader then says why).
pub fn is_npb_result(path: &Path) -> bool {
    std::fs::read_to_string(path)
        .ok()
        .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
        .is_some_and(|v| v.get("kind").and_then(|k| k.as_str()) == Some(NPB_KIND))
}

/// Read and validate a result file.
pub fn read_result(path: &Path) -> Result<SweepResult> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let value: serde_json::Value =
        serde_json::from_str(&text).with_context(|| format!("{} is not JSON", path.display()))?;
    match value.get("schema_version").and_then(|v| v.as_u64()) {
        Some(v) if v == SCHEMA_VERSION as u64 => {}
        Some(v) => bail!(
            "{} has result schema version {v}; this wulf reads version {SCHEMA_VERSION}",
            path.display()
        ),
        None => bail!(
            "{} is not a wulf result (no schema_version)",
            path.display()
        ),
    }
    serde_json::from_value(value)
        .with_context(|| format!("{} does not match the result schema", path.display()))
}

/// Read a result file of a kind whose schema version must be exactly
/// `version`, rejecting unknown fields (`what` names the kind in errors).
pub fn read_versioned<T: serde::de::DeserializeOwned>(
    path: &Path,
    what: &str,
    version: u32,
) -> Result<T> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let value: serde_json::Value =
        serde_json::from_str(&text).with_context(|| format!("{} is not JSON", path.display()))?;
    match value.get("schema_version").and_then(|v| v.as_u64()) {
        Some(v) if v == version as u64 => {}
        v => anyhow::bail!(
            "{} has {what} schema version {v:?}; this wulf reads version {version}",
            path.display()
        ),
    }
    serde_json::from_value(value)
        .with_context(|| format!("{} is not a valid wulf {what} result", path.display()))
}

/// The `kind` field of a JSON result file, if it has one.
pub fn kind_of(path: &Path) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
        .and_then(|v| v.get("kind").and_then(|k| k.as_str()).map(str::to_string))
}
