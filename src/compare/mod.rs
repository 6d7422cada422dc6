//! compare: two stored runs, row by row. Rows match by workload and the
//! values of their axes; each matched pair gets the ratio of medians
//! (candidate / base) with a 95% interval from the trials of both runs
//! (Welch's t on the logs of the trial medians: the trial, a process, is the
//! unit of replication; samples of one process are not independent
//! replicates), and a verdict. "regressed" and "improved" need the whole
//! interval beyond the noise band on one side (docs/METHODOLOGY.md, "Statistics"); anything
//! else that matched is "unchanged", and what cannot be judged is "not
//! comparable" with the reason (one trial on a side among them).
//!
//! The band is `--noise`, or the row's noise floor from the history where
//! that is larger (how far the row's median moves between runs of one build
//! on this machine, `stats::noise_floor`); each row says which applied.
//! Variants measured in one run compare paired by round (`paired`). Rows
//! match through a map of their keys (`sides`), so a comparison costs time
//! linear in its rows; a run that did not get to all its cells says so, and
//! the rows it did not run are `not_run` on its side.

pub mod forest;
pub mod paired;
mod render;
mod sides;

pub use render::{
    Notice, PAIRED_DIFFERENT, TWO_RUNS_DIFFERENT, bands_summary, completion_warnings, document, document_with, equivalence, warnings,
    words_meaning, words_text,
};
pub use sides::Completion;
pub(crate) use sides::{Key, Side, cell_key, keyed, match_rows};

use std::collections::HashSet;

use serde::Serialize;

use crate::envelope::Envelope;
use crate::evidence::{Row, RunRecord, StoredRun};
use crate::measure::interference::DISTURBED_SHARE;
use crate::model::{Direction, Reading, Status, Unit, value_text};
use crate::stats::{self, Floor, LEVEL, ratio};
use crate::text::format;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Improved,
    Regressed,
    Unchanged,
    NotComparable,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Improved => "improved",
            Verdict::Regressed => "regressed",
            Verdict::Unchanged => "unchanged",
            Verdict::NotComparable => "not comparable",
        }
    }
}

/// The decided verdict about a row, in the three words every output uses
/// (docs/METHODOLOGY.md, "Decided verdicts: SAME, DIFFERENT, UNKNOWN"):
/// DIFFERENT with a direction (the verdict says regressed or improved),
/// SAME within the equivalence band, UNKNOWN when the evidence could tell
/// neither. A row that could not be compared at all (a side failed, units
/// differ, a side missing) has no word.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Word {
    Same,
    Different,
    Unknown,
}

impl Word {
    pub fn as_str(self) -> &'static str {
        match self {
            Word::Same => "SAME",
            Word::Different => "DIFFERENT",
            Word::Unknown => "UNKNOWN",
        }
    }

    /// The word of a row judged by its 95% interval alone (two runs, a
    /// history step): DIFFERENT with a regressed or improved verdict; SAME
    /// when the interval lies inside `1 / (1 + equivalence) ..= 1 +
    /// equivalence` (its two one-sided tests at 2.5% each, stricter than
    /// the 5% each that TOST asks); UNKNOWN otherwise; none when not
    /// comparable and without an interval.
    pub fn of_interval(verdict: Verdict, ci: Option<[f64; 2]>, equivalence: f64) -> Option<Word> {
        match (verdict, ci) {
            (Verdict::Regressed | Verdict::Improved, _) => Some(Word::Different),
            (Verdict::Unchanged, Some([lo, hi])) if lo > 1.0 / (1.0 + equivalence) && hi < 1.0 + equivalence => Some(Word::Same),
            (Verdict::Unchanged, _) => Some(Word::Unknown),
            (Verdict::NotComparable, _) => None,
        }
    }
}

