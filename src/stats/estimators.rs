//! Point estimators: median, quantile, mean, standard deviation, MAD.
//!
//! All functions assume finite input (no NaN or infinity; [`super::Sample`]
//! guarantees that) and never panic: an empty slice gives NaN.

/// Median of `buf`, reordering `buf` in place; O(n), no allocation.
///
/// For even n this is the mean of the two middle values, computed as
/// `(lower + upper) / 2` exactly like `numpy.median`. NaN when `buf` is empty.
/// Used by the bootstrap on its scratch buffer.
pub(crate) fn median_in_place(buf: &mut [f64]) -> f64 {
    let n = buf.len();
    if n == 0 {
        return f64::NAN;
    }
    let mid = n / 2;
    let (left, upper, _) = buf.select_nth_unstable_by(mid, f64::total_cmp);
    let upper = *upper;
    if n % 2 == 1 {
        return upper;
    }
    // `left` holds the n/2 values ordered before `upper`; the lower middle
    // value is the largest of them.
    let lower = left.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    (lower + upper) / 2.0
}

/// Median of `xs`: the middle value for odd n, the mean of the two middle
/// values for even n (as `numpy.median`). NaN for an empty slice.
///
/// The input is assumed NaN-free (a [`super::Sample`] guarantees it); a NaN
/// would be ordered after every number by `f64::total_cmp`, giving a
/// meaningless value, but never a panic.
///
/// Cost: O(n) time (selection, not a sort) and one O(n) copy.
pub fn median(xs: &[f64]) -> f64 {
    median_in_place(&mut xs.to_vec())
}

/// Linear interpolation between `a` and `b` at weight `t`, written as numpy's
/// `_lerp` does (from the nearer end), so results match it bit for bit.
fn lerp(a: f64, b: f64, t: f64) -> f64 {
    let diff = b - a;
    if t >= 0.5 { b - diff * (1.0 - t) } else { a + diff * t }
}

/// The `q`-quantile of `sorted` (ascending) by linear interpolation between
/// order statistics: Hyndman and Fan's type 7, numpy's default
/// `method="linear"`. The position is `h = (n - 1) q` and the result
/// `sorted[floor(h)] + (h - floor(h)) (sorted[floor(h) + 1] - sorted[floor(h)])`.
///
/// NaN when `sorted` is empty or `q` is outside `[0, 1]` (or NaN). The input is
/// not checked for order; unsorted input gives a meaningless value.
///
/// Cost: O(1).
pub fn quantile(sorted: &[f64], q: f64) -> f64 {
    let n = sorted.len();
    if n == 0 || !(0.0..=1.0).contains(&q) {
        return f64::NAN;
    }
    let last = n - 1;
    let h = last as f64 * q;
    if h >= last as f64 {
        return sorted[last];
    }
    let lo = h.floor();
    // 0 <= lo < last, so both indices are in bounds.
    let i = lo as usize;
    lerp(sorted[i], sorted[i + 1], h - lo)
}

/// Neumaier-compensated sum: O(n), error independent of n to first order.
fn compensated_sum(values: impl Iterator<Item = f64>) -> f64 {
    let mut sum = 0.0_f64;
    let mut comp = 0.0_f64;
    for v in values {
        let t = sum + v;
        if sum.abs() >= v.abs() {
            comp += (sum - t) + v;
        } else {
            comp += (v - t) + sum;
        }
        sum = t;
    }
    sum + comp
}

/// Arithmetic mean of `xs`, with a compensated (Neumaier) sum so that large
/// runs of similar values do not lose precision. NaN for an empty slice.
///
/// Cost: O(n).
pub fn mean(xs: &[f64]) -> f64 {
    if xs.is_empty() {
        return f64::NAN;
    }
    compensated_sum(xs.iter().copied()) / xs.len() as f64
}

/// Sample standard deviation of `xs`: `sqrt(sum((x - mean)^2) / (n - 1))`
/// (numpy's `std(ddof=1)`), computed in two passes. 0.0 when n < 2.
///
/// Cost: O(n).
pub fn stddev(xs: &[f64]) -> f64 {
    let n = xs.len();
    if n < 2 {
        return 0.0;
    }
    let m = mean(xs);
    let ss = compensated_sum(xs.iter().map(|x| (x - m) * (x - m)));
    (ss / (n - 1) as f64).sqrt()
}

/// Raw median absolute deviation: `median(|x - median(xs)|)`, NOT scaled by
/// 1.4826 (scipy's `median_abs_deviation(x, scale=1.0)`). NaN for an empty
/// slice.
///
/// Cost: O(n) time, one O(n) buffer.
pub fn mad(xs: &[f64]) -> f64 {
    let mut buf = xs.to_vec();
    let med = median_in_place(&mut buf);
    for v in &mut buf {
        *v = (*v - med).abs();
    }
    median_in_place(&mut buf)
}

