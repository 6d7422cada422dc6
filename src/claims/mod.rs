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
//! Numbers take the suffixes K, M, G (10^3, 10^6, 10^9), or a unit as the
//! tables print it: a time (`50ms`, `2.38 µs/op`, `1.2s`; read in ns), a
//! rate (`76 M ops/s`), a bandwidth (`1.24 GB/s`; read in MB/s) or `Mop/s`;
//! a claim written with a unit matches only rows of that kind (a Mop/s row,
//! printed as ops/s, matches a rate too). Its table
//! prints every value scaled as the run's tables do. Reads records only: it
//! never measures.

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize};

use crate::evidence::{Row, StoredRun};
use crate::model::params::{param_matches, parse_suffixed};
use crate::model::{Status, Unit, UsageError};
use crate::text::document::{Align, Block, Chart, Document, Line, Table};
use crate::text::format;
use crate::text::plot::ranges;

/// What a value written with a unit measures; rows of another kind do not
/// match the claim.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// `ns`, `µs`, `ms`, `s` (with or without `/op`): in ns.
    Time,
    /// `ops/s`, with K, M, G before it.
    Rate,
    /// `MB/s`, `GB/s`, `TB/s`: in MB/s.
    Bandwidth,
    /// `Mop/s` (`Gop/s`): in Mop/s.
    Mops,
}

impl Kind {
    /// The kind of a row's unit.
    fn of(unit: Unit) -> Option<Kind> {
        match unit {
            Unit::Ns | Unit::NsPerOp => Some(Kind::Time),
            Unit::OpsPerSec => Some(Kind::Rate),
            Unit::MbPerSec => Some(Kind::Bandwidth),
            Unit::MopsPerSec => Some(Kind::Mops),
            Unit::Cycles => None,
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            Kind::Time => "a time",
            Kind::Rate => "a rate (ops/s)",
            Kind::Bandwidth => "a bandwidth (MB/s)",
            Kind::Mops => "Mop/s",
        }
    }
}

/// `text` as a number: plain with a K/M/G suffix (`58M`), or with a unit
/// (`50ms`, `2.38 µs/op`, `76 M ops/s`, `1.24 GB/s`), in the unit's base
/// (ns, ops/s, MB/s, Mop/s) with its [`Kind`].
pub fn quantity(text: &str) -> Option<(f64, Option<Kind>)> {
    let t = text.trim();
    if let Some(v) = parse_suffixed(t) {
        return Some((v, None));
    }
    let number = |n: &str, scale: f64| -> Option<f64> {
        let n: String = n.chars().filter(|c| !c.is_whitespace()).collect();
        parse_suffixed(&n).map(|v| v * scale).filter(|v| v.is_finite())
    };
    let per_op = t.strip_suffix("/op").unwrap_or(t).trim_end();
    for (suffix, scale) in [("ns", 1.0), ("µs", 1e3), ("us", 1e3), ("ms", 1e6), ("s", 1e9)] {
        if let Some(n) = per_op.strip_suffix(suffix)
            && n.trim_end().ends_with(|c: char| c.is_ascii_digit() || c == '.')
        {
            return number(n, scale).map(|v| (v, Some(Kind::Time)));
        }
    }
    let suffixed = |units: &[(&str, f64)], kind: Kind| {
        units.iter().find_map(|(suffix, scale)| t.strip_suffix(suffix).and_then(|n| number(n, *scale)).map(|v| (v, Some(kind))))
    };
    suffixed(&[("ops/s", 1.0)], Kind::Rate)
        .or_else(|| suffixed(&[("MB/s", 1.0), ("GB/s", 1e3), ("TB/s", 1e6)], Kind::Bandwidth))
        .or_else(|| suffixed(&[("Mop/s", 1.0), ("Gop/s", 1e3)], Kind::Mops))
}

/// A number as a claims file may write it: `60000000`, `6e7`, `"60M"` or
/// `"50ms"` (with the kind of its unit).
#[derive(Clone, Copy, Debug, PartialEq)]
struct Num(f64, Option<Kind>);

