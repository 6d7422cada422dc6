//! Estimates about a change between two runs: the p-value of a verdict
//! against a band, the adjustment for many rows judged together, and the
//! noise floor of a row from runs of one build. (Variants of one run,
//! paired by round or in lockstep, are decided by [`super::decide`]; the
//! tests below check its interval's coverage under drift between rounds.)
//!
//! - **Noise floor.** Two runs of one build on one machine differ by more
//!   than their trials say when the machine changes between them (a host's
//!   state over minutes). Given the medians of repeated runs of one build
//!   (several builds, or several `noise` runs, pooled), the floor is the 95%
//!   prediction bound of the ratio of two new runs of a build:
//!   `exp(t(0.975, df) sqrt(2) s) - 1`, with `s` the pooled standard
//!   deviation of the log medians within builds and `df` its degrees of
//!   freedom. A ratio inside it is what runs of one build do here.
//!
//! Pure: no I/O, no clock, no randomness.

use serde::{Deserialize, Serialize};
use statrs::distribution::{ContinuousCDF, StudentsT};

use super::estimators::mean;
use super::trials::{LEVEL, RatioEstimate, t_quantile};

/// The p-value of a verdict about a ratio estimated with interval `r` (at
/// `level`, a t interval on the log scale): the null hypothesis is that the
/// true ratio lies within the band `1 / (1 + band) ..= 1 + band`; its two
/// one-sided t tests (worse side, better side), the smaller doubled, so
/// that `p < 1 - level` exactly when the interval lies wholly beyond the
/// band. An exact ratio (no spread) gives 0 beyond the band and 1 inside.
pub fn band_p_value(r: &RatioEstimate, level: f64, band: f64) -> f64 {
    let (lo, hi) = (r.lo.ln(), r.hi.ln());
    let edge = band.ln_1p();
    let m = (lo + hi) / 2.0;
    if !r.df.is_finite() || hi <= lo {
        return if m.abs() > edge { 0.0 } else { 1.0 };
    }
    let se = (hi - lo) / 2.0 / t_quantile((1.0 + level) / 2.0, r.df);
    let Ok(t) = StudentsT::new(0.0, 1.0, r.df) else { return 1.0 };
    let worse = 1.0 - t.cdf((m - edge) / se);
    let better = t.cdf((m + edge) / se);
    (2.0 * worse.min(better)).min(1.0)
}

/// Benjamini-Hochberg adjusted p-values (q-values), in the order given:
/// rejecting every hypothesis whose q-value is at most `q` keeps the
/// expected share of false verdicts among the verdicts at most `q`, and,
/// when nothing changed at all (an A/A), the chance of any false verdict
/// at most `q`.
///
/// Cost: O(m log m).
pub fn benjamini_hochberg(p: &[f64]) -> Vec<f64> {
    let m = p.len();
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&a, &b| p[a].total_cmp(&p[b]));
    let mut q = vec![1.0; m];
    let mut running = 1.0_f64;
    for (rank, &i) in order.iter().enumerate().rev() {
        running = running.min(p[i] * m as f64 / (rank + 1) as f64);
        q[i] = running.min(1.0);
    }
    q
}

/// The degrees of freedom a floor needs (3 runs of one build, or two pairs).
pub const FLOOR_MIN_DF: usize = 2;

/// How far a row's median moves between runs of one build on one machine.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Floor {
    /// The 95% prediction bound of the ratio of two runs of a build, minus
    /// 1 (0.04: runs of one build differ by up to 4%).
    pub value: f64,
    /// The pooled standard deviation of the log medians within builds.
    pub sd: f64,
    /// Its degrees of freedom (runs minus builds).
    pub df: usize,
    /// Runs that went into it, and the builds (or noise runs) they form.
    pub runs: usize,
    pub builds: usize,
}

/// Why a row has no floor.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NoFloor {
    /// Runs of a build that has another run of it, and the degrees of
    /// freedom they give (fewer than [`FLOOR_MIN_DF`]).
    pub repeated_runs: usize,
    pub df: usize,
}

