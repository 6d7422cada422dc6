//! A cell's parameters: resolved values by name, how a value reads as
//! text, and how a value typed by the user (`10M`) matches one.

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

/// Parses a number with an optional K, M or G suffix (`58M`, `1.5G`, `256`,
/// `10_000`); `None` when it is not one.
pub fn parse_suffixed(text: &str) -> Option<f64> {
    let t: String = text.trim().chars().filter(|c| *c != '_' && *c != ',').collect();
    let (digits, scale) = match t.chars().last()? {
        'k' | 'K' => (&t[..t.len() - 1], 1e3),
        'M' => (&t[..t.len() - 1], 1e6),
        'G' => (&t[..t.len() - 1], 1e9),
        _ => (t.as_str(), 1.0),
    };
    let v: f64 = digits.trim().parse().ok()?;
    (v.is_finite()).then_some(v * scale)
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
