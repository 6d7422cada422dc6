//! The answer first: one line per row, what a person reads before any
//! other table (what `run` prints as each group ends, the summary at the
//! top of report.html). Each line gives the row's name, its headline (the
//! median of its trial medians, scaled to a readable unit) with that
//! headline's own interval, its speedup over the fewest workers or its
//! ratio to the base variant where it has one, the smallest change it can
//! see, and its status. The exact figures are in the records and in the
//! statistics tables; the figures here are the same measurements, rounded.

use crate::compare::{RowComparison, Verdict};
use crate::evidence::Row;
use crate::model::{Direction, Status};
use crate::text::document::{Align, Line, Table, Tone, slug};
use crate::text::format;

use super::facts::interval_text;
use super::variants::Verdicts;

/// The columns of an overview table.
pub const COLUMNS: [(&str, Align); 6] = [
    ("Row", Align::Left),
    ("Median", Align::Right),
    ("95% CI", Align::Right),
    ("Speedup / ratio", Align::Right),
    ("Sees", Align::Right),
    ("Status", Align::Left),
];

/// A row's name as a person reads it: the workload and its axis values
/// (`cpu.primes workers=2`), the workload alone when it has none (never
/// `-`).
pub fn name(r: &Row) -> String {
    r.cell.display_name()
}

/// The overview of `rows` (in the order given), with the run's variant
/// `verdicts`: one line per row, its name a link to its workload's section
/// (the heading that names the workload).
pub fn table(rows: &[&Row], verdicts: &Verdicts) -> Table {
    let mut t = Table::new(&COLUMNS);
    for r in rows {
        t.push_row(line(r, rows, verdicts));
    }
    t
}

/// The cells of one row's line.
fn line(r: &Row, all: &[&Row], verdicts: &Verdicts) -> Vec<Line> {
    let median = r.median().map_or_else(String::new, |m| format::scaled(m, r.unit));
    let interval = if r.status == Status::Ok { interval_text(r) } else { String::new() };
    let relative = match verdicts.for_row(r) {
        Some(c) => ratio(c),
        None => speedup(r, all).map_or_else(Line::new, Line::from),
    };
    let sees = r.headline().and_then(|h| h.sensitivity).map_or_else(String::new, |s| format!(">= {}", format::percent(s)));
    // The name links to the workload's section (its heading's anchor).
    let name = Line::new().link(name(r), &slug(&r.cell.workload));
    vec![name, Line::from(median), Line::from(interval), relative, Line::from(sees), status(r)]
}

/// The tone of a status.
pub fn tone(s: Status) -> Tone {
    match s {
        Status::Ok => Tone::Good,
        Status::Skipped => Tone::Warn,
        Status::Invalid | Status::Failed | Status::Timeout => Tone::Bad,
    }
}

/// The status cell: `ok`, or the status and, for a row with trials that
/// disagree or were disturbed, a word of warning.
fn status(r: &Row) -> Line {
    let mut l = Line::new().toned(tone(r.status), r.status.as_str());
    if r.status == Status::Ok {
        if r.disturbed_trials() > 0 {
            l = l.text(" ").toned(Tone::Warn, "(disturbed)");
        } else if r.disagreement.is_some() {
            l = l.text(" ").toned(Tone::Warn, "(trials disagree)");
        }
    }
    l
}

/// A variant's ratio to the base and its verdict: `0.981x improved`.
fn ratio(c: &RowComparison) -> Line {
    let tone = match c.verdict {
        Verdict::Improved => Tone::Good,
        Verdict::Regressed => Tone::Bad,
        Verdict::Unchanged => Tone::Dim,
        Verdict::NotComparable => Tone::Warn,
    };
    let x = c.ratio.map_or_else(|| "n/a".into(), format::speedup);
    Line::from(format!("{x} ")).toned(tone, c.verdict.as_str())
}

/// `1.934x vs 1` for a row at k workers whose series (same label, variant
/// and other axes) has an ok row at fewer workers: its speedup over the
/// fewest; `None` otherwise.
fn speedup(r: &Row, all: &[&Row]) -> Option<String> {
    let k = r.cell.workers?;
    let m = r.median()?;
    let others = |x: &Row| {
        let mut a = x.cell.axis_values();
        a.retain(|(n, _)| n != "workers");
        (x.cell.workload.clone(), x.cell.label.clone(), x.cell.variant.as_ref().map(|v| v.name.clone()), a)
    };
    let me = others(r);
    let base = all
        .iter()
        .filter(|x| x.cell.workers.is_some_and(|w| w < k) && others(x) == me)
        .filter_map(|x| Some((x.cell.workers?, x.median()?)))
        .min_by_key(|&(w, _)| w)?;
    if base.1 <= 0.0 || m <= 0.0 {
        return None;
    }
    let s = match r.direction {
        Direction::LowerIsBetter => base.1 / m,
        Direction::HigherIsBetter => m / base.1,
    };
    Some(format!("{} vs {}", format::speedup(s), base.0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{CpuClass, Unit};
    use crate::report::tests::fake_row;
    use crate::text::document::terminal;

    #[test]
    fn each_line_gives_the_row_s_own_headline_scaled_with_its_own_interval_and_speedup() {
        let one = fake_row(1, CpuClass::Physical, &[2_000_000.0, 2_100_000.0, 1_900_000.0], None, Status::Ok, Unit::Ns);
        let two = fake_row(2, CpuClass::Physical, &[1_000_000.0, 1_050_000.0, 950_000.0], None, Status::Ok, Unit::Ns);
        let bad = fake_row(4, CpuClass::Physical, &[30.0], None, Status::Failed, Unit::Ns);
        let rows = [&one, &two, &bad];
        let verdicts = Verdicts::of(&[]);
        let t = table(&rows, &verdicts);
        let text = terminal::render(&[crate::text::document::Block::Table(t.clone())]);
        let cells: Vec<String> = t.rows[1].iter().map(terminal::line).collect();
        assert_eq!(cells[0], name(&two));
        assert_eq!(cells[1], format::scaled(two.median().unwrap(), Unit::Ns));
        assert_eq!(cells[2], interval_text(&two));
        assert!(cells[3].ends_with("x vs 1"), "{text}");
        let s: f64 = cells[3].trim_end_matches("x vs 1").parse().unwrap();
        assert!((s - one.median().unwrap() / two.median().unwrap()).abs() < 1e-3, "{text}");
        assert_eq!(cells[5], "ok");
        // The first row has nothing to be faster than; the failed one no figure.
        assert_eq!(terminal::line(&t.rows[0][3]), "");
        let failed: Vec<String> = t.rows[2].iter().map(terminal::line).collect();
        assert_eq!(failed[1..5], ["", "", "", ""]);
        assert_eq!(failed[5], "failed");
        assert!(!text.contains(" - "), "no row is named `-`:\n{text}");
    }
}
