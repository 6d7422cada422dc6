//! Tests of difference between two samples: the Mann-Whitney U test.

use super::special::normal_sf;

/// Result of [`mann_whitney_u`].
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct MannWhitney {
    /// U statistic of the first sample: `R1 - n1 (n1 + 1) / 2`, with `R1` the
    /// sum of the first sample's ranks (average ranks for ties) in the pooled
    /// data. Equals the number of pairs `(x, y)` with `x > y`, plus half the
    /// tied pairs.
    pub u: f64,
    /// Two-sided p-value from the normal approximation with tie and continuity
    /// corrections, in `[0, 1]`.
    pub p_two_sided: f64,
}

/// Mann-Whitney U test of `x` against `y` (U statistic of the first sample),
/// with a two-sided p-value from the normal approximation with tie correction
/// and continuity correction, exactly as `scipy.stats.mannwhitneyu(x, y,
/// alternative="two-sided", method="asymptotic", use_continuity=True)`
/// computes it:
///
/// - `U = max(U1, n1 n2 - U1)`, `mu = n1 n2 / 2`, `n = n1 + n2`;
/// - `s = sqrt(n1 n2 / 12 ((n + 1) - sum(t^3 - t) / (n (n - 1))))` over the
///   sizes `t` of the groups of tied values;
/// - `p = 2 P(Z > (U - mu - 1/2) / s)`, clipped to `[0, 1]`.
///
/// Returns `p = 1.0` when all values are tied (`s = 0`). When `x` or `y` is
/// empty there is nothing to test and both fields are NaN. Values must be
/// finite (NaN has no rank).
///
/// Cost: O((n1 + n2) log(n1 + n2)) time, O(n1 + n2) memory.
pub fn mann_whitney_u(x: &[f64], y: &[f64]) -> MannWhitney {
    let (n1, n2) = (x.len(), y.len());
    if n1 == 0 || n2 == 0 {
        return MannWhitney { u: f64::NAN, p_two_sided: f64::NAN };
    }
    // Pool the values, remembering which sample each came from.
    let mut pooled: Vec<(f64, bool)> = x.iter().map(|&v| (v, true)).chain(y.iter().map(|&v| (v, false))).collect();
    pooled.sort_unstable_by(|a, b| a.0.total_cmp(&b.0));

    // Average ranks (1-based) over runs of equal values; accumulate the rank
    // sum of the first sample and the tie term sum(t^3 - t).
    let mut r1 = 0.0_f64;
    let mut tie_term = 0.0_f64;
    let mut start = 0;
    while start < pooled.len() {
        let value = pooled[start].0;
        let end = start + pooled[start..].iter().take_while(|(v, _)| *v == value).count();
        let t = (end - start) as f64;
        // Ranks start+1 ..= end, so the average is (start + 1 + end) / 2.
        let avg_rank = (start + 1 + end) as f64 / 2.0;
        let from_x = pooled[start..end].iter().filter(|(_, first)| *first).count();
        r1 += avg_rank * from_x as f64;
        tie_term += t * t * t - t;
        start = end;
    }

    let (n1f, n2f) = (n1 as f64, n2 as f64);
    let u1 = r1 - n1f * (n1f + 1.0) / 2.0;
    let u = u1.max(n1f * n2f - u1);
    let n = n1f + n2f;
    let mu = n1f * n2f / 2.0;
    let variance = n1f * n2f / 12.0 * ((n + 1.0) - tie_term / (n * (n - 1.0)));
    let p = if variance > 0.0 {
        let z = (u - mu - 0.5) / variance.sqrt();
        (2.0 * normal_sf(z)).clamp(0.0, 1.0)
    } else {
        // All values tied: no evidence of any difference.
        1.0
    };
    MannWhitney { u: u1, p_two_sided: p }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::testdata::{MW_OVERLAP_X, MW_OVERLAP_Y, assert_rel};

    const TIES_X: [f64; 8] = [1.0, 2.0, 2.0, 3.0, 4.0, 4.0, 4.0, 5.0];
    const TIES_Y: [f64; 9] = [2.0, 3.0, 3.0, 4.0, 5.0, 6.0, 6.0, 7.0, 8.0];
    const DIFF_X: [f64; 12] = [100.1, 99.5, 101.2, 100.8, 99.9, 100.4, 100.0, 101.0, 99.7, 100.6, 100.3, 99.8];
    const DIFF_Y: [f64; 15] = [110.2, 109.1, 111.0, 108.7, 110.5, 109.9, 110.8, 111.4, 109.3, 110.1, 108.9, 110.6, 109.6, 111.2, 110.0];
    const SAME: [f64; 5] = [3.1, 2.7, 5.0, 4.4, 3.9];

    /// Checks U exactly (it is a half-integer) and p to 1e-9 relative.
    #[track_caller]
    fn check(x: &[f64], y: &[f64], u: f64, p: f64) {
        let r = mann_whitney_u(x, y);
        assert_eq!(r.u, u, "U");
        assert_rel(r.p_two_sided, p, 1e-9);
    }

    // All expected (U, p) pairs below are scipy.stats.mannwhitneyu(x, y,
    // alternative="two-sided", method="asymptotic", use_continuity=True) with
    // scipy 1.17.1, printed by src/stats/reference.py.

    #[test]
    fn with_ties_matches_scipy() {
        check(&TIES_X, &TIES_Y, 18.0, 0.08820150262646032);
    }

    #[test]
    fn clearly_different_matches_scipy() {
        check(&DIFF_X, &DIFF_Y, 0.0, 1.2587665380600578e-05);
        // Swapping the samples changes U1 to n1 n2 - U1, not p.
        check(&DIFF_Y, &DIFF_X, 180.0, 1.2587665380600578e-05);
    }

    #[test]
    fn identical_samples_match_scipy() {
        check(&SAME, &SAME, 12.5, 1.0);
    }

    #[test]
    fn overlapping_samples_with_many_ties_match_scipy() {
        check(&MW_OVERLAP_X, &MW_OVERLAP_Y, 438.5, 5.130888618822551e-06);
    }

    #[test]
    fn all_tied_gives_p_one() {
        // scipy gives (3.0, 1.0) for x = [5, 5, 5], y = [5, 5].
        check(&[5.0; 3], &[5.0; 2], 3.0, 1.0);
    }

    #[test]
    fn empty_side_gives_nan() {
        let r = mann_whitney_u(&[], &[1.0]);
        assert!(r.u.is_nan() && r.p_two_sided.is_nan());
        let r = mann_whitney_u(&[1.0], &[]);
        assert!(r.u.is_nan() && r.p_two_sided.is_nan());
    }
}
