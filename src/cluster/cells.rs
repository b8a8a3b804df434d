//! The cell file of a matrix: every cell appended as one JSON line the
//! moment it is measured, so a matrix of a thousand nodes never holds its
//! cells' trials in memory, and a coordinator that is killed leaves every
//! cell measured so far readable on disk.
//!
//! The file (`NAME.cells.jsonl` beside the result `NAME.json`) starts
//! with a header line ([`CellsHeader`]: kind `matrix-cells`, its version,
//! the node names the cells' indices refer to), then one
//! [`MatrixCell`] per line, in the order measured. Each line is written
//! whole and flushed to the kernel before the next cell is ordered; a
//! line cut short by a crash is the last one and is skipped on reading.
//! At the end of a run the cells are streamed from it into the matrix
//! result (written atomically) and the file is removed; an interrupted
//! run does the same with what it has (`complete: false`).

use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

use crate::result::matrix::{MatrixCell, MatrixResult};

/// The value of [`CellsHeader::kind`].
pub const CELLS_KIND: &str = "matrix-cells";

/// Version of the cell file's format (2: cells may carry the matrix
/// schema 2's `rate` and `alone_bandwidth`; version 1 is still read).
pub const CELLS_SCHEMA_VERSION: u32 = 2;

/// The first line of a cell file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CellsHeader {
    /// Always [`CELLS_KIND`].
    pub kind: String,
    /// [`CELLS_SCHEMA_VERSION`].
    pub schema_version: u32,
    /// Start time of the matrix, RFC 3339 in UTC.
    pub started_at: String,
    /// The nodes' names; cells refer to them by index.
    pub nodes: Vec<String>,
}

/// A cell file being written.
pub struct CellFile {
    path: PathBuf,
    file: Option<File>,
    /// Cells written so far.
    pub written: usize,
}

/// Where the cells of the result at `result` go: `NAME.cells.jsonl`
/// beside `NAME.json`.
pub fn cells_path(result: &Path) -> PathBuf {
    let stem = result.file_stem().unwrap_or_default().to_string_lossy();
    result.with_file_name(format!("{stem}.cells.jsonl"))
}

impl CellFile {
    /// A cell file at `path`, created when the nodes are known
    /// ([`CellFile::start`]).
    pub fn new(path: PathBuf) -> CellFile {
        CellFile {
            path,
            file: None,
            written: 0,
        }
    }