impl<'de> Deserialize<'de> for Num {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Num, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Num;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a number, or a string like \"58M\" or \"50ms\"")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Num, E> {
                Ok(Num(v as f64, None))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Num, E> {
                Ok(Num(v as f64, None))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Num, E> {
                Ok(Num(v, None))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Num, E> {
                quantity(v)
                    .map(|(x, k)| Num(x, k))
                    .ok_or_else(|| E::custom(format!("'{v}' is not a number (use e.g. 58M, 1.5G, 250, 50ms or 76 M ops/s)")))
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
    /// The kind of the ends' unit (both the same), if written with one.
    kind: Option<Kind>,
}

impl<'de> Deserialize<'de> for RangeText {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<RangeText, D::Error> {
        let s = String::deserialize(d)?;
        let bad = |why: &str| {
            de::Error::custom(format!("expect = \"{s}\": {why} (use e.g. \"58M..65M\", \"58M..\", \"..65M\" or \"50ms..56ms\")"))
        };
        let (lo, hi) = s.split_once("..").ok_or_else(|| bad("not a range LO..HI"))?;
        let side = |t: &str| {
            if t.trim().is_empty() { Ok(None) } else { quantity(t).map(Some).ok_or_else(|| bad(&format!("'{t}' is not a number"))) }
        };
        let (lo, hi) = (side(lo)?, side(hi)?);
        let kinds: Vec<Kind> = [lo, hi].iter().flatten().filter_map(|(_, k)| *k).collect();
        if kinds.windows(2).any(|w| w[0] != w[1]) {
            return Err(bad("the two ends are in units of different kinds"));
        }
        let r = RangeText { lo: lo.map(|(v, _)| v), hi: hi.map(|(v, _)| v), kind: kinds.first().copied() };
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
    /// The kind of unit its values were written in, if any: only rows of
    /// that kind match.
    pub kind: Option<Kind>,
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
        let kinds: Vec<Kind> =
            [c.expect.as_ref().and_then(|r| r.kind), c.min.and_then(|n| n.1), c.max.and_then(|n| n.1), c.value.and_then(|n| n.1)]
                .into_iter()
                .flatten()
                .collect();
        if kinds.windows(2).any(|w| w[0] != w[1]) {
            return Err(err("its values are in units of different kinds".into()));
        }
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
            kind: kinds.first().copied(),
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

/// Judges one row against a claim. A Mop/s row reads as ops/s in every
/// table (`14.40 G ops/s`), so a claim written as a rate (`14 G ops/s`, or
/// plain numbers with `unit = "ops/s"`) matches it too, its values read in
/// Mop/s.
fn judge(claim: &Claim, row: &Row) -> Checked {
    let as_mops;
    let a_rate = claim.kind == Some(Kind::Rate) || (claim.kind.is_none() && claim.unit.as_deref() == Some(Unit::OpsPerSec.as_str()));
    let claim = if a_rate && row.unit == Unit::MopsPerSec {
        as_mops =
            Claim { lo: claim.lo.map(|v| v / 1e6), hi: claim.hi.map(|v| v / 1e6), kind: Some(Kind::Mops), unit: None, ..claim.clone() };
        &as_mops
    } else {
        claim
    };
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
    if let Some(k) = claim.kind
        && Kind::of(row.unit) != Some(k)
    {
        c.why = Some(format!("the row is in {}, the claim {}", row.unit.as_str(), k.as_str()));
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
    let mut shown = Vec::new();
    let mut t = Table::new(&[
        ("Claim", Align::Left),
        ("Axes", Align::Left),
        ("Expected", Align::Right),
        ("Actual median", Align::Right),
        ("95% CI", Align::Right),
        ("Status", Align::Left),
        ("Note", Align::Left),
    ])
    // A narrow terminal keeps the claim and its status longest (the axes are in its name).
    .dropping(&[1, 4, 2, 6, 3]);
    for c in checked {
        let params: Vec<String> = c.claim.params.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let claim = if params.is_empty() { c.claim.workload.clone() } else { format!("{} {}", c.claim.workload, params.join(" ")) };
        let unit = c.claim.unit.clone().or_else(|| c.unit.clone()).unwrap_or_default();
        // Scaled as the run's tables print the row's unit, where it is known.
        let scaled = c.unit.as_deref().or(c.claim.unit.as_deref()).and_then(Unit::from_name);
        let value = |v: f64| scaled.map_or_else(|| format::number(v), |u| format::scaled(v, u));
        let expected = match scaled {
            Some(_) if c.claim.lo.is_some() || c.claim.hi.is_some() => range(c.claim.lo.map(value), c.claim.hi.map(value)),
            _ => format!("{} {unit}", c.claim.expected).trim_end().to_string(),
        };
        let status = match &c.why {
            Some(why) => format!("{} ({why})", c.status.as_str()),
            None => c.status.as_str().to_string(),
        };
        // The claim names its parameters; a claim of none is named by the row's axes.
        let axes = if c.axes.is_empty() || c.axes == "-" || !params.is_empty() { String::new() } else { format!(" {}", c.axes) };
        shown.push(ranges::Check {
            name: format!("{claim}{axes}"),
            lo: c.claim.lo,
            hi: c.claim.hi,
            median: c.median,
            ci: c.ci95,
            unit: scaled,
            standing: match c.status {
                ClaimStatus::Within => ranges::Standing::Within,
                ClaimStatus::Above | ClaimStatus::Below => ranges::Standing::Outside,
                ClaimStatus::NotMeasured => ranges::Standing::NotMeasured,
            },
            note: format!(
                "{claim}{axes}: expected {expected}, measured {}{}",
                c.median.map(value).unwrap_or_else(|| "n/a".into()),
                c.ci95.map(|[lo, hi]| format!(" (95% interval {})", range(Some(value(lo)), Some(value(hi))))).unwrap_or_default()
            ),
        });
        // The row's axes where the claim's name does not already say them all.
        let named = c.axes.split([',', ' ']).filter(|a| !a.is_empty() && *a != "-").all(|a| params.iter().any(|p| p == a));
        t.push(vec![
            claim,
            if named { String::new() } else { c.axes.clone() },
            expected,
            c.median.map(value).unwrap_or_else(|| "n/a".into()),
            c.ci95.map(|[lo, hi]| range(Some(value(lo)), Some(value(hi)))).unwrap_or_else(|| "n/a".into()),
            status,
            c.claim.note.clone().unwrap_or_default(),
        ]);
    }
    let count = |s: ClaimStatus| checked.iter().filter(|c| c.status == s).count();
    let blocks = vec![
        Block::heading(1, "Claims vs actual"),
        Block::Paragraph(vec![Line::from("Claims: ").text(claims_name), Line::from("Run: ").text(run_name)]),
        Block::Chart(Chart {
            caption: "Each claim's range (shaded; an arrow where it is open) against the run's median (dot: green within, red \
                      outside) on its 95% interval, each claim on its own scale."
                .into(),
            svg: ranges::chart("Claims against the run", &shown),
        }),
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

/// `lo..hi` of two scaled values, their unit said once when they share it
/// (`58.00..65.00 M ops/s`, `980 µs..1.02 ms`, `58.00 M ops/s..`).
fn range(lo: Option<String>, hi: Option<String>) -> String {
    let unit_of = |v: &String| v.split_once(' ').map(|(n, u)| (n.to_string(), u.to_string()));
    match (lo, hi) {
        (Some(a), Some(b)) => match (unit_of(&a), unit_of(&b)) {
            (Some((n, u)), Some((_, w))) if u == w => format!("{n}..{b}"),
            _ => format!("{a}..{b}"),
        },
        (a, b) => format!("{}..{}", a.unwrap_or_default(), b.unwrap_or_default()),
    }
}

/// Reads and parses the claims file `path`.
pub fn read(path: &Path) -> Result<Vec<Claim>, UsageError> {
    let name = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| UsageError(format!("{name}: cannot read the claims file: {e}")))?;
    parse(&text, &name)
}

#[cfg(test)]
mod tests;
