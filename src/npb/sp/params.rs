//! The SP class table of NPB 3.4: grid, time steps, time step, the
//! reference values verification compares with, and NPB's operation count.
//! BT's table (`crate::npb::bt::params`) is of the same type.

use crate::npb::Class;

/// Largest relative error of a verified value (NPB's `epsilon`).
pub const VERIFY_TOLERANCE: f64 = 1.0e-8;

/// What distinguishes one SP (or BT) class from another.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SpParams {
    /// The class.
    pub class: Class,
    /// Grid points per side (NPB's `problem_size`).
    pub n_points: usize,
    /// Time steps timed (NPB's `niter_default`).
    pub iterations: usize,
    /// Time step (NPB's `dt_default`).
    pub dt: f64,
    /// NPB's RMS norms of the final residual, divided by `dt` (`xcrref`).
    pub residual_norms: [f64; 5],
    /// NPB's RMS norms of the error against the exact solution (`xceref`).
    pub error_norms: [f64; 5],
    /// NPB's fit of the operations of a step in the grid side `n`:
    /// `[c3, c2, c1, c0]` of `c3 n^3 + c2 n^2 + c1 n + c0`.
    pub operation_fit: [f64; 4],
}

impl SpParams {
    /// The parameters of `class`.
    // NPB's reference values digit for digit, as its verify.f90 prints
    // them, though f64 holds fewer.
    #[allow(clippy::excessive_precision)]
    pub fn of(class: Class) -> Self {
        let (n_points, iterations, dt, residual_norms, error_norms) = match class {
            Class::S => (
                12,
                100,
                0.015,
                [
                    2.747_031_545_133_947_9e-2,
                    1.036_074_670_528_541_7e-2,
                    1.623_574_506_509_553_2e-2,
                    1.584_055_722_445_561_5e-2,
                    3.484_904_060_936_246_0e-2,
                ],
                [
                    2.728_925_855_737_722_7e-5,
                    1.036_444_664_083_728_5e-5,
                    1.615_479_828_716_647_1e-5,
                    1.575_070_499_448_010_2e-5,
                    3.417_766_618_339_053_1e-5,
                ],
            ),
            Class::W => (
                36,
                400,
                0.0015,
                [
                    0.189_325_373_358_4e-2,
                    0.171_707_544_777_5e-3,
                    0.277_815_335_093_6e-3,
                    0.288_747_540_998_4e-3,
                    0.314_361_116_124_2e-2,
                ],
                [
                    0.754_208_859_953_4e-4,
                    0.651_285_225_308_6e-5,
                    0.104_909_228_568_8e-4,
                    0.112_883_867_153_5e-4,
                    0.121_284_563_977_3e-3,
                ],
            ),
            Class::A => (
                64,
                400,
                0.0015,
                [
                    2.479_982_239_930_019_5,
                    1.127_633_796_436_883_2,
                    1.502_897_788_877_049_1,
                    1.421_781_621_169_517_9,
                    2.129_211_303_513_828_0,
                ],
                [
                    1.090_014_029_782_055_0e-4,
                    3.734_395_176_928_209_1e-5,
                    5.009_278_540_654_163_3e-5,
                    4.767_109_393_952_825_5e-5,
                    1.362_161_339_921_300_1e-4,
                ],
            ),
            Class::B => (
                102,
                400,
                0.001,
                [
                    0.690_329_357_999_8e2,
                    0.309_513_448_808_4e2,
                    0.410_333_664_701_7e2,
                    0.386_476_900_960_4e2,
                    0.564_348_227_259_6e2,
                ],
                [
                    0.981_000_619_018_8e-2,
                    0.102_282_790_567_0e-2,
                    0.172_059_791_169_2e-2,
                    0.169_447_942_823_1e-2,
                    0.184_745_626_398_1e-1,
                ],
            ),
            Class::C => (
                162,
                400,
                0.000_67,
                [
                    0.588_169_158_182_9e3,
                    0.245_441_760_356_9e3,
                    0.329_382_919_185_1e3,
                    0.308_192_497_189_1e3,
                    0.459_722_379_917_6e3,
                ],
                [
                    0.259_812_050_018_3,
                    0.259_088_892_231_5e-1,
                    0.513_288_641_632_0e-1,
                    0.480_607_341_945_4e-1,
                    0.548_337_749_130_1,
                ],
            ),
        };
        SpParams {
            class,
            n_points,
            iterations,
            dt,
            residual_norms,
            error_norms,
            operation_fit: [881.174, -4683.91, 11484.5, -19272.4],
        }
    }

    /// NPB's operation count of the timed steps: a fit in the side `n`,
    /// for SP `niter * (881.174 n^3 - 4683.91 n^2 + 11484.5 n - 19272.4)`.
    pub fn operation_count(&self) -> f64 {
        crate::npb::cubic_fit_operations(self.iterations, self.n_points, self.operation_fit)
    }

    /// The problem in a few words, for table headings.
    pub fn describe(&self) -> String {
        let n = self.n_points;
        format!("{n}^3 grid, {} ADI steps", self.iterations)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operation_counts_follow_npbs_fit() {
        // Class S by hand: 100 * (881.174 * 1728 - 4683.91 * 144
        // + 11484.5 * 12 - 19272.4).
        let s = SpParams::of(Class::S).operation_count();
        let by_hand = 100.0 * (1_522_668.672 - 674_483.04 + 137_814.0 - 19_272.4);
        assert!((s - by_hand).abs() < 1e-3, "{s} vs {by_hand}");
        for c in Class::ALL {
            let p = SpParams::of(c);
            assert!(p.operation_count() > 0.0);
            assert_eq!(p.class, c);
        }
        assert_eq!(SpParams::of(Class::W).n_points, 36);
        assert_eq!(SpParams::of(Class::A).iterations, 400);
    }
}
