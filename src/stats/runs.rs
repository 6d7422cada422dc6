//! The runs test (Wald and Wolfowitz): whether the two kinds of a sequence
//! (high and low trials, in the order they ran) cluster into fewer runs
//! than a random order would give.
//!
//! Under the null hypothesis every arrangement of the `n1` values of one kind
//! and `n2` of the other is equally likely; the probability of exactly `r`
//! runs is then (with `C` the binomial coefficient and `N = n1 + n2`)
//!
//! - `r = 2k`: `2 C(n1-1, k-1) C(n2-1, k-1) / C(N, n1)`;
//! - `r = 2k+1`: `(C(n1-1, k-1) C(n2-1, k) + C(n1-1, k) C(n2-1, k-1)) / C(N, n1)`.
//!
//! [`fewer_runs_p`] sums these up to the observed count: the exact one-sided
//! p-value, with no normal approximation (the sequences here are a row's
//! trials, 3 to a few dozen).

/// The level below which [`fewer_runs_p`] calls an order clustered: the
/// share of rows whose trials, in a random order, would be said to have
/// changed with time is at most this (checked by simulation in the tests).
pub const TIME_LEVEL: f64 = 0.05;

/// Each value's kind: high (`true`) when at or above the geometric middle of
/// the smallest and the largest value, else low. The split a row's
/// disagreeing trials are described by.
pub fn high_low(values: &[f64]) -> Vec<bool> {
    let (lo, hi) = values.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &m| (a.min(m), b.max(m)));
    let middle = (lo * hi).sqrt();
    values.iter().map(|&v| v >= middle).collect()
}

/// When `values` (in the order they were measured) split into high and low
/// runs that a random order would give with probability at most
/// [`TIME_LEVEL`]: that probability.
pub fn time_ordered(values: &[f64]) -> Option<f64> {
    fewer_runs_p(&high_low(values)).filter(|&p| p <= TIME_LEVEL)
}

/// The number of runs (maximal stretches of one kind) in `seq`.
pub fn count(seq: &[bool]) -> usize {
    if seq.is_empty() {
        return 0;
    }
    1 + seq.windows(2).filter(|w| w[0] != w[1]).count()
}

/// `C(n, k)` as a float (exact for the sizes met here: below 2^53).
fn choose(n: usize, k: usize) -> f64 {
    if k > n {
        return 0.0;
    }
    let k = k.min(n - k);
    (0..k).fold(1.0, |acc, i| acc * (n - i) as f64 / (i + 1) as f64)
}

/// The probability of exactly `r` runs among `n1` and `n2` values of two
/// kinds in a random order.
fn exactly(r: usize, n1: usize, n2: usize) -> f64 {
    if r < 2 || n1 == 0 || n2 == 0 {
        return 0.0;
    }
    let k = r / 2;
    let ways = if r.is_multiple_of(2) {
        2.0 * choose(n1 - 1, k - 1) * choose(n2 - 1, k - 1)
    } else {
        choose(n1 - 1, k - 1) * choose(n2 - 1, k) + choose(n1 - 1, k) * choose(n2 - 1, k - 1)
    };
    ways / choose(n1 + n2, n1)
}

