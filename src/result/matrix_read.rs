//! Reading matrix results, also those too large to read whole.
//!
//! A matrix file keeps every cell with its trials: about 1.7 KB a cell at
//! 17 trials a point (the lab fixture), so a few hundred nodes already
//! pass [`MAX_RESULT_BYTES`], the limit of every other result, and 1,000
//! nodes (999,000 cells) write gigabytes. Files up to that limit are read
//! whole, as every result is. Larger ones, up to [`MAX_MATRIX_BYTES`], are
//! parsed from a buffered reader, cell by cell, each cell's trials dropped
//! as soon as it is parsed (every figure `wulf report` draws is kept:
//! medians, intervals, counts), so neither the text nor the trials are
//! ever all in memory. The schema is checked the same way (unknown fields
//! rejected); the result says in a warning that its trials were left out.
//!
//! Reports need less still: [`read_matrix_figures`] keeps each cell as its
//! figures only ([`CellFigures`], 128 bytes), turned into them as it is
//! parsed when the file is large.

use std::cell::{Cell, RefCell};
use std::io::{BufReader, Read};
use std::path::Path;

use anyhow::{bail, Context, Result};
use serde::de::{Deserializer, SeqAccess, Visitor};

use super::matrix::{
    MatrixCell, MatrixResult, MATRIX_KIND, MATRIX_OLDEST_SCHEMA_VERSION, MATRIX_SCHEMA_VERSION,
};
use super::matrix_figures::{CellFigures, MatrixFigures};
use super::read::{header, kind_of, read_text, versioned_from, Header, MAX_RESULT_BYTES};

/// Largest matrix file read (streaming, without trials), bytes: 64 GiB,
/// far above 1,000 nodes' few gigabytes, below what a disk full of
/// garbage would make us parse.
pub const MAX_MATRIX_BYTES: u64 = 64 << 30;

/// Most cells a matrix file may hold: 2,048 nodes' (about 4.2 million),
/// so that a hostile file of tiny cells cannot make the reader hold
/// billions of them.
pub const MAX_MATRIX_CELLS: usize = 2048 * 2047;

/// Longest single value (a string, a number) of a matrix file read
/// streaming, bytes: the parser holds a value whole while it reads it, so a
/// file of one 600 MB string (or a number of as many digits) would be held
/// whole however the rest is streamed. The longest real one is a command
/// line or a warning, a few kilobytes.
pub const MAX_VALUE_BYTES: usize = 1 << 20;

/// What [`cells`] keeps of each cell while a large file is parsed.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Lean {
    /// Everything (a file read whole).
    Whole,
    /// The cell without its trials.
    WithoutTrials,
    /// Only its figures, collected in [`FIGURES`]; `cells` stays empty.
    Figures,
}

thread_local! {
    /// Set while a large file is parsed (see [`Lean`]).
    static LEAN: Cell<Lean> = const { Cell::new(Lean::Whole) };
    /// The figures of the cells parsed with [`Lean::Figures`].
    static FIGURES: RefCell<Vec<CellFigures>> = const { RefCell::new(Vec::new()) };
}

/// Whether the file at `path` is a matrix result.
pub fn is_matrix_result(path: &Path) -> bool {
    match std::fs::metadata(path).map(|m| m.len()) {
        Ok(len) if is_streamed_size(len) => streamed_kind(path).as_deref() == Some(MATRIX_KIND),
        _ => kind_of(path).as_deref() == Some(MATRIX_KIND),
    }
}

/// Read and validate a matrix result (see the module's doc for files
/// larger than [`MAX_RESULT_BYTES`]).
pub fn read_matrix_result(path: &Path) -> Result<MatrixResult> {
    read_matrix_result_within(path, MAX_RESULT_BYTES)
}

