//! NPB CG's 2-D process grid and its two exchanges.
//!
//! `P = 2^d` ranks form `nprows = 2^floor(d/2)` rows and
//! `npcols = 2^ceil(d/2)` columns (2 ranks: one row of two; 4: 2 x 2; 8:
//! two rows of four), rank `r` at row `r / npcols`, column `r % npcols`.
//! The matrix's columns are cut into `npcols` blocks and its rows into
//! `nprows` blocks of `k = npcols / nprows` (1 or 2) column blocks each;
//! the rank at (row, col) holds the matrix block (row block, column
//! block) and the vector entries of its column block.
//!
//! * A matrix-vector product leaves each rank a partial sum over its row
//!   block; [`Grid::row_sum_of_sent_part`] adds them along the process
//!   row, but only over the part [`Grid::transpose`] sends on, as NPB
//!   does. On a square grid that part is the whole row block (recursive
//!   doubling: `log2(npcols)` exchanges with the rank whose column differs
//!   in one bit; both sides add the same two numbers, so every rank of a
//!   row ends with the same bits). On a grid twice as wide as tall the
//!   row block is two column blocks and the ranks of odd and even columns
//!   send on different halves: the first exchange (with the column
//!   neighbour, `col ^ 1`) gives each side the half it keeps and takes the
//!   half the other keeps, and the later exchanges carry that half only.
//!   Summing the whole row block there sent twice NPB's bytes.
//! * [`Grid::transpose`] then gives each rank the entries of its column
//!   block: the rank at (row, col) sends part `col % k` of its row block
//!   (column block `k row + col % k`) to the rank at
//!   `(col / k, k row + col % k)`, which sends back the part we need: the
//!   pairing is its own inverse, so one `sendrecv` does it.
//!
//! Dot products are local sums over the column block, added along the
//! row with the same [`Grid::row_sum`].

use std::ops::Range;

use anyhow::Result;

use crate::comm::Communicator;

/// One rank's place in CG's process grid.
#[derive(Debug, Clone, PartialEq)]
pub struct Grid {
    /// Process rows.
    pub nprows: usize,
    /// Process columns.
    pub npcols: usize,
    /// This rank's process row.
    pub row: usize,
    /// This rank's process column.
    pub col: usize,
    /// Matrix rows this rank's block covers.
    pub rows: Range<usize>,
    /// Matrix columns this rank's block covers (its vector entries).
    pub cols: Range<usize>,
    /// The rank [`Grid::transpose`] exchanges with.
    partner: usize,
    /// The part of `rows` sent to the partner, relative to `rows.start`.
    sent: Range<usize>,
    /// The test hook asked for a corrupted partial sum
    /// ([`crate::npb::fault`]).
    corrupt: bool,
}

impl Grid {
    /// NPB's `[nprows, npcols]` for `nprocs` (a power of two).
    pub fn shape(nprocs: usize) -> [usize; 2] {
        let d = nprocs.trailing_zeros();
        [1 << (d / 2), 1 << (d - d / 2)]
    }

    /// The place of `rank` of `nprocs` in the grid of a matrix of order `na`.
    pub fn new(na: usize, nprocs: usize, rank: usize) -> Grid {
        Self::with_fault(na, nprocs, rank, false)
    }

    /// As [`Grid::new`]; `corrupt` changes one received value of every
    /// row sum of a vector (the test hook of [`crate::npb::fault`]).
    pub fn with_fault(na: usize, nprocs: usize, rank: usize, corrupt: bool) -> Grid {
        let [nprows, npcols] = Self::shape(nprocs);
        let k = npcols / nprows;
        let (row, col) = (rank / npcols, rank % npcols);
        // Column block j; row block i is column blocks k i .. k i + k.
        let block = |j: usize| j * na / npcols..(j + 1) * na / npcols;
        let rows = block(k * row).start..block(k * row + k - 1).end;
        let target = k * row + col % k;
        let sent = block(target).start - rows.start..block(target).end - rows.start;
        Grid {
            nprows,
            npcols,
            row,
            col,
            rows,
            cols: block(col),
            partner: (col / k) * npcols + target,
            sent,
            corrupt,
        }
    }

    /// `[columns, rows, 1]`, as results record process grids.
    pub fn proc_grid(&self) -> [usize; 3] {
        [self.npcols, self.nprows, 1]
    }

    /// Sums `values` element-wise over the ranks of this process row,
    /// using `scratch` (as long as `values`) for the incoming halves.
    pub fn row_sum(
        &self,
        comm: &dyn Communicator,
        values: &mut [f64],
        scratch: &mut [f64],
    ) -> Result<()> {
        let mut bit = 1;
        while bit < self.npcols {
            let peer = self.row * self.npcols + (self.col ^ bit);
            comm.sendrecv(peer, values, peer, scratch)?;
            if self.corrupt && scratch.len() > 1 {
                scratch[0] += 1.0;
            }
            for (v, s) in values.iter_mut().zip(scratch.iter()) {
                *v += *s;
            }
            bit <<= 1;
        }
        Ok(())
    }

