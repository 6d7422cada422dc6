//! The answer first: one line per row, what a person reads before any
//! other table (what `run` prints as each group ends, the summary at the
//! top of report.html). Each line gives the row's name, its headline (the
//! median of its trial medians, scaled to a readable unit) with that
//! headline's own interval, its speedup over the fewest workers or its
//! ratio to the base variant where it has one, the smallest change it can
//! see, and its status. The exact figures are in the records and in the
//! statistics tables; the figures here are the same measurements, rounded.

use std::collections::HashMap;

use crate::compare::{RowComparison, Verdict, Word};
use crate::evidence::Row;
use crate::model::Status;
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
/// `verdicts`: one line per row.
///
/// Cost: O(rows): each row's speedup is read from one map of its series'
/// fewest workers, built once.
pub fn table(rows: &[&Row], verdicts: &Verdicts) -> Table {
    let fewest = fewest_workers(rows);
    // Too narrow a terminal loses what it can best spare first: what the
    // row can see, its interval, its speedup, then its median.
    let mut t = Table::new(&COLUMNS).dropping(&[4, 2, 3, 1]);
    for r in rows {
        t.push_row(line(r, &fewest, verdicts));
    }
    t
}

/// The overview of one group for a terminal (what `run` prints as the
/// group ends): each row on one line, the first column short. A workload
/// of one row has its line as in [`table`]; a workload of several has a
/// heading line (its name and the axis values its rows share), then its
/// rows named by the axis values that differ, as `name=value` when the
/// longest fits [`SHORT_NAME`] characters, else as the values alone with
/// the axes' names in the heading (`rt.parallel-for (mode, runtime,
/// workers)` over `per-item rayon 2`). A table too wide even so leaves out
/// columns in [`table`]'s order; no cell wraps.
pub fn table_by_workload(rows: &[&Row], verdicts: &Verdicts) -> Table {
    let fewest = fewest_workers(rows);
    let mut t = Table::new(&COLUMNS).dropping(&[4, 2, 3, 1]).one_line_rows();
    for run in rows.chunk_by(|a, b| a.cell.workload == b.cell.workload) {
        if let [r] = run {
            t.push_row(line(r, &fewest, verdicts));
            continue;
        }
        let (heading, names) = short_names(run);
        let mut head = vec![Line::new(); COLUMNS.len()];
        head[0] = Line::from(heading);
        t.push_row(head);
        for (r, name) in run.iter().zip(names) {
            let mut cells = line(r, &fewest, verdicts);
            cells[0] = Line::from(format!("  {name}"));
            t.push_row(cells);
        }
    }
    t
}

/// The longest a row's name under its workload's heading is as
/// `name=value` pairs before it is given as values alone.
pub const SHORT_NAME: usize = 24;

/// The heading of `rows` (one workload's) and each row's name under it.
fn short_names(rows: &[&Row]) -> (String, Vec<String>) {
    let first = &rows[0].cell;
    let value = |r: &Row, axis: &str| r.cell.params.get(axis).map_or_else(|| "-".to_string(), crate::model::params::value_text);
    let (shared, differing): (Vec<&String>, Vec<&String>) =
        first.axes.iter().partition(|a| rows.iter().all(|r| value(r, a) == value(rows[0], a)));
    let mut heading = first.workload.clone();
    for a in &shared {
        heading.push_str(&format!(" {a}={}", value(rows[0], a)));
    }
    let pairs: Vec<String> =
        rows.iter().map(|r| differing.iter().map(|a| format!("{a}={}", value(r, a))).collect::<Vec<_>>().join(" ")).collect();
    let names = if pairs.iter().all(|p| p.chars().count() <= SHORT_NAME) {
        pairs
    } else {
        heading.push_str(&format!(" ({})", differing.iter().map(|a| a.as_str()).collect::<Vec<_>>().join(", ")));
        rows.iter().map(|r| differing.iter().map(|a| value(r, a)).collect::<Vec<_>>().join(" ")).collect()
    };
    // Rows alike in every axis (variants of one cell) are told apart by their system.
    let names = names.into_iter().zip(rows).map(|(n, r)| if n.is_empty() { r.cell.label.clone() } else { n }).collect();
    (heading, names)
}

