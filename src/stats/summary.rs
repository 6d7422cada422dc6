//! The per-benchmark summary written into evidence records, and the variance
//! classification it carries.

use super::Sample;
use super::estimators::{mad, mean, median, min_max, stddev};
use super::outliers::{outliers_modified_z, outliers_sigma};

crate::model::named_enum! {
    /// How noisy a set of runs is, by coefficient of variation (stddev / mean):
    /// `Outstanding` below 1%, `Good` below 5%, `Acceptable` below 10%, `Noisy`
    /// from 10% up, `Undefined` when the mean is 0 (no CV). Serialized in
    /// lowercase ("outstanding", ...).
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum VarianceClass {
        /// CV < 1%.
        Outstanding = "outstanding",
        /// 1% <= CV < 5%.
        Good = "good",
        /// 5% <= CV < 10%.
        Acceptable = "acceptable",
        /// CV >= 10% (or not a number).
        Noisy = "noisy",
        /// No CV: the mean is 0.
        Undefined = "undefined",
    }
}

impl VarianceClass {
    /// Classifies a coefficient of variation given as a fraction (0.05 means
    /// 5%). The magnitude `|cv|` is used, so a negative mean does not make
    /// noisy data look outstanding; NaN is `Noisy`. O(1).
    pub fn from_cv(cv: f64) -> Self {
        let cv = cv.abs();
        if cv < 0.01 {
            VarianceClass::Outstanding
        } else if cv < 0.05 {
            VarianceClass::Good
        } else if cv < 0.10 {
            VarianceClass::Acceptable
        } else {
            VarianceClass::Noisy
        }
    }

    /// The class of an optional CV: `Undefined` without one. O(1).
    pub fn of(cv: Option<f64>) -> Self {
        cv.map_or(VarianceClass::Undefined, VarianceClass::from_cv)
    }
}

/// Descriptive statistics of one sample, as recorded in evidence.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Summary {
    /// Number of values.
    pub n: usize,
    /// Median (mean of the two middle values for even n).
    pub median: f64,
    /// Arithmetic mean.
    pub mean: f64,
    /// Sample standard deviation (n - 1 denominator); 0 when n == 1.
    pub stddev: f64,
    /// Coefficient of variation `stddev / mean` as a fraction (not percent);
    /// `None` when the mean is 0 (a zero mean makes no spread outstanding).
    pub cv: Option<f64>,
    /// Smallest value.
    pub min: f64,
    /// Largest value.
    pub max: f64,
    /// `max - min`.
    pub range: f64,
    /// `100 * range / mean`, in percent; 0 when the mean is 0.
    pub range_pct_of_mean: f64,
    /// Raw median absolute deviation (not scaled by 1.4826).
    pub mad: f64,
    /// Indices (input order) with |modified z-score| > 3.5.
    pub outliers_modified_z: Vec<usize>,
    /// Indices (input order) with |x - mean| > 2 stddev; `None` at n <= 5,
    /// where no value can be that far: the largest |x - mean| / stddev of n
    /// values is (n - 1) / sqrt(n), 1.79 at n = 5.
    pub outliers_2sigma: Option<Vec<usize>>,
    /// Classification of `cv`, see [`VarianceClass::of`].
    pub variance: VarianceClass,
}

/// The fewest values at which the 2-sigma rule can mark one.
pub const SIGMA_RULE_MIN_N: usize = 6;