/// One matched (or unmatched) row.
#[derive(Clone, Debug, Serialize)]
pub struct RowComparison {
    pub workload: String,
    /// The axes' values, `name=value, ...` (`-` when none).
    pub axes: String,
    pub unit: Option<Unit>,
    pub direction: Option<Direction>,
    pub base_median: Option<f64>,
    pub candidate_median: Option<f64>,
    /// candidate median / base median.
    pub ratio: Option<f64>,
    /// The ratio's 95% interval from the trials of both rows.
    pub ratio_ci95: Option<[f64; 2]>,
    /// Whether the base's 95% interval holds the candidate's median, and the
    /// candidate's the base's (`None` where a side has no interval): of two
    /// runs of the same build, the share [`stats::expected_hold`] gives
    /// (about 85-90%) when they differ only as their trials do.
    pub holds_other: [Option<bool>; 2],
    /// Trials (with timed samples) of the base and of the candidate.
    pub trials: [usize; 2],
    /// The spread between trials of the base and of the candidate (standard
    /// deviation of the logs of their trial medians).
    pub between: [Option<f64>; 2],
    /// Trials of the base and of the candidate that other processes disturbed.
    pub disturbed: [usize; 2],
    /// Whether the base's run and the candidate's planned this row but
    /// ended without it (killed, or interrupted): the row could not be
    /// compared because that run is incomplete. `--fail-on-regression`
    /// fails on such rows unless `--allow-missing`.
    pub not_run: [bool; 2],
    /// Whether the row is missing from the base's side and from the
    /// candidate's because that run never planned it (a smaller selection):
    /// the text output counts such rows per side instead of listing them;
    /// the record lists them all (their reason says it).
    #[serde(skip)]
    pub missing: [bool; 2],
    /// Rounds that paired base and candidate trials (variants of one run);
    /// absent for two runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pairs: Option<usize>,
    /// The spread of the paired rounds' ratios (standard deviation of their
    /// logs); variants of one run only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pair_spread: Option<f64>,
    /// The smallest change this comparison could have called at its band
    /// (variants of one run: from the spread of the rounds' ratios).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sensitivity: Option<f64>,
    /// The p-value of "the ratio lies beyond the band" (the two one-sided
    /// t tests behind the interval, the smaller doubled: below 0.05 exactly
    /// when the 95% interval lies beyond the band).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub p_value: Option<f64>,
    /// The same adjusted for the number of rows compared together
    /// (Benjamini-Hochberg): a verdict needs it at most [`FALSE_DISCOVERY_RATE`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub q_value: Option<f64>,
    /// The band the verdict used (a fraction: 0.02 = 2%) and where it came from.
    pub band: f64,
    pub band_from: BandFrom,
    /// The row's noise floor from the history, where it has one...
    #[serde(skip_serializing_if = "Option::is_none")]
    pub floor: Option<Floor>,
    /// ...or why it has none ("not enough history: ...", "no history ...").
    #[serde(skip_serializing_if = "Option::is_none")]
    pub floor_note: Option<String>,
    pub verdict: Verdict,
    /// The decided verdict: SAME, DIFFERENT or UNKNOWN ([`Word`]); absent
    /// when the row could not be compared.
    pub word: Option<Word>,
    /// The band of SAME (a fraction: 0.02 = +-2%).
    pub equivalence: f64,
    /// Variants of one run: the sequential decision over the trial pairs
    /// (`stats::decide`), with its interval at the look's level.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decision: Option<crate::stats::decide::Decision>,
    /// Variants of one run: of the pairs, those whose summary came from
    /// lockstep samples (each sample of the base beside one of the
    /// candidate); the others paired trial medians of one round.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lockstep_pairs: Option<usize>,
    /// Variants of one run: rounds left out because one side's trial was
    /// disturbed and the other's was not (no evidence of a change).
    #[serde(skip_serializing_if = "is_zero")]
    pub one_side_disturbed: usize,
    /// Whether a regressed or improved verdict was made from disturbed
    /// trials (other processes took the trials' CPUs) or in a run made on
    /// a busy machine: said beside the verdict wherever it is printed, and
    /// `--fail-on-regression` exits [`EXIT_DISTURBED`] on such a regression
    /// alone (unless `--accept-disturbed`).
    pub disturbed_verdict: bool,
    /// Why a row is not comparable, or what decided the verdict.
    pub reason: String,
}

