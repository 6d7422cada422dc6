//! The variants of a run in the report: per workload, an A/B table (each
//! variant's median, the ratio to the base with its interval across the
//! trial pairs, the decided verdict in its three words, SAME, DIFFERENT or
//! UNKNOWN, and what the comparison could see); per run, what each
//! candidate did against the base, or, for a `noise` run, the machine's
//! noise profile.

use std::collections::HashMap;

use crate::compare::{self, RowComparison, Verdict, Word};
use crate::evidence::{Row, RunKind, RunRecord};
use crate::model::{Cell, Variant};
use crate::stats::DEFAULT_NOISE;

use crate::text::document::{Align, Block, Line, Table, Tone};
use crate::text::format;

/// The verdicts on a run's variants: every candidate against the base over
/// the run's rows, all judged together (one false discovery control over
/// every row of every candidate), and where each workload's rows are.
pub struct Verdicts {
    /// The base and the candidates, in the comparisons' order.
    variants: Option<(Variant, Vec<Variant>)>,
    comparisons: Vec<compare::Comparison>,
    /// Per workload, its rows as (comparison, row) indexes, in order.
    by_workload: HashMap<String, Vec<(usize, usize)>>,
    /// Per (workload, candidate, axes without the variant), its
    /// (comparison, row) indexes: a row's comparison found in one step.
    by_row: HashMap<(String, String, String), (usize, usize)>,
}

impl Verdicts {
    /// Over the rows of a run (report.md, the run's end).
    pub fn of(rows: &[Row]) -> Verdicts {
        Verdicts::new(rows, compare::paired::compare(rows, "", &options()))
    }

    /// Over the rows so far of a run whose plan is `cells` (the tables
    /// `run` prints as each group ends): the comparisons not measured yet
    /// count as no evidence, so a verdict printed now stands in report.md.
    pub fn so_far(rows: &[Row], cells: &[Cell]) -> Verdicts {
        let planned = compare::paired::planned_comparisons(cells);
        Verdicts::new(rows, compare::paired::compare_so_far(rows, "", &options(), planned))
    }

    fn new(rows: &[Row], comparisons: Vec<compare::Comparison>) -> Verdicts {
        let variants = compare::paired::variants(rows);
        let candidates: &[Variant] = variants.as_ref().map_or(&[], |(_, c)| c.as_slice());
        let mut by_workload: HashMap<String, Vec<(usize, usize)>> = HashMap::new();
        let mut by_row = HashMap::new();
        for (i, c) in comparisons.iter().enumerate() {
            for (j, r) in c.rows.iter().enumerate() {
                by_workload.entry(r.workload.clone()).or_default().push((i, j));
                if let Some(cand) = candidates.get(i) {
                    by_row.insert((r.workload.clone(), cand.name.clone(), r.axes.clone()), (i, j));
                }
            }
        }
        Verdicts { variants, comparisons, by_workload, by_row }
    }

    /// The rows of workload `w`, each with its candidate's name.
    fn of_workload(&self, w: &str) -> Vec<(&str, &RowComparison)> {
        let Some((_, candidates)) = &self.variants else { return Vec::new() };
        let at = self.by_workload.get(w).map_or(&[][..], Vec::as_slice);
        at.iter().map(|&(i, j)| (candidates[i].name.as_str(), &self.comparisons[i].rows[j])).collect()
    }

    /// The comparison of a candidate variant's row with the base's: `None`
    /// for the base's rows and rows without variants.
    pub fn for_row(&self, r: &Row) -> Option<&RowComparison> {
        let v = r.cell.variant.as_ref()?;
        let key = (r.cell.workload.clone(), v.name.clone(), compare::paired::axes_without_variant(r));
        self.by_row.get(&key).map(|&(i, j)| &self.comparisons[i].rows[j])
    }

    /// Comparisons with a p-value, over every candidate: how many were
    /// judged together.
    fn judged(&self) -> usize {
        self.comparisons.iter().flat_map(|c| &c.rows).filter(|r| r.p_value.is_some()).count()
    }
}

/// How variants are judged in a report: paired, at the default noise band.
fn options() -> compare::Options {
    compare::Options { threshold: DEFAULT_NOISE, ..compare::Options::default() }
}

/// `>= 3.1%`, or `n/a`.
fn sees(r: &RowComparison) -> String {
    r.sensitivity.map_or_else(|| "n/a".into(), |s| format!(">= {}", format::percent(s)))
}

