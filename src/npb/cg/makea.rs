//! NPB CG's random sparse symmetric matrix, generated as NPB's `makea`
//! does (spec: "CG"; its construction must be reproduced exactly, or zeta
//! does not verify).
//!
//! The matrix is a weighted sum of outer products: for each `i` in
//! `0..na`, a random sparse vector `v_i` of `nonzer` distinct positions
//! (plus position `i` itself, set to 0.5) contributes
//! `size_i * v_i v_i^T`, with `size_i = rcond^(i / na)`; the diagonal entry
//! `(i, i)` of the `i`-th product also gets `rcond - shift`. Entries that
//! several products touch are summed in the order of generation.
//!
//! Every rank generates every vector (a few draws each, cheap) and keeps
//! only the entries of its block of rows and columns, so the random
//! stream is consumed exactly as in a serial run whatever the grid.

use std::ops::Range;

use crate::npb::rng::{randlc, MULTIPLIER, SEED_MG};

/// Condition number bound of every class (NPB's `RCOND`).
pub const RCOND: f64 = 0.1;

/// A block of the matrix in compressed sparse rows, columns counted from
/// the start of the block's column range.
#[derive(Debug, Clone, PartialEq)]
pub struct Csr {
    /// `starts[r]..starts[r + 1]`: the entries of local row `r`.
    pub starts: Vec<usize>,
    /// Column of each entry, relative to the block's first column.
    pub cols: Vec<u32>,
    /// Value of each entry.
    pub values: Vec<f64>,
}

/// One generated sparse vector: positions (0-based) and values.
struct SparseVector {
    positions: Vec<usize>,
    values: Vec<f64>,
}

/// NPB's generator state for the matrix, after its one discarded draw.
struct Stream {
    state: u64,
    /// Smallest power of two not below `na` (at least 2): positions are
    /// drawn in `[0, pow2)` and those past `na` are redrawn.
    pow2: usize,
}

impl Stream {
    fn new(na: usize) -> Stream {
        let mut state = SEED_MG;
        // NPB draws once (its initial "zeta") before building the matrix.
        randlc(&mut state, MULTIPLIER);
        Stream {
            state,
            pow2: na.next_power_of_two().max(2),
        }
    }

    /// NPB's `sprnvc`: `nonzer` distinct positions in `[0, na)`, each with
    /// a value; a draw is a (value, position) pair, repeated positions and
    /// positions past `na` are drawn again.
    fn sparse_vector(&mut self, na: usize, nonzer: usize, out: &mut SparseVector) {
        out.positions.clear();
        out.values.clear();
        while out.positions.len() < nonzer {
            let value = randlc(&mut self.state, MULTIPLIER);
            let where_ = randlc(&mut self.state, MULTIPLIER);
            let position = (self.pow2 as f64 * where_) as usize;
            if position >= na || out.positions.contains(&position) {
                continue;
            }
            out.positions.push(position);
            out.values.push(value);
        }
    }
}

/// NPB's `vecset`: sets position `i` of the vector to `value`, appending
/// it when absent.
fn set_element(v: &mut SparseVector, i: usize, value: f64) {
    match v.positions.iter().position(|&p| p == i) {
        Some(k) => v.values[k] = value,
        None => {
            v.positions.push(i);
            v.values.push(value);
        }
    }
}

