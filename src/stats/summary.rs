//! The per-benchmark summary written into evidence records, and the variance
//! classification it carries.

use super::Sample;
use super::bootstrap::{ConfidenceInterval, DEFAULT_RESAMPLES, bootstrap_median_ci};
use super::estimators::{mad, mean, median, min_max, stddev};
use super::outliers::{outliers_modified_z, outliers_sigma};

/// How noisy a set of runs is, by coefficient of variation (stddev / mean):
/// `Outstanding` below 1%, `Good` below 5%, `Acceptable` below 10%, `Noisy`
/// from 10% up. Serialized in lowercase ("outstanding", ...).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum VarianceClass {
    /// CV < 1%.
    Outstanding,
    /// 1% <= CV < 5%.
    Good,
    /// 5% <= CV < 10%.
    Acceptable,
    /// CV >= 10% (or not a number).
    Noisy,
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

    /// The lowercase name, identical to the serialized form. O(1).
    pub fn as_str(&self) -> &'static str {
        match self {
            VarianceClass::Outstanding => "outstanding",
            VarianceClass::Good => "good",
            VarianceClass::Acceptable => "acceptable",
            VarianceClass::Noisy => "noisy",
        }
    }
}

/// Descriptive statistics of one sample, as recorded in evidence.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Summary {
    /// Number of values.
    pub n: usize,
    /// Median (mean of the two middle values for even n).
    pub median: f64,
    /// 95% percentile bootstrap CI of the median ([`DEFAULT_RESAMPLES`]
    /// resamples; its `seed` field records the seed).
    pub ci95: ConfidenceInterval,
    /// Arithmetic mean.
    pub mean: f64,
    /// Sample standard deviation (n - 1 denominator); 0 when n == 1.
    pub stddev: f64,
    /// Coefficient of variation `stddev / mean` as a fraction (not percent);
    /// 0 when the mean is 0.
    pub cv: f64,
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
    /// Indices (input order) with |x - mean| > 2 stddev.
    pub outliers_2sigma: Vec<usize>,
    /// Classification of `cv`, see [`VarianceClass::from_cv`].
    pub variance: VarianceClass,
}

