//! NPB's block decomposition of the MG grid among a power-of-two number of
//! ranks (spec: "Parallel decomposition").
//!
//! With `p = log2 P`: `dx = p / 3`, `dy = (p - dx) / 2`, `px = 2^dx`,
//! `py = 2^dy`, `pz = P / (px * py)`; z is split first, then y, then x.
//! Ranks are laid out x fastest: `rank = cx + px * (cy + py * cz)`.
//!
//! Every level is split the same way, each rank holding an equal block.
//! Where a level is too coarse for that (a rank would hold fewer than two
//! points along some axis) the level is instead *replicated*: every rank
//! holds all of it and computes it redundantly (see `solver.rs`). The spec
//! allows this in place of NPB's idle ranks; it costs one small allgather
//! per V-cycle instead of halo exchanges of single points.

use anyhow::{ensure, Result};

/// Axis numbers: x is the fastest-varying index of the arrays.
pub const AXES: [usize; 3] = [0, 1, 2];

/// The process grid and one rank's place in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decomposition {
    /// Ranks along x, y and z.
    pub procs: [usize; 3],
    /// This rank's coordinates in the process grid.
    pub coords: [usize; 3],
    /// This rank.
    pub rank: usize,
}

impl Decomposition {
    /// NPB's process grid `[px, py, pz]` for `nprocs` ranks, which must be a
    /// power of two.
    pub fn proc_grid(nprocs: usize) -> Result<[usize; 3]> {
        ensure!(
            nprocs.is_power_of_two(),
            "MG runs on a power-of-two number of processes, not {nprocs}"
        );
        let p = nprocs.trailing_zeros() as usize;
        let dx = p / 3;
        let dy = (p - dx) / 2;
        let (px, py) = (1 << dx, 1 << dy);
        Ok([px, py, nprocs / (px * py)])
    }

    /// The decomposition as seen by `rank` of `nprocs`.
    pub fn new(nprocs: usize, rank: usize) -> Result<Self> {
        let procs = Self::proc_grid(nprocs)?;
        ensure!(
            rank < nprocs,
            "rank {rank} out of range for {nprocs} processes"
        );
        Ok(Decomposition {
            procs,
            coords: Self::coords_of(procs, rank),
            rank,
        })
    }

    /// Number of ranks.
    pub fn size(&self) -> usize {
        self.procs.iter().product()
    }

    /// Coordinates of `rank` in a `procs` grid (x fastest).
    pub fn coords_of(procs: [usize; 3], rank: usize) -> [usize; 3] {
        [
            rank % procs[0],
            (rank / procs[0]) % procs[1],
            rank / (procs[0] * procs[1]),
        ]
    }

    /// The rank at `coords`.
    pub fn rank_of(&self, coords: [usize; 3]) -> usize {
        coords[0] + self.procs[0] * (coords[1] + self.procs[1] * coords[2])
    }

    /// The ranks before and after this one along `axis`, with periodic wrap
    /// (both are this rank when the axis is not split).
    pub fn neighbours(&self, axis: usize) -> (usize, usize) {
        let p = self.procs[axis];
        let mut lower = self.coords;
        let mut upper = self.coords;
        lower[axis] = (self.coords[axis] + p - 1) % p;
        upper[axis] = (self.coords[axis] + 1) % p;
        (self.rank_of(lower), self.rank_of(upper))
    }

    /// Whether a grid of `n_points` a side splits into blocks of at least two
    /// points along every axis (the condition to keep a level distributed).
    pub fn splits(&self, n_points: usize) -> bool {
        self.procs.iter().all(|&p| n_points >= 2 * p)
    }

    /// This rank's block of a grid of `n_points` a side: for each axis, the
    /// first global index it owns and how many it owns.
    pub fn block(&self, n_points: usize) -> [(usize, usize); 3] {
        Self::block_of(self.procs, self.coords, n_points)
    }

    /// The block of the rank at `coords` in a `procs` grid.
    pub fn block_of(procs: [usize; 3], coords: [usize; 3], n_points: usize) -> [(usize, usize); 3] {
        AXES.map(|ax| {
            let len = n_points / procs[ax];
            (coords[ax] * len, len)
        })
    }

