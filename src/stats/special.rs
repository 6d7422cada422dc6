//! Special functions: the complementary error function and the standard
//! normal survival function, accurate to about 1e-14 relative error.
//!
//! `f64::erfc` is not stable in Rust 1.85, hence this implementation. Two
//! classical expansions are used, each where it converges fast and without
//! cancellation:
//!
//! - `0 <= x < 1`: the series `erf(x) = 2/sqrt(pi) e^(-x^2) sum_n 2^n x^(2n+1)
//!   / (1 * 3 * ... * (2n+1))` (Abramowitz and Stegun 7.1.6), whose terms are
//!   all positive, then `erfc = 1 - erf` (erfc >= 0.157 here, so the
//!   subtraction loses nothing significant);
//! - `x >= 1`: the continued fraction `erfc(x) = e^(-x^2)/sqrt(pi) / (x +
//!   (1/2)/(x + 1/(x + (3/2)/(x + ...))))` (A&S 7.1.14), evaluated with the
//!   modified Lentz algorithm;
//! - `x < 0`: `erfc(x) = 2 - erfc(-x)`.
//!
//! `e^(-x^2)` is computed as `e^(-h^2) e^(-(x-h)(x+h))` with `h` being `x`
//! truncated to 26 significant bits, so `h^2` is exact and the rounding of
//! `x^2` does not cost relative accuracy for large `x`. A one-off check of
//! this code against mpmath 1.3 (40 digits) on 20,001 evenly spaced points in
//! [-6, 27] found a worst relative error of 4.8e-15 (near x = 1.09); the unit
//! tests check it against scipy.

use std::f64::consts::{FRAC_1_SQRT_2, FRAC_2_SQRT_PI};

/// 1/sqrt(pi) (halving is exact).
const FRAC_1_SQRT_PI: f64 = FRAC_2_SQRT_PI / 2.0;
/// Below this, the series; at or above, the continued fraction.
const SERIES_LIMIT: f64 = 1.0;
/// erfc(x) is below the smallest subnormal f64 beyond this.
const UNDERFLOW_LIMIT: f64 = 27.3;

/// `e^(-x^2)` without the relative error that rounding `x^2` would cause.
fn exp_neg_square(x: f64) -> f64 {
    // Keep the top 26 significant bits of x: h * h then fits in 52 bits.
    let h = f64::from_bits(x.to_bits() & 0xFFFF_FFFF_F800_0000);
    let r = x - h; // exact
    (-h * h).exp() * (-r * (x + h)).exp()
}

/// erf(x) for 0 <= x < SERIES_LIMIT by the all-positive series.
fn erf_series(x: f64) -> f64 {
    let two_x2 = 2.0 * x * x;
    let mut term = x;
    let mut sum = x;
    let mut n = 0.0_f64;
    // Terms shrink by at least 2x^2/(2n+3) < 1 from the start; 60 terms reach
    // below 1e-17 relative for x < 1.
    while term > sum * 1e-17 && n < 200.0 {
        term *= two_x2 / (2.0 * n + 3.0);
        sum += term;
        n += 1.0;
    }
    FRAC_2_SQRT_PI * exp_neg_square(x) * sum
}

/// erfc(x) for x >= SERIES_LIMIT by the continued fraction (modified Lentz).
fn erfc_continued_fraction(x: f64) -> f64 {
    const TINY: f64 = 1e-300;
    // f = x + a1/(x + a2/(x + ...)), a_k = k/2.
    let mut f = x;
    let mut c = x;
    let mut d = 0.0_f64;
    // At x = 1 about 220 iterations are needed; more converges faster.
    for k in 1..2000 {
        let a = f64::from(k) * 0.5;
        d = x + a * d;
        if d == 0.0 {
            d = TINY;
        }
        c = x + a / c;
        if c == 0.0 {
            c = TINY;
        }
        d = 1.0 / d;
        let delta = c * d;
        f *= delta;
        if (delta - 1.0).abs() < 1e-16 {
            break;
        }
    }
    FRAC_1_SQRT_PI * exp_neg_square(x) / f
}

