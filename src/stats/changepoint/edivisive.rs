//! E-divisive means (Matteson and James 2014, as Otava/Hunter use it) with a
//! permutation test: the method PELT was measured against
//! (`the_methods_compared_on_recorded_noise`), kept with the tests only.
//!
//! Bisection: in each level, the split that maximises the energy statistic
//! `Q = n1 n2 / n · (2 mean|a - b| - mean|a - a'| - mean|b - b'|)`; the
//! level with the largest `Q` is split when a permutation test (its values
//! shuffled `permutations` times, seeded) gives `p <= alpha`, then again,
//! until no split is significant. O(n²) per level and permutation.

use rand::rngs::Xoshiro256PlusPlus;
use rand::{RngExt, SeedableRng};

/// The best split of `y` (at least `min` values each side) and its `Q`.
fn best_split(y: &[f64], min: usize) -> Option<(usize, f64)> {
    let n = y.len();
    if n < 2 * min || min == 0 {
        return None;
    }
    let d = |i: usize, j: usize| (y[i] - y[j]).abs();
    let total: f64 = (0..n).map(|i| (i + 1..n).map(|j| d(i, j)).sum::<f64>()).sum();
    // Within the left (0..tau) and right (tau..n) parts, each pair once.
    let mut left: f64 = (0..min).map(|i| (i + 1..min).map(|j| d(i, j)).sum::<f64>()).sum();
    let mut right: f64 = (min..n).map(|i| (i + 1..n).map(|j| d(i, j)).sum::<f64>()).sum();
    let mut best: Option<(usize, f64)> = None;
    for tau in min..=n - min {
        if tau > min {
            // y[tau - 1] moved from the right to the left.
            let k = tau - 1;
            left += (0..k).map(|i| d(i, k)).sum::<f64>();
            right -= (k + 1..n).map(|j| d(k, j)).sum::<f64>();
        }
        let (n1, n2) = (tau as f64, (n - tau) as f64);
        let between = total - left - right;
        let within = |w: f64, m: f64| if m > 1.0 { w / (m * (m - 1.0) / 2.0) } else { 0.0 };
        let q = n1 * n2 / (n1 + n2) * (2.0 * between / (n1 * n2) - within(left, n1) - within(right, n2));
        if best.is_none_or(|(_, b)| q > b) {
            best = Some((tau, q));
        }
    }
    best
}

/// The change points of `x` (indices where a level starts).
pub fn changes(x: &[f64], min: usize, alpha: f64, permutations: usize, seed: u64) -> Vec<usize> {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let mut cuts = vec![0, x.len()];
    loop {
        let best = cuts
            .windows(2)
            .filter_map(|w| best_split(&x[w[0]..w[1]], min).map(|(tau, q)| (w[0], w[1], w[0] + tau, q)))
            .max_by(|a, b| a.3.total_cmp(&b.3));
        let Some((a, b, at, q)) = best else { break };
        let mut y = x[a..b].to_vec();
        let mut above = 0;
        for _ in 0..permutations {
            for i in (1..y.len()).rev() {
                let j = rng.random_range(0..=i);
                y.swap(i, j);
            }
            if best_split(&y, min).is_some_and(|(_, p)| p >= q) {
                above += 1;
            }
        }
        let p = (above + 1) as f64 / (permutations + 1) as f64;
        if p > alpha {
            break;
        }
        cuts.push(at);
        cuts.sort_unstable();
    }
    cuts[1..cuts.len() - 1].to_vec()
}