/// A row's series: same workload, system label and axes but `workers`
/// (the variant is an axis).
type SeriesKey = (String, String, String);

fn series_key(r: &Row) -> SeriesKey {
    (r.cell.workload.clone(), r.cell.label.clone(), r.cell.axes_text_without("workers"))
}

/// Per series, the ok row with the fewest workers: its count and median.
fn fewest_workers(rows: &[&Row]) -> HashMap<SeriesKey, (usize, f64)> {
    let mut out: HashMap<SeriesKey, (usize, f64)> = HashMap::new();
    for r in rows {
        let (Some(w), Some(m)) = (r.cell.workers, r.median()) else { continue };
        let e = out.entry(series_key(r)).or_insert((w, m));
        if w < e.0 {
            *e = (w, m);
        }
    }
    out
}

/// The cells of one row's line.
fn line(r: &Row, fewest: &HashMap<SeriesKey, (usize, f64)>, verdicts: &Verdicts) -> Vec<Line> {
    let median = match (r.median(), r.code_path()) {
        (None, _) => Line::new(),
        (Some(m), None) => Line::from(format::scaled(m, r.unit)),
        // The code path a multiversioned kernel took, beside its figure.
        (Some(m), Some(p)) => Line::from(format::scaled(m, r.unit)).text(" ").toned(Tone::Dim, format!("[{p}]")),
    };
    let interval = if r.status == Status::Ok { interval_text(r) } else { String::new() };
    let relative = match verdicts.for_row(r) {
        Some(c) => ratio(c),
        None => speedup(r, fewest).map_or_else(Line::new, Line::from),
    };
    let sees = r.headline().and_then(|h| h.sensitivity).map_or_else(String::new, |s| format!(">= {}", format::percent(s)));
    // The name links to the workload's section (its heading's anchor).
    let name = Line::new().link(name(r), &slug(&r.cell.workload));
    vec![name, median, Line::from(interval), relative, Line::from(sees), status(r)]
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

/// A variant's ratio to the base and its decided verdict: `0.981x
/// DIFFERENT (improved)`, `1.003x SAME within 2%`.
fn ratio(c: &RowComparison) -> Line {
    let tone = match (c.word, c.verdict) {
        (Some(Word::Different), Verdict::Regressed) => Tone::Bad,
        (Some(Word::Different), _) => Tone::Good,
        (Some(Word::Same), _) => Tone::Dim,
        (Some(Word::Unknown) | None, _) => Tone::Warn,
    };
    let x = c.ratio.map_or_else(|| "n/a".into(), format::speedup);
    Line::from(format!("{x} ")).toned(tone, c.word_text())
}

/// `1.934x vs 1` for a row at k workers whose series has an ok row at
/// fewer workers: its speedup over the fewest; `None` otherwise.
fn speedup(r: &Row, fewest: &HashMap<SeriesKey, (usize, f64)>) -> Option<String> {
    let (k, m) = (r.cell.workers?, r.median()?);
    let &(w, base) = fewest.get(&series_key(r)).filter(|(w, _)| *w < k)?;
    (base > 0.0 && m > 0.0).then(|| format!("{} vs {w}", super::scaling::speedup(Some(base), Some(m), r.direction)))
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

    #[test]
    fn a_candidate_variant_s_line_gives_its_ratio_to_the_base_and_the_verdict() {
        use crate::evidence::fake;
        let (a, b) = (fake::variant("a", true), fake::variant("b", false));
        let rows = vec![
            fake::row(0, "w.x", &[], Some(&a), &[100.0, 101.0, 99.0, 100.5, 99.5], Unit::NsPerOp),
            fake::row(1, "w.x", &[], Some(&b), &[150.0, 151.5, 148.5, 150.7, 149.2], Unit::NsPerOp),
        ];
        let verdicts = Verdicts::of(&rows);
        let refs: Vec<&Row> = rows.iter().collect();
        let t = table(&refs, &verdicts);
        assert_eq!(terminal::line(&t.rows[0][3]), "", "the base has no ratio");
        let ratio = terminal::line(&t.rows[1][3]);
        assert!(ratio.starts_with("1.5") && ratio.ends_with("x DIFFERENT (regressed)"), "{ratio}");
    }

    /// A row of `workload` with these axis values (every param an axis).
    fn row_of(workload: &str, axes: &[(&str, serde_json::Value)], values: &[f64]) -> Row {
        let workers = axes.iter().find(|a| a.0 == "workers").and_then(|a| a.1.as_u64()).unwrap_or(1) as usize;
        let mut r = fake_row(workers, CpuClass::Physical, values, None, Status::Ok, Unit::NsPerOp);
        r.cell.workload = workload.into();
        r.cell.axes = axes.iter().map(|a| a.0.to_string()).collect();
        r.cell.params = axes.iter().map(|(k, v)| (k.to_string(), v.clone())).collect();
        r
    }

    #[test]
    fn a_group_on_a_terminal_keeps_each_row_on_one_line_under_its_workload_s_heading() {
        use serde_json::json;
        let mut rows = vec![row_of("os.syscall", &[], &[100.0, 101.0, 99.0])];
        for mode in ["per-item", "chunked"] {
            for runtime in ["rayon", "global-queue"] {
                for workers in [1, 2] {
                    let axes =
                        [("mode", json!(mode)), ("runtime", json!(runtime)), ("workers", json!(workers)), ("allocator", json!("system"))];
                    // Wide intervals: the widest figures a run's rows show.
                    rows.push(row_of("rt.parallel-for", &axes, &[64.09, 0.5, 6400.0, 70.0]));
                }
            }
        }
        for entries in [10, 30] {
            rows.push(row_of("os.readdir", &[("entries", json!(entries))], &[4340.0, 4350.0, 4330.0]));
        }
        let refs: Vec<&Row> = rows.iter().collect();
        let t = table_by_workload(&refs, &Verdicts::of(&[]));
        let text = terminal::columns("rt", &t, terminal::Style { color: false, width: Some(100) });
        let lines: Vec<&str> = text.as_str().lines().collect();
        // The header (its titles wrapped at most once), a line per row, a
        // heading per workload of several rows.
        let one_line = |text: &str| text.lines().filter(|l| l.contains("s/op ")).count() == rows.len();
        assert!(one_line(text.as_str()) && lines.len() <= 2 + rows.len() + 2, "{}", text.as_str());
        assert!(lines.iter().all(|l| l.chars().count() <= 100), "{}", text.as_str());
        // Shared axes said once in the heading, the differing ones named there when the rows give values alone.
        assert!(lines.contains(&"  rt.parallel-for allocator=system (mode, runtime, workers)"), "{}", text.as_str());
        assert!(lines.iter().any(|l| l.starts_with("    per-item global-queue 2 ")), "{}", text.as_str());
        assert!(lines.contains(&"  os.readdir"), "{}", text.as_str());
        assert!(lines.iter().any(|l| l.starts_with("    entries=30 ")), "{}", text.as_str());
        assert!(lines.iter().any(|l| l.starts_with("  os.syscall ")), "{}", text.as_str());
        assert!(!text.as_str().contains("runtime=global-queue"), "{}", text.as_str());
        // Too narrow for every column: columns are left out, no cell wraps.
        let narrow = terminal::columns("rt", &t, terminal::Style { color: false, width: Some(70) });
        assert!(one_line(narrow.as_str()) && narrow.as_str().lines().all(|l| l.chars().count() <= 70), "{}", narrow.as_str());
        assert!(narrow.as_str().contains("(left out to fit 70 columns: "), "{}", narrow.as_str());
    }
}
