//! The comparison as a document: the warnings said before it (an
//! incomplete run, different machines), and per comparison its runs, its
//! table and the summary lines. The terminal, markdown and HTML renderers
//! of `text::document` turn it into text, each escaping its own way; the
//! JSON record is the [`Comparison`] itself.
//!
//! A row one side's run never planned (a full run against a small one) is
//! not listed: each side's such rows are counted in one line, naming their
//! groups. The record keeps every row.

use std::collections::{BTreeSet, HashMap};

use super::{BandFrom, Comparison, Completion, RowComparison, Verdict, Word};
use crate::text::document::{Align, Block, Document, Line, Table};
use crate::text::format::{self, counted};

/// One line per compared run that is incomplete, saying so and how many
/// rows that left uncompared (none when every run is complete), without
/// the `warning: ` that each output puts before it: what `compare` says
/// before anything else. `cs` are one comparison of two runs, or the
/// comparisons of the variants of one run (said once).
pub fn completion_warnings(cs: &[Comparison]) -> Vec<String> {
    let Some(first) = cs.first() else { return Vec::new() };
    let sides: &[(&str, usize)] = if first.paired { &[("run", 0)] } else { &[("base run", 0), ("candidate run", 1)] };
    let mut out = Vec::new();
    for &(name, i) in sides {
        let c = &first.completion[i];
        let Some(state) = &c.state else { continue };
        let on_side = |r: &&RowComparison| if first.paired { r.not_run.contains(&true) } else { r.not_run[i] };
        let left: usize = cs.iter().map(|c| c.rows.iter().filter(on_side).count()).sum();
        out.push(format!("the {name} is {state} ({}); {} could not be compared", c.why(), counted(left, "row", "rows")));
    }
    out
}

/// A line said before a comparison of two runs.
#[derive(Clone, Debug, PartialEq)]
pub enum Notice {
    /// The machines differ, or so does how quiet they were.
    Warning(String),
    /// The envelopes differ in a setting (a kernel release): often what is
    /// being compared.
    Note(String),
}

impl Notice {
    /// The notice as one line of stderr: `warning: ...` or `note: ...`.
    pub fn line(&self) -> String {
        match self {
            Notice::Warning(w) => format!("warning: {w}\n"),
            Notice::Note(n) => format!("note: {n}\n"),
        }
    }
}

/// The notices about the envelopes (none when they agree).
pub fn warnings(c: &Comparison, across_machines: bool) -> Vec<Notice> {
    let mut out = Vec::new();
    if !c.machine_differences.is_empty() {
        let then = if across_machines {
            "compared anyway (--across-machines)"
        } else {
            "rows are not comparable (--across-machines to compare anyway)"
        };
        out.push(Notice::Warning(format!("different machines: {}; {then}", c.machine_differences.join(", "))));
    }
    if !c.setting_differences.is_empty() {
        out.push(Notice::Note(format!("the envelopes differ in: {}", c.setting_differences.join(", "))));
    }
    if let Some(i) = &c.interference {
        out.push(Notice::Warning(i.clone()));
    }
    out
}

/// The comparisons `cs` as one document: first the warnings `warnings`
/// (those the output shows; an incomplete run's before any other) and the
/// `notes`, then each comparison (under its candidate's name when there
/// are several).
pub fn document(cs: &[Comparison], warnings: &[String], notes: &[String]) -> Document {
    document_with(cs, warnings, notes, &|_| None)
}

/// [`document`] with `chart(c)`, where it gives one, before each
/// comparison's table (the page's forest plot: `compare::forest`).
pub fn document_with(cs: &[Comparison], warnings: &[String], notes: &[String], chart: &dyn Fn(&Comparison) -> Option<Block>) -> Document {
    let mut blocks = Vec::new();
    if !warnings.is_empty() {
        blocks.push(Block::Compact(warnings.iter().map(|w| Block::Warning(Line::from(w.as_str()))).collect()));
    }
    if !notes.is_empty() {
        blocks.push(Block::Paragraph(notes.iter().map(|n| Line::from("note: ").text(n.as_str())).collect()));
    }
    blocks.push(Block::heading(1, "proofbench compare"));
    for c in cs {
        if cs.len() > 1 {
            blocks.push(Block::heading(2, c.candidate.as_str()));
        }
        blocks.extend(comparison(c, chart));
    }
    Document { title: "proofbench compare".into(), blocks }
}