/// [`read_matrix_result`] reading files of up to `whole_bytes` whole (with
/// their trials) and larger ones streaming, without trials.
pub fn read_matrix_result_within(path: &Path, whole_bytes: u64) -> Result<MatrixResult> {
    let len = std::fs::metadata(path)
        .with_context(|| format!("cannot read {}", path.display()))?
        .len();
    if len <= whole_bytes.min(MAX_RESULT_BYTES) {
        let text = read_text(path)?;
        let origin = path.display().to_string();
        return matrix_from(&header(&text, &origin)?, &text, &origin);
    }
    read_streaming(path, len, Lean::WithoutTrials)
}

/// The matrix result in `text` (a file read whole), whose header `h` was
/// read already.
pub(super) fn matrix_from(h: &Header, text: &str, origin: &str) -> Result<MatrixResult> {
    let r: MatrixResult = versioned_from(
        h,
        text,
        origin,
        "matrix",
        MATRIX_OLDEST_SCHEMA_VERSION..=MATRIX_SCHEMA_VERSION,
    )?;
    super::validate::matrix(&r).map_err(|e| anyhow::anyhow!("{origin}: {e}"))?;
    Ok(r)
}

/// Whether the file at `path` is too large to read whole yet small enough
/// to be a matrix read streaming (see the module's doc).
pub(super) fn is_streamed_size(len: u64) -> bool {
    len > MAX_RESULT_BYTES && len <= MAX_MATRIX_BYTES
}

/// A matrix file too large to read whole ([`is_streamed_size`]), as
/// figures, or `None` when its `kind` is not `matrix` (the caller then
/// refuses it as too large).
pub(super) fn streamed_figures(path: &Path) -> Option<Result<MatrixFigures>> {
    (streamed_kind(path).as_deref() == Some(MATRIX_KIND))
        .then(|| read_matrix_figures_within(path, MAX_RESULT_BYTES))
}

/// Read and validate a matrix result as figures (see the module's doc):
/// what reports hold of it.
pub fn read_matrix_figures(path: &Path) -> Result<MatrixFigures> {
    read_matrix_figures_within(path, MAX_RESULT_BYTES)
}

/// [`read_matrix_figures`] reading files of up to `whole_bytes` whole and
/// larger ones streaming, each cell turned into its figures as it is parsed.
pub fn read_matrix_figures_within(path: &Path, whole_bytes: u64) -> Result<MatrixFigures> {
    let len = std::fs::metadata(path)
        .with_context(|| format!("cannot read {}", path.display()))?
        .len();
    if len <= whole_bytes.min(MAX_RESULT_BYTES) {
        return read_matrix_result_within(path, whole_bytes).map(MatrixFigures::from);
    }
    let result = read_streaming(path, len, Lean::Figures);
    // Taken also after a failed parse: nothing is left for the next file.
    let figures = FIGURES.with(|f| std::mem::take(&mut *f.borrow_mut()));
    Ok(MatrixFigures {
        result: result?,
        figures,
    })
}

/// Parse the `len`-byte matrix file at `path` from a reader, keeping of
/// each cell what `lean` says.
fn read_streaming(path: &Path, len: u64, lean: Lean) -> Result<MatrixResult> {
    if len > MAX_MATRIX_BYTES {
        bail!(
            "{} is {} GiB, larger than any wulf matrix ({} GiB at most)",
            path.display(),
            len >> 30,
            MAX_MATRIX_BYTES >> 30
        );
    }
    let origin = path.display().to_string();
    let file = std::fs::File::open(path).with_context(|| format!("cannot read {origin}"))?;
    // take() bounds a file that grows while it is read.
    let reader = BufReader::with_capacity(
        1 << 20,
        BoundedValues::new(StopOnSignal(file.take(MAX_MATRIX_BYTES + 1))),
    );
    let mut de = serde_json::Deserializer::from_reader(reader);
    let parsed = {
        let _flag = LeanWhile::set(lean);
        serde_path_to_error::deserialize::<_, MatrixResult>(&mut de)
    };
    let mut r = parsed.map_err(|e| {
        anyhow::anyhow!(
            "{origin} is not a valid wulf matrix result at {}: {}",
            e.path(),
            e.inner()
        )
    })?;
    de.end()
        .with_context(|| format!("{origin} has data after the matrix"))?;
    if r.kind != MATRIX_KIND {
        bail!("{origin} is a {} result, not a matrix", r.kind);
    }
    if !(MATRIX_OLDEST_SCHEMA_VERSION..=MATRIX_SCHEMA_VERSION).contains(&r.schema_version) {
        bail!(
            "{origin} has matrix schema version {}; this wulf reads versions \
             {MATRIX_OLDEST_SCHEMA_VERSION} to {MATRIX_SCHEMA_VERSION}",
            r.schema_version
        );
    }
    super::validate::matrix(&r).map_err(|e| anyhow::anyhow!("{origin}: {e}"))?;
    r.warnings.push(format!(
        "read without the cells' trials ({} MiB file): medians, intervals and counts are whole",
        len >> 20
    ));
    Ok(r)
}

