//! Number formatting for tables: thousands separators, units, ratios; and
//! counts of things with the noun's right number (`1 row`, `3 rows`).

use crate::model::Unit;

/// `1234567.8` -> `1,234,568`; values under 100 keep 3 significant digits.
pub fn number(v: f64) -> String {
    if !v.is_finite() {
        return "n/a".into();
    }
    let a = v.abs();
    if a >= 100.0 {
        group_thousands(v.round() as i128)
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else if a >= 1.0 {
        format!("{v:.2}")
    } else if a == 0.0 {
        "0".into()
    } else {
        format!("{v:.3}")
    }
}

/// A count with thousands separators: `21`, `40,600`.
pub fn count(n: u64) -> String {
    group_thousands(n as i128)
}

/// `n` and the noun in its number: `1 row`, `0 rows`, `3 rows`.
pub fn counted(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

fn group_thousands(n: i128) -> String {
    let digits = n.unsigned_abs().to_string();
    let mut out = String::new();
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    if n < 0 { format!("-{out}") } else { out }
}

/// A value in its unit scaled to a readable size, for a person to read
/// (the records keep the exact value): `173 ns/op`, `2.38 µs/op`,
/// `57.97 ms`, `76.01 M ops/s`, `1.24 GB/s`, `1.23 M cycles`. Mop/s (the
/// NAS Parallel Benchmarks' millions of operations per second) reads as the
/// other rates do: 14,404 Mop/s is `14.40 G ops/s`, beside another
/// workload's `138 M ops/s`. Three or four significant digits: enough to
/// tell two figures apart at the 1% a comparison sees, few enough to read.
pub fn scaled(v: f64, unit: Unit) -> String {
    if !v.is_finite() {
        return "n/a".into();
    }
    let (m, prefix, rest) = match unit {
        Unit::Ns | Unit::NsPerOp => {
            let rest = if unit == Unit::NsPerOp { "/op" } else { "" };
            let (m, u) = by_thousands(v, &["ns", "µs", "ms", "s"]);
            return format!("{} {u}{rest}", mantissa(m));
        }
        Unit::OpsPerSec | Unit::MopsPerSec => {
            let ops = if unit == Unit::MopsPerSec { v * 1e6 } else { v };
            let (m, p) = by_thousands(ops, &["", "k", "M", "G", "T", "P"]);
            (m, p, "ops/s")
        }
        Unit::Cycles => {
            let (m, p) = by_thousands(v, &["", "k", "M", "G", "T"]);
            (m, p, "cycles")
        }
        Unit::MbPerSec => {
            let (m, u) = by_thousands(v, &["MB/s", "GB/s", "TB/s"]);
            return format!("{} {u}", mantissa(m));
        }
    };
    if prefix.is_empty() { format!("{} {rest}", mantissa(m)) } else { format!("{} {prefix} {rest}", mantissa(m)) }
}

/// `v` divided by 1000 until it is under 1000 (or the names run out), with
/// the name of its scale.
fn by_thousands(v: f64, names: &[&'static str]) -> (f64, &'static str) {
    let mut m = v;
    let mut i = 0;
    while m.abs() >= 999.5 && i + 1 < names.len() {
        m /= 1000.0;
        i += 1;
    }
    (m, names[i])
}

/// A scaled figure: `173`, `57.97`, `2.38`, `0.512`.
fn mantissa(m: f64) -> String {
    let a = m.abs();
    if a >= 99.95 {
        group_thousands(m.round() as i128)
    } else if a >= 0.9995 {
        format!("{m:.2}")
    } else if a == 0.0 {
        "0".into()
    } else {
        format!("{m:.3}")
    }
}

/// A ratio as a speedup: `1.934x`.
pub fn speedup(r: f64) -> String {
    if r.is_finite() { format!("{r:.3}x") } else { "n/a".into() }
}

/// A fraction as a plain number to three decimals, sign kept: `0.031`,
/// `-0.004`; from 1,000 on (the far end of a wide interval), in powers of
/// ten: `5.65e17`.
pub fn fraction(f: f64) -> String {
    match format!("{f:.3}") {
        _ if !f.is_finite() => "n/a".into(),
        _ if f.abs() >= 1000.0 => format!("{f:.2e}"),
        z if z == "-0.000" => "0.000".into(),
        t => t,
    }
}

/// A fraction with its interval: `0.031 (0.012..0.052)`, or the fraction
/// alone without one.
pub fn fraction_in(f: f64, bounds: Option<(f64, f64)>) -> String {
    match bounds {
        Some((lo, hi)) if f.is_finite() => format!("{} ({}..{})", fraction(f), fraction(lo), fraction(hi)),
        _ => fraction(f),
    }
}

/// A fraction as a percentage: 0.0586 -> `5.86%`.
pub fn percent(f: f64) -> String {
    if f.is_finite() { format!("{:.2}%", f * 100.0) } else { "n/a".into() }
}

/// A band or setting given in percent, as typed: 0.02 -> `2%`, 0.015 ->
/// `1.5%` (at most two decimals, trailing zeros left out).
pub fn band(f: f64) -> String {
    if !f.is_finite() {
        return "n/a".into();
    }
    let t = format!("{:.2}", f * 100.0);
    format!("{}%", t.trim_end_matches('0').trim_end_matches('.'))
}

/// A CI relative to its center: `-0.31% / +0.52%`.
pub fn ci_relative(lo: f64, hi: f64, center: f64) -> String {
    if center == 0.0 || !center.is_finite() {
        return "n/a".into();
    }
    format!("{:+.2}% / {:+.2}%", (lo - center) / center.abs() * 100.0, (hi - center) / center.abs() * 100.0)
}

/// Seconds with a unit suited to their size: `850 ms`, `12.3 s`, `4 min 5 s`.
pub fn seconds(s: f64) -> String {
    if !s.is_finite() {
        "n/a".into()
    } else if s < 1.0 {
        format!("{:.0} ms", s * 1000.0)
    } else if s < 120.0 {
        format!("{s:.1} s")
    } else {
        format!("{} min {:.0} s", (s / 60.0).floor(), s % 60.0)
    }
}

/// `bytes` as they may stand in a URL or URI: every byte but ASCII
/// letters, digits, `-._~` and those in `keep` as `%XX`.
pub fn percent_encoded(bytes: &[u8], keep: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len());
    for &b in bytes {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) || keep.contains(&b) {
            s.push(char::from(b));
        } else {
            s.push_str(&format!("%{b:02X}"));
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scaled_picks_the_unit_that_reads_best() {
        assert_eq!(scaled(173.4, Unit::NsPerOp), "173 ns/op");
        assert_eq!(scaled(2_380.0, Unit::NsPerOp), "2.38 µs/op");
        assert_eq!(scaled(57_966_919.0, Unit::Ns), "57.97 ms");
        assert_eq!(scaled(2_380_000.0, Unit::Ns), "2.38 ms");
        assert_eq!(scaled(1.5e10, Unit::Ns), "15.00 s");
        assert_eq!(scaled(3.5e12, Unit::Ns), "3,500 s");
        assert_eq!(scaled(0.5, Unit::NsPerOp), "0.500 ns/op");
        assert_eq!(scaled(76_010_000.0, Unit::OpsPerSec), "76.01 M ops/s");
        assert_eq!(scaled(1_110_076.0, Unit::OpsPerSec), "1.11 M ops/s");
        assert_eq!(scaled(17_514.0, Unit::OpsPerSec), "17.51 k ops/s");
        assert_eq!(scaled(512.0, Unit::OpsPerSec), "512 ops/s");
        assert_eq!(scaled(6_791.0, Unit::MbPerSec), "6.79 GB/s");
        assert_eq!(scaled(891.0, Unit::MbPerSec), "891 MB/s");
        // Mop/s reads as every other rate: npb's 14,404 Mop/s beside alloc's 138 M ops/s.
        assert_eq!(scaled(14_404.0, Unit::MopsPerSec), "14.40 G ops/s");
        assert_eq!(scaled(4_229.4, Unit::MopsPerSec), "4.23 G ops/s");
        assert_eq!(scaled(138.2, Unit::MopsPerSec), "138 M ops/s");
        assert_eq!(scaled(138_200_000.0, Unit::OpsPerSec), "138 M ops/s");
        assert_eq!(scaled(0.25, Unit::MopsPerSec), "250 k ops/s");
        assert_eq!(scaled(1_234_567.0, Unit::Cycles), "1.23 M cycles");
        assert_eq!(scaled(950.0, Unit::Cycles), "950 cycles");
        // Rounding at a boundary moves to the next scale, never `1000 ns`.
        assert_eq!(scaled(999.7, Unit::Ns), "1.00 µs");
        assert_eq!(scaled(99.97, Unit::Ns), "100 ns");
        assert_eq!(scaled(f64::NAN, Unit::Ns), "n/a");
    }

    #[test]
    fn every_unit_kind_scales_through_the_one_formatter() {
        // One row of each unit kind, at a size that needs its scale: no
        // unit is left printed raw (`125,921,719 ns`, `14,404 Mop/s`).
        let rows = [
            (Unit::Ns, 125_921_719.0, "126 ms"),
            (Unit::NsPerOp, 1_234_567.0, "1.23 ms/op"),
            (Unit::OpsPerSec, 16_266_559.0, "16.27 M ops/s"),
            (Unit::MbPerSec, 12_345.0, "12.35 GB/s"),
            (Unit::MopsPerSec, 14_404.0, "14.40 G ops/s"),
            (Unit::Cycles, 3_456_789_012.0, "3.46 G cycles"),
        ];
        for u in Unit::ALL {
            assert!(rows.iter().any(|r| r.0 == u), "no row of {u}");
        }
        for (u, v, want) in rows {
            assert_eq!(scaled(v, u), want, "{u}");
        }
    }

    #[test]
    fn fractions_keep_three_decimals_and_their_sign() {
        assert_eq!(fraction(0.03125), "0.031");
        assert_eq!(fraction(-0.0041), "-0.004");
        assert_eq!(fraction(1.5), "1.500");
        assert_eq!(fraction(f64::NAN), "n/a");
        assert_eq!(fraction(-1e-17), "0.000", "a rounding error is no sign");
        assert_eq!(fraction(999.4), "999.400");
        assert_eq!(fraction(17_578.735), "1.76e4");
        assert_eq!(fraction(-565_038_417_869_649_600.0), "-5.65e17");
        assert_eq!(fraction_in(0.0312, Some((0.0119, 0.052))), "0.031 (0.012..0.052)");
        assert_eq!(fraction_in(-0.2, Some((-0.35, 0.1))), "-0.200 (-0.350..0.100)");
        assert_eq!(fraction_in(0.25, None), "0.250");
    }

    #[test]
    fn numbers_group_thousands_and_keep_small_values_readable() {
        assert_eq!(number(1_275_187_210.4), "1,275,187,210");
        assert_eq!(number(-1234.0), "-1,234");
        assert_eq!(number(999.6), "1,000");
        assert_eq!(number(42.25), "42.2");
        assert_eq!(number(3.25159), "3.25");
        assert_eq!(number(0.01234), "0.012");
        assert_eq!(number(f64::NAN), "n/a");
        assert_eq!(count(21), "21");
        assert_eq!(count(40_600), "40,600");
    }

    #[test]
    fn ratios_percentages_and_intervals() {
        assert_eq!(speedup(1.9343), "1.934x");
        assert_eq!(percent(0.0586), "5.86%");
        assert_eq!((band(0.02), band(0.015), band(0.1), band(0.0125)), ("2%".into(), "1.5%".into(), "10%".into(), "1.25%".into()));
        assert_eq!(ci_relative(99.0, 102.0, 100.0), "-1.00% / +2.00%");
        assert_eq!(seconds(0.25), "250 ms");
        assert_eq!(seconds(12.34), "12.3 s");
        assert_eq!(seconds(245.0), "4 min 5 s");
    }

    #[test]
    fn a_count_takes_the_noun_in_its_number() {
        assert_eq!(counted(1, "row", "rows"), "1 row");
        assert_eq!(counted(0, "row", "rows"), "0 rows");
        assert_eq!(counted(3, "cell does", "cells do"), "3 cells do");
    }
}