/// The exit code of `--fail-on-regression` when every regression it found
/// was made from disturbed trials or on a busy machine: the gate fails, and
/// says it cannot tell a regression from the load (`--accept-disturbed`
/// fails it with 1 as a plain regression).
pub const EXIT_DISTURBED: u8 = 3;

/// The exit code of `--fail-on-regression` when no row is DIFFERENT and
/// worse but some row is UNKNOWN: the gate cannot say the change is SAME
/// there (`--allow-unknown` passes it with 0, still saying so).
pub const EXIT_UNKNOWN: u8 = 4;

pub use crate::model::settings::Gate;

/// What `--fail-on-regression` makes of the rows judged together (of one
/// comparison or several, or history's steps): the exit code (0, 1,
/// [`EXIT_DISTURBED`] or [`EXIT_UNKNOWN`]) and the line that says why, if
/// it fails or passes UNKNOWN rows. It fails on DIFFERENT-worse alone
/// (regressed); UNKNOWN rows are always said.
pub fn gate<'a>(rows: impl IntoIterator<Item = &'a RowComparison>, rules: &Gate) -> (u8, Option<String>) {
    let rows: Vec<&RowComparison> = rows.into_iter().collect();
    let regressed: Vec<&&RowComparison> = rows.iter().filter(|r| r.verdict == Verdict::Regressed).collect();
    let unknown = rows.iter().filter(|r| r.word == Some(Word::Unknown)).count();
    let disturbed = regressed.iter().filter(|r| r.disturbed_verdict).count();
    let regressed = regressed.len();
    let counted = |n| format::counted(n, "row", "rows");
    let unknown_text = |lead: &str| match unknown {
        0 => String::new(),
        n => format!("{lead}{} UNKNOWN (neither SAME nor DIFFERENT could be decided)", counted(n)),
    };
    match (regressed, disturbed) {
        (0, _) if unknown == 0 => (0, None),
        (0, _) if rules.allow_unknown => (0, Some(format!("{}, passed (--allow-unknown)", unknown_text("")))),
        (0, _) => (
            EXIT_UNKNOWN,
            Some(format!(
                "no row regressed, but {}: exit {EXIT_UNKNOWN} (more trials may decide them; --allow-unknown passes them)",
                unknown_text("")
            )),
        ),
        (r, d) if d < r || rules.accept_disturbed => {
            let of_them = if d > 0 { format!(" ({d} of them from disturbed trials, accepted)") } else { String::new() };
            (1, Some(format!("{} regressed{of_them}{}", counted(r), unknown_text("; "))))
        }
        (r, _) => (
            EXIT_DISTURBED,
            Some(format!(
                "{} regressed, every one from disturbed trials or a busy machine: the load may explain it (exit \
                 {EXIT_DISTURBED}; measure again on a quiet machine, or --accept-disturbed to count them){}",
                counted(r),
                unknown_text("; ")
            )),
        ),
    }
}

/// Where a verdict's band came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum BandFrom {
    /// `--noise` (or `--threshold`): the row has no floor, or a smaller one.
    Noise,
    /// The row's noise floor from the history, larger than `--noise`.
    Floor,
}

impl RowComparison {
    /// A pair of rows before it is judged (`not comparable`, no reason yet):
    /// what the two rows say of themselves, the match key `axes`, and the
    /// band from `--noise`.
    pub fn of(base: &Row, cand: &Row, axes: String, band: f64) -> RowComparison {
        RowComparison {
            unit: Some(base.unit),
            direction: Some(base.direction),
            base_median: base.median(),
            candidate_median: cand.median(),
            trials: [base.trial_medians().len(), cand.trial_medians().len()],
            between: [base.headline().and_then(|h| h.between), cand.headline().and_then(|h| h.between)],
            disturbed: [base.disturbed_trials(), cand.disturbed_trials()],
            ..RowComparison::empty(&base.cell.workload, axes, band)
        }
    }