/// One comparison: its runs and threshold, what the three words mean, the
/// table of the rows both sides have (or planned), and the summary lines.
fn comparison(c: &Comparison, chart: &dyn Fn(&Comparison) -> Option<Block>) -> Vec<Block> {
    let how = if c.paired {
        Line::from(
            "Ratio = candidate / base, with its interval across the pairs of trials that ran in one round (back to back or in \
             lockstep; Trials: the pairs); Between: the spread of each side's trial medians.",
        )
    } else {
        Line::from(format!(
            "Noise threshold: {} (ratio = candidate / base, with a 95% interval from the trials of both runs; the band is the \
             noise threshold, or the row's noise floor from the history where that is larger; Between: the spread of each side's \
             trial medians).",
            format::percent(c.threshold)
        ))
    };
    let different = if c.paired { PAIRED_DIFFERENT } else { TWO_RUNS_DIFFERENT };
    let mut out = vec![Block::Paragraph(vec![
        Line::from("Base: ").text(c.base.as_str()).text(state(&c.completion[0])),
        Line::from("Candidate: ").text(c.candidate.as_str()).text(state(&c.completion[1])),
        how,
        Line::from(format!("{}.", words_meaning(equivalence(&c.rows), different, "trials"))),
    ])];
    let t = table(c);
    if let Some(chart) = chart(c).filter(|_| !t.is_empty()) {
        out.push(chart);
    }
    if t.is_empty() {
        let both = if c.paired { "both variants" } else { "both runs" };
        out.push(Block::paragraph(format!("No row is in {both}.")));
    } else {
        out.push(Block::Table(t));
    }
    let not_run = match c.not_run() {
        0 => String::new(),
        n => format!(" ({n} of them not run: a run is incomplete)"),
    };
    let mut lines = vec![Line::from(format!(
        "{}, {} not comparable{not_run}.",
        words_text(&c.rows),
        c.rows.iter().filter(|r| r.word.is_none() && !r.is_one_sided()).count()
    ))];
    lines.extend(one_sided_lines(c));
    if let Some(f) = &c.floors {
        lines.push(bands_summary(&c.rows, f));
    }
    let (held, checked, expected) = c.held();
    if checked > 0 && !c.paired {
        lines.push(Line::from(format!(
            "Each run's 95% interval held the other's median {} of {checked} ({:.0}%); two runs of one build that differ only as \
             their trials do would hold it about {:.0}% of the time (an interval for a run's own median is narrower than one for \
             the next run's).",
            counted(held, "time", "times"),
            100.0 * held as f64 / checked as f64,
            100.0 * expected / checked as f64
        )));
    }
    out.push(Block::Paragraph(lines));
    out
}

/// The table of the rows both sides have, or that a side planned and did
/// not run; the rows only one side's run planned are counted apart.
fn table(c: &Comparison) -> Table {
    let mut t = Table::new(&[
        ("Workload", Align::Left),
        ("Axes", Align::Left),
        ("Base median", Align::Right),
        ("Candidate median", Align::Right),
        ("Ratio", Align::Right),
        ("95% CI", Align::Right),
        ("Trials", Align::Right),
        ("Between", Align::Right),
        ("Band", Align::Right),
        ("Verdict", Align::Left),
        ("Why", Align::Left),
    ])
    // A narrow terminal keeps the verdict longest.
    .dropping(&[7, 6, 8, 2, 3, 5, 10, 1, 4]);
    for r in c.rows.iter().filter(|r| !r.is_one_sided()) {
        t.push(vec![
            r.workload.clone(),
            r.axes.clone(),
            r.median_text(r.base_median),
            r.median_text(r.candidate_median),
            r.ratio.map(|x| format!("{x:.3}")).unwrap_or_else(|| "n/a".into()),
            r.ratio_ci95.map(|[lo, hi]| format!("{lo:.3}..{hi:.3}")).unwrap_or_else(|| "n/a".into()),
            match r.pairs {
                Some(p) => format!("{p} paired"),
                None => format!("{} vs {}", r.trials[0], r.trials[1]),
            },
            match r.between {
                [Some(a), Some(b)] => format!("{} / {}", format::percent(a), format::percent(b)),
                _ => "n/a".into(),
            },
            // Variants of one run: no noise band unless the design sets a smallest change.
            if c.paired && r.band == 0.0 { "none".into() } else { r.band_text() },
            r.word_text(),
            r.reason.clone(),
        ]);
    }
    t
}

/// When a comparison of two runs (or a history step) calls a row
/// DIFFERENT, for [`words_meaning`].
pub const TWO_RUNS_DIFFERENT: &str = "the whole 95% interval lies beyond the band";

/// When variants of one run are DIFFERENT, for [`words_meaning`].
pub const PAIRED_DIFFERENT: &str = "the interval excludes 1, however small the change (no noise band: each pair of trials shared \
                                    the machine's state)";

/// What the three words mean, said once above a table of them: `DIFFERENT
/// (regressed or improved): {different}; SAME within 2%: the interval lies
/// inside +-2%; UNKNOWN: neither, more {more} may decide it`.
pub fn words_meaning(equivalence: f64, different: &str, more: &str) -> String {
    let band = format::band(equivalence);
    format!(
        "DIFFERENT (regressed or improved): {different}; SAME within {band}: the interval lies inside +-{band}; UNKNOWN: \
         neither, more {more} may decide it"
    )
}

/// The band of SAME of `rows`: the first's that has a word (they share
/// one), else the default.
pub fn equivalence<'a>(rows: impl IntoIterator<Item = &'a RowComparison>) -> f64 {
    rows.into_iter().find(|r| r.word.is_some()).map_or(crate::stats::decide::DEFAULT_EQUIVALENCE, |r| r.equivalence)
}

