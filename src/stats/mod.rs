//! stats: pure estimators over samples.
//!
//! Everything in this module is a pure function of its arguments: it works on
//! `&[f64]` (or a validated [`Sample`]), does no I/O, reads no clock and keeps
//! no global state. The only randomness is the bootstrap (inside a trial), which draws from a
//! [`rand::rngs::Xoshiro256PlusPlus`] seeded by an explicit `seed` argument, so
//! the same input and seed always give the same result (for the `rand` version
//! pinned in `Cargo.lock`).
//!
//! Layout:
//! - [`Sample`] and [`StatsError`]: validated input (here);
//! - `estimators`: [`median`], [`quantile`], [`estimators::mean`],
//!   [`estimators::stddev`], [`estimators::mad`];
//! - `outliers`: [`outliers::modified_z_scores`], [`outliers::outliers_modified_z`],
//!   [`outliers::outliers_sigma`];
//! - `bootstrap`: [`bootstrap::ConfidenceInterval`], [`bootstrap_median_ci`] (within one trial);
//! - `summary`: [`Summary`] and [`summary::VarianceClass`];
//! - `trials`: the headline of a row over its trials ([`estimate`]), the
//!   ratio of two rows ([`ratio`]), [`trials::sensitivity`], [`trials::t_quantile`];
//! - `runs`: the runs test, [`runs::time_ordered`] (whether disagreeing trials
//!   split by the time they ran);
//! - `change`: the p-value of a verdict against a band ([`band_p_value`]),
//!   the adjustment for many rows ([`benjamini_hochberg`]) and a row's noise
//!   floor from repeated runs of one build ([`noise_floor`]);
//! - `changepoint`: where a series of run medians changed level (PELT with
//!   a penalty, incremental: [`changepoint::Detector`]);
//! - `decide`: decided verdicts about a change from trial pairs, SAME,
//!   DIFFERENT or UNKNOWN, with a sequential design ([`decide::Plan`]);
//! - `karp_flatt`: the serial fraction of a speedup
//!   ([`karp_flatt::serial_fraction`]), its interval carried through the
//!   speedup's ([`karp_flatt::serial_fraction_of`]).
//!
//! The free functions over `&[f64]` assume finite input (no NaN, no infinity);
//! build a [`Sample`] to have that checked. None of them panics: degenerate
//! input (for example an empty slice) gives NaN, as each function documents.
//!
//! Reference values for the tests come from numpy and scipy through
//! `src/stats/reference.py`, never from this module itself; the runs test's come from
//! arrangements counted by hand, and the serial fraction's (a closed form) from arithmetic
//! written out in its tests.

mod bootstrap;
mod change;
pub mod changepoint;
pub mod decide;
mod estimators;
pub mod karp_flatt;
mod outliers;
pub mod runs;
mod summary;
#[cfg(test)]
pub(crate) mod testdata;
mod trials;

pub use bootstrap::{DEFAULT_RESAMPLES, bootstrap_median_ci};
pub use change::{Floor, band_p_value, benjamini_hochberg, noise_floor};
pub use estimators::{median, quantile, stddev};
pub use summary::Summary;
pub use trials::{DEFAULT_NOISE, LEVEL, TrialEstimate, estimate, expected_hold, ratio, trial_interval};

/// Why a set of values cannot be a [`Sample`].
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum StatsError {
    /// No values at all; every estimator needs at least one.
    #[error("sample is empty: at least one value is needed")]
    Empty,
    /// The value at `index` (in input order) is NaN or infinite.
    #[error("sample value at index {index} is not finite (NaN or infinite)")]
    NotFinite {
        /// Position of the first offending value in the input.
        index: usize,
    },
}

/// Validated measurements: at least one value, none NaN or infinite.
///
/// The values are kept in input order, because outlier detection reports
/// indices into that order.
#[derive(Clone, Debug, PartialEq)]
pub struct Sample {
    values: Vec<f64>,
}

impl Sample {
    /// Copies `values` into a new sample after checking them. O(n).
    ///
    /// # Errors
    ///
    /// [`StatsError::Empty`] if `values` is empty, [`StatsError::NotFinite`]
    /// with the index of the first NaN or infinite value otherwise.
    pub fn new(values: &[f64]) -> Result<Sample, StatsError> {
        if values.is_empty() {
            return Err(StatsError::Empty);
        }
        if let Some(index) = values.iter().position(|v| !v.is_finite()) {
            return Err(StatsError::NotFinite { index });
        }
        Ok(Sample { values: values.to_vec() })
    }

    /// The values, in input order. O(1).
    pub fn values(&self) -> &[f64] {
        &self.values
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sample_rejects_empty() {
        assert_eq!(Sample::new(&[]), Err(StatsError::Empty));
    }

    #[test]
    fn sample_rejects_nan_and_infinities_with_first_index() {
        assert_eq!(Sample::new(&[1.0, f64::NAN, 2.0]), Err(StatsError::NotFinite { index: 1 }));
        assert_eq!(Sample::new(&[1.0, 2.0, f64::INFINITY]), Err(StatsError::NotFinite { index: 2 }));
        assert_eq!(Sample::new(&[f64::NEG_INFINITY, f64::NAN]), Err(StatsError::NotFinite { index: 0 }));
    }

    #[test]
    fn sample_keeps_input_order() {
        let input = [3.0, 1.0, 2.0];
        let s = Sample::new(&input).expect("finite, non-empty input");
        assert_eq!(s.values(), &input);
    }

    #[test]
    fn errors_have_messages() {
        let msg = StatsError::NotFinite { index: 4 }.to_string();
        assert!(msg.contains("index 4"), "{msg}");
        assert!(StatsError::Empty.to_string().contains("empty"));
    }
}
