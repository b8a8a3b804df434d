//! How LU's grid is split among ranks and laid out in memory, the
//! constants of the discretisation, the exact solution and the initial
//! field.
//!
//! The grid is split in x and y over a 2-D process grid (NPB's rows and
//! columns); every rank holds all of z, so that the SSOR sweeps can run as
//! a wavefront of z planes. Each rank's block carries two ghost layers in
//! x and y (the fourth-order dissipation reaches two points away).
//! Indices inside a block are "padded": an owned point's padded x index
//! is its local index plus [`GHOST`].

use anyhow::{ensure, Result};

use crate::error::usage;

/// Ghost layers on each side of a block in x and y.
pub const GHOST: usize = 2;

/// Values per grid point: density, three momenta, energy.
pub const NV: usize = 5;

/// The 2-D process grid: `xdim` ranks along x, `ydim` along y.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcGrid {
    /// Ranks along x (NPB's `xdim`, its rows).
    pub xdim: usize,
    /// Ranks along y (NPB's `ydim`, its columns).
    pub ydim: usize,
}

impl ProcGrid {
    /// The grid for `np` ranks: as square as `np` allows, the longer side
    /// along x (2 ranks: 2 x 1; 8 ranks: 4 x 2; 6 ranks: 3 x 2).
    pub fn of(np: usize) -> ProcGrid {
        let ydim = (1..=np)
            .take_while(|d| d * d <= np)
            .filter(|d| np.is_multiple_of(*d))
            .last()
            .unwrap_or(1);
        ProcGrid {
            xdim: np / ydim.max(1),
            ydim: ydim.max(1),
        }
    }

    /// Fails with a usage error when a block of class side `n` on this
    /// grid would have fewer than 3 points along x or y (NPB's limit).
    pub fn check(&self, n: usize, np: usize) -> Result<()> {
        let fewest = (n / self.xdim).min(n / self.ydim);
        if np == 0 || fewest < 3 {
            return Err(usage(format!(
                "NPB LU cannot split a {n}^3 grid over {np} processes ({} x {}): \
                 every process needs at least 3 points along x and y",
                self.xdim, self.ydim
            )));
        }
        Ok(())
    }
}

/// Start and length of part `index` of `n` points split in `parts`, the
/// first `n % parts` parts one point longer (NPB's `subdomain`).
pub(crate) fn split(n: usize, parts: usize, index: usize) -> (usize, usize) {
    let (base, extra) = (n / parts, n % parts);
    if index < extra {
        (index * (base + 1), base + 1)
    } else {
        (index * base + extra, base)
    }
}

/// One rank's block of the grid and its neighbours.
#[derive(Debug, Clone)]
pub struct Block {
    /// Points per side of the whole grid.
    pub n: usize,
    /// Owned points along x, y, and z (all of z).
    pub nx: usize,
    /// Owned points along y.
    pub ny: usize,
    /// Points along z.
    pub nz: usize,
    /// Global x index of the first owned point.
    pub ipt: usize,
    /// Global y index of the first owned point.
    pub jpt: usize,
    /// Padded x index range of the owned interior points (global 1..n-2).
    pub ist: usize,
    /// Last padded x index of the owned interior points.
    pub iend: usize,
    /// Padded y index range of the owned interior points.
    pub jst: usize,
    /// Last padded y index of the owned interior points.
    pub jend: usize,
    /// Padded size along x (`nx + 2 GHOST`).
    pub ni: usize,
    /// Padded size along y.
    pub nj: usize,
    /// The rank holding the block below in x (NPB's north), if any.
    pub north: Option<usize>,
    /// The rank holding the block above in x (NPB's south).
    pub south: Option<usize>,
    /// The rank holding the block below in y (NPB's west).
    pub west: Option<usize>,
    /// The rank holding the block above in y (NPB's east).
    pub east: Option<usize>,
}

impl Block {
    /// The block of `rank` on `grid` for a grid of `n` points a side.
    pub fn new(n: usize, grid: ProcGrid, rank: usize) -> Result<Block> {
        grid.check(n, grid.xdim * grid.ydim)?;
        ensure!(
            rank < grid.xdim * grid.ydim,
            "rank {rank} outside the process grid"
        );
        let (row, col) = (rank % grid.xdim, rank / grid.xdim);
        let (ipt, nx) = split(n, grid.xdim, row);
        let (jpt, ny) = split(n, grid.ydim, col);
        let north = (row > 0).then(|| rank - 1);
        let south = (row + 1 < grid.xdim).then_some(rank + 1);
        let west = (col > 0).then(|| rank - grid.xdim);
        let east = (col + 1 < grid.ydim).then_some(rank + grid.xdim);
        let first = |start: usize| if start == 0 { GHOST + 1 } else { GHOST };
        let last = |start: usize, len: usize| {
            if start + len == n {
                GHOST + len - 2
            } else {
                GHOST + len - 1
            }
        };
        Ok(Block {
            n,
            nx,
            ny,
            nz: n,
            ipt,
            jpt,
            ist: first(ipt),
            iend: last(ipt, nx),
            jst: first(jpt),
            jend: last(jpt, ny),
            ni: nx + 2 * GHOST,
            nj: ny + 2 * GHOST,
            north,
            south,
            west,
            east,
        })
    }

