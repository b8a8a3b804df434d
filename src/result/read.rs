//! Reading result files, which may come from anywhere: every failure is an
//! error naming the file and, where there is one, the field (a JSON path
//! such as `points[3].median_ns`), never a panic or an unbounded allocation.
//!
//! Files larger than [`MAX_RESULT_BYTES`] are refused before they are read.
//! Documents are decoded straight from the text (not through an untyped
//! JSON value) so that serde sees duplicated fields and rejects them, and
//! serde_json's recursion limit turns deep nesting into an error. Sweep
//! results are then checked for values no measurement can produce
//! ([`super::validate`]): negative or non-finite times, sizes out of order.

use std::path::Path;

use anyhow::{bail, Context, Result};
use serde::de::DeserializeOwned;

use super::npb::NPB_OLDEST_SCHEMA_VERSION;
use super::{
    NpbResult, SweepResult, NPB_KIND, NPB_SCHEMA_VERSION, OLDEST_SCHEMA_VERSION, SCHEMA_VERSION,
    SWEEP_KIND,
};

/// Largest result file read, bytes. A full `wulf run` writes a few
/// megabytes; a matrix of 64 nodes about twenty.
pub const MAX_RESULT_BYTES: u64 = 256 << 20;

/// The text of a result file, refusing files too large to be one.
pub fn read_text(path: &Path) -> Result<String> {
    use std::io::Read;
    let file =
        std::fs::File::open(path).with_context(|| format!("cannot read {}", path.display()))?;
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    if len > MAX_RESULT_BYTES {
        bail!(
            "{} is {} MiB, larger than any wulf result ({} MiB at most)",
            path.display(),
            len >> 20,
            MAX_RESULT_BYTES >> 20
        );
    }
    let mut text = String::new();
    // take() also bounds a file that grows while it is read (or a FIFO).
    file.take(MAX_RESULT_BYTES + 1)
        .read_to_string(&mut text)
        .with_context(|| format!("cannot read {} (not UTF-8 text?)", path.display()))?;
    if text.len() as u64 > MAX_RESULT_BYTES {
        bail!("{} is larger than any wulf result", path.display());
    }
    Ok(text)
}

/// The top-level fields that say what a document is, read leniently.
#[derive(serde::Deserialize)]
pub(super) struct Header {
    /// `kind`, any JSON value (a string in a wulf file).
    pub(super) kind: Option<serde_json::Value>,
    /// `schema_version`, any JSON value (an integer in a wulf file).
    pub(super) schema_version: Option<serde_json::Value>,
}

impl Header {
    /// The kind as a string, when it is one.
    pub(super) fn kind_str(&self) -> Option<&str> {
        self.kind.as_ref().and_then(|k| k.as_str())
    }
}

/// The header of the document in `text`, any other field skipped.
/// Every reader of a whole document starts here, so the text's bounds
/// (`super::bounds`) are checked here too, before anything is decoded.
pub(super) fn header(text: &str, origin: &str) -> Result<Header> {
    super::bounds::check(text).map_err(|e| anyhow::anyhow!("{origin} is refused at {e}"))?;
    serde_json::from_str(text).with_context(|| format!("{origin} is not a single JSON object"))
}

/// Decode `text` as `T`, naming the offending field in the error.
fn decode<T: DeserializeOwned>(text: &str, origin: &str, what: &str) -> Result<T> {
    let mut de = serde_json::Deserializer::from_str(text);
    let value: T = serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let path = e.path().to_string();
        let at = if path == "." {
            String::new()
        } else {
            format!(" at {path}")
        };
        anyhow::anyhow!("{origin} is not a valid {what}{at}: {}", e.inner())
    })?;
    de.end()
        .with_context(|| format!("{origin} has data after the {what}"))?;
    Ok(value)
}

/// Parse and check a sweep result from its text; `origin` names it in
/// errors (a path). The reader behind `wulf report` and `wulf compare`.
pub fn parse_result(text: &str, origin: &str) -> Result<SweepResult> {
    let h = header(text, origin)?;
    sweep_from(&h, text, origin)
}