/// The entries of rows `rows` and columns `cols` of the class's matrix
/// (`na` rows, `nonzer` random positions per vector, diagonal shift
/// `shift`).
pub fn make_matrix(
    na: usize,
    nonzer: usize,
    shift: f64,
    rows: Range<usize>,
    cols: Range<usize>,
) -> Csr {
    let mut stream = Stream::new(na);
    let mut v = SparseVector {
        positions: Vec::with_capacity(nonzer + 1),
        values: Vec::with_capacity(nonzer + 1),
    };
    let vectors: Vec<SparseVector> = (0..na)
        .map(|i| {
            stream.sparse_vector(na, nonzer, &mut v);
            set_element(&mut v, i, 0.5);
            SparseVector {
                positions: v.positions.clone(),
                values: v.values.clone(),
            }
        })
        .collect();

    // Entries per local row (an upper bound: duplicates merge later), so
    // each row's contributions can be laid out in generation order.
    let local_rows = rows.len();
    let mut starts = vec![0usize; local_rows + 1];
    for v in &vectors {
        let in_cols = v.positions.iter().filter(|p| cols.contains(p)).count();
        for &p in v.positions.iter().filter(|p| rows.contains(p)) {
            starts[p - rows.start + 1] += in_cols;
        }
    }
    for r in 0..local_rows {
        starts[r + 1] += starts[r];
    }
    let total = starts[local_rows];
    let mut fill = starts.clone();
    let mut raw: Vec<(u32, f64)> = vec![(0, 0.0); total];
    let ratio = RCOND.powf(1.0 / na as f64);
    let mut size = 1.0;
    for (i, v) in vectors.iter().enumerate() {
        for (&row, &row_value) in v.positions.iter().zip(&v.values) {
            if !rows.contains(&row) {
                continue;
            }
            let scale = size * row_value;
            for (&col, &col_value) in v.positions.iter().zip(&v.values) {
                if !cols.contains(&col) {
                    continue;
                }
                let mut value = col_value * scale;
                if col == row && row == i {
                    value = value + RCOND - shift;
                }
                let slot = &mut fill[row - rows.start];
                raw[*slot] = ((col - cols.start) as u32, value);
                *slot += 1;
            }
        }
        size *= ratio;
    }

    // Each row sorted by column (stable: duplicates keep their order of
    // generation) and duplicates summed in that order, as NPB's `sparse`.
    let mut out = Csr {
        starts: Vec::with_capacity(local_rows + 1),
        cols: Vec::with_capacity(total),
        values: Vec::with_capacity(total),
    };
    out.starts.push(0);
    for r in 0..local_rows {
        let row = &mut raw[starts[r]..starts[r + 1]];
        row.sort_by_key(|&(c, _)| c);
        for &(c, value) in row.iter() {
            if out.cols.len() > out.starts[r] && out.cols.last() == Some(&c) {
                *out.values.last_mut().expect("an entry") += value;
            } else {
                out.cols.push(c);
                out.values.push(value);
            }
        }
        out.starts.push(out.cols.len());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_tile_the_whole_matrix() {
        let (na, nonzer, shift) = (1400, 7, 10.0);
        let whole = make_matrix(na, nonzer, shift, 0..na, 0..na);
        // Symmetric: (r, c) and (c, r) hold the same value, up to the
        // order of the two multiplications that made each.
        let entry = |m: &Csr, r: usize, c: u32| {
            let k = (m.starts[r]..m.starts[r + 1]).find(|&k| m.cols[k] == c)?;
            Some(m.values[k])
        };
        for r in (0..na).step_by(97) {
            for k in whole.starts[r]..whole.starts[r + 1] {
                let c = whole.cols[k] as usize;
                let mirror = entry(&whole, c, r as u32).expect("mirrored entry");
                assert!((mirror - whole.values[k]).abs() <= 1e-14 * mirror.abs().max(1.0));
            }
        }
        // A block holds exactly the whole matrix's entries in its range.
        let block = make_matrix(na, nonzer, shift, 700..1400, 350..700);
        for r in 0..700 {
            let want: Vec<(u32, f64)> = (whole.starts[r + 700]..whole.starts[r + 701])
                .filter(|&k| (350..700).contains(&(whole.cols[k] as usize)))
                .map(|k| (whole.cols[k] - 350, whole.values[k]))
                .collect();
            let got: Vec<(u32, f64)> = (block.starts[r]..block.starts[r + 1])
                .map(|k| (block.cols[k], block.values[k]))
                .collect();
            assert_eq!(got, want, "row {}", r + 700);
        }
    }

    #[test]
    fn vectors_have_distinct_positions_and_the_diagonal() {
        let mut s = Stream::new(1400);
        assert_eq!(s.pow2, 2048);
        let mut v = SparseVector {
            positions: Vec::new(),
            values: Vec::new(),
        };
        s.sparse_vector(1400, 7, &mut v);
        set_element(&mut v, 5, 0.5);
        let mut p = v.positions.clone();
        p.sort_unstable();
        p.dedup();
        assert_eq!(p.len(), v.positions.len());
        assert!(v.positions.contains(&5) && v.positions.len() >= 7);
        assert!(v.positions.iter().all(|&x| x < 1400));
    }
}
