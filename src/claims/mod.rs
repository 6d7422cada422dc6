//! claims: a TOML file of expected values per workload and parameters, and
//! the claims-vs-actual table of a run (`proofbench check-claims`).
//!
//! ```toml
//! [[claim]]
//! workload = "alloc.random-mixed"
//! params = { size = "256", iterations = "10M" }  # matched against the row's parameters
//! expect = "58M..65M"                            # or min / max, or value + tolerance
//! unit = "ops/s"                                 # optional, checked against the row
//! note = "README table"
//! ```
//!
//! Numbers take the suffixes K, M, G (10^3, 10^6, 10^9). Reads records only:
//! it never measures.

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize};

use crate::evidence::{Row, StoredRun};
use crate::model::params::{param_matches, parse_suffixed};
use crate::model::{Status, Unit, UsageError};
use crate::text::document::{Align, Block, Document, Line, Table};
use crate::text::format;

/// A number as a claims file may write it: `60000000`, `6e7` or `"60M"`.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Num(f64);

impl<'de> Deserialize<'de> for Num {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Num, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Num;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a number, or a string like \"58M\"")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Num, E> {
                Ok(Num(v as f64))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Num, E> {
                Ok(Num(v as f64))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Num, E> {
                Ok(Num(v))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Num, E> {
                parse_suffixed(v).map(Num).ok_or_else(|| E::custom(format!("'{v}' is not a number (use e.g. 58M, 1.5G or 250)")))
            }
        }
        d.deserialize_any(V)
    }
}

/// A parameter value as text (`"256"`, `256` and `true` all read).
#[derive(Clone, Debug, PartialEq)]
struct Text(String);

impl<'de> Deserialize<'de> for Text {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Text, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Text;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a parameter value (string, number or boolean)")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Text, E> {
                Ok(Text(v.to_string()))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Text, E> {
                Ok(Text(v.to_string()))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Text, E> {
                Ok(Text(v.to_string()))
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<Text, E> {
                Ok(Text(v.to_string()))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Text, E> {
                Ok(Text(v.to_string()))
            }
        }
        d.deserialize_any(V)
    }
}

/// `"LO..HI"`, either side may be empty (`"58M.."`: at least 58M).
#[derive(Clone, Debug, PartialEq)]
struct RangeText {
    lo: Option<f64>,
    hi: Option<f64>,
}

impl<'de> Deserialize<'de> for RangeText {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<RangeText, D::Error> {
        let s = String::deserialize(d)?;
        let bad = |why: &str| de::Error::custom(format!("expect = \"{s}\": {why} (use e.g. \"58M..65M\", \"58M..\" or \"..65M\")"));
        let (lo, hi) = s.split_once("..").ok_or_else(|| bad("not a range LO..HI"))?;
        let side = |t: &str| {
            if t.trim().is_empty() { Ok(None) } else { parse_suffixed(t).map(Some).ok_or_else(|| bad(&format!("'{t}' is not a number"))) }
        };
        let r = RangeText { lo: side(lo)?, hi: side(hi)? };
        match (r.lo, r.hi) {
            (None, None) => Err(bad("both ends are empty")),
            (Some(a), Some(b)) if a > b => Err(bad("the low end is above the high end")),
            _ => Ok(r),
        }
    }
}

/// A tolerance: `"5%"` of the value, or an absolute number.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Tolerance {
    Relative(f64),
    Absolute(f64),
}

impl<'de> Deserialize<'de> for Tolerance {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Tolerance, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Tolerance;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a tolerance: \"5%\" or a number")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Tolerance, E> {
                Ok(Tolerance::Absolute((v as f64).abs()))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Tolerance, E> {
                Ok(Tolerance::Absolute(v as f64))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Tolerance, E> {
                Ok(Tolerance::Absolute(v.abs()))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Tolerance, E> {
                let bad = || E::custom(format!("tolerance = \"{v}\" is not a tolerance (use e.g. \"5%\" or 2M)"));
                match v.trim().strip_suffix('%') {
                    Some(p) => p
                        .trim()
                        .parse::<f64>()
                        .ok()
                        .filter(|p| p.is_finite() && *p >= 0.0)
                        .map(|p| Tolerance::Relative(p / 100.0))
                        .ok_or_else(bad),
                    None => parse_suffixed(v).map(|x| Tolerance::Absolute(x.abs())).ok_or_else(bad),
                }
            }
        }
        d.deserialize_any(V)
    }
}

/// One `[[claim]]` table as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ClaimSpec {
    workload: String,
    #[serde(default)]
    params: BTreeMap<String, Text>,
    expect: Option<RangeText>,
    min: Option<Num>,
    max: Option<Num>,
    value: Option<Num>,
    tolerance: Option<Tolerance>,
    unit: Option<String>,
    note: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ClaimsFile {
    #[serde(default)]
    claim: Vec<toml::Spanned<ClaimSpec>>,
}