/// The sweep result in `text`, whose header `h` was read already.
pub(super) fn sweep_from(h: &Header, text: &str, origin: &str) -> Result<SweepResult> {
    match h.schema_version.as_ref().and_then(|v| v.as_u64()) {
        Some(v) if (OLDEST_SCHEMA_VERSION as u64..=SCHEMA_VERSION as u64).contains(&v) => {}
        Some(v) => bail!(
            "{origin} has result schema version {v}; this wulf reads versions \
             {OLDEST_SCHEMA_VERSION} to {SCHEMA_VERSION}"
        ),
        None => bail!("{origin} is not a wulf result (no schema_version)"),
    }
    // Sweeps named no kind before version 4: no kind is a sweep.
    match &h.kind {
        None => {}
        Some(k) if k.as_str() == Some(SWEEP_KIND) => {}
        Some(kind) => bail!("{origin} is a wulf {kind} result, not a sweep result"),
    }
    let result: SweepResult = decode(text, origin, "wulf sweep result")?;
    super::validate::sweep(&result).map_err(|e| anyhow::anyhow!("{origin}: {e}"))?;
    Ok(result)
}

/// Read and check a sweep result file.
pub fn read_result(path: &Path) -> Result<SweepResult> {
    parse_result(&read_text(path)?, &path.display().to_string())
}

/// Read and validate an NPB result file (`kind: "npb"`).
pub fn read_npb_result(path: &Path) -> Result<NpbResult> {
    let text = read_text(path)?;
    let origin = path.display().to_string();
    npb_from(&header(&text, &origin)?, &text, &origin)
}

/// The NPB result in `text`, whose header `h` was read already.
pub(super) fn npb_from(h: &Header, text: &str, origin: &str) -> Result<NpbResult> {
    if h.kind.as_ref().and_then(|k| k.as_str()) != Some(NPB_KIND) {
        bail!("{origin} is not a wulf NPB result (kind is not \"npb\")");
    }
    match h.schema_version.as_ref().and_then(|v| v.as_u64()) {
        Some(v) if (NPB_OLDEST_SCHEMA_VERSION as u64..=NPB_SCHEMA_VERSION as u64).contains(&v) => {}
        v => bail!(
            "{origin} has NPB result schema version {v:?}; this wulf reads versions \
             {NPB_OLDEST_SCHEMA_VERSION} to {NPB_SCHEMA_VERSION}"
        ),
    }
    let result: NpbResult = decode(text, origin, "wulf NPB result")?;
    super::validate::npb(&result).map_err(|e| anyhow::anyhow!("{origin}: {e}"))?;
    Ok(result)
}

/// Whether the file at `path` is an NPB result rather than a sweep result
/// (false when it cannot be read: the sweep reader then says why).
pub fn is_npb_result(path: &Path) -> bool {
    kind_of(path).as_deref() == Some(NPB_KIND)
}

/// Read a result file of a kind whose schema version must be exactly
/// `version`, rejecting unknown fields (`what` names the kind in errors).
pub fn read_versioned<T: DeserializeOwned>(path: &Path, what: &str, version: u32) -> Result<T> {
    read_versions(path, what, version..=version)
}

/// Read a result file of a kind whose schema version must be one of
/// `versions` (the newer ones only add optional fields), rejecting unknown
/// fields (`what` names the kind in errors).
pub fn read_versions<T: DeserializeOwned>(
    path: &Path,
    what: &str,
    versions: std::ops::RangeInclusive<u32>,
) -> Result<T> {
    let text = read_text(path)?;
    let origin = path.display().to_string();
    versioned_from(&header(&text, &origin)?, &text, &origin, what, versions)
}

/// [`read_versions`] of `text`, whose header `h` was read already.
pub(super) fn versioned_from<T: DeserializeOwned>(
    h: &Header,
    text: &str,
    origin: &str,
    what: &str,
    versions: std::ops::RangeInclusive<u32>,
) -> Result<T> {
    let (oldest, newest) = (*versions.start(), *versions.end());
    match h.schema_version.as_ref().and_then(|v| v.as_u64()) {
        Some(v) if (oldest as u64..=newest as u64).contains(&v) => {}
        v if oldest == newest => {
            bail!("{origin} has {what} schema version {v:?}; this wulf reads version {newest}")
        }
        v => bail!(
            "{origin} has {what} schema version {v:?}; this wulf reads versions {oldest} to {newest}"
        ),
    }
    decode(text, origin, &format!("wulf {what} result"))
}

/// The `kind` field of a JSON result file, if it has one.
pub fn kind_of(path: &Path) -> Option<String> {
    let text = read_text(path).ok()?;
    let h: Header = serde_json::from_str(&text).ok()?;
    h.kind?.as_str().map(str::to_string)
}
