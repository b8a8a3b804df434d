//! The BT class table of NPB 3.4: grid, time steps, time step, the
//! reference values verification compares with, and NPB's operation count.

use crate::npb::Class;

/// BT's class table has SP's shape (and SP's verification tolerance).
pub use crate::npb::sp::{SpParams as BtParams, VERIFY_TOLERANCE};

/// The parameters of BT `class`.
// NPB's reference values digit for digit, as its verify.f90 prints
// them, though f64 holds fewer.
#[allow(clippy::excessive_precision)]
pub fn of(class: Class) -> BtParams {
    let (n_points, iterations, dt, residual_norms, error_norms) = match class {
        Class::S => (
            12,
            60,
            0.010,
            [
                1.703_428_370_954_131_1e-1,
                1.297_525_207_003_409_7e-2,
                3.252_792_698_948_605_5e-2,
                2.643_642_127_516_680_1e-2,
                1.921_178_413_174_443_0e-1,
            ],
            [
                4.997_691_334_581_157_9e-4,
                4.519_566_678_296_192_7e-5,
                7.397_376_517_292_135_7e-5,
                7.382_123_863_243_973_1e-5,
                8.926_963_098_749_144_6e-4,
            ],
        ),
        Class::W => (
            24,
            200,
            0.0008,
            [
                0.112_559_040_934_4e3,
                0.118_000_759_573_1e2,
                0.271_032_976_784_6e2,
                0.246_917_493_766_9e2,
                0.263_842_787_431_7e3,
            ],
            [
                0.441_965_573_600_8e1,
                0.463_853_126_000_2,
                0.101_155_174_996_7e1,
                0.923_587_872_994_4,
                0.101_804_583_771_8e2,
            ],
        ),
        Class::A => (
            64,
            200,
            0.0008,
            [
                1.080_634_671_463_726_4e2,
                1.131_973_090_122_081_3e1,
                2.597_435_451_158_246_5e1,
                2.366_562_254_467_891_0e1,
                2.527_896_321_174_834_4e2,
            ],
            [
                4.234_841_604_052_502_5,
                4.439_028_249_699_569_8e-1,
                9.669_248_013_634_565_0e-1,
                8.830_206_303_976_547_4e-1,
                9.737_990_177_082_927_8,
            ],
        ),
        Class::B => (
            102,
            200,
            0.0003,
            [
                1.423_359_722_928_725_4e3,
                9.933_052_259_015_023_8e1,
                3.564_602_564_453_528_5e2,
                3.248_544_795_908_409_2e2,
                3.270_754_125_465_936_3e3,
            ],
            [
                5.296_984_714_093_685_6e1,
                4.463_289_611_567_066_8,
                1.312_257_334_221_017_4e1,
                1.200_692_532_355_914_4e1,
                1.245_957_615_103_598_6e2,
            ],
        ),
        Class::C => (
            162,
            200,
            0.0001,
            [
                0.623_981_165_517_646_15e4,
                0.507_932_391_904_239_64e3,
                0.154_235_300_930_135_96e4,
                0.133_023_879_292_911_90e4,
                0.116_040_874_284_364_55e5,
            ],
            [
                0.164_620_083_690_912_65e3,
                0.114_971_079_038_243_13e2,
                0.412_074_462_074_615_08e2,
                0.370_876_510_596_941_67e2,
                0.362_110_530_518_412_65e3,
            ],
        ),
    };
    BtParams {
        class,
        n_points,
        iterations,
        dt,
        residual_norms,
        error_norms,
        // NPB's fit in the grid side n: niter (3478.8 n^3 - 17655.7 n^2
        // + 28023.7 n).
        operation_fit: [3478.8, -17655.7, 28023.7, 0.0],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operation_counts_follow_npbs_fit() {
        // Class S by hand: 60 * (3478.8 * 1728 - 17655.7 * 144
        // + 28023.7 * 12).
        let s = of(Class::S).operation_count();
        let by_hand = 60.0 * (6_011_366.4 - 2_542_420.8 + 336_284.4);
        assert!((s - by_hand).abs() < 1e-3, "{s} vs {by_hand}");
        for c in Class::ALL {
            let p = of(c);
            assert!(p.operation_count() > 0.0);
            assert_eq!(p.class, c);
        }
        assert_eq!(of(Class::W).n_points, 24);
        assert_eq!(of(Class::A).iterations, 200);
    }
}