impl std::fmt::Display for NoFloor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "not enough history: {} repeated run{} of a build on this machine ({} more needed)",
            self.repeated_runs,
            if self.repeated_runs == 1 { "" } else { "s" },
            FLOOR_MIN_DF - self.df
        )
    }
}

/// The noise floor from `builds`, each the medians of the runs of one
/// build (positive values; builds with one run add nothing).
///
/// Cost: O(runs).
pub fn noise_floor(builds: &[Vec<f64>]) -> Result<Floor, NoFloor> {
    let repeated: Vec<Vec<f64>> = builds
        .iter()
        .filter(|b| b.len() >= 2 && b.iter().all(|&x| x > 0.0 && x.is_finite()))
        .map(|b| b.iter().map(|x| x.ln()).collect())
        .collect();
    let df: usize = repeated.iter().map(|b| b.len() - 1).sum();
    let runs: usize = repeated.iter().map(Vec::len).sum();
    if df < FLOOR_MIN_DF {
        return Err(NoFloor { repeated_runs: runs, df });
    }
    let ss: f64 = repeated
        .iter()
        .map(|b| {
            let m = mean(b);
            b.iter().map(|x| (x - m) * (x - m)).sum::<f64>()
        })
        .sum();
    let sd = (ss / df as f64).sqrt();
    let value = (t_quantile((1.0 + LEVEL) / 2.0, df as f64) * std::f64::consts::SQRT_2 * sd).exp() - 1.0;
    Ok(Floor { value, sd, df, runs, builds: repeated.len() })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::testdata::assert_rel;

    /// The paired interval of `pairs` (base, candidate) trial medians: the
    /// decision's interval across pairs over their log ratios.
    pub(super) fn paired(pairs: &[(f64, f64)], level: f64) -> Option<RatioEstimate> {
        let (b, c): (Vec<f64>, Vec<f64>) = pairs.iter().copied().unzip();
        let p = crate::stats::decide::across_pairs(&crate::stats::decide::log_ratios(&b, &c)?, level)?;
        Some(RatioEstimate { ratio: p.ratio, lo: p.lo, hi: p.hi, df: p.df })
    }

    #[test]
    fn the_paired_interval_matches_scipy() {
        // PAIRED_RATIO_CI95 of src/stats/reference.py.
        let pairs = [(100.0, 106.0), (103.0, 108.5), (98.0, 103.0), (101.0, 107.0)];
        let p = paired(&pairs, 0.95).unwrap();
        assert_rel(p.ratio, 1.056397728472978, 1e-12);
        assert_rel(p.lo, 1.048703481139069, 1e-9);
        assert_rel(p.hi, 1.064148427838467, 1e-9);
        assert!(p.lo <= p.ratio && p.ratio <= p.hi, "the point inside its interval");
        assert_eq!(p.df, 3.0);
        // Welch on the same values ignores the pairing: far wider.
        let welch = crate::stats::ratio(&[100.0, 103.0, 98.0, 101.0], &[106.0, 108.5, 103.0, 107.0], 0.95).unwrap();
        assert!(welch.hi - welch.lo > 3.0 * (p.hi - p.lo), "{welch:?}");
        assert_eq!(paired(&[(1.0, 2.0)], 0.95), None, "one pair");
        assert_eq!(paired(&[(1.0, 2.0), (0.0, 1.0)], 0.95), None, "a value that is not positive");
        let exact = paired(&[(1.0, 2.0), (3.0, 6.0)], 0.95).unwrap();
        assert_eq!(exact.df, f64::INFINITY, "deterministic: the exact ratio");
        assert!(exact.lo == exact.hi && (exact.lo - 2.0).abs() < 1e-12, "{exact:?}");
    }

    #[test]
    fn the_floor_matches_scipy_and_needs_two_degrees_of_freedom() {
        // FLOOR_SD_AND_VALUE of src/stats/reference.py.
        let f = noise_floor(&[vec![100.0, 102.0, 99.0, 101.0, 103.0], vec![110.0, 111.5], vec![90.0]]).unwrap();
        assert_rel(f.sd, 0.014644252114983523, 1e-9);
        assert_rel(f.value, 0.05467958168018772, 1e-9);
        assert_eq!((f.df, f.runs, f.builds), (5, 7, 2), "a build with one run adds nothing");
        let none = noise_floor(&[vec![100.0, 101.0], vec![50.0]]).unwrap_err();
        assert_eq!(none, NoFloor { repeated_runs: 2, df: 1 });
        assert_eq!(none.to_string(), "not enough history: 2 repeated runs of a build on this machine (1 more needed)");
        assert_eq!(noise_floor(&[]).unwrap_err().df, 0);
        assert!(noise_floor(&[vec![100.0, 101.0], vec![50.0, 50.5]]).is_ok(), "two pairs are enough");
    }

    #[test]
    fn the_verdict_p_value_and_the_adjustment_match_scipy() {
        // BAND_P of src/stats/reference.py: log ratio ln 1.06, standard error 0.01, 4 df.
        let (m, se, df) = (1.06f64.ln(), 0.01, 4.0);
        let hw = t_quantile(0.975, df) * se;
        let r = RatioEstimate { ratio: 1.06, lo: (m - hw).exp(), hi: (m + hw).exp(), df };
        assert_rel(band_p_value(&r, 0.95, 0.02), 0.018355338741591565, 1e-9);
        // The interval and the p-value agree: beyond the band exactly when p < 0.05.
        for ratio in [1.0, 1.02, 1.03, 1.035, 1.05, 0.95] {
            let r = RatioEstimate { ratio, lo: ratio.ln().exp() / (hw.exp()), hi: ratio * hw.exp(), df };
            let beyond = r.lo > 1.02 || r.hi < 1.0 / 1.02;
            assert_eq!(band_p_value(&r, 0.95, 0.02) < 0.05, beyond, "ratio {ratio}");
        }
        let exact = RatioEstimate { ratio: 2.0, lo: 2.0, hi: 2.0, df: f64::INFINITY };
        assert_eq!(
            (band_p_value(&exact, 0.95, 0.02), band_p_value(&RatioEstimate { lo: 1.01, hi: 1.01, ..exact }, 0.95, 0.02)),
            (0.0, 1.0)
        );
        // BH_ADJUSTED.
        let q = benjamini_hochberg(&[0.01, 0.04, 0.03, 0.005, 0.5, 0.2]);
        for (got, want) in q.iter().zip([0.03, 0.06, 0.06, 0.03, 0.5, 0.24]) {
            assert_rel(*got, want, 1e-12);
        }
        assert!(benjamini_hochberg(&[]).is_empty());
        assert_eq!(benjamini_hochberg(&[0.03]), [0.03], "one comparison: as it is");
    }
}

