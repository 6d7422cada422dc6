//! A cell's parameters: resolved values by name, how a value reads as
//! text, and how a value typed by the user (`10M`) matches one.
//!
//! One suffix grammar serves every place a number is typed: `-p NAME=VALUE`
//! ([`parse_suffixed_int`]), claims and `history show --params` filters
//! ([`parse_suffixed`], [`param_matches`]): `3m` is 3,000,000 in all of them.

use std::collections::BTreeMap;

use serde_json::Value;

/// Resolved parameter values of a cell, by name.
pub type Params = BTreeMap<String, Value>;

/// A parameter value as plain text (strings without quotes).
pub fn value_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// A number as typed, separators (`_`, `,`) dropped, split from its decimal
/// suffix: K, M or G in either case (10^3, 10^6, 10^9), 1 without one.
fn split_suffix(text: &str) -> Option<(String, u64)> {
    let t: String = text.trim().chars().filter(|c| *c != '_' && *c != ',').collect();
    let scale = match t.chars().last()? {
        'k' | 'K' => 1_000,
        'm' | 'M' => 1_000_000,
        'g' | 'G' => 1_000_000_000,
        _ => return Some((t, 1)),
    };
    Some((t[..t.len() - 1].trim().to_string(), scale))
}

/// Parses a number with an optional K, M or G suffix in either case (`58M`,
/// `3m`, `1.5G`, `256`, `10_000`); `None` when it is not one.
pub fn parse_suffixed(text: &str) -> Option<f64> {
    let (digits, scale) = split_suffix(text)?;
    let v: f64 = digits.parse().ok()?;
    (v.is_finite()).then_some(v * scale as f64)
}

/// [`parse_suffixed`] for an integer (`3M`, `3m`, `64K`, `3_000_000`): `None`
/// when the digits are not an integer or the value overflows.
pub fn parse_suffixed_int(text: &str) -> Option<i64> {
    let (digits, scale) = split_suffix(text)?;
    digits.parse::<i64>().ok()?.checked_mul(scale as i64)
}

/// Whether the parameter `name` of a row has the value `want`: the same
/// text, or the same number once suffixes are read (`10M` = `10000000`).
pub fn param_matches(params: &Params, name: &str, want: &str) -> bool {
    let Some(v) = params.get(name) else { return false };
    let have = value_text(v);
    if have == want {
        return true;
    }
    match (parse_suffixed(&have), parse_suffixed(want)) {
        (Some(a), Some(b)) => (a - b).abs() <= 1e-9 * a.abs().max(b.abs()),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_suffix_grammar_for_ints_floats_and_matches() {
        for (text, v) in [("3m", 3_000_000), ("3M", 3_000_000), ("64k", 64_000), ("1G", 1_000_000_000), ("3_000", 3000), ("256", 256)] {
            assert_eq!(parse_suffixed_int(text), Some(v), "{text}");
            assert_eq!(parse_suffixed(text), Some(v as f64), "{text}");
        }
        assert_eq!(parse_suffixed("1.5g"), Some(1.5e9));
        assert_eq!(parse_suffixed_int("1.5M"), None, "not an integer");
        assert_eq!(parse_suffixed_int("99999999999G"), None, "overflow");
        assert_eq!(parse_suffixed_int("m"), None);
        assert_eq!(parse_suffixed(""), None);
        let params: Params = [("range".to_string(), serde_json::Value::from(3_000_000))].into();
        for want in ["3m", "3M", "3000000", "3_000_000"] {
            assert!(param_matches(&params, "range", want), "{want}");
        }
        assert!(!param_matches(&params, "range", "3k"));
    }
}