    /// A row without either side's measurement (`not comparable`, no
    /// reason yet): what a row missing on a side starts from.
    fn empty(workload: &str, axes: String, band: f64) -> RowComparison {
        RowComparison {
            workload: workload.to_string(),
            axes,
            unit: None,
            direction: None,
            base_median: None,
            candidate_median: None,
            ratio: None,
            ratio_ci95: None,
            holds_other: [None, None],
            trials: [0, 0],
            between: [None, None],
            disturbed: [0, 0],
            not_run: [false, false],
            missing: [false, false],
            pairs: None,
            pair_spread: None,
            sensitivity: None,
            p_value: None,
            q_value: None,
            band,
            band_from: BandFrom::Noise,
            floor: None,
            floor_note: None,
            verdict: Verdict::NotComparable,
            word: None,
            equivalence: crate::stats::decide::DEFAULT_EQUIVALENCE,
            decision: None,
            lockstep_pairs: None,
            one_side_disturbed: 0,
            disturbed_verdict: false,
            reason: String::new(),
        }
    }

    /// The decided verdict as printed: `DIFFERENT (regressed)`, `DIFFERENT
    /// (improved, disturbed)`, `SAME within 2%`, `UNKNOWN`, or `not
    /// comparable`.
    pub fn word_text(&self) -> String {
        match self.word {
            Some(Word::Different) => {
                let disturbed = if self.disturbed_verdict { ", disturbed" } else { "" };
                format!("DIFFERENT ({}{disturbed})", self.verdict.as_str())
            }
            Some(Word::Same) => format!("SAME within {}", format::band(self.equivalence)),
            Some(Word::Unknown) => "UNKNOWN".into(),
            None => self.verdict.as_str().into(),
        }
    }

    /// Whether the row is on one side only, the other side's run never
    /// having planned it (not a row an incomplete run did not get to).
    pub fn is_one_sided(&self) -> bool {
        self.missing.contains(&true) && !self.not_run.contains(&true)
    }

    /// One side's median `v` as a table shows it: scaled in the rows' unit
    /// (`57.82 ms`), a bare number where the unit is unknown, `n/a` without one.
    pub fn median_text(&self, v: Option<f64>) -> String {
        match (v, self.unit) {
            (Some(v), Some(u)) => format::scaled(v, u),
            (Some(v), None) => format::number(v),
            (None, _) => "n/a".into(),
        }
    }

    /// `2.0% noise`, `3.9% floor`: the band and where it came from.
    pub fn band_text(&self) -> String {
        let from = match self.band_from {
            BandFrom::Noise => "noise",
            BandFrom::Floor => "floor",
        };
        format!("{} {from}", format::percent(self.band))
    }
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// The noise floor of a row, or why there is none.
pub type FloorLookup = Result<Floor, String>;

/// The false discovery rate of the verdicts of one comparison: among the
/// rows (or history steps) judged together, a verdict needs its
/// Benjamini-Hochberg adjusted p-value at most this. When nothing changed,
/// the chance of any false verdict among them is at most this; a comparison
/// of one row is the plain 95% interval rule.
pub const FALSE_DISCOVERY_RATE: f64 = 0.05;

/// Marks each regressed or improved verdict made from disturbed trials, or
/// in a run made on a busy machine (`busy`), as such; the others not.
pub fn mark_disturbed<'a>(rows: impl IntoIterator<Item = &'a mut RowComparison>, busy: bool) {
    for r in rows {
        r.disturbed_verdict = matches!(r.verdict, Verdict::Regressed | Verdict::Improved) && (busy || r.disturbed != [0, 0]);
    }
}