    /// Sums `values` (this rank's partial sums over its row block) over
    /// the ranks of this process row, but only in the part
    /// [`Grid::transpose`] sends on, as NPB's reduction does (see the
    /// module documentation); the rest of `values` is left partial.
    /// `scratch` is as long as `values`.
    pub fn row_sum_of_sent_part(
        &self,
        comm: &dyn Communicator,
        values: &mut [f64],
        scratch: &mut [f64],
    ) -> Result<()> {
        if self.npcols == self.nprows {
            return self.row_sum(comm, values, scratch);
        }
        // Two column blocks a row block: the column neighbour keeps the
        // half we do not.
        let kept = self.sent.clone();
        let other = if kept.start == 0 {
            kept.end..values.len()
        } else {
            0..kept.start
        };
        let mut bit = 1;
        while bit < self.npcols {
            let peer = self.row * self.npcols + (self.col ^ bit);
            let outgoing = if bit == 1 {
                other.clone()
            } else {
                kept.clone()
            };
            comm.sendrecv(peer, &values[outgoing], peer, &mut scratch[kept.clone()])?;
            if self.corrupt && kept.len() > 1 {
                scratch[kept.start] += 1.0;
            }
            for (v, s) in values[kept.clone()].iter_mut().zip(&scratch[kept.clone()]) {
                *v += *s;
            }
            bit <<= 1;
        }
        Ok(())
    }

    /// From `w`, the row sums over this rank's row block, fills `out` with
    /// the entries of its column block (see the module documentation).
    pub fn transpose(&self, comm: &dyn Communicator, w: &[f64], out: &mut [f64]) -> Result<()> {
        let part = &w[self.sent.clone()];
        if self.partner == comm.rank() {
            out.copy_from_slice(part);
            Ok(())
        } else {
            comm.sendrecv(self.partner, part, self.partner, out)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_are_npb_s() {
        assert_eq!(Grid::shape(1), [1, 1]);
        assert_eq!(Grid::shape(2), [1, 2]);
        assert_eq!(Grid::shape(4), [2, 2]);
        assert_eq!(Grid::shape(8), [2, 4]);
        assert_eq!(Grid::shape(32), [4, 8]);
    }

    #[test]
    fn the_transpose_pairing_is_its_own_inverse_and_sizes_match() {
        for nprocs in [1, 2, 4, 8, 16, 32] {
            let grids: Vec<Grid> = (0..nprocs).map(|r| Grid::new(1400, nprocs, r)).collect();
            for (rank, g) in grids.iter().enumerate() {
                let p = &grids[g.partner];
                assert_eq!(p.partner, rank, "np={nprocs} rank {rank}");
                // What we send is what the partner's column block needs.
                let sent = g.rows.start + g.sent.start..g.rows.start + g.sent.end;
                assert_eq!(sent, p.cols, "np={nprocs} rank {rank}");
            }
        }
    }

    /// NPB's traffic of one matrix-vector product, per rank: its reduction
    /// sends one column block (`na / npcols` values) at each of the
    /// `log2(npcols)` steps, and its transpose one column block to the
    /// partner unless the partner is the rank itself.
    fn npb_bytes_per_product(na: usize, nprocs: usize, grid: &Grid) -> u64 {
        let npcols = Grid::shape(nprocs)[1];
        let steps = npcols.trailing_zeros() as usize;
        let transpose = usize::from(grid.partner != grid.row * grid.npcols + grid.col);
        (8 * (na / npcols) * (steps + transpose)) as u64
    }

    #[test]
    fn a_product_sends_npb_s_bytes_on_every_grid() {
        use crate::comm::{Counted, ThreadComm};
        let na = 1400; // class S
        for nprocs in [1, 2, 4, 8] {
            let sent = ThreadComm::run(nprocs, |comm| {
                let counted = Counted::new(comm);
                let grid = Grid::new(na, nprocs, comm.rank());
                let mut w = vec![1.0; grid.rows.len()];
                let mut scratch = vec![0.0; grid.rows.len()];
                let mut out = vec![0.0; grid.cols.len()];
                grid.row_sum_of_sent_part(&counted, &mut w, &mut scratch)?;
                grid.transpose(&counted, &w, &mut out)?;
                // Every entry is the sum of one 1 from each column.
                assert!(out.iter().all(|&v| v == grid.npcols as f64), "np={nprocs}");
                Ok((
                    counted.totals().bytes,
                    npb_bytes_per_product(na, nprocs, &grid),
                ))
            })
            .unwrap();
            for (rank, (got, want)) in sent.into_iter().enumerate() {
                assert_eq!(got, want, "np={nprocs} rank {rank}: bytes of one product");
            }
        }
    }
}
