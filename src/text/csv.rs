//! CSV fields and the Bencher measure of a unit, shared by the exports of
//! `report` (`report --export csv` / `bmf`) and the table of `fleet`
//! (`fleet --format csv`): one quoting rule and one number format for
//! every CSV the tool writes. Text only: it knows units, not rows.

use crate::model::{Direction, Unit};

/// RFC 4180 quoting where needed.
pub(crate) fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) { format!("\"{}\"", s.replace('"', "\"\"")) } else { s.to_string() }
}

/// A number as a CSV field: its shortest exact text, empty for none.
pub(crate) fn opt(v: Option<f64>) -> String {
    v.map(|v| v.to_string()).unwrap_or_default()
}

/// The Bencher measure of a unit: `latency` (nanoseconds) for times,
/// `throughput` for rates.
pub(crate) fn measure(u: Unit) -> &'static str {
    match u.direction() {
        Direction::LowerIsBetter => "latency",
        Direction::HigherIsBetter => "throughput",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_fields_are_quoted_only_when_needed() {
        assert_eq!(csv_field("plain"), "plain");
        assert_eq!(csv_field("a, b"), "\"a, b\"");
        assert_eq!(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
    }

    #[test]
    fn bencher_measures_follow_the_unit_direction() {
        assert_eq!(measure(Unit::Ns), "latency");
        assert_eq!(measure(Unit::NsPerOp), "latency");
        assert_eq!(measure(Unit::OpsPerSec), "throughput");
        assert_eq!(measure(Unit::MopsPerSec), "throughput");
    }
}
