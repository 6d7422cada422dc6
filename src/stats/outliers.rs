//! Outlier detection: modified z-scores (Iglewicz and Hoaglin) and the
//! k-sigma rule. Indices refer to the input order.

use super::estimators::{mean, median_in_place, stddev};

/// 0.6745 is the 0.75 quantile of the standard normal: it makes the MAD a
/// consistent estimator of sigma for normal data (Iglewicz and Hoaglin).
const MAD_CONSTANT: f64 = 0.6745;

/// sqrt(pi/2) ~ 1.253314: the mean absolute deviation of a normal variable is
/// sigma * sqrt(2/pi), so this scales it back to sigma (the IBM fallback for
/// MAD == 0).
const MEAN_AD_CONSTANT: f64 = 1.253314;

/// Modified z-score of each value, in input order.
///
/// `0.6745 (x - median) / MAD`. When MAD == 0 (more than half the values are
/// equal) the fallback is `(x - median) / (1.253314 meanAD)`, with meanAD the
/// mean absolute deviation from the median; when that is also 0 (all values
/// equal) every score is 0. Empty input gives an empty vector.
///
/// Cost: O(n) time, O(n) memory.
pub fn modified_z_scores(xs: &[f64]) -> Vec<f64> {
    let mut buf = xs.to_vec();
    let med = median_in_place(&mut buf);
    for (b, x) in buf.iter_mut().zip(xs) {
        *b = (x - med).abs();
    }
    let mean_ad = mean(&buf);
    let mad = median_in_place(&mut buf);
    if mad > 0.0 {
        xs.iter().map(|x| MAD_CONSTANT * (x - med) / mad).collect()
    } else if mean_ad > 0.0 {
        let scale = MEAN_AD_CONSTANT * mean_ad;
        xs.iter().map(|x| (x - med) / scale).collect()
    } else {
        vec![0.0; xs.len()]
    }
}

/// Indices (ascending) of values whose modified z-score (see
/// [`modified_z_scores`]) has absolute value strictly greater than
/// `threshold`; 3.5 is the usual threshold.
///
/// Cost: O(n).
pub fn outliers_modified_z(xs: &[f64], threshold: f64) -> Vec<usize> {
    modified_z_scores(xs).iter().enumerate().filter(|(_, z)| z.abs() > threshold).map(|(i, _)| i).collect()
}

/// Indices (ascending) of values with `|x - mean| > k * stddev` (sample
/// standard deviation, n - 1 denominator); `k = 2` is the "2 sigma" rule.
/// Empty when the standard deviation is 0 (including n < 2).
///
/// Cost: O(n).
pub fn outliers_sigma(xs: &[f64], k: f64) -> Vec<usize> {
    let sd = stddev(xs);
    if sd == 0.0 {
        return Vec::new();
    }
    let m = mean(xs);
    let limit = k * sd;
    xs.iter().enumerate().filter(|(_, x)| (*x - m).abs() > limit).map(|(i, _)| i).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::testdata::{HAKMEM, MAD_ZERO, OUTLIER, assert_all_close};

    #[test]
    fn modified_z_matches_numpy_formula() {
        // modified_z(DATA_A) computed with numpy 2.4.6 by the formula in
        // src/stats/reference.py (0.6745 (x - median) / MAD)
        let a = [
            -0.7760485223439231,
            -0.5729514776560768,
            -0.9396186851401737,
            0.8056684932010065,
            1.014670866267074,
            1.4101197357545627,
            0.5247706054502151,
            0.3705895018153098,
            -0.5088914665131969,
            -0.3705895018153098,
        ];
        assert_all_close(&modified_z_scores(&HAKMEM), &a, 1e-13, 0.0);
        // modified_z(DATA_B), numpy 2.4.6, src/stats/reference.py
        let b = [
            0.0,
            -1.349,
            1.011749999999976,
            -0.337250000000024,
            -1.011749999999976,
            0.337249999999976,
            -0.6745,
            117.36299999999831,
            -1.686249999999976,
            0.6745,
            0.0,
        ];
        assert_all_close(&modified_z_scores(&OUTLIER), &b, 1e-12, 1e-15);
    }

    #[test]
    fn modified_z_falls_back_to_mean_ad_when_mad_is_zero() {
        // modified_z(DATA_C) (MAD == 0, meanAD branch), numpy 2.4.6, src/stats/reference.py
        let c = [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 7.180961833985737, 0.0];
        assert_all_close(&modified_z_scores(&MAD_ZERO), &c, 1e-14, 0.0);
    }

    #[test]
    fn modified_z_is_all_zero_for_constant_input() {
        // Spec: when MAD and meanAD are both 0 every score is 0.
        assert_eq!(modified_z_scores(&[7.0; 5]), vec![0.0; 5]);
        assert!(outliers_modified_z(&[7.0; 5], 3.5).is_empty());
        assert!(modified_z_scores(&[]).is_empty());
    }

    #[test]
    fn outlier_indices_match_numpy() {
        // numpy.nonzero(abs(modz) > 3.5) and numpy.nonzero(abs(x - mean) > 2 std(ddof=1)),
        // numpy 2.4.6, src/stats/reference.py
        assert!(outliers_modified_z(&HAKMEM, 3.5).is_empty());
        assert!(outliers_sigma(&HAKMEM, 2.0).is_empty());
        assert_eq!(outliers_modified_z(&OUTLIER, 3.5), vec![7]);
        assert_eq!(outliers_sigma(&OUTLIER, 2.0), vec![7]);
        assert_eq!(outliers_modified_z(&MAD_ZERO, 3.5), vec![7]);
        assert_eq!(outliers_sigma(&MAD_ZERO, 2.0), vec![7]);
    }

    #[test]
    fn sigma_rule_has_no_outliers_without_spread() {
        assert!(outliers_sigma(&[3.0; 4], 2.0).is_empty());
        assert!(outliers_sigma(&[3.0], 0.0).is_empty());
        assert!(outliers_sigma(&[], 2.0).is_empty());
    }

    #[test]
    fn thresholds_are_strict() {
        // Scores are +-0.6745 * 1 / 1 for [0, 1, 2]: median 1, MAD 1.
        let xs = [0.0, 1.0, 2.0];
        assert!(outliers_modified_z(&xs, MAD_CONSTANT).is_empty());
        assert_eq!(outliers_modified_z(&xs, 0.6), vec![0, 2]);
    }
}