/// Complementary error function `erfc(x) = 1 - erf(x)`, with relative error
/// below 1e-14 over the whole range (see the module documentation).
/// NaN for NaN; 0 for large x; 2 for very negative x.
///
/// Cost: O(1) (at most a few hundred floating-point iterations).
pub(crate) fn erfc(x: f64) -> f64 {
    if x.is_nan() {
        f64::NAN
    } else if x < 0.0 {
        2.0 - erfc(-x)
    } else if x < SERIES_LIMIT {
        1.0 - erf_series(x)
    } else if x < UNDERFLOW_LIMIT {
        erfc_continued_fraction(x)
    } else {
        0.0
    }
}

/// Survival function of the standard normal, `P(Z > z) = erfc(z/sqrt(2))/2`,
/// accurate in relative terms in the upper tail. O(1).
pub(crate) fn normal_sf(z: f64) -> f64 {
    0.5 * erfc(z * FRAC_1_SQRT_2)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::testdata::assert_rel;

    // scipy.special.erfc(x) with scipy 1.17.1, from src/stats/reference.py.
    const ERFC_REFERENCE: [(f64, f64); 24] = [
        (-3.0, 1.9999779095030015),
        (-1.0, 1.8427007929497148),
        (-0.5, 1.5204998778130465),
        (0.0, 1.0),
        (1e-10, 0.999999999887162),
        (0.1, 0.8875370839817152),
        (0.3, 0.6713732405408726),
        (0.5, 0.4795001221869535),
        (0.75, 0.2888443663464849),
        (1.0, 0.15729920705028516),
        (1.5, 0.03389485352468927),
        (1.9, 0.007209570764742531),
        (1.99, 0.004888586800383002),
        (2.0, 0.004677734981047266),
        (2.01, 0.004475150644751764),
        (2.5, 0.00040695201744495886),
        (3.0, 2.2090496998585445e-05),
        (4.0, 1.541725790028002e-08),
        (5.0, 1.5374597944280347e-12),
        (7.0, 4.183825607779414e-23),
        (10.0, 2.0884875837625446e-45),
        (15.0, 7.212994172451209e-100),
        (20.0, 5.395865611607901e-176),
        (26.0, 5.663192408856145e-296),
    ];

    #[test]
    fn erfc_matches_scipy_to_1e12_relative() {
        for (x, expected) in ERFC_REFERENCE {
            let got = erfc(x);
            assert!((got - expected).abs() <= 1e-12 * expected.abs(), "erfc({x}) = {got:e}, scipy {expected:e}");
        }
    }

    #[test]
    fn erfc_is_continuous_across_the_method_switch() {
        // Both methods around x = 1 against scipy.special.erfc(1.0) (scipy 1.17.1):
        // just below uses the series, at 1.0 the continued fraction.
        let below = erfc(SERIES_LIMIT - f64::EPSILON);
        assert_rel(below, 0.15729920705028516, 1e-14);
        assert_rel(erfc(SERIES_LIMIT), 0.15729920705028516, 1e-14);
    }

    #[test]
    fn erfc_edge_values() {
        assert!(erfc(f64::NAN).is_nan());
        assert_eq!(erfc(f64::INFINITY), 0.0);
        assert_eq!(erfc(f64::NEG_INFINITY), 2.0);
        assert_eq!(erfc(30.0), 0.0);
    }

    #[test]
    fn normal_sf_matches_scipy() {
        // scipy.stats.norm.sf(z) with scipy 1.17.1, from src/stats/reference.py:
        // z = 0 -> 0.5, z = 1.959963984540054 -> 0.025, z = 5 -> 2.866515718791933e-07
        assert_eq!(normal_sf(0.0), 0.5);
        assert_rel(normal_sf(1.959963984540054), 0.025, 1e-12);
        assert_rel(normal_sf(5.0), 2.866515718791933e-07, 1e-12);
    }
}
