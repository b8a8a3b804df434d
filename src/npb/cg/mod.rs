//! NAS CG: inverse power iteration for the smallest eigenvalue of a random
//! sparse symmetric matrix, each step solving `A z = x` with 25 conjugate
//! gradient iterations; written from the specification
//! (`shared/spec/npb.md`, "CG").
//!
//! * `makea`: the matrix, generated exactly as NPB does;
//! * `grid`: the 2-D process grid, the row sums and the transpose
//!   exchange;
//! * here: the class table, the CG solve and the timed outer iterations,
//!   verified by zeta.

mod grid;
mod makea;

pub use grid::Grid;
pub use makea::{make_matrix, Csr, RCOND};

use anyhow::Result;

use super::outcome::{CheckedValue, NpbOutcome, RunShape, Timer};
use super::Class;
use crate::comm::Communicator;
use crate::error::usage;

/// CG iterations of each solve (NPB's `cgitmax`).
pub const CG_STEPS: usize = 25;

/// Largest relative error of zeta that still verifies.
pub const VERIFY_TOLERANCE: f64 = 1.0e-10;

/// What distinguishes one CG class from another.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CgParams {
    /// The class.
    pub class: Class,
    /// Order of the matrix (NPB's `NA`).
    pub na: usize,
    /// Random positions per generated vector (NPB's `NONZER`).
    pub nonzer: usize,
    /// Outer (inverse power) iterations timed (NPB's `NITER`).
    pub iterations: usize,
    /// Diagonal shift (NPB's `SHIFT`).
    pub shift: f64,
    /// NPB's reference zeta.
    pub zeta: f64,
}

impl CgParams {
    /// The parameters of `class`.
    pub fn of(class: Class) -> Self {
        let (na, nonzer, iterations, shift, zeta) = match class {
            Class::S => (1400, 7, 15, 10.0, 8.597_177_507_864_8),
            Class::W => (7000, 8, 15, 12.0, 10.362_595_087_124),
            Class::A => (14000, 11, 15, 20.0, 17.130_235_054_029),
            Class::B => (75000, 13, 75, 60.0, 22.712_745_482_631),
            Class::C => (150_000, 15, 75, 110.0, 28.973_605_592_845),
        };
        CgParams {
            class,
            na,
            nonzer,
            iterations,
            shift,
            zeta,
        }
    }

    /// NPB's operation count of the timed section.
    pub fn operation_count(&self) -> f64 {
        let nz = self.nonzer as f64;
        let per_row = nz * (nz + 1.0);
        2.0 * self.iterations as f64
            * self.na as f64
            * (3.0 + per_row + CG_STEPS as f64 * (5.0 + per_row) + 3.0)
    }

    /// The problem in a few words.
    pub fn describe(&self) -> String {
        format!(
            "order {}, {} random nonzeros a vector, {} iterations",
            self.na, self.nonzer, self.iterations
        )
    }
}

/// Fails with a usage error when the grid of `np` processes has more
/// columns than the matrix of `class` has rows to share.
pub fn check_process_count(class: Class, np: usize) -> Result<()> {
    let na = CgParams::of(class).na;
    let [_, npcols] = Grid::shape(np);
    if npcols > na {
        return Err(usage(format!(
            "NPB CG class {class}: {np} processes are too many for a matrix of order {na}"
        )));
    }
    Ok(())
}

/// Independent partial sums of [`row_times`] and [`dot`]. One running
/// sum makes every addition wait for the one before (four cycles or so
/// each); four keep the adder busy. This only regroups the additions
/// (NPB's OpenMP CG keeps unrolled variants of its matrix-vector product
/// that regroup them too); zeta still verifies to 1e-10.
const PARTIAL_SUMS: usize = 4;

/// A column number of the matrix as stored: 4 bytes, or 2 when they fit.
trait Column: Copy {
    fn index(self) -> usize;
}

impl Column for u32 {
    #[inline(always)]
    fn index(self) -> usize {
        self as usize
    }
}

impl Column for u16 {
    #[inline(always)]
    fn index(self) -> usize {
        usize::from(self)
    }
}

/// One row of a sparse matrix times `v`: the sum of `values[k] *
/// v[cols[k]]` (over the shorter of `cols` and `values`).
///
/// # Safety
///
/// Every entry of `cols` must be below `v.len()`.
unsafe fn row_times<C: Column>(cols: &[C], values: &[f64], v: &[f64]) -> f64 {
    // The caller's promise, checked in debug builds (the hot loop of CG:
    // a bounds check per entry costs it a fifth of its instructions).
    debug_assert!(cols.iter().all(|&c| c.index() < v.len()));
    let at = |c: C| {
        // SAFETY: `c` is an entry of `cols`, below `v.len()` (the
        // function's contract).
        unsafe { *v.get_unchecked(c.index()) }
    };
    let mut acc = [0.0; PARTIAL_SUMS];
    let mut cols4 = cols.chunks_exact(PARTIAL_SUMS);
    let mut values4 = values.chunks_exact(PARTIAL_SUMS);
    for (c, a) in (&mut cols4).zip(&mut values4) {
        for i in 0..PARTIAL_SUMS {
            acc[i] += a[i] * at(c[i]);
        }
    }
    let mut tail = 0.0;
    for (&c, &a) in cols4.remainder().iter().zip(values4.remainder()) {
        tail += a * at(c);
    }
    (acc[0] + acc[1]) + (acc[2] + acc[3]) + tail
}