impl Summary {
    /// Summarizes `sample`: every field of [`Summary`], outliers by modified
    /// z > 3.5 and by the 2-sigma rule (from [`SIGMA_RULE_MIN_N`] values).
    ///
    /// Cost: O(n log n).
    pub fn of(sample: &Sample) -> Summary {
        let xs = sample.values();
        let mean = mean(xs);
        let stddev = stddev(xs);
        let (min, max) = min_max(xs);
        let range = max - min;
        let (cv, range_pct_of_mean) = if mean == 0.0 { (None, 0.0) } else { (Some(stddev / mean), 100.0 * range / mean) };
        Summary {
            n: xs.len(),
            median: median(xs),
            mean,
            stddev,
            cv,
            min,
            max,
            range,
            range_pct_of_mean,
            mad: mad(xs),
            outliers_modified_z: outliers_modified_z(xs, 3.5),
            outliers_2sigma: (xs.len() >= SIGMA_RULE_MIN_N).then(|| outliers_sigma(xs, 2.0)),
            variance: VarianceClass::of(cv),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::testdata::{HAKMEM, MAD_ZERO, OUTLIER, assert_rel};

    fn summary(xs: &[f64]) -> Summary {
        Summary::of(&Sample::new(xs).expect("valid test data"))
    }

    #[test]
    fn hakmem_matches_numpy() {
        // numpy 2.4.6 / scipy 1.17.1 values for DATA_A from src/stats/reference.py.
        let s = summary(&HAKMEM);
        assert_eq!(s.n, 10);
        assert_eq!(s.median, 16150602.0); // numpy.median
        assert_rel(s.mean, 16266559.9, 1e-14); // numpy.mean
        assert_rel(s.stddev, 1004754.2396479571, 1e-13); // numpy.std(ddof=1)
        assert_rel(s.cv.unwrap(), 0.061768084083221375, 1e-13); // numpy.std(ddof=1)/numpy.mean
        assert_eq!((s.min, s.max, s.range), (15012939.0, 17857934.0, 2844995.0));
        assert_rel(s.range_pct_of_mean, 17.48983815563855, 1e-13); // 100*ptp/mean
        assert_eq!(s.mad, 816665.0); // scipy.stats.median_abs_deviation(scale=1)
        assert!(s.outliers_modified_z.is_empty());
        assert_eq!(s.outliers_2sigma, Some(vec![]));
        // 5% <= numpy's CV (6.18%) < 10%.
        assert_eq!(s.variance, VarianceClass::Acceptable);
    }

    #[test]
    fn hakmem_reproduces_published_figures() {
        // The HAKMEM report publishes, for "Random Mixed 256B": mean 16,266,559,
        // median 16,150,602, stddev 953,193, CV 5.86%. The report truncates to
        // whole numbers, hence a tolerance of 1. Its stddev is the POPULATION
        // standard deviation (n denominator; numpy.std(ddof=0) = 953193.57),
        // whereas ours is the sample one (n - 1), so convert before comparing.
        let s = summary(&HAKMEM);
        let n = s.n as f64;
        assert!((s.mean - 16_266_559.0).abs() < 1.0, "mean {}", s.mean);
        assert_eq!(s.median, 16_150_602.0);
        let population_sd = s.stddev * ((n - 1.0) / n).sqrt();
        assert!((population_sd - 953_193.0).abs() < 1.0, "sd {population_sd}");
        let population_cv_pct = 100.0 * population_sd / s.mean;
        assert!((population_cv_pct - 5.86).abs() < 0.005, "cv {population_cv_pct}%");
        // The published CV classifies the same way as ours.
        assert_eq!(VarianceClass::from_cv(population_cv_pct / 100.0), s.variance);
    }

    #[test]
    fn outlier_dataset_matches_numpy() {
        // numpy 2.4.6 / scipy 1.17.1 values for DATA_B from src/stats/reference.py.
        let s = summary(&OUTLIER);
        assert_eq!(s.median, 100.2);
        assert_rel(s.mean, 103.2818181818182, 1e-14);
        assert_rel(s.stddev, 10.52262497495926, 1e-13);
        assert_rel(s.cv.unwrap(), 0.10188264653160096, 1e-13);
        assert_rel(s.range, 35.3, 1e-15);
        assert_rel(s.range_pct_of_mean, 34.17832937241439, 1e-13);
        assert_rel(s.mad, 0.20000000000000284, 1e-14);
        assert_eq!(s.outliers_modified_z, vec![7]);
        assert_eq!(s.outliers_2sigma, Some(vec![7]));
        assert_eq!(s.variance, VarianceClass::Noisy); // CV 10.19% >= 10%
    }

    #[test]
    fn mad_zero_dataset_matches_numpy() {
        // numpy 2.4.6 / scipy 1.17.1 values for DATA_C from src/stats/reference.py.
        let s = summary(&MAD_ZERO);
        assert_eq!((s.median, s.mad, s.stddev, s.range), (50.0, 0.0, 4.0, 12.0));
        assert_rel(s.cv.unwrap(), 0.07792207792207792, 1e-14);
        assert_rel(s.range_pct_of_mean, 23.376623376623375, 1e-14);
        assert_eq!(s.outliers_modified_z, vec![7]);
        assert_eq!(s.outliers_2sigma, Some(vec![7]));
        assert_eq!(s.variance, VarianceClass::Acceptable); // CV 7.79%
    }

    #[test]
    fn a_zero_mean_has_no_cv_and_is_not_outstanding() {
        let s = summary(&[-1.0, 1.0]);
        assert_eq!((s.cv, s.range_pct_of_mean), (None, 0.0));
        assert_eq!(s.variance, VarianceClass::Undefined);
    }

    #[test]
    fn single_value_summary() {
        let s = summary(&[42.0]);
        assert_eq!((s.n, s.median, s.stddev, s.cv, s.range), (1, 42.0, 0.0, Some(0.0), 0.0));
    }

    #[test]
    fn the_two_sigma_rule_is_not_applied_where_it_cannot_fire() {
        // (n - 1) / sqrt(n) < 2 up to n = 5: even a wild value is not 2 sigma out.
        let five = summary(&[1.0, 1.0, 1.0, 1.0, 1000.0]);
        assert_eq!(five.outliers_2sigma, None);
        assert_eq!(five.outliers_modified_z, vec![4], "the modified z-score can fire at n = 5");
        let six = summary(&[1.0, 1.0, 1.0, 1.0, 1.0, 1000.0]);
        assert_eq!(six.outliers_2sigma, Some(vec![5]));
        for n in 2..=5 {
            let xs: Vec<f64> = (0..n).map(|i| if i + 1 == n { 1e9 } else { 0.0 }).collect();
            let z = (xs[n - 1] - mean(&xs)) / stddev(&xs);
            assert!(z < 2.0 && (z - (n as f64 - 1.0) / (n as f64).sqrt()).abs() < 1e-9, "n {n}: z {z}");
        }
    }

    #[test]
    fn variance_class_boundaries() {
        use VarianceClass::*;
        let cases = [
            (0.0, Outstanding),
            (0.0099, Outstanding),
            (0.01, Good),
            (0.0499, Good),
            (0.05, Acceptable),
            (0.0999, Acceptable),
            (0.10, Noisy),
            (3.0, Noisy),
            (-0.2, Noisy),
            (f64::NAN, Noisy),
        ];
        for (cv, class) in cases {
            assert_eq!(VarianceClass::from_cv(cv), class, "cv {cv}");
        }
    }

    #[test]
    fn variance_class_serializes_as_its_name() {
        for c in
            [VarianceClass::Outstanding, VarianceClass::Good, VarianceClass::Acceptable, VarianceClass::Noisy, VarianceClass::Undefined]
        {
            let json = serde_json::to_string(&c).expect("serialize");
            assert_eq!(json, format!("\"{}\"", c.as_str()));
            let back: VarianceClass = serde_json::from_str(&json).expect("deserialize");
            assert_eq!(back, c);
        }
    }

    #[test]
    fn summary_round_trips_through_json() {
        // serde_json parses floats exactly only with its `float_roundtrip`
        // feature (not enabled in Cargo.toml); without it a value may come back
        // one ulp off, so floats are compared to 1e-15 relative here.
        let s = summary(&OUTLIER);
        let json = serde_json::to_string(&s).expect("serialize");
        let back: Summary = serde_json::from_str(&json).expect("deserialize");
        assert_eq!((back.n, &back.outliers_modified_z, &back.outliers_2sigma), (s.n, &s.outliers_modified_z, &s.outliers_2sigma));
        assert_eq!(back.variance, s.variance);
        let floats = |v: &Summary| [v.median, v.mean, v.stddev, v.cv.unwrap(), v.min, v.max, v.range, v.range_pct_of_mean, v.mad];
        for (b, o) in floats(&back).into_iter().zip(floats(&s)) {
            assert_rel(b, o, 1e-15);
        }
    }
}

#[cfg(test)]
mod properties {
    use super::*;
    use crate::stats::{bootstrap_median_ci, quantile};
    use proptest::prelude::*;

    fn finite_values(max_len: usize) -> impl Strategy<Value = Vec<f64>> {
        prop::collection::vec(-1.0e6..1.0e6_f64, 1..max_len)
    }

    proptest! {
        #[test]
        fn ci_brackets_median_within_range(xs in finite_values(40), seed in any::<u64>()) {
            let m = median(&xs);
            let ci = bootstrap_median_ci(&xs, 0.95, 300, seed);
            let (lo, hi) = min_max(&xs);
            prop_assert!(lo <= ci.lo && ci.lo <= m && m <= ci.hi && ci.hi <= hi,
                "min {lo} lo {} median {m} hi {} max {hi}", ci.lo, ci.hi);
        }

        #[test]
        fn summary_is_ordered(xs in finite_values(30)) {
            let s = Summary::of(&Sample::new(&xs).expect("finite"));
            prop_assert!(s.min <= s.median && s.median <= s.max);
            prop_assert!(s.stddev >= 0.0 && s.mad >= 0.0 && s.range >= 0.0);
        }

        #[test]
        fn median_and_mad_are_permutation_invariant(
            (xs, shuffled) in finite_values(50)
                .prop_flat_map(|v| (Just(v.clone()), Just(v).prop_shuffle()))
        ) {
            prop_assert_eq!(median(&xs), median(&shuffled));
            prop_assert_eq!(mad(&xs), mad(&shuffled));
        }

        #[test]
        fn quantile_is_monotone_and_bounded(xs in finite_values(50), a in 0.0..=1.0_f64, b in 0.0..=1.0_f64) {
            let mut s = xs.clone();
            s.sort_by(f64::total_cmp);
            let (qa, qb) = (quantile(&s, a.min(b)), quantile(&s, a.max(b)));
            prop_assert!(s[0] <= qa && qa <= qb && qb <= s[s.len() - 1]);
        }

        #[test]
        fn sample_accepts_exactly_finite_input(xs in prop::collection::vec(any::<f64>(), 0..20)) {
            let ok = !xs.is_empty() && xs.iter().all(|v| v.is_finite());
            prop_assert_eq!(Sample::new(&xs).is_ok(), ok);
        }
    }
}