/// Coverage by simulation: the paired interval under drift between rounds,
/// and the floor as a prediction bound.
#[cfg(test)]
mod coverage {
    use crate::stats::testdata::normal;
    use rand::SeedableRng;
    use rand::rngs::Xoshiro256PlusPlus;

    use super::*;

    /// Share of `sims` A/B experiments of `rounds` rounds whose paired
    /// interval holds the true ratio: each round's machine level drifts by
    /// `drift` (sd, log scale), each trial adds its own `noise`.
    fn paired_coverage(rounds: usize, drift: f64, noise: f64, sims: usize, seed: u64) -> (f64, f64) {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        let truth = 1.05_f64;
        let (mut paired_hits, mut welch_width, mut paired_width) = (0, 0.0, 0.0);
        for _ in 0..sims {
            let pairs: Vec<(f64, f64)> = (0..rounds)
                .map(|_| {
                    let level = drift * normal(&mut rng);
                    let b = 100.0 * (level + noise * normal(&mut rng)).exp();
                    let c = 100.0 * truth * (level + noise * normal(&mut rng)).exp();
                    (b, c)
                })
                .collect();
            let p = tests::paired(&pairs, 0.95).expect("positive");
            paired_hits += usize::from(p.lo <= truth && truth <= p.hi);
            paired_width += (p.hi / p.lo).ln();
            let (b, c): (Vec<f64>, Vec<f64>) = pairs.into_iter().unzip();
            let w = crate::stats::ratio(&b, &c, 0.95).expect("positive");
            welch_width += (w.hi / w.lo).ln();
        }
        (paired_hits as f64 / sims as f64, welch_width / paired_width)
    }