/// The dot product of `a` and `b` (over the shorter).
fn dot(a: &[f64], b: &[f64]) -> f64 {
    let mut acc = [0.0; PARTIAL_SUMS];
    let mut a4 = a.chunks_exact(PARTIAL_SUMS);
    let mut b4 = b.chunks_exact(PARTIAL_SUMS);
    for (x, y) in (&mut a4).zip(&mut b4) {
        for i in 0..PARTIAL_SUMS {
            acc[i] += x[i] * y[i];
        }
    }
    let mut tail = 0.0;
    for (x, y) in a4.remainder().iter().zip(b4.remainder()) {
        tail += x * y;
    }
    (acc[0] + acc[1]) + (acc[2] + acc[3]) + tail
}

/// The distributed operator: this rank's matrix block, its place in the
/// grid, and the scratch of the row sums.
struct Operator<'a> {
    comm: &'a dyn Communicator,
    grid: Grid,
    a: Csr,
    /// `a.cols` as 2-byte integers when the block has at most 2^16
    /// columns (classes S, W and A), else empty. Each product streams the
    /// whole matrix from memory, which bounds its speed: 10 bytes an entry
    /// instead of 12 are a sixth less to wait for.
    cols16: Vec<u16>,
    /// Partial products over this rank's row block.
    w: Vec<f64>,
    /// The other half of each step of their row sum.
    w_in: Vec<f64>,
}

impl<'a> Operator<'a> {
    /// The operator of matrix block `a` at this rank's place `grid`.
    fn new(comm: &'a dyn Communicator, grid: Grid, a: Csr) -> Operator<'a> {
        // What `apply` relies on to read `v` without bounds checks.
        let n_cols = grid.cols.len();
        assert!(
            a.cols.iter().all(|&c| (c as usize) < n_cols),
            "CG: a column outside the block"
        );
        let n_rows = grid.rows.len();
        let cols16 = if n_cols <= 1 << 16 {
            a.cols.iter().map(|&c| c as u16).collect()
        } else {
            Vec::new()
        };
        Operator {
            comm,
            grid,
            a,
            cols16,
            w: vec![0.0; n_rows],
            w_in: vec![0.0; n_rows],
        }
    }

    /// `out = A v`, both over this rank's column block.
    fn apply(&mut self, v: &[f64], out: &mut [f64]) -> Result<()> {
        assert_eq!(
            v.len(),
            self.grid.cols.len(),
            "CG: a vector of another block"
        );
        for (r, w) in self.w.iter_mut().enumerate() {
            let (from, to) = (self.a.starts[r], self.a.starts[r + 1]);
            let values = &self.a.values[from..to];
            // SAFETY: every column of `a` is below `grid.cols.len()`
            // (checked in `Operator::new`; `a` is never changed, and
            // `cols16` holds the same columns when they fit 16 bits),
            // which is `v.len()` (checked above).
            *w = unsafe {
                if self.cols16.is_empty() {
                    row_times(&self.a.cols[from..to], values, v)
                } else {
                    row_times(&self.cols16[from..to], values, v)
                }
            };
        }
        self.grid
            .row_sum_of_sent_part(self.comm, &mut self.w, &mut self.w_in)?;
        self.grid.transpose(self.comm, &self.w, out)
    }

    /// The dot products of the pairs, summed over the whole vectors.
    fn dots<const N: usize>(&self, pairs: [(&[f64], &[f64]); N]) -> Result<[f64; N]> {
        let mut sums = pairs.map(|(a, b)| dot(a, b));
        let mut scratch = [0.0; N];
        self.grid.row_sum(self.comm, &mut sums, &mut scratch)?;
        Ok(sums)
    }
}

/// One rank's operator and vectors (each over its column block).
struct Solver<'a> {
    op: Operator<'a>,
    x: Vec<f64>,
    z: Vec<f64>,
    p: Vec<f64>,
    q: Vec<f64>,
    r: Vec<f64>,
}

