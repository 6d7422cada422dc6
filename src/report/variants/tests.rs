//! The words of a run's variants in every output of the report and of
//! `run`: the brief at the run's end, the group tables, the workload's A/B
//! table, the variants section, and a `noise` run's profile.

use serde_json::json;

use super::*;
use crate::evidence::{StoredRun, fake};
use crate::model::{Status, Unit};
use crate::text::document::{Block, html, markdown, terminal};

/// Each round's base median: the machine moving 30% between rounds.
const BASE: [f64; 4] = [100.0, 120.0, 90.0, 105.0];

fn times(k: f64) -> Vec<f64> {
    BASE.iter().map(|x| x * k).collect()
}

/// Within 0.2% of [`BASE`] either way (no spread at all would decide on
/// the point: any change DIFFERENT).
fn same() -> Vec<f64> {
    vec![100.2, 119.8, 90.1, 104.9]
}

/// Rows of `w.x` under variants a (the base) and `b`, one cell per entry of
/// `cands` (axis `n`), the candidate's medians by round.
fn run_of(b: &str, cands: &[Vec<f64>]) -> StoredRun {
    let (a, v) = (fake::variant("a", true), fake::variant(b, false));
    let mut rows = Vec::new();
    for (n, medians) in cands.iter().enumerate() {
        rows.push(fake::row(rows.len(), "w.x", &[("n", json!(n))], Some(&a), &BASE, Unit::Ns));
        rows.push(fake::row(rows.len(), "w.x", &[("n", json!(n))], Some(&v), medians, Unit::Ns));
    }
    fake::run(rows.iter().map(|r| r.cell.clone()).collect(), rows)
}

/// The terminal, markdown and HTML text of `blocks`.
fn outputs(blocks: &[Block]) -> [String; 3] {
    [terminal::render(blocks), markdown::render(blocks), html::render(blocks)]
}

#[test]
fn a_run_s_variants_say_different_same_or_unknown_in_every_output() {
    // 3% slower every round; within 0.2%; rounds 10% apart either way; failed.
    let mut stored = run_of("b", &[times(1.03), same(), vec![110.0, 108.0, 99.0, 94.5], times(1.0)]);
    stored.rows[7].status = Status::Failed;
    let (run, rows) = (&stored.run, &stored.rows);
    let verdicts = Verdicts::of(rows);
    let words: Vec<Option<Word>> = rows.iter().skip(1).step_by(2).map(|r| verdicts.for_row(r).unwrap().word).collect();
    assert_eq!(words, [Some(Word::Different), Some(Word::Same), Some(Word::Unknown), None]);
    let counts = "b against a: 1 DIFFERENT (1 regressed, 0 improved), 1 SAME within 2%, 1 UNKNOWN, 1 not comparable";

    // The workload's A/B table: each row's word, and what the words mean.
    let refs: Vec<&Row> = rows.iter().collect();
    let [term, md, page] = outputs(&table(&refs, &verdicts).unwrap());
    for cell in ["DIFFERENT (regressed)", "SAME within 2%", "UNKNOWN", "not comparable"] {
        assert!(term.contains(&format!("| {cell} ")) && md.contains(&format!("| {cell} ")), "{cell}: {term}\n{md}");
        assert!(page.contains(&format!("<td>{cell}</td>")), "{cell}: {page}");
    }
    for text in [&term, &md, &page] {
        assert!(text.contains("DIFFERENT (regressed or improved): the interval excludes 1"), "{text}");
        assert!(text.contains("SAME within 2%: the interval lies inside +-2%; UNKNOWN: neither"), "{text}");
        assert!(text.contains("n=3 b: not comparable: base ok, candidate failed."), "{text}");
    }

    // The run's section: the counts and the DIFFERENT row.
    for text in outputs(&section(run, rows).unwrap()) {
        assert!(text.contains(counts), "{text}");
        assert!(text.contains("w.x ") && text.contains("n=0] DIFFERENT (regressed): ratio 1.030"), "{text}");
        assert!(!text.contains("[n=1]") && !text.contains("[n=2]"), "only DIFFERENT rows are listed: {text}");
    }

    // The brief at the run's end, and the group tables printed as the run goes.
    let brief: Vec<String> = brief(run, rows).iter().map(terminal::line).collect();
    assert!(brief[0].starts_with(counts), "{brief:?}");
    assert_eq!(brief[1..], ["  w.x n=0 DIFFERENT (regressed): ratio 1.030 (1.030..1.030)".to_string(), PAIRED.to_string()]);
    let overview = crate::report::overview::table(&refs, &verdicts);
    let ratios: Vec<String> = overview.rows.iter().skip(1).step_by(2).map(|r| terminal::line(&r[3])).collect();
    assert_eq!(ratios, ["1.030x DIFFERENT (regressed)", "1.000x SAME within 2%", "0.995x UNKNOWN", "n/a not comparable"]);
}