    /// Its path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Create the file (replacing an old one) and write its header.
    pub fn start(&mut self, started_at: &str, nodes: &[String]) -> Result<()> {
        if let Some(dir) = self.path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create directory {}", dir.display()))?;
        }
        let file = File::create(&self.path)
            .with_context(|| format!("cannot create {}", self.path.display()))?;
        self.file = Some(file);
        let header = CellsHeader {
            kind: CELLS_KIND.into(),
            schema_version: CELLS_SCHEMA_VERSION,
            started_at: started_at.into(),
            nodes: nodes.to_vec(),
        };
        self.line(&serde_json::to_vec(&header)?)
    }

    /// Append one cell (a whole line, handed to the kernel at once).
    pub fn push(&mut self, cell: &MatrixCell) -> Result<()> {
        self.line(&serde_json::to_vec(cell)?)?;
        self.written += 1;
        Ok(())
    }

    fn line(&mut self, json: &[u8]) -> Result<()> {
        let Some(file) = self.file.as_mut() else {
            bail!("the cell file {} was not started", self.path.display());
        };
        let mut line = Vec::with_capacity(json.len() + 1);
        line.extend_from_slice(json);
        line.push(b'\n');
        // One write per line: a crash cuts at most the last one.
        file.write_all(&line)
            .with_context(|| format!("cannot write {}", self.path.display()))
    }

    /// Every cell, streamed to `each` in the order written.
    pub fn for_each(&self, each: &mut dyn FnMut(&[u8]) -> std::io::Result<()>) -> Result<()> {
        let reader = BufReader::new(
            File::open(&self.path)
                .with_context(|| format!("cannot read {}", self.path.display()))?,
        );
        for line in reader.split(b'\n').skip(1) {
            each(&line?)?;
        }
        Ok(())
    }

    /// Remove the file (its cells are in the result now).
    pub fn remove(self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Read a cell file, also one whose writer was killed: the header and
/// every whole cell line; a last line cut short is left out.
pub fn read_cells(path: &Path) -> Result<(CellsHeader, Vec<MatrixCell>)> {
    let text = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    let mut lines = text.split(|&b| b == b'\n');
    let header: CellsHeader = serde_json::from_slice(lines.next().unwrap_or_default())
        .with_context(|| format!("{}: not a matrix cell file", path.display()))?;
    if header.kind != CELLS_KIND || !(1..=CELLS_SCHEMA_VERSION).contains(&header.schema_version) {
        bail!(
            "{}: {} version {}; this wulf reads {CELLS_KIND} versions 1 to {CELLS_SCHEMA_VERSION}",
            path.display(),
            header.kind,
            header.schema_version
        );
    }
    let ends_whole = text.last() == Some(&b'\n');
    let lines: Vec<&[u8]> = lines.filter(|l| !l.is_empty()).collect();
    let mut cells = Vec::with_capacity(lines.len());
    for (i, line) in lines.iter().enumerate() {
        match serde_json::from_slice::<MatrixCell>(line) {
            Ok(c) if c.from < header.nodes.len() && c.to < header.nodes.len() => cells.push(c),
            // A crash mid-write cuts the last line only.
            Err(_) if i + 1 == lines.len() && !ends_whole => {}
            Ok(_) => bail!("{}: cell {} names a node it has not", path.display(), i + 1),
            Err(e) => bail!("{}: cell {}: {e}", path.display(), i + 1),
        }
    }
    Ok((header, cells))
}

impl CellFile {
    /// Write `result` to `path` (atomically; `-`: standard output) with
    /// its cells streamed from this file in place of `result.cells`, so
    /// the trials of a large matrix are never all in memory at once.
    pub fn write_result(&self, path: &Path, result: &MatrixResult) -> Result<()> {
        let skeleton = MatrixResult {
            cells: Vec::new(),
            ..result.clone()
        };
        let text = serde_json::to_string_pretty(&skeleton)?;
        // Serde writes the fields in order, and a quote inside a string is
        // escaped, so this key occurs once, at the top level.
        let (before, after) = text
            .split_once(EMPTY_CELLS)
            .context("a matrix result without its cells list")?;
        let fill = |w: &mut dyn Write| -> std::io::Result<()> {
            w.write_all(before.as_bytes())?;
            w.write_all(b"\"cells\": [")?;
            let mut first = true;
            self.for_each(&mut |line| {
                w.write_all(if first { b"\n" } else { b",\n" })?;
                first = false;
                w.write_all(line)
            })
            .map_err(std::io::Error::other)?;
            w.write_all(b"]")?;
            w.write_all(after.as_bytes())?;
            w.write_all(b"\n")
        };
        if path.as_os_str() == "-" {
            let mut out = std::io::stdout().lock();
            return fill(&mut out).context("cannot write the matrix to standard output");
        }
        crate::result::write_atomically_with(path, fill)
    }
}

/// How serde_json's pretty printer writes an empty cell list.
const EMPTY_CELLS: &str = "\"cells\": []";

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(from: usize, to: usize) -> MatrixCell {
        MatrixCell {
            from,
            to,
            round: 0,
            latency: None,
            bandwidth: None,
            rate: None,
            alone_bandwidth: None,
            error: Some("test".into()),
            measure_s: 0.5,
            net: None,
            remeasure: false,
            intra_node: false,
            cut: false,
        }
    }

    #[test]
    fn a_cut_last_line_is_skipped_and_a_bad_file_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = cells_path(&dir.path().join("m.json"));
        assert!(path.ends_with("m.cells.jsonl"));
        let mut f = CellFile::new(path.clone());
        f.start("2026-01-01T00:00:00Z", &["a".into(), "b".into()])
            .unwrap();
        f.push(&cell(0, 1)).unwrap();
        f.push(&cell(1, 0)).unwrap();
        let (header, cells) = read_cells(&path).unwrap();
        assert_eq!((header.nodes.len(), cells.len()), (2, 2));
        // A kill in the middle of the last line.
        let text = std::fs::read(&path).unwrap();
        std::fs::write(&path, &text[..text.len() - 10]).unwrap();
        assert_eq!(read_cells(&path).unwrap().1, vec![cell(0, 1)]);
        // A cell naming a node the header has not.
        std::fs::write(
            &path,
            [
                &text[..],
                b"{\"from\":0,\"to\":5,\"round\":0,\"measure_s\":1.0}\n",
            ]
            .concat(),
        )
        .unwrap();
        assert!(read_cells(&path).is_err());
        std::fs::write(&path, b"{\"kind\":\"matrix\"}\n").unwrap();
        assert!(read_cells(&path).is_err());
    }
}