    /// Values in one field of the block (ghosts included).
    pub fn field_len(&self) -> usize {
        NV * self.ni * self.nj * self.nz
    }

    /// Offset of the first value of the point at padded `(i, j)`, plane `k`.
    #[inline(always)]
    pub fn at(&self, i: usize, j: usize, k: usize) -> usize {
        ((k * self.nj + j) * self.ni + i) * NV
    }

    /// Offsets between neighbours along x, y and z.
    pub fn strides(&self) -> [usize; 3] {
        [NV, NV * self.ni, NV * self.ni * self.nj]
    }

    /// Global x index of padded `i` (may lie outside the grid for ghosts).
    pub fn global_i(&self, i: usize) -> isize {
        (self.ipt + i) as isize - GHOST as isize
    }

    /// Global y index of padded `j`.
    pub fn global_j(&self, j: usize) -> isize {
        (self.jpt + j) as isize - GHOST as isize
    }

    /// Padded indices of the owned points along x.
    pub fn owned_i(&self) -> std::ops::Range<usize> {
        GHOST..GHOST + self.nx
    }

    /// Padded indices of the owned points along y.
    pub fn owned_j(&self) -> std::ops::Range<usize> {
        GHOST..GHOST + self.ny
    }
}

/// Gas constants of the equations (NPB's `c1` to `c5`).
pub const C1: f64 = 1.4;
/// See [`C1`].
pub const C2: f64 = 0.4;
/// See [`C1`].
pub const C3: f64 = 0.1;
/// See [`C1`].
pub const C4: f64 = 1.0;
/// See [`C1`].
pub const C5: f64 = 1.4;

/// The constants of the discretisation for one grid and time step
/// (NPB's `setcoeff`), indexed by direction x, y, z.
#[derive(Debug, Clone, Copy)]
pub struct Coeffs {
    /// Pseudo-time step.
    pub dt: f64,
    /// Mesh spacing per direction (`dxi`, `deta`, `dzeta`).
    pub h: [f64; 3],
    /// `1 / h^2` (NPB's `tx1`, `ty1`, `tz1`).
    pub t1: [f64; 3],
    /// `1 / (2 h)` (NPB's `tx2`...).
    pub t2: [f64; 3],
    /// `1 / h` (NPB's `tx3`...).
    pub t3: [f64; 3],
    /// Second-difference weights per direction (NPB's `dx1..5` are all
    /// 0.75, `dy` 0.75, `dz` 1.0).
    pub dd: [f64; 3],
    /// Fourth-difference dissipation (NPB's `dssp`).
    pub dssp: f64,
}

impl Coeffs {
    /// The constants for `n` points a side and step `dt`.
    pub fn new(n: usize, dt: f64) -> Coeffs {
        let h = 1.0 / (n - 1) as f64;
        let dd = [0.75, 0.75, 1.0];
        Coeffs {
            dt,
            h: [h; 3],
            t1: [1.0 / (h * h); 3],
            t2: [1.0 / (2.0 * h); 3],
            t3: [1.0 / h; 3],
            dd,
            dssp: dd.iter().cloned().fold(f64::MIN, f64::max) / 4.0,
        }
    }
}

/// Coefficients of the exact solution: per variable, the constant, then
/// linear, quadratic, cubic and quartic terms in xi, eta, zeta (NPB's
/// `ce`, one row per variable).
const CE: [[f64; 13]; NV] = [
    [
        2.0, 0.0, 0.0, 4.0, 5.0, 3.0, 0.5, 0.02, 0.01, 0.03, 0.5, 0.4, 0.3,
    ],
    [
        1.0, 0.0, 0.0, 0.0, 1.0, 2.0, 3.0, 0.01, 0.03, 0.02, 0.4, 0.3, 0.5,
    ],
    [
        2.0, 2.0, 0.0, 0.0, 0.0, 2.0, 3.0, 0.04, 0.03, 0.05, 0.3, 0.5, 0.4,
    ],
    [
        2.0, 2.0, 0.0, 0.0, 0.0, 2.0, 3.0, 0.03, 0.05, 0.04, 0.2, 0.1, 0.3,
    ],
    [
        5.0, 4.0, 3.0, 2.0, 0.1, 0.4, 0.3, 0.05, 0.04, 0.03, 0.1, 0.3, 0.2,
    ],
];

