//! Robust location and scale for finding outliers among many similar
//! measurements (the cells of a link matrix): the median and the median
//! absolute deviation, and the modified z score built from them.
//!
//! Method: Iglewicz & Hoaglin, *How to Detect and Handle Outliers*, ASQC,
//! 1993, sec. 3.1 (modified z score, cut-off 3.5); Leys et al., "Detecting
//! outliers: Do not use standard deviation around the mean, use absolute
//! deviation around the median", J. Exp. Soc. Psych. 49 (2013). The mean and
//! standard deviation are themselves dragged by the outliers they should
//! find; the median and MAD are not, up to half the data.

use super::quantile_sorted;

/// Scale that makes the MAD estimate the standard deviation of normal data
/// (1 / Φ⁻¹(3/4)).
pub const MAD_TO_SIGMA: f64 = 1.4826;

/// Modified z score beyond which a value is an outlier (Iglewicz & Hoaglin).
pub const OUTLIER_Z: f64 = 3.5;

/// Median and scaled MAD of `values`; None when empty or any is NaN.
pub fn median_mad(values: &[f64]) -> Option<(f64, f64)> {
    if values.is_empty() || values.iter().any(|v| v.is_nan()) {
        return None;
    }
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let median = quantile_sorted(&v, 0.5);
    let mut dev: Vec<f64> = v.iter().map(|x| (x - median).abs()).collect();
    dev.sort_by(f64::total_cmp);
    Some((median, MAD_TO_SIGMA * quantile_sorted(&dev, 0.5)))
}

/// The modified z score of `value`: (value - median) / scale, where the
/// scale is the MAD floored at `floor_fraction` of the median, so that a
/// set of nearly identical values does not make a tiny difference look
/// huge.
pub fn z_score(value: f64, median: f64, mad: f64, floor_fraction: f64) -> f64 {
    let scale = mad.max(median.abs() * floor_fraction);
    if scale <= 0.0 {
        return 0.0;
    }
    (value - median) / scale
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_and_mad_ignore_one_wild_value() {
        let (m, mad) = median_mad(&[10.0, 11.0, 9.0, 10.0, 1000.0]).unwrap();
        assert_eq!(m, 10.0);
        assert!((mad - MAD_TO_SIGMA).abs() < 1e-12, "{mad}");
        assert!(z_score(1000.0, m, mad, 0.0) > OUTLIER_Z);
        assert!(z_score(11.0, m, mad, 0.0) < OUTLIER_Z);
        assert!(median_mad(&[]).is_none());
        assert!(median_mad(&[1.0, f64::NAN]).is_none());
    }

    #[test]
    fn the_floor_keeps_identical_values_calm() {
        let (m, mad) = median_mad(&[5.0, 5.0, 5.0, 5.01]).unwrap();
        assert_eq!(mad, 0.0);
        assert!(z_score(5.01, m, mad, 0.05) < 1.0);
        assert_eq!(z_score(5.0, 0.0, 0.0, 0.05), 0.0);
    }
}
