//! The interval of a median from order statistics, for rows with many
//! pairs (docs/METHODOLOGY.md, "Many pairs: the median's order
//! statistics").
//!
//! Of `n` continuous values drawn alike, the `j`-th smallest and the `j`-th
//! largest hold the median between them with probability `1 - 2 P(Bin(n,
//! 1/2) <= j - 1)`, whatever the distribution: no standard deviation
//! enters, so a pair or two of processes far out (a speed mode the other
//! side missed) cannot widen the interval as they widen a t interval. The
//! coverage of those intervals comes in steps; between two steps the bounds
//! are interpolated (Hettmansperger and Sheather, "Confidence intervals
//! based on interpolated order statistics", Statistics & Probability
//! Letters 4, 1986), which holds the level nearly exactly for continuous
//! distributions; the tests simulate it for the distributions a row shows
//! (normal, heavy-tailed, two speed modes, a few far-out pairs).
//!
//! The bounds move continuously and monotonically with the level, so the
//! level at which an interval first touches a value is well defined: the
//! p-value of [`super::Plan::p_different`].
//!
//! Pure.

use statrs::distribution::{Binomial, DiscreteCDF};

/// From this many values across pairs on, an interval across pairs is the
/// median's order-statistic interval wherever one exists at its level (a
/// choice by the pair count alone, never by the values). With 12, the
/// level a `--lockstep` run's later looks use (1 - 0.025 / 3, 99.17%) drops
/// the lowest and the highest pair at least; below it, the t interval is as
/// wide or narrower and drops nothing anyway.
pub const ORDER_MIN_VALUES: usize = 12;

/// Whether `n` values, at least `from`, have an order-statistic interval
/// at `level`: even the smallest and largest value cover it (`1 - 2^(1 -
/// n)`). What [`interval`] returns `Some` for, without the values.
pub fn applies(n: usize, level: f64, from: usize) -> bool {
    n >= from.max(2) && level > 0.0 && level < 1.0 && 1.0 - 2f64.powi(1 - n as i32) >= level - 1e-12
}

/// The values' order-statistic interval of their median at confidence
/// `level`, as `(lo, hi)`, from `sorted` (ascending, finite). `None` where
/// even the smallest and largest value cover less than `level` (`1 - 2^(1 -
/// n)`), or `level` is not inside (0, 1).
///
/// Cost: O(n) binomial probabilities.
pub fn interval(sorted: &[f64], level: f64) -> Option<(f64, f64)> {
    let n = sorted.len();
    if n < 2 || !(level > 0.0 && level < 1.0) {
        return None;
    }
    let binomial = Binomial::new(0.5, n as u64).ok()?;
    // coverage(j): of [x(j), x(n + 1 - j)] (1-based), 0 once the bounds meet.
    let coverage = |j: usize| if 2 * j <= n { (1.0 - 2.0 * binomial.cdf(j as u64 - 1)).max(0.0) } else { 0.0 };
    // Coverages are binomial sums: one that equals the level up to rounding covers it.
    let covers = |j: usize| coverage(j) >= level - 1e-12;
    if !covers(1) {
        return None;
    }
    let mut k = 1;
    while 2 * (k + 1) <= n && covers(k + 1) {
        k += 1;
    }
    let (gk, gnext) = (coverage(k), coverage(k + 1));
    let outer = (sorted[k - 1], sorted[n - k]);
    // The next step in: the next pair of order statistics, or the median
    // once they would cross.
    let inner = if 2 * (k + 1) <= n {
        (sorted[k], sorted[n - k - 1])
    } else {
        let m = super::median(sorted);
        (m, m)
    };
    let i = if gk - level > 1e-12 && gk > gnext { ((gk - level) / (gk - gnext)).clamp(0.0, 1.0) } else { 0.0 };
    let (nf, kf) = (n as f64, k as f64);
    let lambda = ((nf - kf) * i / (kf + (nf - 2.0 * kf) * i)).clamp(0.0, 1.0);
    let lerp = |a: f64, b: f64| if a == b { a } else { (1.0 - lambda) * a + lambda * b };
    Some((lerp(outer.0, inner.0), lerp(outer.1, inner.1)))
}

/// The smallest two-sided level `alpha` (the interval at `1 - alpha`) at
/// which the order-statistic interval of `sorted` lies wholly above `edge`
/// (`above`) or wholly below `-edge`: the p-value of "the median is beyond
/// `edge`" on that side. At most 1; at least `2^(1 - n)`, the level of the
/// widest interval.
///
/// Cost: O(n) per step of a bisection of 60 steps.
pub fn p_beyond(sorted: &[f64], edge: f64, above: bool) -> f64 {
    let n = sorted.len();
    let widest = 2f64.powi(1 - n as i32);
    let beyond = |alpha: f64| interval(sorted, 1.0 - alpha).is_some_and(|(lo, hi)| if above { lo > edge } else { hi < -edge });
    if beyond(widest) {
        return widest;
    }
    // The interval narrows as alpha grows: bisect for where it leaves the band.
    let (mut lo, mut hi) = (widest, 1.0);
    if !beyond(hi - f64::EPSILON) {
        return 1.0;
    }
    for _ in 0..60 {
        let mid = 0.5 * (lo + hi);
        if beyond(mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    hi
}