    #[test]
    fn paired_intervals_cover_the_true_ratio_and_are_narrower_than_welch_under_drift() {
        let mut seed = 100;
        for rounds in [3, 5, 10] {
            for (drift, noise) in [(0.0, 0.02), (0.10, 0.01), (0.03, 0.03)] {
                seed += 1;
                let (c, wider) = paired_coverage(rounds, drift, noise, 1000, seed);
                assert!((0.93..=0.98).contains(&c), "{rounds} rounds, drift {drift}, noise {noise}: coverage {c:.3}");
                if drift >= 0.10 {
                    assert!(wider > 4.0, "{rounds} rounds: Welch only {wider:.1}x wider under drift");
                }
            }
        }
    }

    #[test]
    fn among_140_rows_of_an_a_a_the_adjustment_keeps_any_false_verdict_under_5_percent() {
        // 300 simulated A/A comparisons of 140 rows, 5 pairs each, spreads
        // from 0.5% to 20%, each row's p-value of DIFFERENT as the decided
        // verdicts take it (no band: any change).
        let plan = crate::stats::decide::Plan::new(crate::stats::decide::Design::for_trials(5, 5, 0.02)).unwrap();
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(21);
        let (mut any_raw, mut any_adjusted, sims) = (0, 0, 300);
        for _ in 0..sims {
            let ps: Vec<f64> = (0..140)
                .map(|i| {
                    let spread = 0.005 + 0.2 * (i as f64 / 140.0);
                    let pairs: Vec<(f64, f64)> = (0..5)
                        .map(|_| {
                            let level = 0.1 * normal(&mut rng);
                            (100.0 * (level + spread * normal(&mut rng)).exp(), 100.0 * (level + spread * normal(&mut rng)).exp())
                        })
                        .collect();
                    let logs: Vec<f64> = pairs.iter().map(|(b, c)| c.ln() - b.ln()).collect();
                    plan.p_different(&logs).expect("five pairs")
                })
                .collect();
            any_raw += usize::from(ps.iter().any(|&p| p < 0.05));
            any_adjusted += usize::from(benjamini_hochberg(&ps).iter().any(|&q| q <= 0.05));
        }
        let (raw, adjusted) = (any_raw as f64 / sims as f64, any_adjusted as f64 / sims as f64);
        assert!(raw > 0.5, "without the adjustment most A/As have a false verdict: {raw:.2}");
        assert!(adjusted <= 0.05, "with it, at most 5%: {adjusted:.3}");
        eprintln!("A/As of 140 rows with any false verdict: {raw:.3} unadjusted, {adjusted:.3} adjusted");
    }

    #[test]
    fn the_floor_bounds_the_ratio_of_two_new_runs_95_percent_of_the_time() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(9);
        for (builds, runs) in [(1, 3), (1, 5), (3, 2), (2, 6)] {
            let (mut inside, sims) = (0, 2000);
            for _ in 0..sims {
                // Each build has its own level; runs of a build scatter by 3%.
                let groups: Vec<Vec<f64>> = (0..builds)
                    .map(|_| {
                        let level = 0.2 * normal(&mut rng);
                        (0..runs).map(|_| 100.0 * (level + 0.03 * normal(&mut rng)).exp()).collect()
                    })
                    .collect();
                let f = noise_floor(&groups).expect("enough runs");
                let (a, b) = (0.03 * normal(&mut rng), 0.03 * normal(&mut rng));
                inside += usize::from((a - b).abs() <= f.value.ln_1p());
            }
            let share = inside as f64 / sims as f64;
            assert!((0.935..=0.965).contains(&share), "{builds} builds x {runs} runs: {share:.3}");
        }
    }
}