/// The A/B table of one workload's rows, with the run's `verdicts`; `None`
/// without variants.
pub fn table(rows: &[&Row], verdicts: &Verdicts) -> Option<Vec<Block>> {
    let (base, _) = verdicts.variants.as_ref()?;
    let w = &rows.iter().find(|r| r.cell.variant.is_some())?.cell.workload;
    let mut t = Table::new(&[
        ("Row", Align::Left),
        ("Variant", Align::Left),
        ("Base median", Align::Right),
        ("Median", Align::Right),
        ("Ratio", Align::Right),
        ("95% CI", Align::Right),
        ("Pairs", Align::Right),
        ("Spread", Align::Right),
        ("Sees", Align::Right),
        ("Verdict", Align::Left),
    ]);
    let mut notes = Vec::new();
    for (cand, r) in verdicts.of_workload(w) {
        t.push(vec![
            r.axes.clone(),
            cand.to_string(),
            r.median_text(r.base_median),
            r.median_text(r.candidate_median),
            r.ratio.map_or_else(|| "n/a".into(), |x| format!("{x:.3}")),
            r.ratio_ci95.map_or_else(|| "n/a".into(), |[lo, hi]| format!("{lo:.3}..{hi:.3}")),
            r.pairs.map_or_else(|| "n/a".into(), |p| p.to_string()),
            r.pair_spread.map_or_else(|| "n/a".into(), format::percent),
            sees(r),
            r.word_text(),
        ]);
        // Without an interval the table cannot say why: not comparable, or UNKNOWN from too few pairs.
        if r.ratio_ci95.is_none() {
            notes.push(
                Line::from(r.axes.as_str()).text(" ").text(cand).text(": ").text(r.word_text()).text(": ").marked(&r.reason).text("."),
            );
        }
    }
    let mut out = vec![
        Block::heading(4, Line::from("Variants against ").text(base.name.as_str())),
        Block::paragraph(format!(
            "Ratio = variant / base, with its interval across the pairs of trials that ran in one round (back to back or in \
             lockstep); Pairs: the pairs that decided it, Spread: that of their log ratios, Sees: the smallest change it could \
             call DIFFERENT from them. {}.",
            compare::words_meaning(
                compare::equivalence(verdicts.of_workload(w).into_iter().map(|(_, r)| r)),
                compare::PAIRED_DIFFERENT,
                "trials"
            )
        )),
        Block::Table(t),
    ];
    if !notes.is_empty() {
        out.push(Block::List(notes));
    }
    Some(out)
}

/// The run's section about its variants; `None` without variants.
pub fn section(run: &RunRecord, rows: &[Row]) -> Option<Vec<Block>> {
    let verdicts = Verdicts::of(rows);
    let (base, candidates) = verdicts.variants.as_ref()?;
    let cs = &verdicts.comparisons;
    if run.kind == RunKind::Noise {
        return Some(noise_profile(cs));
    }
    let mut out = vec![
        Block::heading(2, "Variants"),
        // A spec may hold a long value (a 100 KB `env=`): run.json keeps it whole.
        Block::List(
            std::iter::once(base)
                .chain(candidates)
                .map(|v| Line::from(v.describe()).shortened(crate::text::table::MAX_CELL_CHARS).into_owned())
                .collect(),
        ),
        Block::paragraph(format!(
            "Every cell ran under each variant, back to back in every round (the order rotating from round to round), and each \
             candidate is compared with the base paired by round: whatever moved the machine between rounds moved both. \
             {PAIRED}"
        )),
    ];
    if candidates.len() > 1 {
        let n = verdicts.judged();
        out.push(Block::paragraph(format!(
            "The {n} comparisons of every candidate's rows are judged together (Benjamini-Hochberg at {}), so that {} candidates \
             give no more false verdicts than one: a change that shows in one comparison alone needs its p-value at most {} \
             (its interval at that level beyond the band).",
            format::percent(compare::FALSE_DISCOVERY_RATE),
            candidates.len(),
            p_text(compare::FALSE_DISCOVERY_RATE / n.max(1) as f64)
        )));
    }
    // Each candidate's summary and the rows it moved, with no blank line
    // between them (a summary after one without rows continues its paragraph).
    let mut lines: Vec<Block> = Vec::new();
    for (c, v) in cs.iter().zip(candidates) {
        let summary = Line::new().marked(compare::paired::summary_line(c, &v.name, &base.name).trim_start()).text(".");
        match lines.last_mut() {
            Some(Block::Paragraph(l)) => l.push(summary),
            _ => lines.push(Block::Paragraph(vec![summary])),
        }
        let moved: Vec<Line> =
            c.rows.iter().filter(|r| r.word == Some(Word::Different)).map(|r| verdict_line(Line::new(), r, ": ratio ")).collect();
        if !moved.is_empty() {
            lines.push(Block::List(moved));
        }
    }
    if !lines.is_empty() {
        out.push(Block::Compact(lines));
    }
    Some(out)
}

/// Why a variant's ratio is not the quotient of the medians printed beside it.
pub const PAIRED: &str = "A variant's ratio pairs each of its trials with the base's of the same round, so it can differ from \
                          the quotient of the two medians shown, which pool trials of different rounds.";