/// The `kind` of a large file, parsed from a reader (every other field
/// skipped unparsed into values).
fn streamed_kind(path: &Path) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Kind {
        kind: Option<String>,
    }
    let file = std::fs::File::open(path).ok()?;
    // Not bounded by value: the other fields are skipped, never held
    // (serde_json reads an ignored string without keeping it), and the
    // read that follows names a value too long.
    let reader = BufReader::with_capacity(1 << 20, StopOnSignal(file.take(MAX_MATRIX_BYTES + 1)));
    let k: Kind = serde_json::from_reader(reader).ok()?;
    k.kind
}

/// A reader that fails once the user asked to stop (Ctrl-C, SIGTERM):
/// reading a large matrix through takes a minute, and the first signal
/// must end it (the command then says it was interrupted). Not
/// `ErrorKind::Interrupted`, which readers retry.
struct StopOnSignal<R>(R);

impl<R: Read> Read for StopOnSignal<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if crate::exec::interrupted() {
            return Err(std::io::Error::other("interrupted"));
        }
        self.0.read(buf)
    }
}

/// A reader of JSON text that fails once a single value (a string from
/// quote to quote, or a run of other characters between the structural
/// ones: a number, a literal) passes [`MAX_VALUE_BYTES`]: what a
/// streaming parse holds at once stays bounded too.
struct BoundedValues<R> {
    inner: R,
    /// Inside a string.
    in_string: bool,
    /// The previous byte was a backslash inside a string.
    escaped: bool,
    /// Bytes of the value being read.
    run_bytes: usize,
}

impl<R> BoundedValues<R> {
    fn new(inner: R) -> BoundedValues<R> {
        BoundedValues {
            inner,
            in_string: false,
            escaped: false,
            run_bytes: 0,
        }
    }

    /// Follow one byte; false when the value has become too long.
    fn step(&mut self, b: u8) -> bool {
        if self.in_string {
            if self.escaped {
                self.escaped = false;
            } else if b == b'\\' {
                self.escaped = true;
            } else if b == b'"' {
                self.in_string = false;
                self.run_bytes = 0;
                return true;
            }
            self.run_bytes += 1;
        } else {
            match b {
                b'"' => {
                    self.in_string = true;
                    self.run_bytes = 0;
                }
                b'{' | b'}' | b'[' | b']' | b',' | b':' | b' ' | b'\n' | b'\r' | b'\t' => {
                    self.run_bytes = 0
                }
                _ => self.run_bytes += 1,
            }
        }
        self.run_bytes <= MAX_VALUE_BYTES
    }
}

impl<R: Read> Read for BoundedValues<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        for &b in &buf[..n] {
            if !self.step(b) {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    format!(
                        "a single value longer than {MAX_VALUE_BYTES} bytes: not a wulf matrix"
                    ),
                ));
            }
        }
        Ok(n)
    }
}

/// Sets [`LEAN`] while it lives (also when parsing fails).
struct LeanWhile;

