//! The experimentally determined serial fraction of Karp and Flatt (1990):
//! from a speedup S measured at p workers,
//! `e = (1/S - 1/p) / (1 - 1/p)`, the fraction of the one-worker time that
//! Amdahl's law would have to call serial to explain S. A parallel part that
//! loses to overhead (synchronisation, contention) shows as an e that grows
//! with p; serial work shows as an e that stays put.

/// A figure with its interval, when it has one.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Bounded {
    pub value: f64,
    /// `(lo, hi)`, `None` when the figure has no interval.
    pub bounds: Option<(f64, f64)>,
}

impl Bounded {
    pub fn new(value: f64, bounds: Option<(f64, f64)>) -> Bounded {
        Bounded { value, bounds }
    }
}

/// Karp-Flatt's serial fraction of speedup `s` at `p` workers (p relative to
/// the base count: 2 for 1-to-2, and for 2-to-4). It is negative for a
/// superlinear speedup and above 1 for a slowdown. `None` when `p <= 1` or
/// `s` is not a finite figure above zero.
pub fn serial_fraction(s: f64, p: f64) -> Option<f64> {
    (p > 1.0 && p.is_finite() && s > 0.0 && s.is_finite()).then(|| (1.0 / s - 1.0 / p) / (1.0 - 1.0 / p))
}

/// The serial fraction of a speedup with an interval: e falls as S rises, so
/// its interval is `e(S_hi) .. e(S_lo)`.
pub fn serial_fraction_of(s: Bounded, p: f64) -> Option<Bounded> {
    let e = serial_fraction(s.value, p)?;
    let bounds = s.bounds.and_then(|(lo, hi)| Some((serial_fraction(hi, p)?, serial_fraction(lo, p)?)));
    Some(Bounded::new(e, bounds))
}

/// Whether the serial fraction grows with the worker count, over
/// `(p, e)` in increasing p: at least two counts, each e at least the one
/// before it, and the last one's interval wholly above the first one's
/// (`last.lo > first.hi`). Without an interval at either end it does not
/// tell.
pub fn grows(points: &[(f64, Bounded)]) -> bool {
    let (Some(first), Some(last)) = (points.first(), points.last()) else { return false };
    if points.len() < 2 {
        return false;
    }
    let rising = points.windows(2).all(|w| w[0].0 < w[1].0 && w[1].1.value >= w[0].1.value);
    match (first.1.bounds, last.1.bounds) {
        (Some((_, first_hi)), Some((last_lo, _))) => rising && last_lo > first_hi,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) {
        assert!((a - b).abs() < 1e-12, "{a} != {b}");
    }

    #[test]
    fn the_serial_fraction_of_hand_computed_speedups() {
        // Ideal: S = p gives 0.
        close(serial_fraction(4.0, 4.0).unwrap(), 0.0);
        // No speedup at all: S = 1 gives 1 at any p.
        close(serial_fraction(1.0, 8.0).unwrap(), 1.0);
        // S = 1.6 at p = 2: (0.625 - 0.5) / 0.5 = 0.25.
        close(serial_fraction(1.6, 2.0).unwrap(), 0.25);
        // S = 3.2 at p = 4: (0.3125 - 0.25) / 0.75 = 0.083333...
        close(serial_fraction(3.2, 4.0).unwrap(), 0.0625 / 0.75);
        // capOS's Linux 1-to-4 speedup 3.774x: (1/3.774 - 0.25) / 0.75 = 0.019961...
        close(serial_fraction(3.774, 4.0).unwrap(), (1.0 / 3.774 - 0.25) / 0.75);
        assert!((serial_fraction(3.774, 4.0).unwrap() - 0.019961).abs() < 1e-6);
        // Superlinear: S = 2.5 at p = 2 gives (0.4 - 0.5) / 0.5 = -0.2.
        close(serial_fraction(2.5, 2.0).unwrap(), -0.2);
        // A slowdown: S = 0.8 at p = 2 gives (1.25 - 0.5) / 0.5 = 1.5.
        close(serial_fraction(0.8, 2.0).unwrap(), 1.5);
        // p relative to a base of 2 workers: 2-to-3 is p = 1.5; S = 1.2 gives
        // (1/1.2 - 2/3) / (1/3) = 0.5.
        close(serial_fraction(1.2, 1.5).unwrap(), 0.5);
        for (s, p) in [(1.0, 1.0), (2.0, 0.5), (0.0, 2.0), (-1.0, 2.0), (f64::NAN, 2.0), (f64::INFINITY, 2.0)] {
            assert_eq!(serial_fraction(s, p), None, "S {s} at p {p}");
        }
    }

    #[test]
    fn the_interval_runs_from_the_fast_end_of_the_speedup_to_the_slow_end() {
        // S = 1.6 (1.25..1.8) at p = 2: e = 0.25, e(1.8) = 0.1111..., e(1.25) = 0.6.
        let e = serial_fraction_of(Bounded::new(1.6, Some((1.25, 1.8))), 2.0).unwrap();
        close(e.value, 0.25);
        let (lo, hi) = e.bounds.unwrap();
        close(lo, (1.0 / 1.8 - 0.5) / 0.5);
        close(hi, 0.6);
        assert!(lo < e.value && e.value < hi);
        assert_eq!(serial_fraction_of(Bounded::new(1.6, None), 2.0), Some(Bounded::new(0.25, None)));
        assert_eq!(serial_fraction_of(Bounded::new(1.6, None), 1.0), None);
    }

    #[test]
    fn growth_needs_a_rise_beyond_the_intervals() {
        let b = |v: f64, lo: f64, hi: f64| Bounded::new(v, Some((lo, hi)));
        // 0.02 (0.01..0.03) at 2, 0.05 at 4, 0.10 (0.07..0.13) at 8: grows.
        let rising = [(2.0, b(0.02, 0.01, 0.03)), (4.0, Bounded::new(0.05, None)), (8.0, b(0.10, 0.07, 0.13))];
        assert!(grows(&rising));
        // The same ends with overlapping intervals: not beyond them.
        assert!(!grows(&[(2.0, b(0.02, 0.01, 0.08)), (8.0, b(0.10, 0.07, 0.13))]));
        // Touching is not beyond.
        assert!(!grows(&[(2.0, b(0.02, 0.01, 0.07)), (8.0, b(0.10, 0.07, 0.13))]));
        // A dip in between: not a growth with p.
        assert!(!grows(&[(2.0, b(0.02, 0.01, 0.03)), (4.0, Bounded::new(0.01, None)), (8.0, b(0.10, 0.07, 0.13))]));
        // Falling: serial work (or noise), not overhead.
        assert!(!grows(&[(2.0, b(0.10, 0.07, 0.13)), (8.0, b(0.02, 0.01, 0.03))]));
        // No interval at an end, or one count only: it does not tell.
        assert!(!grows(&[(2.0, Bounded::new(0.02, None)), (8.0, b(0.10, 0.07, 0.13))]));
        assert!(!grows(&[(2.0, b(0.02, 0.01, 0.03))]));
        assert!(!grows(&[]));
    }
}