    /// The coarsest level (level k has 2^k points a side) that is still
    /// distributed; the levels below it are replicated. Fails when even the
    /// finest level `levels` cannot be split.
    pub fn lowest_distributed_level(&self, levels: usize) -> Result<usize> {
        let k = (1..=levels).find(|&k| self.splits(1 << k));
        k.ok_or_else(|| {
            anyhow::anyhow!(
                "{} processes ({}x{}x{}) are too many for a {}^3 grid: each needs at least 2 points a side",
                self.size(),
                self.procs[0],
                self.procs[1],
                self.procs[2],
                1usize << levels
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn process_grids_follow_npb() {
        assert_eq!(Decomposition::proc_grid(1).unwrap(), [1, 1, 1]);
        assert_eq!(Decomposition::proc_grid(2).unwrap(), [1, 1, 2]);
        assert_eq!(Decomposition::proc_grid(4).unwrap(), [1, 2, 2]);
        assert_eq!(Decomposition::proc_grid(8).unwrap(), [2, 2, 2]);
        assert_eq!(Decomposition::proc_grid(16).unwrap(), [2, 2, 4]);
        assert_eq!(Decomposition::proc_grid(32).unwrap(), [2, 4, 4]);
        assert!(Decomposition::proc_grid(3).is_err());
        assert!(Decomposition::proc_grid(0).is_err());
    }

    #[test]
    fn blocks_tile_the_grid_for_1_2_4_8_ranks() {
        for nprocs in [1, 2, 4, 8] {
            let n = 32;
            let mut owner = vec![usize::MAX; n * n * n];
            for rank in 0..nprocs {
                let d = Decomposition::new(nprocs, rank).unwrap();
                assert_eq!(Decomposition::coords_of(d.procs, rank), d.coords);
                assert_eq!(d.rank_of(d.coords), rank);
                let [(x0, lx), (y0, ly), (z0, lz)] = d.block(n);
                assert_eq!(lx * ly * lz * nprocs, n * n * n);
                for z in z0..z0 + lz {
                    for y in y0..y0 + ly {
                        for x in x0..x0 + lx {
                            let cell = &mut owner[x + n * (y + n * z)];
                            assert_eq!(*cell, usize::MAX, "point owned twice");
                            *cell = rank;
                        }
                    }
                }
            }
            assert!(owner.iter().all(|&r| r < nprocs), "{nprocs}: point unowned");
        }
    }

    #[test]
    fn neighbours_wrap_periodically() {
        // 8 ranks: 2x2x2, rank 0 at (0,0,0).
        let d = Decomposition::new(8, 0).unwrap();
        assert_eq!(d.neighbours(0), (1, 1));
        assert_eq!(d.neighbours(1), (2, 2));
        assert_eq!(d.neighbours(2), (4, 4));
        // 4 ranks: 1x2x2; x is not split so the neighbour is oneself.
        let d = Decomposition::new(4, 3).unwrap();
        assert_eq!(d.coords, [0, 1, 1]);
        assert_eq!(d.neighbours(0), (3, 3));
        assert_eq!(d.neighbours(1), (2, 2));
        assert_eq!(d.neighbours(2), (1, 1));
        // 16 ranks: z split in 4.
        let d = Decomposition::new(16, 4).unwrap();
        assert_eq!(d.coords, [0, 0, 1]);
        assert_eq!(d.neighbours(2), (0, 8));
    }

    #[test]
    fn coarse_levels_are_replicated_where_blocks_would_be_thin() {
        let lowest = |nprocs| {
            Decomposition::new(nprocs, 0)
                .unwrap()
                .lowest_distributed_level(5)
                .unwrap()
        };
        assert_eq!(lowest(1), 1);
        assert_eq!(lowest(2), 2);
        assert_eq!(lowest(4), 2);
        assert_eq!(lowest(8), 2);
        assert_eq!(lowest(16), 3);
        // 2^15 ranks: 32x32x32 cannot split a 32^3 grid into 2-point blocks.
        assert!(Decomposition::new(1 << 15, 0)
            .unwrap()
            .lowest_distributed_level(5)
            .is_err());
    }
}