impl Solver<'_> {
    /// NPB's `conj_grad`: 25 CG iterations on `A z = x` from `z = 0`;
    /// returns the residual norm `|x - A z|`.
    fn conj_grad(&mut self) -> Result<f64> {
        self.z.fill(0.0);
        self.r.copy_from_slice(&self.x);
        self.p.copy_from_slice(&self.x);
        let [mut rho] = self.op.dots([(&self.r, &self.r)])?;
        for _ in 0..CG_STEPS {
            self.op.apply(&self.p, &mut self.q)?;
            let [d] = self.op.dots([(&self.p, &self.q)])?;
            let alpha = rho / d;
            for (z, p) in self.z.iter_mut().zip(&self.p) {
                *z += alpha * p;
            }
            for (r, q) in self.r.iter_mut().zip(&self.q) {
                *r -= alpha * q;
            }
            let rho0 = rho;
            [rho] = self.op.dots([(&self.r, &self.r)])?;
            let beta = rho / rho0;
            for (p, r) in self.p.iter_mut().zip(&self.r) {
                *p = r + beta * *p;
            }
        }
        self.op.apply(&self.z, &mut self.r)?;
        for (r, x) in self.r.iter_mut().zip(&self.x) {
            *r = x - *r;
        }
        let [sum] = self.op.dots([(&self.r, &self.r)])?;
        Ok(sum.sqrt())
    }

    /// One outer iteration: solve, then zeta and the normalised new x.
    fn iterate(&mut self, shift: f64) -> Result<f64> {
        self.conj_grad()?;
        let [xz, zz] = self.op.dots([(&self.x, &self.z), (&self.z, &self.z)])?;
        let scale = 1.0 / zz.sqrt();
        for (x, z) in self.x.iter_mut().zip(&self.z) {
            *x = scale * z;
        }
        Ok(shift + 1.0 / xz)
    }
}

/// Runs NPB CG of `class` on this rank of `comm` (every rank must call
/// it; a power-of-two count) and verifies zeta; an unverified run is an
/// error.
pub fn run_cg(class: Class, comm: &dyn Communicator) -> Result<NpbOutcome> {
    let params = CgParams::of(class);
    let np = comm.size();
    if !np.is_power_of_two() {
        return Err(usage(format!(
            "NPB CG runs on a power-of-two number of processes (1, 2, 4, 8, ...), not {np}"
        )));
    }
    check_process_count(class, np)?;
    let corrupt = crate::npb::fault::injected(comm, "cg-value");
    let grid = Grid::with_fault(params.na, np, comm.rank(), corrupt);
    let a = make_matrix(
        params.na,
        params.nonzer,
        params.shift,
        grid.rows.clone(),
        grid.cols.clone(),
    );
    let n_cols = grid.cols.len();
    let mut s = Solver {
        op: Operator::new(comm, grid, a),
        x: vec![1.0; n_cols],
        z: vec![0.0; n_cols],
        p: vec![0.0; n_cols],
        q: vec![0.0; n_cols],
        r: vec![0.0; n_cols],
    };
    // Untimed: one outer iteration touches everything, then x starts over.
    s.iterate(params.shift)?;
    s.x.fill(1.0);

    let timer = Timer::start(comm)?;
    let mut zeta = 0.0;
    for _ in 0..params.iterations {
        zeta = s.iterate(params.shift)?;
    }
    let elapsed = timer.stop(comm)?;

    let checks = vec![CheckedValue::new("zeta", zeta, params.zeta)];
    let shape = RunShape {
        proc_grid: s.op.grid.proc_grid(),
        iterations: params.iterations,
        elapsed,
        operations: params.operation_count(),
    };
    NpbOutcome::checked("CG", class, comm, checks, VERIFY_TOLERANCE, shape)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operation_count_follows_the_spec_formula() {
        // 2 * 15 * 1400 * (3 + 56 + 25 * (5 + 56) + 3)
        assert_eq!(
            CgParams::of(Class::S).operation_count(),
            2.0 * 15.0 * 1400.0 * 1587.0
        );
    }

    #[test]
    fn partial_sums_add_the_same_terms() {
        let v: Vec<f64> = (0..40).map(|i| 1.0 + f64::from(i) / 8.0).collect();
        for n in [0, 1, 3, 4, 5, 11, 16, 37] {
            let cols: Vec<u32> = (0..n).map(|k| (7 * k + 3) % 40).collect();
            let values: Vec<f64> = (0..n).map(|k| f64::from(k) - 2.5).collect();
            let want: f64 = cols
                .iter()
                .zip(&values)
                .map(|(&c, &a)| a * v[c as usize])
                .sum();
            // Small integers and eighths: every partial sum is exact.
            // SAFETY: the columns are below 40, `v.len()`.
            let got = unsafe { row_times(&cols, &values, &v) };
            assert_eq!(got, want, "{n} entries");
            let cols16: Vec<u16> = cols.iter().map(|&c| c as u16).collect();
            // SAFETY: the same columns.
            let got16 = unsafe { row_times(&cols16, &values, &v) };
            assert_eq!(got16, want, "{n} entries, 2-byte columns");
            let b = &v[..n as usize];
            let want: f64 = values.iter().zip(b).map(|(x, y)| x * y).sum();
            assert_eq!(dot(&values, b), want, "{n} entries");
        }
    }

    #[test]
    fn too_many_columns_are_refused() {
        assert!(check_process_count(Class::S, 1024).is_ok());
        let e = check_process_count(Class::S, 1 << 24).unwrap_err();
        assert_eq!(crate::error::exit_code_of(&e), 2);
    }
}