/// The exact probability that a random order of `seq`'s values gives as few
/// runs as `seq` has, or fewer; `None` when `seq` holds only one kind (no
/// order to test).
pub fn fewer_runs_p(seq: &[bool]) -> Option<f64> {
    let n1 = seq.iter().filter(|&&b| b).count();
    let n2 = seq.len() - n1;
    if n1 == 0 || n2 == 0 {
        return None;
    }
    let p: f64 = (2..=count(seq)).map(|r| exactly(r, n1, n2)).sum();
    Some(p.min(1.0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::Xoshiro256PlusPlus;
    use rand::{RngExt, SeedableRng};

    fn seq(s: &str) -> Vec<bool> {
        s.chars().map(|c| c == 'H').collect()
    }

    #[test]
    fn runs_are_counted() {
        assert_eq!(count(&[]), 0);
        assert_eq!(count(&seq("H")), 1);
        assert_eq!(count(&seq("HHHLL")), 2);
        assert_eq!(count(&seq("HLHLH")), 5);
    }

    #[test]
    fn p_values_match_hand_counted_arrangements() {
        // 5 high then 4 low: 2 of the C(9,4) = 126 arrangements have 2 runs.
        assert!((fewer_runs_p(&seq("HHHHHLLLL")).unwrap() - 2.0 / 126.0).abs() < 1e-12);
        // 3 and 3: C(6,3) = 20 arrangements, 2 with 2 runs.
        assert!((fewer_runs_p(&seq("HHHLLL")).unwrap() - 0.1).abs() < 1e-12);
        // 2 and 2 in 3 runs (HHLH is impossible with 2 and 2; HLLH is): of the
        // 6 arrangements HHLL, LLHH have 2 runs, HLLH, LHHL 3, HLHL, LHLH 4.
        assert!((fewer_runs_p(&seq("HLLH")).unwrap() - 4.0 / 6.0).abs() < 1e-12);
        // The largest count possible: every arrangement has at most that many.
        assert!((fewer_runs_p(&seq("HLHL")).unwrap() - 1.0).abs() < 1e-12);
        // 4 high and 3 low in 3 runs: P(2) = 2/35, P(3) = (C(3,0)C(2,1) + C(3,1)C(2,0))/35 = 5/35.
        assert!((fewer_runs_p(&seq("HHLLLHH")).unwrap() - 7.0 / 35.0).abs() < 1e-12);
        assert_eq!(fewer_runs_p(&seq("HHH")), None);
        assert_eq!(fewer_runs_p(&[]), None);
    }

    #[test]
    fn the_probabilities_of_every_run_count_add_up_to_one() {
        for n1 in 1..12 {
            for n2 in 1..12 {
                let total: f64 = (2..=n1 + n2).map(|r| exactly(r, n1, n2)).sum();
                assert!((total - 1.0).abs() < 1e-9, "n1 {n1} n2 {n2}: {total}");
            }
        }
    }

    /// The share of `sims` simulated rows of `n` trials that [`time_ordered`]
    /// calls ordered in time, each row's trial medians drawn by `draw`.
    fn called_ordered(n: usize, sims: usize, seed: u64, draw: &dyn Fn(&mut Xoshiro256PlusPlus, usize, usize) -> f64) -> f64 {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        let mut called = 0;
        for _ in 0..sims {
            let start = rng.random_range(0..n);
            let values: Vec<f64> = (0..n).map(|i| draw(&mut rng, i, start)).collect();
            called += usize::from(time_ordered(&values).is_some());
        }
        called as f64 / sims as f64
    }

    #[test]
    fn trials_in_a_random_order_are_called_ordered_in_time_at_most_at_the_level() {
        // Two nulls: trial medians independent with 2% noise, and each trial
        // independently slow (30%) with probability 0.4 (a process-level
        // state, the other explanation). Either way the order is random.
        let sims = 20_000;
        let bound = TIME_LEVEL + 3.0 * (TIME_LEVEL * (1.0 - TIME_LEVEL) / sims as f64).sqrt();
        for n in 3..=15 {
            let noise = called_ordered(n, sims, 7 + n as u64, &|rng, _, _| 100.0 * (1.0 + 0.02 * rng.random::<f64>()));
            let modes = called_ordered(n, sims, 70 + n as u64, &|rng, _, _| {
                100.0 * (1.0 + 0.02 * rng.random::<f64>()) * if rng.random::<f64>() < 0.4 { 1.3 } else { 1.0 }
            });
            assert!(noise <= bound && modes <= bound, "n {n}: noise {noise:.4}, modes {modes:.4}, bound {bound:.4}");
        }
    }

    #[test]
    fn a_machine_that_changed_state_for_a_stretch_of_rounds_is_found() {
        // n trials; a stretch of 3 to n - 3 of them, starting at the first
        // round or ending at the last, runs 30% slow; 3% noise. (A stretch in
        // the middle makes three runs and needs more trials.)
        let detect = |n: usize, seed: u64| {
            called_ordered(n, 4_000, seed, &|rng, i, start| {
                let len = 3 + start % (n - 5);
                let slow = if start % 2 == 0 { i < len } else { i >= n - len };
                100.0 * (1.0 + 0.03 * rng.random::<f64>()) * if slow { 1.3 } else { 1.0 }
            })
        };
        // Below 8 trials the rule cannot speak (two runs of 3 and 3 have
        // p = 2/20; of 4 and 3, 2/35); from 8 on it always finds such a stretch
        // (the least likely, 3 of 8, has p = 2/56).
        assert_eq!(detect(6, 1), 0.0);
        assert_eq!(detect(7, 2), 0.0);
        for n in [8, 9, 10, 12, 15] {
            assert_eq!(detect(n, n as u64), 1.0, "n {n}");
        }
    }
}