/// What `run` prints of its variants at its end: each candidate's line
/// against the base and the rows it moved, their verdicts toned (a noise
/// run: what its rows can see and its false verdicts); nothing without
/// variants. No markdown: the terminal shows the names as they are.
pub fn brief(run: &RunRecord, rows: &[Row]) -> Vec<Line> {
    let verdicts = Verdicts::of(rows);
    let Some((base, candidates)) = verdicts.variants.as_ref() else { return Vec::new() };
    let cs = &verdicts.comparisons;
    if run.kind == RunKind::Noise {
        let Some(c) = cs.first() else { return Vec::new() };
        let f = noise_figures(c);
        let tone = if f.false_verdicts == 0 { Tone::Good } else { Tone::Bad };
        return vec![
            Line::from(format!("Noise profile (A/A): of {} judged, {}; ", format::counted(f.judged, "row", "rows"), f.can_see_text()))
                .text(f.words_text())
                .toned(tone, f.false_verdicts_text())
                .text("."),
            Line::from(PAIRED),
        ];
    }
    let mut out = Vec::new();
    for (c, v) in cs.iter().zip(candidates) {
        out.push(Line::new().marked(compare::paired::summary_line(c, &v.name, &base.name).trim_start()).text("."));
        for r in c.rows.iter().filter(|r| r.word == Some(Word::Different)) {
            let name = if r.axes == "-" { r.workload.clone() } else { format!("{} {}", r.workload, r.axes.replace(", ", " ")) };
            let tone = if r.verdict == Verdict::Regressed { Tone::Bad } else { Tone::Good };
            out.push(
                Line::from(format!("  {name} "))
                    .toned(tone, r.word_text())
                    .text(": ratio ")
                    .text(r.ratio.map_or_else(|| "n/a".into(), |x| format!("{x:.3}")))
                    .text(" (")
                    .text(r.ratio_ci95.map_or_else(|| "n/a".into(), |[lo, hi]| format!("{lo:.3}..{hi:.3}")))
                    .text(")"),
            );
        }
    }
    out.push(Line::from(PAIRED));
    out
}

/// A small p-value as text: `0.001`, `1.0e-4`.
fn p_text(p: f64) -> String {
    if p >= 0.001 { format!("{p:.3}") } else { format!("{p:.1e}") }
}

/// `cpu.primes [workers=2] DIFFERENT (regressed): ratio 1.104 (1.052..1.159)` after
/// `lead`, `between` joining the verdict and the ratio.
fn verdict_line(lead: Line, r: &RowComparison, between: &str) -> Line {
    lead.text(r.workload.as_str())
        .text(" [")
        .text(r.axes.as_str())
        .text("] ")
        .text(r.word_text())
        .text(between)
        .text(r.ratio.map_or_else(|| "n/a".into(), |x| format!("{x:.3}")))
        .text(" (")
        .text(r.ratio_ci95.map_or_else(|| "n/a".into(), |[lo, hi]| format!("{lo:.3}..{hi:.3}")))
        .text(")")
}

/// The smallest changes a noise profile counts the rows that can see.
pub const NOISE_CHANGES: [f64; 3] = [0.02, 0.05, 0.10];

/// The figures of an A/A comparison: its rows compared, each SAME,
/// DIFFERENT (a false verdict: the two variants are the same) or UNKNOWN;
/// the rows DIFFERENT on their own p-value, before the adjustment for the
/// number of rows; and the rows that can see a 2%, 5%, 10% change
/// ([`NOISE_CHANGES`]). What `run`'s brief and the report's noise profile
/// both say.
pub struct NoiseFigures {
    /// Rows compared (both sides measured): each has its word.
    pub judged: usize,
    /// Rows DIFFERENT.
    pub false_verdicts: usize,
    /// Rows SAME within [`NoiseFigures::equivalence`].
    pub same: usize,
    /// Rows UNKNOWN.
    pub unknown: usize,
    /// The band of SAME.
    pub equivalence: f64,
    /// Rows whose own p-value of DIFFERENT was below 5%: the false
    /// verdicts and those the adjustment for the rows compared together
    /// left UNKNOWN.
    pub different_alone: usize,
    /// Rows that can see each change of [`NOISE_CHANGES`].
    pub can_see: [usize; 3],
}

impl NoiseFigures {
    /// `16 can see a 2% change, 46 a 5% change and 88 a 10% change`.
    fn can_see_text(&self) -> String {
        let [a, b, c] = self.can_see;
        let [x, y, z] = NOISE_CHANGES.map(format::band);
        format!("{a} can see a {x} change, {b} a {y} change and {c} a {z} change")
    }

