//! NPB's multi-partition of SP's grid: on `p * p` ranks the grid is cut
//! into `p` slabs along each axis (`p^3` cells) and every rank holds `p`
//! cells on a diagonal, one in every slab of every axis. A line solve
//! along any axis then visits the ranks in turn, each working on its cell
//! of the current slab while the others work on theirs: every rank is
//! busy at every stage, and only the two boundary rows of each line move.
//!
//! Rank `node` is `(i, j) = (node % p, node / p)`; its cell `c` sits at
//! slab `(i + c, j - c, c)` (mod `p`), so the cell after it along any axis
//! belongs to one fixed rank (its successor along that axis).

use anyhow::Result;

use crate::error::usage;
// Slabs are cut as LU cuts its blocks (NPB's `make_set`): the first
// `n % p` one point longer.
use crate::npb::lu::split;

/// Values per grid point: density, three momenta, energy.
pub const NV: usize = 5;

/// Ghost layers on each side of a cell (the fourth-difference dissipation
/// reaches two points away).
pub const GHOST: usize = 2;

/// Fewest points a cell may have along an axis (NPB's limit).
const MIN_CELL: usize = 3;

/// Fails with a usage error unless `np` is a square whose cells keep at
/// least 3 points a side on a grid of `n` points; the message names the
/// benchmark `name` ("SP", "BT").
pub fn check_process_count(name: &str, n: usize, np: usize) -> Result<usize> {
    let p = (np as f64).sqrt().round() as usize;
    if np == 0 || p * p != np {
        return Err(usage(format!(
            "NPB {name} runs on a square number of processes (1, 4, 9, 16, ...), not {np}"
        )));
    }
    if n / p < MIN_CELL {
        return Err(usage(format!(
            "NPB {name} cannot split a {n}^3 grid over {np} processes: every cell needs at \
             least {MIN_CELL} points a side"
        )));
    }
    Ok(p)
}

/// Derived quantities of a point, recomputed from `u` before each
/// right-hand side (NPB's `rho_i`, `us`/`vs`/`ws`, `square`, `qs`,
/// `speed`, `ainv`).
#[derive(Debug, Clone, Copy, Default)]
pub struct Aux {
    /// `1 / rho`.
    pub rho_i: f64,
    /// The velocity along x, y, z.
    pub vel: [f64; 3],
    /// Kinetic energy per volume, `|m|^2 / 2 rho`.
    pub square: f64,
    /// `square / rho`.
    pub qs: f64,
    /// Speed of sound.
    pub speed: f64,
    /// `1 / speed`.
    pub ainv: f64,
}

/// One cell: its place in the grid and its fields, each with [`GHOST`]
/// layers around the owned points ("padded" indices: owned local index
/// plus [`GHOST`]).
#[derive(Debug, Clone)]
pub struct Cell {
    /// Slab index along x, y, z.
    pub coord: [usize; 3],
    /// Global index of the first owned point along each axis.
    pub low: [usize; 3],
    /// Owned points along each axis.
    pub size: [usize; 3],
    /// Padded points along each axis (`size + 2 GHOST`).
    pub dims: [usize; 3],
    /// Points of the whole grid per side.
    pub n: usize,
    /// The solution, [`NV`] values per padded point.
    pub u: Vec<f64>,
    /// The right-hand side, then the update of a step.
    pub rhs: Vec<f64>,
    /// The forcing term of the exact solution (NPB's `forcing`).
    pub forcing: Vec<f64>,
    /// Derived quantities per padded point.
    pub aux: Vec<Aux>,
    /// The normalised upper diagonals a forward elimination leaves for
    /// the back substitution: per point, `(d, e)` of the three systems.
    pub fac: Vec<[f64; 6]>,
}

impl Cell {
    /// Cell at slab `coord` of a grid of `n` points cut in `p` slabs.
    fn new(n: usize, p: usize, coord: [usize; 3]) -> Cell {
        let mut low = [0; 3];
        let mut size = [0; 3];
        for d in 0..3 {
            (low[d], size[d]) = split(n, p, coord[d]);
        }
        let dims = size.map(|s| s + 2 * GHOST);
        let points = dims.iter().product::<usize>();
        // Ghosts no neighbour fills keep a harmless state (density and
        // energy 1) so that derived quantities stay finite there.
        let mut u = vec![0.0; NV * points];
        for v in u.chunks_exact_mut(NV) {
            v[0] = 1.0;
            v[4] = 1.0;
        }
        Cell {
            coord,
            low,
            size,
            dims,
            n,
            u,
            rhs: vec![0.0; NV * points],
            forcing: vec![0.0; NV * points],
            aux: vec![Aux::default(); points],
            fac: vec![[0.0; 6]; points],
        }
    }

    /// Point index of padded `(i, j, k)`.
    #[inline(always)]
    pub fn point(&self, i: usize, j: usize, k: usize) -> usize {
        (k * self.dims[1] + j) * self.dims[0] + i
    }

    /// Distance in points between neighbours along axis `d`.
    pub fn stride(&self, d: usize) -> usize {
        match d {
            0 => 1,
            1 => self.dims[0],
            _ => self.dims[0] * self.dims[1],
        }
    }

    /// Padded indices of the owned points along `d`.
    pub fn owned(&self, d: usize) -> std::ops::Range<usize> {
        GHOST..GHOST + self.size[d]
    }

    /// Padded indices of the owned points along `d` that are inside the
    /// grid (not on its faces).
    pub fn interior(&self, d: usize) -> std::ops::Range<usize> {
        let first = if self.low[d] == 0 { GHOST + 1 } else { GHOST };
        let last = if self.low[d] + self.size[d] == self.n {
            GHOST + self.size[d] - 1
        } else {
            GHOST + self.size[d]
        };
        first..last
    }