/// Smallest and largest value of `xs`; `(NaN, NaN)` when empty. O(n).
pub(crate) fn min_max(xs: &[f64]) -> (f64, f64) {
    if xs.is_empty() {
        return (f64::NAN, f64::NAN);
    }
    xs.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &x| (lo.min(x), hi.max(x)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::testdata::{HAKMEM, MAD_ZERO, OUTLIER, assert_rel};

    fn sorted(xs: &[f64]) -> Vec<f64> {
        let mut v = xs.to_vec();
        v.sort_by(f64::total_cmp);
        v
    }

    const QS: [f64; 7] = [0.0, 0.1, 0.25, 0.5, 0.9, 0.975, 1.0];

    #[test]
    fn median_matches_numpy_even_and_odd() {
        // numpy.median(DATA_A) (n = 10, even) with numpy 2.4.6, from src/stats/reference.py
        assert_eq!(median(&HAKMEM), 16150602.0);
        // numpy.median(DATA_B) (n = 11, odd) with numpy 2.4.6, from src/stats/reference.py
        assert_eq!(median(&OUTLIER), 100.2);
        // numpy.median(DATA_C) (n = 9, odd) with numpy 2.4.6, from src/stats/reference.py
        assert_eq!(median(&MAD_ZERO), 50.0);
    }

    #[test]
    fn median_of_empty_is_nan_and_single_is_itself() {
        assert!(median(&[]).is_nan());
        assert_eq!(median(&[4.25]), 4.25);
    }

    #[test]
    fn median_does_not_reorder_input() {
        let xs = OUTLIER;
        let _ = median(&xs);
        assert_eq!(xs, OUTLIER);
    }

    #[test]
    fn quantile_matches_numpy_default_method() {
        // numpy.quantile(sorted(DATA_A), q) for q in QS, numpy 2.4.6, from src/stats/reference.py
        let a = [15012939.0, 15191180.4, 15476279.5, 16150602.0, 17427015.8, 17750204.45, 17857934.0];
        // numpy.quantile(sorted(DATA_B), q) for q in QS, numpy 2.4.6, from src/stats/reference.py
        let b = [99.7, 99.8, 99.95, 100.2, 100.5, 126.375, 135.0];
        // numpy.quantile(sorted(DATA_C), q) for q in QS, numpy 2.4.6, from src/stats/reference.py
        let c = [50.0, 50.0, 50.0, 50.0, 52.400000000000006, 59.599999999999994, 62.0];
        for (data, expected) in [(&HAKMEM[..], a), (&OUTLIER[..], b), (&MAD_ZERO[..], c)] {
            let s = sorted(data);
            let got: Vec<f64> = QS.iter().map(|&q| quantile(&s, q)).collect();
            // Same interpolation formula as numpy's `_lerp`, so equal to the bit.
            assert_eq!(got, expected);
        }
    }

    #[test]
    fn quantile_interpolates_from_the_nearer_end_like_numpy() {
        // numpy.quantile([0.17, 0.41, 2.7, 6.37], 0.9) = 5.269000000000001 with
        // numpy 2.4.6 (src/stats/reference.py); the naive a + (b - a) t gives 5.269.
        assert_eq!(quantile(&[0.17, 0.41, 2.7, 6.37], 0.9), 5.269000000000001);
    }

    #[test]
    fn quantile_rejects_bad_input_with_nan() {
        assert!(quantile(&[], 0.5).is_nan());
        assert!(quantile(&[1.0, 2.0], -0.1).is_nan());
        assert!(quantile(&[1.0, 2.0], 1.1).is_nan());
        assert!(quantile(&[1.0, 2.0], f64::NAN).is_nan());
        assert_eq!(quantile(&[7.0], 0.3), 7.0);
    }

    #[test]
    fn mean_and_stddev_match_numpy() {
        // numpy.mean / numpy.std(ddof=1) of DATA_A, DATA_B, DATA_C, numpy 2.4.6,
        // from src/stats/reference.py
        let cases = [
            (&HAKMEM[..], 16266559.9, 1004754.2396479571),
            (&OUTLIER[..], 103.2818181818182, 10.52262497495926),
            (&MAD_ZERO[..], 51.333333333333336, 4.0),
        ];
        for (data, m, sd) in cases {
            assert_rel(mean(data), m, 1e-14);
            assert_rel(stddev(data), sd, 1e-13);
        }
    }

    #[test]
    fn mean_and_stddev_degenerate_cases() {
        assert!(mean(&[]).is_nan());
        assert_eq!(stddev(&[]), 0.0);
        assert_eq!(stddev(&[3.0]), 0.0);
        assert_eq!(stddev(&[2.5, 2.5, 2.5]), 0.0);
    }

    #[test]
    fn mad_matches_scipy() {
        // scipy.stats.median_abs_deviation(x, scale=1.0), scipy 1.17.1, from src/stats/reference.py
        assert_eq!(mad(&HAKMEM), 816665.0);
        assert_rel(mad(&OUTLIER), 0.20000000000000284, 1e-14);
        assert_eq!(mad(&MAD_ZERO), 0.0);
        assert!(mad(&[]).is_nan());
    }

    #[test]
    fn min_max_and_range_match_numpy() {
        // numpy.min, numpy.max, numpy.ptp, numpy 2.4.6, from src/stats/reference.py
        let cases =
            [(&HAKMEM[..], 15012939.0, 17857934.0, 2844995.0), (&OUTLIER[..], 99.7, 135.0, 35.3), (&MAD_ZERO[..], 50.0, 62.0, 12.0)];
        for (data, lo, hi, range) in cases {
            let (a, b) = min_max(data);
            assert_eq!((a, b), (lo, hi));
            assert_rel(b - a, range, 1e-15);
        }
        let (a, b) = min_max(&[]);
        assert!(a.is_nan() && b.is_nan());
    }
}