/// Takes back the verdicts that the number of comparisons judged together
/// explains: with many rows (or many variants), some 95% intervals lie
/// beyond the band by chance alone. Each row with a p-value gets its
/// adjusted one; a regressed or improved row whose adjusted p-value exceeds
/// the rate becomes unchanged, saying why.
pub fn control_false_discoveries<'a>(rows: impl IntoIterator<Item = &'a mut RowComparison>) {
    control_false_discoveries_among(rows, 0);
}

/// The same for rows that are part of a family of at least `family`
/// comparisons, the others not measured yet: each of those counts as a
/// p-value of 1. The adjusted p-values only fall as the others come in, so
/// a verdict given now stands when the family is complete.
///
/// Cost: O(m log m) for m rows.
pub fn control_false_discoveries_among<'a>(rows: impl IntoIterator<Item = &'a mut RowComparison>, family: usize) {
    let mut rows: Vec<&mut RowComparison> = rows.into_iter().filter(|r| r.p_value.is_some()).collect();
    let mut p: Vec<f64> = rows.iter().map(|r| r.p_value.unwrap_or(1.0)).collect();
    let n = rows.len().max(family);
    p.resize(n, 1.0);
    let q = crate::stats::benjamini_hochberg(&p);
    for (r, q) in rows.iter_mut().zip(q) {
        r.q_value = Some(q);
        if matches!(r.verdict, Verdict::Regressed | Verdict::Improved) && q > FALSE_DISCOVERY_RATE {
            let alone = if r.decision.is_some() { "DIFFERENT on its own" } else { "the 95% interval lies beyond the band" };
            r.reason = format!(
                "UNKNOWN: {alone}, but among the {n} comparisons judged together chance alone gives that (adjusted p-value \
                 {q:.3} > {FALSE_DISCOVERY_RATE}, Benjamini-Hochberg)"
            );
            r.verdict = Verdict::Unchanged;
            r.word = Some(Word::Unknown);
        }
    }
}

/// The band of a verdict: the larger of the noise threshold and the floor.
fn band_of(threshold: f64, floor: &FloorLookup) -> (f64, BandFrom) {
    match floor {
        Ok(f) if f.value > threshold => (f.value, BandFrom::Floor),
        _ => (threshold, BandFrom::Noise),
    }
}

/// The verdict of a ratio interval `[lo, hi]` against a band: regressed or
/// improved only when the whole interval lies beyond it on one side (worse
/// means a larger ratio for lower-is-better units, a smaller one otherwise).
pub fn verdict_of(direction: Direction, lo: f64, hi: f64, band: f64, band_name: &str) -> (Verdict, String) {
    let (hi_bound, lo_bound) = (1.0 + band, 1.0 / (1.0 + band));
    let (worse, better) = match direction {
        Direction::LowerIsBetter => (lo > hi_bound, hi < lo_bound),
        Direction::HigherIsBetter => (hi < lo_bound, lo > hi_bound),
    };
    let band = format!("{band_name} {}..{}", format::speedup(lo_bound), format::speedup(hi_bound));
    if worse {
        (Verdict::Regressed, format!("the whole interval is beyond {band} on the worse side"))
    } else if better {
        (Verdict::Improved, format!("the whole interval is beyond {band} on the better side"))
    } else {
        (Verdict::Unchanged, format!("the interval reaches into {band}"))
    }
}

/// The schema of a comparison record.
pub const COMPARE_SCHEMA: &str = "proofbench.compare/3";