impl LeanWhile {
    fn set(lean: Lean) -> LeanWhile {
        LEAN.with(|f| f.set(lean));
        FIGURES.with(|f| f.borrow_mut().clear());
        LeanWhile
    }
}

impl Drop for LeanWhile {
    fn drop(&mut self) {
        LEAN.with(|f| f.set(Lean::Whole));
    }
}

/// `cells` of a matrix result, cell by cell; while [`LEAN`] is set each
/// cell's trials are dropped as soon as it is parsed, or the cell is
/// turned into its figures.
pub(super) fn cells<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<MatrixCell>, D::Error> {
    struct Cells;
    impl<'de> Visitor<'de> for Cells {
        type Value = Vec<MatrixCell>;

        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a list of matrix cells")
        }

        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            let lean = LEAN.with(Cell::get);
            // A hint from the input is not trusted beyond a bound.
            let mut out = Vec::with_capacity(if lean == Lean::Figures {
                0
            } else {
                seq.size_hint().unwrap_or(0).min(1 << 16)
            });
            let mut count = 0usize;
            while let Some(mut c) = seq.next_element::<MatrixCell>()? {
                if count == MAX_MATRIX_CELLS {
                    return Err(serde::de::Error::custom(format!(
                        "more than {MAX_MATRIX_CELLS} cells (2,048 nodes'): not a wulf matrix"
                    )));
                }
                count += 1;
                if lean == Lean::Figures {
                    FIGURES.with(|f| f.borrow_mut().push(CellFigures::from(&c)));
                    continue;
                }
                if lean == Lean::WithoutTrials {
                    for p in [
                        c.latency.as_mut(),
                        c.bandwidth.as_mut(),
                        c.rate.as_mut(),
                        c.alone_bandwidth.as_mut(),
                    ]
                    .into_iter()
                    .flatten()
                    {
                        p.trials_ns = Vec::new();
                    }
                }
                out.push(c);
            }
            Ok(out)
        }
    }
    d.deserialize_seq(Cells)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture() -> serde_json::Value {
        let path =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/matrix/lab-fe-node3.json");
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
    }

    /// A streamed file of one enormous string or number is refused once
    /// the value passes the bound, not held whole (the issue's 600 MB
    /// string); values up to the bound, escapes included, are read.
    #[test]
    fn a_value_beyond_the_bound_is_refused_while_streaming() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.json");
        let mut v = fixture();
        // Up to the bound (escaped quotes do not end it early): read.
        let fits = format!(
            "{}\"{}",
            "a".repeat(1000),
            "b".repeat(MAX_VALUE_BYTES - 2000)
        );
        v["warnings"] = serde_json::json!([fits]);
        std::fs::write(&path, v.to_string()).unwrap();
        read_matrix_result_within(&path, 0).unwrap();
        // One string past it, then one number.
        v["warnings"] = serde_json::json!(["x".repeat(MAX_VALUE_BYTES + 1)]);
        std::fs::write(&path, v.to_string()).unwrap();
        let e = format!("{:#}", read_matrix_result_within(&path, 0).unwrap_err());
        assert!(e.contains("a single value longer than"), "{e}");
        assert!(read_matrix_figures_within(&path, 0).is_err());
        v["warnings"] = serde_json::json!([]);
        v["cells"][0]["from"] = "NUMBER".into();
        let text = v.to_string().replacen(
            "\"NUMBER\"",
            &format!("1{}", "0".repeat(MAX_VALUE_BYTES + 1)),
            1,
        );
        std::fs::write(&path, text).unwrap();
        let e = format!("{:#}", read_matrix_result_within(&path, 0).unwrap_err());
        assert!(e.contains("a single value longer than"), "{e}");
    }

    #[test]
    fn the_value_bound_follows_strings_escapes_and_tokens() {
        let mut b = BoundedValues::new(std::io::empty());
        for &c in br#"{"a\"b": [1, 2.5e3, true], "c": "}"}"# {
            assert!(b.step(c));
        }
        assert!(!b.in_string && b.run_bytes == 0);
    }
}
