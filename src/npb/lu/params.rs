//! The LU class table of NPB 3.4: grid, time steps, pseudo-time step,
//! the reference values verification compares with, and NPB's operation
//! count.

use crate::npb::Class;

/// Largest relative error of a verified value (NPB's `epsilon`).
pub const VERIFY_TOLERANCE: f64 = 1.0e-8;

/// The SSOR relaxation factor (NPB's `omega`, the same for every class).
pub const OMEGA: f64 = 1.2;

/// What distinguishes one LU class from another.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LuParams {
    /// The class.
    pub class: Class,
    /// Grid points per side (NPB's `nx0 = ny0 = nz0`).
    pub n_points: usize,
    /// SSOR iterations timed (NPB's `itmax`).
    pub iterations: usize,
    /// Pseudo-time step (NPB's `dt`).
    pub dt: f64,
    /// NPB's RMS norms of the final steady-state residual (`xcrref`).
    pub residual_norms: [f64; 5],
    /// NPB's RMS norms of the error against the exact solution (`xceref`).
    pub error_norms: [f64; 5],
    /// NPB's surface integral (`xciref`).
    pub surface_integral: f64,
}

impl LuParams {
    /// The parameters of `class`.
    // NPB's reference values digit for digit, as its verify.f90 prints
    // them, though f64 holds fewer.
    #[allow(clippy::excessive_precision)]
    pub fn of(class: Class) -> Self {
        let (n_points, iterations, dt, residual_norms, error_norms, surface_integral) = match class
        {
            Class::S => (
                12,
                50,
                0.5,
                [
                    1.619_634_321_097_670_2e-2,
                    2.197_674_516_482_131_8e-3,
                    1.517_992_765_339_918_5e-3,
                    1.502_958_443_599_432_3e-3,
                    3.426_407_315_589_646_1e-2,
                ],
                [
                    6.422_331_995_796_092_4e-4,
                    8.414_434_204_734_792_6e-5,
                    5.858_826_961_648_518_6e-5,
                    5.847_422_259_515_735_0e-5,
                    1.310_334_791_411_129_4e-3,
                ],
                7.841_892_886_593_708_3,
            ),
            Class::W => (
                33,
                300,
                1.5e-3,
                [
                    0.123_651_163_819_2e2,
                    0.131_722_847_779_9e1,
                    0.255_012_071_309_5e1,
                    0.232_618_775_025_2e1,
                    0.282_679_944_418_9e2,
                ],
                [
                    0.486_787_714_421_6,
                    0.506_465_288_098_2e-1,
                    0.928_181_810_196_0e-1,
                    0.857_012_654_273_3e-1,
                    0.108_427_741_779_2e1,
                ],
                0.116_139_931_102_3e2,
            ),
            Class::A => (
                64,
                250,
                2.0,
                [
                    7.790_210_760_668_936_7e2,
                    6.340_276_525_969_287_0e1,
                    1.949_924_972_729_247_9e2,
                    1.784_530_116_041_853_7e2,
                    1.838_476_034_946_424_7e3,
                ],
                [
                    2.996_408_568_547_194_3e1,
                    2.819_457_636_500_334_9,
                    7.347_341_269_877_474_2,
                    6.713_922_568_777_705_1,
                    7.071_531_568_839_257_8e1,
                ],
                2.603_092_560_488_627_7e1,
            ),
            Class::B => (
                102,
                250,
                2.0,
                [
                    3.553_267_296_998_273_6e3,
                    2.621_475_079_531_069_2e2,
                    8.833_372_185_095_219_0e2,
                    7.781_277_473_942_526_5e2,
                    7.308_796_959_254_531_4e3,
                ],
                [
                    1.140_117_638_021_270_9e2,
                    8.109_896_365_542_157_4,
                    2.848_059_731_769_830_8e1,
                    2.590_539_456_783_293_9e1,
                    2.605_490_750_485_741_3e2,
                ],
                4.788_716_270_330_822_7e1,
            ),
            Class::C => (
                162,
                250,
                2.0,
                [
                    1.037_669_803_235_378_46e4,
                    8.922_124_588_010_085_52e2,
                    2.562_388_145_826_608_71e3,
                    2.191_943_438_578_314_27e3,
                    1.780_780_572_610_611_85e4,
                ],
                [
                    2.159_863_997_169_492_79e2,
                    1.557_895_592_398_636_00e1,
                    5.413_188_630_772_077_66e1,
                    4.822_626_431_540_454_21e1,
                    4.559_029_100_432_503_58e2,
                ],
                6.664_045_535_721_813_00e1,
            ),
        };
        LuParams {
            class,
            n_points,
            iterations,
            dt,
            residual_norms,
            error_norms,
            surface_integral,
        }
    }

    /// NPB's operation count of the timed iterations: a fit in the mean
    /// side `n` of `itmax * (1984.77 n^3 - 10923.3 n^2 + 27770.9 n - 144010)`.
    pub fn operation_count(&self) -> f64 {
        let fit = [1984.77, -10923.3, 27770.9, -144010.0];
        crate::npb::cubic_fit_operations(self.iterations, self.n_points, fit)
    }

    /// The problem in a few words, for table headings.
    pub fn describe(&self) -> String {
        let n = self.n_points;
        format!("{n}^3 grid, {} SSOR iterations", self.iterations)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operation_counts_follow_npbs_fit() {
        // NPB prints Mop/s = count / time; the count for class S, by hand:
        // 50 * (1984.77 * 1728 - 10923.3 * 144 + 27770.9 * 12 - 144010).
        let s = LuParams::of(Class::S).operation_count();
        let by_hand = 50.0 * (3_429_682.56 - 1_572_955.2 + 333_250.8 - 144_010.0);
        assert!((s - by_hand).abs() < 1e-3, "{s} vs {by_hand}");
        for c in Class::ALL {
            let p = LuParams::of(c);
            assert!(p.operation_count() > 0.0);
            assert_eq!(p.class, c);
        }
        assert_eq!(LuParams::of(Class::W).n_points, 33);
        assert_eq!(LuParams::of(Class::A).iterations, 250);
    }
}