/// `5 regressed`, or `5 regressed (3 from disturbed trials)`.
fn verdict_count(rows: &[RowComparison], v: Verdict) -> String {
    let of: Vec<&RowComparison> = rows.iter().filter(|r| r.verdict == v).collect();
    match of.iter().filter(|r| r.disturbed_verdict).count() {
        0 => format!("{} {}", of.len(), v.as_str()),
        d => format!("{} {} ({d} from disturbed trials)", of.len(), v.as_str()),
    }
}

/// The rows' decided verdicts counted, as every output says them: `2
/// DIFFERENT (2 regressed, 0 improved), 130 SAME within 2%, 7 UNKNOWN`
/// (the rows that could not be compared are not counted).
pub fn words_text(rows: &[RowComparison]) -> String {
    let count = |w: Word| rows.iter().filter(|r| r.word == Some(w)).count();
    format!(
        "{} {} ({}, {}), {} {} within {}, {} {}",
        count(Word::Different),
        Word::Different.as_str(),
        verdict_count(rows, Verdict::Regressed),
        verdict_count(rows, Verdict::Improved),
        count(Word::Same),
        Word::Same.as_str(),
        format::band(equivalence(rows)),
        count(Word::Unknown),
        Word::Unknown.as_str()
    )
}

/// The most groups a one-sided line names.
const MAX_GROUPS: usize = 8;

/// Per side, one line counting the rows that side has and the other's run
/// never planned, with their groups: `147 rows of the base are not in the
/// candidate (not compared): cpu, npb, os groups.`
fn one_sided_lines(c: &Comparison) -> Vec<Line> {
    let names: [&str; 2] = if c.paired { ["base variant", "candidate variant"] } else { ["base", "candidate"] };
    // A row missing in the candidate is one of the base's, and the other way round.
    [(0, 1), (1, 0)]
        .into_iter()
        .filter_map(|(has, lacks)| {
            let rows: Vec<&RowComparison> = c.rows.iter().filter(|r| r.is_one_sided() && r.missing[lacks]).collect();
            if rows.is_empty() {
                return None;
            }
            let groups: BTreeSet<&str> = rows.iter().map(|r| r.workload.split('.').next().unwrap_or(&r.workload)).collect();
            let named: Vec<&str> = groups.iter().copied().take(MAX_GROUPS).collect();
            let more = groups.len() - named.len();
            let and_more = if more > 0 { format!(" and {more} more") } else { String::new() };
            let noun = if groups.len() == 1 { "group" } else { "groups" };
            Some(Line::from(format!(
                "{} of the {} {} not in the {} (not compared): {}{and_more} {noun}.",
                counted(rows.len(), "row", "rows"),
                names[has],
                if rows.len() == 1 { "is" } else { "are" },
                names[lacks],
                named.join(", ")
            )))
        })
        .collect()
}

/// ` (incomplete: 0 of 2 cells ran)` after a run's name, "" for a complete run.
fn state(c: &Completion) -> String {
    c.state.as_ref().map_or_else(String::new, |s| format!(" ({s})"))
}

/// One line: how many rows judged against their noise floor, how many
/// against the threshold, and why those had no floor.
pub fn bands_summary(rows: &[RowComparison], source: &str) -> Line {
    let judged: Vec<&RowComparison> = rows.iter().filter(|r| r.ratio_ci95.is_some()).collect();
    let by_floor = judged.iter().filter(|r| r.band_from == BandFrom::Floor).count();
    let with_floor = judged.iter().filter(|r| r.floor.is_some()).count();
    // Each reason with its count, in the order first seen.
    let (mut notes, mut at): (Vec<(&str, usize)>, HashMap<&str, usize>) = (Vec::new(), HashMap::new());
    for n in judged.iter().filter_map(|r| r.floor_note.as_deref()) {
        let i = *at.entry(n).or_insert_with(|| {
            notes.push((n, 0));
            notes.len() - 1
        });
        notes[i].1 += 1;
    }
    notes.sort_by_key(|n| std::cmp::Reverse(n.1));
    let mut line = Line::from("Noise floors (").text(source).text(format!(
        "): {with_floor} of {} {} one; {by_floor} {} judged against their floor, {} against the noise threshold",
        counted(judged.len(), "judged row", "judged rows"),
        if judged.len() == 1 { "has" } else { "have" },
        if by_floor == 1 { "was" } else { "were" },
        judged.len() - by_floor
    ));
    if !notes.is_empty() {
        // The commonest reasons, each with how many rows it held for.
        line = line.text(". No floor: ");
        for (i, (why, k)) in notes.iter().take(3).enumerate() {
            if i > 0 {
                line = line.text("; ");
            }
            line = line.text(format!("{} ", counted(*k, "row", "rows"))).marked(why);
        }
        if notes.len() > 3 {
            let others: usize = notes[3..].iter().map(|n| n.1).sum();
            line = line.text(format!("; {} for other reasons", counted(others, "row", "rows")));
        }
    }
    line.text(".")
}