/// The whole comparison.
#[derive(Clone, Debug, Serialize)]
pub struct Comparison {
    pub schema: &'static str,
    pub base: String,
    pub candidate: String,
    /// How far the base's run and the candidate's got (for variants of one
    /// run, both are that run's): an incomplete run is said before anything
    /// else, and the rows it did not run are `not_run` on its side.
    pub completion: [Completion; 2],
    /// The noise threshold, as a fraction (0.02 = 2%).
    pub threshold: f64,
    /// Machine identity fields that differ (rows are then not comparable
    /// unless `across_machines`).
    pub machine_differences: Vec<String>,
    /// Other envelope differences worth knowing (kernel release...), which
    /// do not stop the comparison: they are often what is being compared.
    pub setting_differences: Vec<String>,
    /// How busy the machine was with other work in each run, when it
    /// differs enough to matter (one line).
    pub interference: Option<String>,
    /// Where the rows' noise floors came from (the history database), or why
    /// there were none.
    pub floors: Option<String>,
    /// Variants of one run compared paired by round (`true`), or two runs.
    #[serde(default)]
    pub paired: bool,
    pub rows: Vec<RowComparison>,
}

impl Comparison {
    /// The rows whose decided verdict is `w`.
    pub fn count_word(&self, w: Word) -> usize {
        self.rows.iter().filter(|r| r.word == Some(w)).count()
    }

    /// Rows that could not be compared because a side's run is incomplete
    /// (planned there, but it ended without them).
    pub fn not_run(&self) -> usize {
        self.rows.iter().filter(|r| r.not_run.contains(&true)).count()
    }

    /// Of the intervals that could be checked, how many held the other
    /// run's median: `(held, checked, expected)` over both directions, where
    /// `expected` is how many would, on average, if the two runs differed
    /// only as their trials do ([`stats::expected_hold`] of each check's
    /// trial counts).
    pub fn held(&self) -> (usize, usize, f64) {
        let checks = self.rows.iter().flat_map(|r| {
            [(r.holds_other[0], r.trials[0], r.trials[1]), (r.holds_other[1], r.trials[1], r.trials[0])]
                .into_iter()
                .filter_map(|(h, own, other)| h.map(|h| (h, stats::expected_hold(own, other, stats::LEVEL).unwrap_or(1.0))))
        });
        checks.fold((0, 0, 0.0), |(held, checked, expected), (h, e)| (held + usize::from(h), checked + 1, expected + e))
    }
}

/// How to compare.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// Changes whose interval does not lie wholly beyond this fraction are noise.
    pub threshold: f64,
    /// Compare rows even when the machines differ.
    pub across_machines: bool,
    /// Parameters whose values may differ between matched rows (a size
    /// changed on purpose); every other differing parameter makes a pair
    /// not comparable.
    pub ignore_params: Vec<String>,
    /// The band of SAME (`--equivalence`); `None`: a run's own (variants of
    /// one run), else [`crate::stats::decide::DEFAULT_EQUIVALENCE`].
    pub equivalence: Option<f64>,
}

impl Options {
    /// The band of SAME these options give, else the default.
    pub fn equivalence(&self) -> f64 {
        self.equivalence.unwrap_or(crate::stats::decide::DEFAULT_EQUIVALENCE)
    }
}

fn reading_text<T: std::fmt::Debug>(r: &Reading<T>) -> String {
    match r {
        Reading::Present(v) => format!("{v:?}").trim_matches('"').to_string(),
        Reading::Absent { .. } => "absent".into(),
    }
}

/// (field, base, candidate) for each differing field.
fn differences(pairs: Vec<(&str, String, String)>) -> Vec<String> {
    pairs.into_iter().filter(|(_, a, b)| a != b).map(|(f, a, b)| format!("{f} ({a} vs {b})")).collect()
}

fn setting_differences(a: &Envelope, b: &Envelope) -> Vec<String> {
    differences(vec![
        ("kernel.release", reading_text(&a.kernel.release), reading_text(&b.kernel.release)),
        ("kernel.cmdline", reading_text(&a.kernel.cmdline), reading_text(&b.kernel.cmdline)),
        ("cpufreq", format!("{:?}", a.cpufreq.ok()), format!("{:?}", b.cpufreq.ok())),
        ("clock_source", format!("{:?}", a.clock_source), format!("{:?}", b.clock_source)),
        ("tool.version", a.tool.version.clone(), b.tool.version.clone()),
        ("tool.git_commit", a.tool.git_commit.clone(), b.tool.git_commit.clone()),
    ])
}

