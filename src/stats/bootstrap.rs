//! Percentile bootstrap confidence interval of the median (the stopping
//! rule inside a trial uses it; rows and comparisons use `trials`).
//!
//! Resampling draws indices with `rand::distr::Uniform` over `0..n` from a
//! [`Xoshiro256PlusPlus`] seeded with `seed_from_u64(seed)`. The uniform
//! sampler's rejection method does not depend on `rand` feature flags or on
//! the pointer width (for n < 2^32), so a given input, level, resample count
//! and seed always give the same interval with the `rand` version pinned in
//! `Cargo.lock`.

use rand::SeedableRng;
use rand::distr::{Distribution, Uniform};
use rand::rngs::Xoshiro256PlusPlus;

use super::estimators::{median_in_place, quantile};

/// Number of bootstrap resamples used by [`super::Summary::of`] (and the
/// suggested default elsewhere).
pub const DEFAULT_RESAMPLES: usize = 2000;

/// A confidence interval `[lo, hi]` together with how it was computed, so that
/// it can be reproduced.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ConfidenceInterval {
    /// Lower bound.
    pub lo: f64,
    /// Upper bound.
    pub hi: f64,
    /// Confidence level as a fraction, e.g. 0.95.
    pub level: f64,
    /// Number of bootstrap resamples drawn.
    pub resamples: usize,
    /// Seed of the resampling RNG.
    pub seed: u64,
}

impl ConfidenceInterval {
    /// Half the width of the interval, `(hi - lo) / 2`. O(1).
    pub fn half_width(&self) -> f64 {
        (self.hi - self.lo) / 2.0
    }

    fn nan(level: f64, resamples: usize, seed: u64) -> Self {
        ConfidenceInterval { lo: f64::NAN, hi: f64::NAN, level, resamples, seed }
    }
}

/// Fills `scratch` with a resample (with replacement) of `xs` and returns its
/// median; O(n). `scratch.len()` must equal `xs.len()`.
fn resampled_median(xs: &[f64], scratch: &mut [f64], dist: &Uniform<usize>, rng: &mut Xoshiro256PlusPlus) -> f64 {
    for slot in scratch.iter_mut() {
        *slot = xs[dist.sample(rng)];
    }
    median_in_place(scratch)
}

/// Sorts the bootstrap statistics and reads the `(1-level)/2` and
/// `(1+level)/2` type 7 quantiles. O(B log B).
fn percentile_interval(mut stats: Vec<f64>, level: f64, resamples: usize, seed: u64) -> ConfidenceInterval {
    stats.sort_unstable_by(f64::total_cmp);
    ConfidenceInterval { lo: quantile(&stats, (1.0 - level) / 2.0), hi: quantile(&stats, (1.0 + level) / 2.0), level, resamples, seed }
}

/// Percentile bootstrap CI of the median: `resamples` resamples with
/// replacement drawn with Xoshiro256PlusPlus seeded by `seed`; the interval is
/// the `(1-level)/2` and `(1+level)/2` quantiles (type 7, see
/// [`quantile`]) of the resampled medians. Same input + seed => same
/// interval, always.
///
/// Degenerate cases: n == 1 gives `[x, x]` (whatever `level` and
/// `resamples`); otherwise empty `xs`, `resamples == 0` or a `level` outside
/// `[0, 1]` give NaN bounds.
///
/// Cost: O(resamples * n) time (one O(n) selection per resample into a single
/// reused scratch buffer) plus O(resamples log resamples) for the final sort;
/// O(n + resamples) memory.
pub fn bootstrap_median_ci(xs: &[f64], level: f64, resamples: usize, seed: u64) -> ConfidenceInterval {
    if let [x] = xs {
        return ConfidenceInterval { lo: *x, hi: *x, level, resamples, seed };
    }
    let Ok(dist) = Uniform::new(0, xs.len()) else {
        return ConfidenceInterval::nan(level, resamples, seed);
    };
    if resamples == 0 {
        return ConfidenceInterval::nan(level, resamples, seed);
    }
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let mut scratch = vec![0.0; xs.len()];
    let medians: Vec<f64> = (0..resamples).map(|_| resampled_median(xs, &mut scratch, &dist, &mut rng)).collect();
    percentile_interval(medians, level, resamples, seed)
}