    /// `130 SAME within 2%, 7 UNKNOWN, `, before the false verdicts.
    fn words_text(&self) -> String {
        format!("{} SAME within {}, {} UNKNOWN, ", self.same, format::band(self.equivalence), self.unknown)
    }

    /// `2 false verdicts (DIFFERENT)`.
    fn false_verdicts_text(&self) -> String {
        format!("{} (DIFFERENT)", format::counted(self.false_verdicts, "false verdict", "false verdicts"))
    }
}

pub fn noise_figures(c: &compare::Comparison) -> NoiseFigures {
    let judged: Vec<&RowComparison> = c.rows.iter().filter(|r| r.word.is_some()).collect();
    let count = |w: Word| c.count_word(w);
    let can = |limit: f64| judged.iter().filter(|r| r.sensitivity.is_some_and(|s| s <= limit)).count();
    NoiseFigures {
        judged: judged.len(),
        false_verdicts: count(Word::Different),
        same: count(Word::Same),
        unknown: count(Word::Unknown),
        equivalence: compare::equivalence(judged.iter().copied()),
        different_alone: judged.iter().filter(|r| r.p_value.is_some_and(|p| p < 0.05)).count(),
        can_see: NOISE_CHANGES.map(can),
    }
}

/// What each row can see, as a chart of the page.
fn reach_chart(c: &compare::Comparison) -> Block {
    use crate::text::plot::reach::{self, Reach};
    let rows: Vec<Reach> = c
        .rows
        .iter()
        .map(|r| Reach {
            name: if r.axes == "-" { r.workload.clone() } else { format!("{} {}", r.workload, r.axes) },
            sees: r.sensitivity,
            spread: r.pair_spread,
        })
        .collect();
    Block::Chart(crate::text::document::Chart {
        caption: "Each row's Sees (dot: the smallest change it can call DIFFERENT) and the spread of its pairs (ring), the rows that \
                  see least first; a row sees a change whose line lies right of its dot."
            .into(),
        svg: reach::chart("What each row can see", &rows, &NOISE_CHANGES),
    })
}

/// The machine's noise profile from a `noise` run: two identical variants,
/// so every verdict is a false one.
fn noise_profile(cs: &[compare::Comparison]) -> Vec<Block> {
    let mut out = vec![
        Block::heading(2, "Noise profile (A/A)"),
        Block::paragraph(
            "The selection ran as two identical variants, a and b (the same binary, settings and environment), in every round. \
             Any DIFFERENT between them is a false verdict; SAME says the two agree within the band, UNKNOWN that the trials could \
             tell neither. Each row's Sees is the smallest change an A/B run like this one can call DIFFERENT on this machine.",
        ),
    ];
    let Some(c) = cs.first() else {
        // Nothing compared (no candidate's row yet): report.md has always
        // left an empty line here.
        out.push(Block::Compact(Vec::new()));
        return out;
    };
    let f = noise_figures(c);
    let not = c.rows.len() - f.judged;
    let mut lines = vec![Line::from(format!(
        "Of {}, {}; {}{}{}.",
        format::counted(f.judged, "row", "rows"),
        f.can_see_text(),
        f.words_text(),
        f.false_verdicts_text(),
        if not > 0 { format!("; {} could not be compared", format::counted(not, "row", "rows")) } else { String::new() }
    ))];
    if f.different_alone > f.false_verdicts {
        lines.push(Line::from(format!(
            "Another {} of the {} rows compared together had, each on its own, a p-value of DIFFERENT below 5%, as chance alone \
             gives among so many: UNKNOWN after the adjustment for them (Benjamini-Hochberg at {}), not false verdicts.",
            f.different_alone - f.false_verdicts,
            f.judged,
            format::percent(compare::FALSE_DISCOVERY_RATE)
        )));
    }
    let false_verdicts: Vec<Line> = c
        .rows
        .iter()
        .filter(|r| r.word == Some(Word::Different))
        .map(|r| verdict_line(Line::from("false verdict: "), r, " with ratio "))
        .collect();
    if false_verdicts.is_empty() {
        out.push(Block::Paragraph(lines));
    } else {
        out.push(Block::Compact(vec![Block::Paragraph(lines), Block::List(false_verdicts)]));
    }
    out.push(reach_chart(c));
    let mut spreads: Vec<f64> = c.rows.iter().filter_map(|r| r.pair_spread).collect();
    spreads.sort_by(f64::total_cmp);
    if !spreads.is_empty() {
        let q = |p: f64| format::percent(crate::stats::quantile(&spreads, p));
        out.push(Block::paragraph(format!(
            "Spread of the pairs' log ratios over the rows: median {}, 90th percentile {}, largest {}.",
            q(0.5),
            q(0.9),
            q(1.0)
        )));
    }
    out
}

#[cfg(test)]
mod tests;