#[test]
fn the_noise_profile_counts_rows_that_can_see_2_5_and_10_percent_and_its_three_words() {
    let spread = |k: f64| vec![100.0 * (1.0 + k), 120.0 * (1.0 - k), 90.0 * (1.0 + k), 105.0 * (1.0 - k)];
    // Within 0.2%, 3% slower in every round (no spread: it sees any
    // change), rounds 0.9% and 4.5% apart either way.
    let mut stored = run_of("b", &[same(), times(1.03), spread(0.009), spread(0.045)]);
    stored.run.kind = RunKind::Noise;
    let (run, rows) = (&stored.run, &stored.rows);
    let c = &Verdicts::of(rows).comparisons[0];
    let sees: Vec<f64> = c.rows.iter().map(|r| r.sensitivity.unwrap()).collect();
    // Seeing 5% but not 2%, and not even 10% (the old profile's 20% would count it).
    assert!(sees[0] < 0.02 && sees[1] == 0.0 && (0.02..0.05).contains(&sees[2]) && (0.10..0.20).contains(&sees[3]), "{sees:?}");
    let words: Vec<Option<Word>> = c.rows.iter().map(|r| r.word).collect();
    assert_eq!(words, [Some(Word::Same), Some(Word::Different), Some(Word::Same), Some(Word::Unknown)], "{:#?}", c.rows);

    // One row is one row.
    let mut one = run_of("b", &[same()]);
    one.run.kind = RunKind::Noise;
    for text in outputs(&section(&one.run, &one.rows).unwrap()) {
        assert!(text.contains("Of 1 row, ") && !text.contains("1 rows"), "{text}");
    }

    let figures = "2 can see a 2% change, 3 a 5% change and 3 a 10% change; 2 SAME within 2%, 1 UNKNOWN, 1 false verdict (DIFFERENT)";
    let brief: Vec<String> = brief(run, rows).iter().map(terminal::line).collect();
    assert_eq!(brief, [format!("Noise profile (A/A): of 4 rows judged, {figures}."), PAIRED.to_string()]);
    for text in outputs(&section(run, rows).unwrap()) {
        assert!(text.contains(&format!("Of 4 rows, {figures}.")), "{text}");
        assert!(text.contains("false verdict: w.x ") && text.contains("n=1] DIFFERENT (regressed) with ratio 1.030"), "{text}");
        assert!(text.contains("Any DIFFERENT between them is a false verdict"), "{text}");
        assert!(text.contains("Spread of the pairs") && text.contains(" log ratios over the rows: median "), "{text}");
    }

    // A row DIFFERENT on its own p-value that the adjustment for the rows
    // compared together left UNKNOWN is said apart from the false verdicts.
    let mut adjusted = c.clone();
    adjusted.rows[3].p_value = Some(0.01);
    let text = markdown::render(&noise_profile(&[adjusted]));
    assert!(
        text.contains(
            "Another 1 of the 4 rows compared together had, each on its own, a p-value of DIFFERENT below 5%, as chance alone \
             gives among so many: UNKNOWN after the adjustment for them (Benjamini-Hochberg at 5.00%), not false verdicts."
        ),
        "{text}"
    );
}