/// The exact solution at global point `(gi, gj, gk)` of a grid of `n`
/// points a side: a quartic polynomial in each coordinate.
pub fn exact(n: usize, gi: isize, gj: isize, gk: isize) -> [f64; NV] {
    let last = (n - 1) as f64;
    let (x, y, z) = (gi as f64 / last, gj as f64 / last, gk as f64 / last);
    let mut u = [0.0; NV];
    for (value, c) in u.iter_mut().zip(CE.iter()) {
        *value = c[0]
            + c[1] * x
            + c[2] * y
            + c[3] * z
            + c[4] * x * x
            + c[5] * y * y
            + c[6] * z * z
            + c[7] * x * x * x
            + c[8] * y * y * y
            + c[9] * z * z * z
            + c[10] * x * x * x * x
            + c[11] * y * y * y * y
            + c[12] * z * z * z * z;
    }
    u
}

/// Sets `u` to the initial field: the exact solution on the six faces of
/// the grid (NPB's `setbv`) and, inside, the transfinite interpolation of
/// the faces (NPB's `setiv`). Owned points only.
pub fn initial_field(b: &Block, u: &mut [f64]) {
    let n = b.n as isize;
    for k in 0..b.nz {
        let gk = k as isize;
        for j in b.owned_j() {
            let gj = b.global_j(j);
            for i in b.owned_i() {
                let gi = b.global_i(i);
                let on_face = [gi, gj, gk].iter().any(|&g| g == 0 || g == n - 1);
                let value = if on_face {
                    exact(b.n, gi, gj, gk)
                } else {
                    interpolated(b.n, gi, gj, gk)
                };
                let at = b.at(i, j, k);
                u[at..at + NV].copy_from_slice(&value);
            }
        }
    }
}

/// The transfinite interpolation of the exact solution on the faces at an
/// inner point.
pub(crate) fn interpolated(n: usize, gi: isize, gj: isize, gk: isize) -> [f64; NV] {
    let last = (n - 1) as isize;
    let (x, y, z) = (
        gi as f64 / last as f64,
        gj as f64 / last as f64,
        gk as f64 / last as f64,
    );
    let (x0, x1) = (exact(n, 0, gj, gk), exact(n, last, gj, gk));
    let (y0, y1) = (exact(n, gi, 0, gk), exact(n, gi, last, gk));
    let (z0, z1) = (exact(n, gi, gj, 0), exact(n, gi, gj, last));
    let mut u = [0.0; NV];
    for m in 0..NV {
        let px = (1.0 - x) * x0[m] + x * x1[m];
        let py = (1.0 - y) * y0[m] + y * y1[m];
        let pz = (1.0 - z) * z0[m] + z * z1[m];
        u[m] = px + py + pz - px * py - py * pz - pz * px + px * py * pz;
    }
    u
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn process_grids_are_as_square_as_the_count_allows() {
        let dims = |np| {
            let g = ProcGrid::of(np);
            (g.xdim, g.ydim)
        };
        assert_eq!(dims(1), (1, 1));
        assert_eq!(dims(2), (2, 1));
        assert_eq!(dims(4), (2, 2));
        assert_eq!(dims(8), (4, 2));
        assert_eq!(dims(6), (3, 2));
        assert_eq!(dims(7), (7, 1));
        // 12 points a side: 4 per rank along x at 3 x 1, too few at 5 x 1.
        ProcGrid::of(3).check(12, 3).unwrap();
        let e = ProcGrid::of(5).check(12, 5).unwrap_err();
        assert_eq!(crate::error::exit_code_of(&e), 2);
    }

    #[test]
    fn blocks_tile_the_grid_and_know_their_interior() {
        let g = ProcGrid::of(4);
        let blocks: Vec<Block> = (0..4).map(|r| Block::new(33, g, r).unwrap()).collect();
        // Rank 0: rows 0..17 and columns 0..17; interior starts at global 1.
        assert_eq!((blocks[0].ipt, blocks[0].nx), (0, 17));
        assert_eq!((blocks[1].ipt, blocks[1].nx), (17, 16));
        assert_eq!(blocks[0].ist, GHOST + 1);
        assert_eq!(blocks[0].iend, GHOST + 16);
        assert_eq!(blocks[1].ist, GHOST);
        assert_eq!(blocks[1].global_i(blocks[1].iend), 31);
        assert_eq!((blocks[0].south, blocks[0].east), (Some(1), Some(2)));
        assert_eq!((blocks[3].north, blocks[3].west), (Some(2), Some(1)));
        assert_eq!((blocks[0].north, blocks[0].west), (None, None));
    }

    #[test]
    fn exact_solution_is_the_polynomial_at_the_corners() {
        // At the origin only the constants remain; at the far corner every
        // coefficient counts once.
        let origin = exact(12, 0, 0, 0);
        let far = exact(12, 11, 11, 11);
        for m in 0..NV {
            assert_eq!(origin[m], CE[m][0]);
            let sum: f64 = CE[m].iter().sum();
            assert!((far[m] - sum).abs() < 1e-13, "{m}: {} vs {sum}", far[m]);
        }
        // Inside, the interpolation of the faces' values: at a point whose
        // faces all hold the same constant c it gives 3c - 3c^2 + c^3.
        let inner = interpolated(12, 5, 5, 5);
        assert!(inner.iter().all(|v| v.is_finite()));
    }
}