#[cfg(test)]
mod tests {
    use super::super::estimators::median;
    use super::*;
    use crate::stats::testdata::{BOOT_DATA, HAKMEM, OUTLIER, assert_rel};

    /// The seed of these tests (any fixed value would do: an interval
    /// records its seed, so it can be recomputed exactly).
    const DEFAULT_SEED: u64 = 0x05EE_D0FB_0075;

    #[test]
    fn same_seed_same_interval_other_seeds_differ() {
        let a = bootstrap_median_ci(&BOOT_DATA, 0.95, DEFAULT_RESAMPLES, 42);
        let b = bootstrap_median_ci(&BOOT_DATA, 0.95, DEFAULT_RESAMPLES, 42);
        assert_eq!(a, b);
        // The seed must actually drive the resampling: some other seed gives
        // a different interval.
        let differs = (43..53).any(|s| {
            let other = bootstrap_median_ci(&BOOT_DATA, 0.95, 2000, s);
            (other.lo, other.hi) != (a.lo, a.hi)
        });
        assert!(differs, "ten other seeds all gave {a:?}");
    }

    #[test]
    fn records_how_it_was_computed() {
        let ci = bootstrap_median_ci(&HAKMEM, 0.9, 500, 7);
        assert_eq!((ci.level, ci.resamples, ci.seed), (0.9, 500, 7));
    }

    #[test]
    fn single_value_gives_point_interval() {
        let ci = bootstrap_median_ci(&[3.5], 0.95, DEFAULT_RESAMPLES, DEFAULT_SEED);
        assert_eq!((ci.lo, ci.hi), (3.5, 3.5));
    }

    #[test]
    fn degenerate_inputs_give_nan() {
        let ci = bootstrap_median_ci(&[], 0.95, 100, 1);
        assert!(ci.lo.is_nan() && ci.hi.is_nan());
        let ci = bootstrap_median_ci(&[1.0, 2.0], 0.95, 0, 1);
        assert!(ci.lo.is_nan() && ci.hi.is_nan());
        let ci = bootstrap_median_ci(&[1.0, 2.0], 1.5, 100, 1);
        assert!(ci.lo.is_nan() && ci.hi.is_nan());
    }

    #[test]
    fn interval_contains_the_median() {
        for data in [&HAKMEM[..], &OUTLIER[..], &BOOT_DATA[..]] {
            let m = median(data);
            let ci = bootstrap_median_ci(data, 0.95, DEFAULT_RESAMPLES, DEFAULT_SEED);
            assert!(ci.lo <= m && m <= ci.hi, "{m} not in {ci:?}");
        }
    }

    #[test]
    fn higher_level_is_not_narrower() {
        let narrow = bootstrap_median_ci(&BOOT_DATA, 0.5, DEFAULT_RESAMPLES, 3);
        let wide = bootstrap_median_ci(&BOOT_DATA, 0.99, DEFAULT_RESAMPLES, 3);
        assert!(wide.lo <= narrow.lo && narrow.hi <= wide.hi);
        assert!(wide.half_width() > narrow.half_width());
    }

    #[test]
    fn agrees_with_scipy_percentile_bootstrap() {
        // scipy.stats.bootstrap((BOOT_DATA,), numpy.median, n_resamples=20000,
        // method="percentile", confidence_level=0.95, rng=default_rng(1)) with
        // scipy 1.17.1, from src/stats/reference.py.
        let (scipy_lo, scipy_hi) = (953.90783298677, 1175.9740944730697);
        let ci = bootstrap_median_ci(&BOOT_DATA, 0.95, 20_000, DEFAULT_SEED);
        assert_rel(ci.lo, scipy_lo, 0.02);
        assert_rel(ci.hi, scipy_hi, 0.02);
    }

    #[test]
    fn half_widths() {
        let ci = ConfidenceInterval { lo: 90.0, hi: 110.0, level: 0.95, resamples: 1, seed: 0 };
        assert_eq!(ci.half_width(), 10.0);
    }
}