    /// Global index along `d` of padded index `at`.
    pub fn global(&self, d: usize, at: usize) -> isize {
        (self.low[d] + at) as isize - GHOST as isize
    }

    /// Owned interior points (of all three axes), as point indices with
    /// their padded coordinates.
    pub fn interior_points(&self) -> impl Iterator<Item = (usize, [usize; 3])> + '_ {
        let (ri, rj, rk) = (self.interior(0), self.interior(1), self.interior(2));
        rk.flat_map(move |k| {
            let ri = ri.clone();
            rj.clone()
                .flat_map(move |j| ri.clone().map(move |i| (self.point(i, j, k), [i, j, k])))
        })
    }

    /// Sets the owned points of `u` to NPB's initial field: the exact
    /// solution on the faces of the grid, inside the transfinite
    /// interpolation of the faces.
    pub fn initialise(&mut self) {
        let last = self.n as isize - 1;
        for k in self.owned(2) {
            for j in self.owned(1) {
                for i in self.owned(0) {
                    let g = [self.global(0, i), self.global(1, j), self.global(2, k)];
                    let face = g.iter().any(|&x| x == 0 || x == last);
                    let value = if face {
                        crate::npb::lu::exact(self.n, g[0], g[1], g[2])
                    } else {
                        crate::npb::lu::interpolated(self.n, g[0], g[1], g[2])
                    };
                    let at = NV * self.point(i, j, k);
                    self.u[at..at + NV].copy_from_slice(&value);
                }
            }
        }
    }
}

/// One rank's place in the multi-partition: its cells and the ranks that
/// hold the cells before and after its own along each axis.
#[derive(Debug, Clone)]
pub struct Layout {
    /// Slabs per axis (`sqrt(np)`).
    pub p: usize,
    /// The rank holding the cells before this rank's along each axis.
    pub pred: [usize; 3],
    /// The rank holding the cells after this rank's along each axis.
    pub succ: [usize; 3],
    /// `slice[d][s]`: this rank's cell in slab `s` along axis `d`.
    pub slice: [Vec<usize>; 3],
}

impl Layout {
    /// The layout of `rank` among `p * p` ranks, and its cells of a grid
    /// of `n` points a side.
    pub fn new(n: usize, p: usize, rank: usize) -> (Layout, Vec<Cell>) {
        let (i, j) = (rank % p, rank / p);
        let back = |x: usize| (x + p - 1) % p;
        let next = |x: usize| (x + 1) % p;
        let layout = Layout {
            p,
            pred: [back(i) + p * j, i + p * back(j), next(i) + p * back(j)],
            succ: [next(i) + p * j, i + p * next(j), back(i) + p * next(j)],
            slice: std::array::from_fn(|d| {
                let mut s = vec![0; p];
                for c in 0..p {
                    s[coord_of(p, i, j, c)[d]] = c;
                }
                s
            }),
        };
        let cells = (0..p)
            .map(|c| Cell::new(n, p, coord_of(p, i, j, c)))
            .collect();
        (layout, cells)
    }
}

/// Slab indices of cell `c` of rank `(i, j)`.
fn coord_of(p: usize, i: usize, j: usize, c: usize) -> [usize; 3] {
    [(i + c) % p, (j + p * p - c) % p, c]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn square_counts_only_and_cells_of_three_points() {
        assert_eq!(check_process_count("SP", 12, 1).unwrap(), 1);
        assert_eq!(check_process_count("SP", 12, 4).unwrap(), 2);
        assert_eq!(check_process_count("SP", 12, 16).unwrap(), 4);
        for np in [0, 2, 3, 8] {
            let e = check_process_count("SP", 12, np).unwrap_err();
            assert_eq!(crate::error::exit_code_of(&e), 2, "{np}");
            assert!(format!("{e:#}").contains("square"), "{e:#}");
        }
        let e = check_process_count("BT", 12, 25).unwrap_err();
        assert!(format!("{e:#}").contains("NPB BT cannot split"), "{e:#}");
        assert!(format!("{e:#}").contains("at least 3 points"), "{e:#}");
    }

    #[test]
    fn cells_tile_the_grid_once_and_neighbours_agree() {
        for p in [1, 2, 3] {
            let n = 13;
            let mut seen = vec![0u8; p * p * p];
            let all: Vec<(Layout, Vec<Cell>)> = (0..p * p).map(|r| Layout::new(n, p, r)).collect();
            for (rank, (layout, cells)) in all.iter().enumerate() {
                for (c, cell) in cells.iter().enumerate() {
                    let [x, y, z] = cell.coord;
                    seen[(z * p + y) * p + x] += 1;
                    for d in 0..3 {
                        assert_eq!(layout.slice[d][cell.coord[d]], c);
                        // The next cell along d is on the successor, and
                        // ours is after the predecessor's.
                        let mut after = cell.coord;
                        after[d] = (after[d] + 1) % p;
                        assert!(all[layout.succ[d]].1.iter().any(|o| o.coord == after));
                        assert_eq!(all[layout.pred[d]].0.succ[d], rank);
                    }
                }
            }
            assert!(seen.iter().all(|&s| s == 1), "p {p}: {seen:?}");
        }
        // 13 points in 3 slabs: 5, 4, 4.
        let (_, cells) = Layout::new(13, 3, 0);
        let sizes: Vec<usize> = cells.iter().map(|c| c.size[2]).collect();
        assert_eq!(sizes, [5, 4, 4]);
        assert_eq!(cells[0].interior(2), GHOST + 1..GHOST + 5);
        assert_eq!(cells[2].interior(2), GHOST..GHOST + 3);
    }
}
