//! Atomic writing of result files.

use std::io::Write;
use std::path::Path;

use anyhow::{Context, Result};

use super::SweepResult;

/// Write `bytes` to `path` atomically: a temporary file beside it, synced,
/// then renamed over `path`. A reader never sees a half-written file, and a
/// full disk leaves the old file (if any) intact and returns an error.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    write_atomically_with(path, |w| w.write_all(bytes))
}

/// [`write_atomically`] for a document written piece by piece by `fill`
/// (a matrix streamed from its cell file), never whole in memory.
pub fn write_atomically_with(
    path: &Path,
    fill: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    std::fs::create_dir_all(dir)
        .with_context(|| format!("cannot create directory {}", dir.display()))?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir)
        .with_context(|| format!("cannot create a temporary file in {}", dir.display()))?;
    let mut perms = tmp.as_file().metadata()?.permissions();
    let written = {
        let mut w = std::io::BufWriter::new(tmp.as_file_mut());
        fill(&mut w).and_then(|_| w.flush())
    };
    written
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