/// Parameters (not axes, not treatments, not ignored) whose values differ.
pub fn parameter_differences(a: &Row, b: &Row, ignored: &[String]) -> Vec<String> {
    // The treatments as the rows record them (either side's): a row
    // carries what it needs to be judged, whatever build reads it.
    let treatments: Vec<&String> = a.cell.treatment_names().iter().chain(b.cell.treatment_names()).collect();
    let names: std::collections::BTreeSet<&String> = a.cell.params.keys().chain(b.cell.params.keys()).collect();
    names
        .into_iter()
        .filter(|n| !a.cell.axes.contains(n) && !treatments.contains(n) && !ignored.contains(n))
        .filter_map(|n| {
            let (x, y) = (a.cell.params.get(n).map(value_text), b.cell.params.get(n).map(value_text));
            (x != y).then(|| format!("{n} {} vs {}", x.unwrap_or_else(|| "unset".into()), y.unwrap_or_else(|| "unset".into())))
        })
        .collect()
}

/// Whether `a`'s interval holds `b`'s median.
fn holds(a: &Row, b: &Row) -> Option<bool> {
    let ((lo, hi), m) = (a.interval()?, b.median()?);
    Some(lo <= m && m <= hi)
}

/// Judges one matched pair of rows: the one code path for "did this row
/// regress between two runs" (`compare` and `history regressions` both call
/// it). `machines_differ` names the machine differences that make the pair
/// not comparable (`None` to judge it).
pub fn judge(base: &Row, cand: &Row, opts: &Options, machines_differ: Option<&str>, floor: FloorLookup) -> RowComparison {
    let (band, band_from) = band_of(opts.threshold, &floor);
    let mut out = RowComparison {
        holds_other: [holds(base, cand), holds(cand, base)],
        band_from,
        floor: floor.as_ref().ok().cloned(),
        floor_note: floor.err(),
        equivalence: opts.equivalence(),
        ..RowComparison::of(base, cand, base.axes_text(), band)
    };
    let not = |mut o: RowComparison, why: String| {
        o.reason = why;
        o
    };
    if let Some(m) = machines_differ {
        return not(out, format!("different machine: {m}"));
    }
    if base.status != Status::Ok || cand.status != Status::Ok {
        return not(out, format!("base {}, candidate {}", base.status.as_str(), cand.status.as_str()));
    }
    if base.unit != cand.unit {
        return not(out, format!("units differ: {} vs {}", base.unit.as_str(), cand.unit.as_str()));
    }
    let params = parameter_differences(base, cand, &opts.ignore_params);
    if !params.is_empty() {
        return not(out, format!("different parameters: {}", params.join("; ")));
    }
    let (b, c) = (base.trial_medians(), cand.trial_medians());
    if b.is_empty() || c.is_empty() {
        return not(out, "no timed samples".into());
    }
    out.ratio = Some(crate::stats::median(c) / crate::stats::median(b));
    if b.len() < 2 || c.len() < 2 {
        let few = |side: &str, n: usize| format!("{side} {n} trial{}", if n == 1 { "" } else { "s" });
        // Both measured: not beyond deciding in principle, but undecided.
        out.word = Some(Word::Unknown);
        return not(
            out,
            format!(
                "{} and {}: an interval needs at least 2 trials on each side (--trials)",
                few("base", b.len()),
                few("candidate", c.len())
            ),
        );
    }
    let Some(r) = ratio(b, c, LEVEL) else {
        return not(out, "no interval: a trial median is zero or negative".into());
    };
    out.ratio_ci95 = Some([r.lo, r.hi]);
    out.p_value = Some(crate::stats::band_p_value(&r, LEVEL, out.band));
    let name = match out.band_from {
        BandFrom::Noise => "the noise band",
        BandFrom::Floor => "the row's noise floor",
    };
    (out.verdict, out.reason) = verdict_of(base.direction, r.lo, r.hi, out.band, name);
    out.word = Word::of_interval(out.verdict, out.ratio_ci95, out.equivalence);
    if out.word == Some(Word::Same) {
        out.reason = format!(
            "the interval lies inside the equivalence band {}..{}",
            format::speedup(1.0 / (1.0 + out.equivalence)),
            format::speedup(1.0 + out.equivalence)
        );
    }
    if out.disturbed != [0, 0] {
        out.reason.push_str(&format!("; disturbed trials: {} in the base, {} in the candidate", out.disturbed[0], out.disturbed[1]));
    }
    out
}