/// A claim, checked and ready to judge a row.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Claim {
    pub workload: String,
    /// Parameter name -> value as text; a row matches when each is equal.
    pub params: BTreeMap<String, String>,
    /// The accepted range (inclusive); `None` is open.
    pub lo: Option<f64>,
    pub hi: Option<f64>,
    /// The expectation as the table prints it.
    pub expected: String,
    pub unit: Option<String>,
    pub note: Option<String>,
    /// The line of its `[[claim]]` in the file.
    pub line: usize,
}

/// The 1-based line and column of byte `offset` in `text`.
fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map(|l| l.chars().count()).unwrap_or(0) + 1;
    (line, col)
}

fn short(v: f64) -> String {
    let a = v.abs();
    let (x, s) = if a >= 1e9 {
        (v / 1e9, "G")
    } else if a >= 1e6 {
        (v / 1e6, "M")
    } else if a >= 1e3 {
        (v / 1e3, "K")
    } else {
        (v, "")
    };
    let n = format!("{x:.3}");
    let n = n.trim_end_matches('0').trim_end_matches('.');
    format!("{n}{s}")
}

/// Parses a claims file's text; `name` (the file) heads every error, with
/// the line and column and the key at fault.
pub fn parse(text: &str, name: &str) -> Result<Vec<Claim>, UsageError> {
    let file: ClaimsFile = toml::from_str(text).map_err(|e| {
        let at = e.span().map(|s| line_col(text, s.start)).map(|(l, c)| format!(" line {l} column {c}")).unwrap_or_default();
        UsageError(format!("{name}{at}: {}", e.message().trim()))
    })?;
    let mut out = Vec::new();
    for spanned in file.claim {
        let (line, _) = line_col(text, spanned.span().start);
        let c = spanned.into_inner();
        let err = |why: String| UsageError(format!("{name} line {line}: claim for {}: {why}", c.workload));
        let forms = [c.expect.is_some(), c.min.is_some() || c.max.is_some(), c.value.is_some() || c.tolerance.is_some()];
        let (lo, hi, expected) = match forms {
            [true, false, false] => {
                let r = c.expect.clone().expect("checked");
                let text = format!("{}..{}", r.lo.map(short).unwrap_or_default(), r.hi.map(short).unwrap_or_default());
                (r.lo, r.hi, text)
            }
            [false, true, false] => {
                let (lo, hi) = (c.min.map(|n| n.0), c.max.map(|n| n.0));
                if let (Some(a), Some(b)) = (lo, hi)
                    && a > b
                {
                    return Err(err(format!("min ({}) is above max ({})", short(a), short(b))));
                }
                (lo, hi, format!("{}..{}", lo.map(short).unwrap_or_default(), hi.map(short).unwrap_or_default()))
            }
            [false, false, true] => {
                let (Some(v), Some(t)) = (c.value, c.tolerance) else {
                    return Err(err("'value' and 'tolerance' go together (e.g. value = \"60M\", tolerance = \"5%\")".into()));
                };
                let (d, t_text) = match t {
                    Tolerance::Relative(p) => (v.0.abs() * p, format!("{}%", p * 100.0)),
                    Tolerance::Absolute(a) => (a, short(a)),
                };
                (Some(v.0 - d), Some(v.0 + d), format!("{} ± {t_text}", short(v.0)))
            }
            [false, false, false] => return Err(err("no expectation: give 'expect', 'min'/'max', or 'value' with 'tolerance'".into())),
            _ => return Err(err("give one expectation: 'expect', 'min'/'max', or 'value' with 'tolerance', not several".into())),
        };
        if let Some(u) = c.unit.as_deref().filter(|u| Unit::from_name(u).is_none()) {
            return Err(err(format!("unit '{u}' is not one of {}", Unit::NAMES.join(", "))));
        }
        out.push(Claim {
            workload: c.workload.clone(),
            params: c.params.into_iter().map(|(k, v)| (k, v.0)).collect(),
            lo,
            hi,
            expected,
            unit: c.unit,
            note: c.note,
            line,
        });
    }
    Ok(out)
}

/// How a measured value stands against a claim.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ClaimStatus {
    Within,
    Above,
    Below,
    NotMeasured,
}

impl ClaimStatus {
    /// The word the table prints.
    pub fn as_str(self) -> &'static str {
        match self {
            ClaimStatus::Within => "within",
            ClaimStatus::Above => "above",
            ClaimStatus::Below => "below",
            ClaimStatus::NotMeasured => "not measured",
        }
    }
}

