//! The MG class table of NPB 3.4 (spec: "MG: Classes", "Operators",
//! "Timing and Mop/s").

use crate::npb::Class;

/// Largest relative error of the final norm that still verifies.
pub const VERIFY_TOLERANCE: f64 = 1.0e-8;

/// Floating-point operations NPB counts per grid point and iteration.
pub const OPS_PER_POINT_ITERATION: f64 = 58.0;

/// Everything that distinguishes one MG class from another.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MgParams {
    /// The class these parameters belong to.
    pub class: Class,
    /// Grid points per side of the finest grid (`2^levels`).
    pub n_points: usize,
    /// Number of V-cycle iterations (NPB's `nit`).
    pub iterations: usize,
    /// Number of grid levels (NPB's `lt = log2 n`); level k has 2^k points a side.
    pub levels: usize,
    /// Residual operator A: weights of centre, face, edge and corner points.
    pub a: [f64; 4],
    /// Smoother S: weights of centre, face, edge and corner points.
    pub c: [f64; 4],
    /// NPB's verification value: the L2 norm of the final residual.
    pub reference_norm: f64,
}

/// Residual operator weights, the same for every class.
const A_WEIGHTS: [f64; 4] = [-8.0 / 3.0, 0.0, 1.0 / 6.0, 1.0 / 12.0];

/// Smoother S(a), classes S, W and A.
const S_A: [f64; 4] = [-3.0 / 8.0, 1.0 / 32.0, -1.0 / 64.0, 0.0];

/// Smoother S(b), classes B and larger.
const S_B: [f64; 4] = [-3.0 / 17.0, 1.0 / 33.0, -1.0 / 61.0, 0.0];

impl MgParams {
    /// The parameters of `class`.
    pub fn of(class: Class) -> Self {
        let (levels, iterations, c, reference_norm) = match class {
            Class::S => (5, 4, S_A, 0.530_770_700_573_4e-04),
            Class::W => (7, 4, S_A, 0.646_732_937_533_9e-05),
            Class::A => (8, 4, S_A, 0.243_336_530_906_9e-05),
            Class::B => (8, 20, S_B, 0.180_056_440_135_5e-05),
            Class::C => (9, 20, S_B, 0.570_673_228_574_0e-06),
        };
        MgParams {
            class,
            n_points: 1 << levels,
            iterations,
            levels,
            a: A_WEIGHTS,
            c,
            reference_norm,
        }
    }

    /// Points of the finest grid, `n^3`.
    pub fn total_points(&self) -> u64 {
        (self.n_points as u64).pow(3)
    }

    /// NPB's operation count of the timed section, `58 * nit * n^3`.
    pub fn operation_count(&self) -> f64 {
        OPS_PER_POINT_ITERATION * self.iterations as f64 * self.total_points() as f64
    }

    /// Relative error of `norm` against the reference.
    pub fn relative_error(&self, norm: f64) -> f64 {
        (norm - self.reference_norm).abs() / self.reference_norm
    }

    /// Whether `norm` passes NPB's verification (a NaN never does).
    pub fn verifies(&self, norm: f64) -> bool {
        // Written so that a NaN error compares false.
        self.relative_error(norm) <= VERIFY_TOLERANCE
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operation_counts_match_the_spec() {
        let want = [
            (Class::S, 7_602_176.0),
            (Class::W, 486_539_264.0),
            (Class::A, 3_892_314_112.0),
            (Class::B, 19_461_570_560.0),
            (Class::C, 155_692_564_480.0),
        ];
        for (class, ops) in want {
            let p = MgParams::of(class);
            assert_eq!(p.operation_count(), ops, "class {class}");
            assert_eq!(p.n_points, 1 << p.levels);
        }
    }

    #[test]
    fn verification_rejects_nan_and_far_values() {
        let p = MgParams::of(Class::S);
        assert!(p.verifies(p.reference_norm));
        assert!(p.verifies(p.reference_norm * (1.0 + 0.9e-8)));
        assert!(!p.verifies(p.reference_norm * (1.0 + 1.1e-8)));
        assert!(!p.verifies(f64::NAN));
        assert!(!p.verifies(5.136e-05));
    }
}