/// Compares every row of `base` with its match in `candidate`; `floor`
/// gives a base row's noise floor (or why it has none). Rows one side
/// lacks are `not comparable`; those a side planned but its run ended
/// without are `not_run` on that side.
///
/// Cost: linear in the rows (plus the false discovery control's sort).
pub fn compare(
    base: &StoredRun,
    candidate: &StoredRun,
    base_name: &str,
    candidate_name: &str,
    opts: &Options,
    floor: &dyn Fn(&Row) -> FloorLookup,
) -> Comparison {
    let machine = base.run.envelope.machine_differences(&candidate.run.envelope);
    let machine_text = machine.join(", ");
    let stop = (!machine.is_empty() && !opts.across_machines).then_some(machine_text.as_str());
    let side = |name, s: &StoredRun| {
        let ran: HashSet<usize> = s.rows.iter().map(|r| r.cell.index).collect();
        Side::new(name, Completion::of(&s.run, &s.rows), &s.run.plan, &ran, "")
    };
    let sides = [side("base", base), side("candidate", candidate)];
    let mut rows = match_rows(&keyed(&base.rows, ""), &keyed(&candidate.rows, ""), &sides, opts.threshold, true, |b, c| {
        judge(b, c, opts, stop, floor(b))
    });
    control_false_discoveries(&mut rows);
    mark_disturbed(&mut rows, busy(&base.run) || busy(&candidate.run));
    let [b, c] = sides;
    Comparison {
        schema: COMPARE_SCHEMA,
        base: base_name.to_string(),
        candidate: candidate_name.to_string(),
        completion: [b.completion, c.completion],
        threshold: opts.threshold,
        machine_differences: machine,
        setting_differences: setting_differences(&base.run.envelope, &candidate.run.envelope),
        interference: interference_difference(&base.run, &candidate.run),
        floors: None,
        paired: false,
        rows,
    }
}

/// Whether a run was made on a busy machine: other processes (or the
/// hypervisor) took enough of its CPUs over the whole run.
pub fn busy(run: &RunRecord) -> bool {
    run.interference.as_ref().is_some_and(|i| i.disturbed)
}

/// One line when either run's machine was busy with other work, or the two
/// were busy to a different degree (shares 10 points apart).
fn interference_difference(base: &RunRecord, cand: &RunRecord) -> Option<String> {
    let (b, c) = (base.interference.as_ref()?, cand.interference.as_ref()?);
    let apart = (b.others_share - c.others_share).abs() >= DISTURBED_SHARE || (b.steal_share - c.steal_share).abs() >= DISTURBED_SHARE;
    let said = format!("base run {}; candidate run {}", b.text(), c.text());
    if b.disturbed && c.disturbed {
        Some(format!("both runs were made on a busy machine ({said}): their DIFFERENT verdicts are marked disturbed"))
    } else if b.disturbed != c.disturbed || apart {
        Some(format!("the machine was not equally quiet: {said}"))
    } else {
        None
    }
}

/// The line a run made on a busy machine gets when its variants are
/// compared (none when it was quiet).
pub fn busy_run_note(run: &RunRecord) -> Option<String> {
    let i = run.interference.as_ref().filter(|i| i.disturbed)?;
    Some(format!("the run was made on a busy machine ({}): its DIFFERENT verdicts are marked disturbed", i.text()))
}

#[cfg(test)]
mod tests;