/// One line of the claims-vs-actual table: a claim against one matching row
/// (or against none).
#[derive(Clone, Debug, Serialize)]
pub struct Checked {
    pub claim: Claim,
    /// The matched row's axes (`-` when none, empty when no row matched).
    pub axes: String,
    pub median: Option<f64>,
    pub ci95: Option<[f64; 2]>,
    pub unit: Option<String>,
    pub status: ClaimStatus,
    /// Why a claim is not measured.
    pub why: Option<String>,
}

/// Judges one row against a claim.
fn judge(claim: &Claim, row: &Row) -> Checked {
    let mut c = Checked {
        claim: claim.clone(),
        axes: row.axes_text(),
        median: row.median(),
        ci95: row.interval().map(|(lo, hi)| [lo, hi]),
        unit: Some(row.unit.as_str().to_string()),
        status: ClaimStatus::NotMeasured,
        why: None,
    };
    if row.status != Status::Ok {
        c.why = Some(format!("row {}", row.status.as_str()));
        return c;
    }
    if let Some(u) = &claim.unit
        && u != row.unit.as_str()
    {
        c.why = Some(format!("the row is in {}, the claim in {u}", row.unit.as_str()));
        return c;
    }
    let Some(m) = c.median else {
        c.why = Some("no timed samples".into());
        return c;
    };
    c.status = if claim.lo.is_some_and(|lo| m < lo) {
        ClaimStatus::Below
    } else if claim.hi.is_some_and(|hi| m > hi) {
        ClaimStatus::Above
    } else {
        ClaimStatus::Within
    };
    c
}

/// Every claim against the rows of `run`: one line per matching row, or a
/// "not measured" line when no row matches.
pub fn check_run(claims: &[Claim], run: &StoredRun) -> Vec<Checked> {
    let mut out = Vec::new();
    for claim in claims {
        let rows: Vec<&Row> = run
            .rows
            .iter()
            .filter(|r| r.cell.workload == claim.workload && claim.params.iter().all(|(k, v)| param_matches(&r.cell.params, k, v)))
            .collect();
        if rows.is_empty() {
            out.push(Checked {
                claim: claim.clone(),
                axes: String::new(),
                median: None,
                ci95: None,
                unit: None,
                status: ClaimStatus::NotMeasured,
                why: Some("no row of the run matches".into()),
            });
        }
        out.extend(rows.into_iter().map(|r| judge(claim, r)));
    }
    out
}

/// The claims-vs-actual table and a count per status, as a document
/// (`check-claims` prints it on the terminal, and writes it as a page with
/// `--html`).
pub fn document(checked: &[Checked], run_name: &str, claims_name: &str) -> Document {
    let mut t = Table::new(&[
        ("Claim", Align::Left),
        ("Axes", Align::Left),
        ("Expected", Align::Right),
        ("Actual median", Align::Right),
        ("95% CI", Align::Right),
        ("Status", Align::Left),
        ("Note", Align::Left),
    ]);
    for c in checked {
        let params: Vec<String> = c.claim.params.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let claim = if params.is_empty() { c.claim.workload.clone() } else { format!("{} {}", c.claim.workload, params.join(" ")) };
        let unit = c.claim.unit.clone().or_else(|| c.unit.clone()).unwrap_or_default();
        let status = match &c.why {
            Some(why) => format!("{} ({why})", c.status.as_str()),
            None => c.status.as_str().to_string(),
        };
        t.push(vec![
            claim,
            c.axes.clone(),
            format!("{} {unit}", c.claim.expected).trim_end().to_string(),
            c.median.map(|m| format!("{} {}", format::number(m), c.unit.clone().unwrap_or_default())).unwrap_or_else(|| "n/a".into()),
            c.ci95.map(|[lo, hi]| format!("{}..{}", format::number(lo), format::number(hi))).unwrap_or_else(|| "n/a".into()),
            status,
            c.claim.note.clone().unwrap_or_default(),
        ]);
    }
    let count = |s: ClaimStatus| checked.iter().filter(|c| c.status == s).count();
    let blocks = vec![
        Block::heading(1, "Claims vs actual"),
        Block::Paragraph(vec![Line::from("Claims: ").text(claims_name), Line::from("Run: ").text(run_name)]),
        Block::Table(t),
        Block::paragraph(format!(
            "{} checked: {} within, {} above, {} below, {} not measured.",
            format::counted(checked.len(), "claim", "claims"),
            count(ClaimStatus::Within),
            count(ClaimStatus::Above),
            count(ClaimStatus::Below),
            count(ClaimStatus::NotMeasured)
        )),
    ];
    Document { title: format!("Claims vs actual: {run_name}"), blocks }
}

/// Reads and parses the claims file `path`.
pub fn read(path: &Path) -> Result<Vec<Claim>, UsageError> {
    let name = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| UsageError(format!("{name}: cannot read the claims file: {e}")))?;
    parse(&text, &name)
}

#[cfg(test)]
mod tests;