impl Summary {
    /// Summarizes `sample`: every field of [`Summary`], with the median CI from
    /// [`bootstrap_median_ci`] at level 0.95 with [`DEFAULT_RESAMPLES`]
    /// resamples and the given `seed`, outliers by modified z > 3.5 and by the
    /// 2-sigma rule.
    ///
    /// Cost: O(DEFAULT_RESAMPLES * n), dominated by the bootstrap.
    pub fn of(sample: &Sample, seed: u64) -> Summary {
        let xs = sample.values();
        let mean = mean(xs);
        let stddev = stddev(xs);
        let (min, max) = min_max(xs);
        let range = max - min;
        let (cv, range_pct_of_mean) = if mean == 0.0 { (0.0, 0.0) } else { (stddev / mean, 100.0 * range / mean) };
        Summary {
            n: xs.len(),
            median: median(xs),
            ci95: bootstrap_median_ci(xs, 0.95, DEFAULT_RESAMPLES, seed),
            mean,
            stddev,
            cv,
            min,
            max,
            range,
            range_pct_of_mean,
            mad: mad(xs),
            outliers_modified_z: outliers_modified_z(xs, 3.5),
            outliers_2sigma: outliers_sigma(xs, 2.0),
            variance: VarianceClass::from_cv(cv),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::DEFAULT_SEED;
    use crate::stats::testdata::{HAKMEM, MAD_ZERO, OUTLIER, assert_rel};

    fn summary(xs: &[f64]) -> Summary {
        Summary::of(&Sample::new(xs).expect("valid test data"), DEFAULT_SEED)
    }

    #[test]
    fn hakmem_matches_numpy() {
        // numpy 2.4.6 / scipy 1.17.1 values for DATA_A from src/stats/reference.py.
        let s = summary(&HAKMEM);
        assert_eq!(s.n, 10);
        assert_eq!(s.median, 16150602.0); // numpy.median
        assert_rel(s.mean, 16266559.9, 1e-14); // numpy.mean
        assert_rel(s.stddev, 1004754.2396479571, 1e-13); // numpy.std(ddof=1)
        assert_rel(s.cv, 0.061768084083221375, 1e-13); // numpy.std(ddof=1)/numpy.mean
        assert_eq!((s.min, s.max, s.range), (15012939.0, 17857934.0, 2844995.0));
        assert_rel(s.range_pct_of_mean, 17.48983815563855, 1e-13); // 100*ptp/mean
        assert_eq!(s.mad, 816665.0); // scipy.stats.median_abs_deviation(scale=1)
        assert!(s.outliers_modified_z.is_empty());
        assert!(s.outliers_2sigma.is_empty());
        // 5% <= numpy's CV (6.18%) < 10%.
        assert_eq!(s.variance, VarianceClass::Acceptable);
        assert!(s.ci95.lo <= s.median && s.median <= s.ci95.hi);
        assert_eq!((s.ci95.level, s.ci95.resamples), (0.95, DEFAULT_RESAMPLES));
        assert_eq!(s.ci95.seed, DEFAULT_SEED);
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
        assert_rel(s.cv, 0.10188264653160096, 1e-13);
        assert_rel(s.range, 35.3, 1e-15);
        assert_rel(s.range_pct_of_mean, 34.17832937241439, 1e-13);
        assert_rel(s.mad, 0.20000000000000284, 1e-14);
        assert_eq!(s.outliers_modified_z, vec![7]);
        assert_eq!(s.outliers_2sigma, vec![7]);
        assert_eq!(s.variance, VarianceClass::Noisy); // CV 10.19% >= 10%
    }

    #[test]
    fn mad_zero_dataset_matches_numpy() {
        // numpy 2.4.6 / scipy 1.17.1 values for DATA_C from src/stats/reference.py.
        let s = summary(&MAD_ZERO);
        assert_eq!((s.median, s.mad, s.stddev, s.range), (50.0, 0.0, 4.0, 12.0));
        assert_rel(s.cv, 0.07792207792207792, 1e-14);
        assert_rel(s.range_pct_of_mean, 23.376623376623375, 1e-14);
        assert_eq!(s.outliers_modified_z, vec![7]);
        assert_eq!(s.outliers_2sigma, vec![7]);
        assert_eq!(s.variance, VarianceClass::Acceptable); // CV 7.79%
    }

    #[test]
    fn zero_mean_gives_zero_cv() {
        let s = summary(&[-1.0, 1.0]);
        assert_eq!((s.cv, s.range_pct_of_mean), (0.0, 0.0));
        assert_eq!(s.variance, VarianceClass::Outstanding);
    }

    #[test]
    fn single_value_summary() {
        let s = summary(&[42.0]);
        assert_eq!((s.n, s.median, s.stddev, s.cv, s.range), (1, 42.0, 0.0, 0.0, 0.0));
        assert_eq!((s.ci95.lo, s.ci95.hi), (42.0, 42.0));
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
        for c in [VarianceClass::Outstanding, VarianceClass::Good, VarianceClass::Acceptable, VarianceClass::Noisy] {
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
        assert_eq!((back.variance, back.ci95.resamples, back.ci95.seed), (s.variance, 2000, DEFAULT_SEED));
        let floats = |v: &Summary| {
            [v.median, v.ci95.lo, v.ci95.hi, v.ci95.level, v.mean, v.stddev, v.cv, v.min, v.max, v.range, v.range_pct_of_mean, v.mad]
        };
        for (b, o) in floats(&back).into_iter().zip(floats(&s)) {
            assert_rel(b, o, 1e-15);
        }
    }
}

#[cfg(test)]
mod properties {
    use super::*;
    use crate::stats::{bootstrap_median_ci, mann_whitney_u, quantile};
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
        fn summary_is_ordered(xs in finite_values(30), seed in any::<u64>()) {
            let s = Summary::of(&Sample::new(&xs).expect("finite"), seed);
            prop_assert!(s.min <= s.ci95.lo && s.ci95.lo <= s.median);
            prop_assert!(s.median <= s.ci95.hi && s.ci95.hi <= s.max);
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
        fn mann_whitney_u_is_consistent(x in finite_values(20), y in finite_values(20)) {
            let (n1, n2) = (x.len() as f64, y.len() as f64);
            let xy = mann_whitney_u(&x, &y);
            let yx = mann_whitney_u(&y, &x);
            prop_assert!((0.0..=n1 * n2).contains(&xy.u));
            prop_assert_eq!(xy.u + yx.u, n1 * n2);
            prop_assert!((0.0..=1.0).contains(&xy.p_two_sided));
            prop_assert_eq!(xy.p_two_sided, yx.p_two_sided);
        }

        #[test]
        fn sample_accepts_exactly_finite_input(xs in prop::collection::vec(any::<f64>(), 0..20)) {
            let ok = !xs.is_empty() && xs.iter().all(|v| v.is_finite());
            prop_assert_eq!(Sample::new(&xs).is_ok(), ok);
        }
    }
}
