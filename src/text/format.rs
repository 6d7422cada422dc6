//! Number formatting for tables: thousands separators, units, ratios.

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

/// `n` with its noun, singular for one: `1 row`, `2 rows`, `0 runs`.
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

/// A value with its unit: `1,275,187,210 ns`, `16,266,559 ops/s`.
pub fn value(v: f64, unit: Unit) -> String {
    format!("{} {}", number(v), unit.as_str())
}

/// A ratio as a speedup: `1.934x`.
pub fn speedup(r: f64) -> String {
    if r.is_finite() { format!("{r:.3}x") } else { "n/a".into() }
}

/// A fraction as a percentage: 0.0586 -> `5.86%`.
pub fn percent(f: f64) -> String {
    if f.is_finite() { format!("{:.2}%", f * 100.0) } else { "n/a".into() }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_group_thousands_and_keep_small_values_readable() {
        assert_eq!(number(1_275_187_210.4), "1,275,187,210");
        assert_eq!(number(-1234.0), "-1,234");
        assert_eq!(number(999.6), "1,000");
        assert_eq!(number(42.25), "42.2");
        assert_eq!(number(3.25159), "3.25");
        assert_eq!(number(0.01234), "0.012");
        assert_eq!(number(f64::NAN), "n/a");
        assert_eq!(value(659_218_025.0, Unit::Ns), "659,218,025 ns");
        assert_eq!(count(21), "21");
        assert_eq!(count(40_600), "40,600");
    }

    #[test]
    fn ratios_percentages_and_intervals() {
        assert_eq!(speedup(1.9343), "1.934x");
        assert_eq!(percent(0.0586), "5.86%");
        assert_eq!(ci_relative(99.0, 102.0, 100.0), "-1.00% / +2.00%");
        assert_eq!(seconds(0.25), "250 ms");
        assert_eq!(seconds(12.34), "12.3 s");
        assert_eq!(seconds(245.0), "4 min 5 s");
    }
}
