//! The saturation point: the smallest size from which time grows in
//! proportion to size (see the notes of [`super`]).
//!
//! On fitted lines ([`on_lines`]): the smallest size from which every
//! larger one has, on its own segment's line, a latency share alpha / t of
//! at most [`SATURATION_LATENCY_SHARE`]. When the lines do not fit their
//! points (a sweep under load), their alpha and beta mean nothing and the
//! point is read off the measured curve ([`on_curve`]) by the equivalent
//! rule on chords: on a Hockney line t = alpha + n / beta, the latency
//! share at n is at most 1/5 exactly when the chord of log t against log n
//! from n to 2n has a slope of at least log2(9/5) = 0.848 (both hold from
//! n = 4 alpha beta on), so the two rules agree wherever a line does fit.
//! The chord runs to every measured size at least twice as large, so one
//! slow point past the candidate keeps it from counting as saturated.

use super::hockney::SegmentFit;
use super::SATURATION_LATENCY_SHARE;

/// Least slope of log t against log n over a doubling of the size for a
/// saturated message: log2(1 + (1 - s)) with the latency share s = 1/5
/// at n, that is log2(9/5).
pub(super) fn min_chord_slope() -> f64 {
    (2.0 - SATURATION_LATENCY_SHARE).log2()
}

/// Index of the saturation point judged on each segment's fitted line.
pub(super) fn on_lines(bytes: &[f64], fits: &[SegmentFit], include: &[bool]) -> Option<usize> {
    let mut found = None;
    for seg in fits.iter().rev() {
        let line = &seg.line;
        for i in (seg.first..=seg.last).rev().filter(|&i| include[i]) {
            let saturated = line.ns_per_byte > 0.0
                && line.alpha_ns <= SATURATION_LATENCY_SHARE * line.predict_ns(bytes[i]);
            if !saturated {
                return found;
            }
            found = Some(i);
        }
    }
    found
}

/// Index of the saturation point read off the curve `(bytes, time_ns)`
/// (ascending sizes): the smallest included size from which every
/// included size with a chord to a size at least twice as large has all
/// such chords at [`min_chord_slope`] or steeper. None when no size has
/// such a chord or the last ones fail.
pub(super) fn on_curve(bytes: &[f64], time_ns: &[f64], include: &[bool]) -> Option<usize> {
    let least = min_chord_slope();
    let kept: Vec<usize> = (0..bytes.len()).filter(|&i| include[i]).collect();
    let mut found = None;
    for (k, &i) in kept.iter().enumerate().rev() {
        let mut chords = kept[k + 1..]
            .iter()
            .filter(|&&j| bytes[j] >= 2.0 * bytes[i])
            .map(|&j| (time_ns[j] / time_ns[i]).ln() / (bytes[j] / bytes[i]).ln())
            .peekable();
        if chords.peek().is_none() {
            // Too near the largest size to judge: neither for nor against.
            continue;
        }
        if !chords.all(|slope| slope >= least) {
            return found;
        }
        found = Some(i);
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hockney(alpha_ns: f64, bytes_per_ns: f64, sizes: &[f64]) -> Vec<f64> {
        sizes.iter().map(|n| alpha_ns + n / bytes_per_ns).collect()
    }

    #[test]
    fn on_a_line_the_curve_rule_finds_four_n_half() {
        // alpha 10 us, 1 B/ns: n_1/2 = 10,000 B, 4 n_1/2 = 40,000 B.
        let sizes: Vec<f64> = (0..=30).map(|k| 1000.0 * 1.25f64.powi(k)).collect();
        let t = hockney(10_000.0, 1.0, &sizes);
        let i = on_curve(&sizes, &t, &vec![true; sizes.len()]).unwrap();
        assert!(
            sizes[i] >= 40_000.0 && sizes[i - 1] < 40_000.0,
            "{}",
            sizes[i]
        );
    }

    #[test]
    fn a_latency_bound_curve_has_no_saturation_point() {
        let sizes: Vec<f64> = (0..20).map(|k| 2f64.powi(k)).collect();
        let t: Vec<f64> = sizes.iter().map(|n| 50_000.0 + n / 1e6).collect();
        assert_eq!(on_curve(&sizes, &t, &vec![true; sizes.len()]), None);
    }

    #[test]
    fn one_slow_point_past_a_size_keeps_it_unsaturated() {
        let sizes: Vec<f64> = (10..24).map(|k| 2f64.powi(k)).collect();
        let mut t = hockney(1_000.0, 1.0, &sizes);
        let clean = on_curve(&sizes, &t, &vec![true; sizes.len()]).unwrap();
        // A point four sizes past the clean answer taking as long as the
        // next one: the chords into the one after it flatten.
        let slow = clean + 4;
        t[slow] = t[slow + 1];
        let noisy = on_curve(&sizes, &t, &vec![true; sizes.len()]).unwrap();
        assert!(noisy > slow, "{clean} {noisy}");
    }

    #[test]
    fn the_chord_threshold_is_the_latency_share_rule() {
        // At n = 4 alpha beta the share is 1/5 and the chord to 2n has
        // exactly the least slope.
        let (a, b, n) = (1.0f64, 1.0f64, 4.0f64);
        let slope = ((a + 2.0 * n / b) / (a + n / b)).ln() / 2f64.ln();
        assert!((slope - min_chord_slope()).abs() < 1e-12);
    }
}
