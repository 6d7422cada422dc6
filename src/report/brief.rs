//! What `run` prints on the terminal (the whole of it is in report.md and
//! report.html): as each group ends, its name and one line per row, under
//! its workload's heading where the workload has several
//! ([`overview::table_by_workload`]: the scaled median, its interval, the speedup or the ratio to
//! the base, what it can see, its status); at the end, a short summary: the
//! rows per status, the rows that are not ok with their reasons, the cells
//! that do not apply by design in one line, the warnings, the variants'
//! verdicts, the wall and CPU time, and where the report is.

use std::path::Path;

use crate::evidence::{Row, RunRecord, StatusCounts};
use crate::model::Status;
use crate::text::document::terminal::{self, Style, Styled};
use crate::text::document::{Block, Line, Tone};
use crate::text::format;
use crate::text::table::MAX_CELL_CHARS;

use super::facts::{self, why_not_run};
use super::overview::{self, tone};
use super::variants::{self, Verdicts};

/// One group's lines: its name (heading the columns' titles), then one
/// line per row of `rows` in the group, in the order given; the rows
/// skipped by design are left out (the summary names them).
pub fn group(rows: &[Row], group: &str, verdicts: &Verdicts, style: Style) -> Styled {
    let shown: Vec<&Row> = rows.iter().filter(|r| r.cell.group == group && !r.skipped_by_design()).collect();
    terminal::columns(group, &overview::table_by_workload(&shown, verdicts), style)
}

/// The summary at the end of a run whose directory is `dir`, one line
/// each: the counts, the rows not ok, the cells that do not apply by
/// design, the warnings, the variants, the times, report.md and
/// report.html.
pub fn end(run: &RunRecord, rows: &[Row], dir: &Path) -> Vec<Block> {
    let mut lines = vec![counts(run, rows)];
    lines.extend(not_ok(run, rows));
    lines.extend(by_design(rows));
    lines.extend(warnings(run, rows));
    lines.extend(variants::brief(run, rows));
    lines.push(times(run));
    lines.extend(paths(dir));
    vec![Block::Paragraph(lines)]
}

/// `Report: DIR/report.md` and, under it, `DIR/report.html`.
pub fn paths(dir: &Path) -> Vec<Line> {
    vec![
        Line::from("Report: ").text(dir.join("report.md").display().to_string()),
        Line::from("        ").text(dir.join("report.html").display().to_string()),
    ]
}

/// `150 rows: 139 ok, 11 skipped (8 by design)`: every status that has
/// rows (ok always), and the planned cells without a row.
pub fn counts(run: &RunRecord, rows: &[Row]) -> Line {
    let c = StatusCounts::of(rows.iter().map(|r| &r.status));
    let missing = run.cells_without_row(rows).len();
    let by_design = rows.iter().filter(|r| r.skipped_by_design()).count();
    let total = rows.len() + missing;
    let mut l = Line::from(format!("{}: ", format::counted(total, "row", "rows")))
        .toned(if c.ok > 0 { Tone::Good } else { Tone::Dim }, format!("{} ok", c.ok));
    let skipped_tone = if by_design == c.skipped { Tone::Dim } else { tone(Status::Skipped) };
    for (n, word, t) in [
        (c.failed, "failed", tone(Status::Failed)),
        (c.invalid, "invalid", tone(Status::Invalid)),
        (c.timeout, "timed out", tone(Status::Timeout)),
        (c.skipped, "skipped", skipped_tone),
        (missing, "not run", Tone::Warn),
    ] {
        if n > 0 {
            l = l.text(", ").toned(t, format!("{n} {word}"));
            if word == "skipped" && by_design > 0 {
                l = l.text(format!(" ({by_design} by design)"));
            }
        }
    }
    l
}

/// What a run's one-line summary adds to its counts (the `--hosts`
/// summary's host lines): how it ended when it did not run every cell
/// (`cut short: 2 of 3 cells ran (why)` when `cut` says why its stream was
/// cut, else `interrupted: 2 of 3 cells ran`, `ended early: ...`,
/// `incomplete: ...` without its finish record), the machine busy with
/// other work during it (`busy: others took 98% of CPUs 0-1`), and its rows
/// with disturbed trials. Empty for a quiet run that ran every cell.
pub fn states(run: &RunRecord, rows: &[Row], cut: Option<&str>) -> Vec<String> {
    let planned = run.plan.len();
    let ran = planned - run.cells_without_row(rows).len();
    let mut said: Vec<String> = match cut {
        Some(why) => vec![format!("cut short: {ran} of {planned} cells ran ({why})")],
        None => crate::evidence::state_text(run.finished_utc.is_some(), run.interrupted, ran, planned).into_iter().collect(),
    };
    if run.interrupted && ran == planned {
        said.push("interrupted".into());
    }
    if let Some(i) = run.interference.as_ref().filter(|i| i.disturbed) {
        said.push(format!("busy: {}", i.text()));
    }
    let disturbed = rows.iter().filter(|r| r.disturbed_trials() > 0).count();
    if disturbed > 0 {
        said.push(format!("{} disturbed trials", format::counted(disturbed, "row has", "rows have")));
    }
    said
}

/// One line per reason of the rows that are not ok (those skipped by
/// design left out), its rows named together: `skipped: hw.smt
/// placement=alone, placement=siblings: no SMT siblings ...`; then the
/// cells not run and the rows a signal cut short.
fn not_ok(run: &RunRecord, rows: &[Row]) -> Vec<Line> {
    let mut groups: Vec<(Status, &str, Vec<&Row>)> = Vec::new();
    // Where each (status, reason) is in `groups`: a run of many failures
    // is grouped in one pass.
    let mut at: std::collections::HashMap<(Status, &str), usize> = std::collections::HashMap::new();
    let mut bad: Vec<&Row> = rows.iter().filter(|r| r.status != Status::Ok && !r.skipped_by_design()).collect();
    bad.sort_by_key(|r| r.cell.index);
    for r in bad {
        let why = r.reason.as_deref().unwrap_or_default();
        let i = *at.entry((r.status, why)).or_insert_with(|| {
            groups.push((r.status, why, Vec::new()));
            groups.len() - 1
        });
        groups[i].2.push(r);
    }
    let mut out: Vec<Line> = groups
        .into_iter()
        .map(|(status, why, list)| {
            let lead = Line::new().toned(tone(status), status.as_str()).text(": ").text(facts::names(&list)).text(": ");
            join(lead, Line::new().marked(why).shortened(MAX_CELL_CHARS).into_owned())
        })
        .collect();
    let missing = run.cells_without_row(rows);
    if !missing.is_empty() {
        let names: Vec<String> = missing.iter().map(|c| c.display_name()).collect();
        let shown = Line::from(names.join(", ")).shortened(MAX_CELL_CHARS).into_owned();
        out.push(join(Line::new().toned(Tone::Warn, "not run").text(": "), shown).text(": ").text(why_not_run(run)));
    }
    let cut: Vec<&Row> = rows.iter().filter(|r| r.cut_short()).collect();
    if !cut.is_empty() {
        out.push(
            Line::new()
                .toned(Tone::Warn, "cut short")
                .text(": ")
                .text(facts::names(&cut))
                .text(": the run was interrupted before their planned trials; each is kept with the trials that finished"),
        );
    }
    out
}

/// `a` followed by `b`.
fn join(a: Line, b: Line) -> Line {
    Line(a.0.into_iter().chain(b.0).collect())
}

/// `8 cells do not apply by design: os.yield mode=single placement=cross-cpu,
/// rt.fib (2), ...`: one name per workload (how many, for several), their
/// reasons in report.md.
fn by_design(rows: &[Row]) -> Option<Line> {
    let skipped: Vec<&Row> = rows.iter().filter(|r| r.skipped_by_design()).collect();
    if skipped.is_empty() {
        return None;
    }
    let mut workloads: Vec<(&str, Vec<&Row>)> = Vec::new();
    for r in &skipped {
        match workloads.iter_mut().find(|(w, _)| *w == r.cell.workload) {
            Some((_, list)) => list.push(r),
            None => workloads.push((&r.cell.workload, vec![r])),
        }
    }
    let names: Vec<String> = workloads
        .iter()
        .map(|(w, list)| if list.len() == 1 { list[0].cell.display_name() } else { format!("{w} ({})", list.len()) })
        .collect();
    Some(
        Line::new()
            .toned(Tone::Dim, format::counted(skipped.len(), "cell does", "cells do"))
            .toned(Tone::Dim, " not apply by design")
            .text(format!(": {} (report.md says why)", names.join(", "))),
    )
}

/// The run's warnings, one line each: those report.md gives the whole run
/// ([`facts::run_warnings`]), then the rows whose trials disagree or were
/// disturbed.
fn warnings(run: &RunRecord, rows: &[Row]) -> Vec<Line> {
    let mut said: Vec<Line> = facts::run_warnings(run, rows).iter().map(|w| Line::new().marked(w)).collect();
    let disagree = rows.iter().filter(|r| r.disagreement.is_some()).count();
    let disturbed = rows.iter().filter(|r| r.disturbed_trials() > 0).count();
    if disagree > 0 {
        said.push(Line::from(format!(
            "{} trials that disagree beyond their samples' noise (report.md names the likely cause of each)",
            format::counted(disagree, "row has", "rows have")
        )));
    }
    if disturbed > 0 {
        said.push(Line::from(format!(
            "{} trials that other processes disturbed (report.md says by how much)",
            format::counted(disturbed, "row has", "rows have")
        )));
    }
    said.into_iter().map(|l| join(Line::new().toned(Tone::Warn, "warning").text(": "), l)).collect()
}

/// `Wall time 2 min 32 s, CPU time 2 min 55 s (workers 2 min 10 s user +
/// 42.1 s system, harness 2.7 s)`.
fn times(run: &RunRecord) -> Line {
    match (run.wall_s, &run.cpu) {
        (Some(w), Some(c)) => Line::from(format!(
            "Wall time {}, CPU time {} (workers {} user + {} system, harness {})",
            format::seconds(w),
            format::seconds(c.workers.plus(&c.parent).cpu_seconds()),
            format::seconds(c.workers.user_us as f64 / 1e6),
            format::seconds(c.workers.sys_us as f64 / 1e6),
            format::seconds(c.parent.cpu_seconds()),
        )),
        (Some(w), None) => Line::from(format!("Wall time {}", format::seconds(w))),
        _ => Line::from("The run did not finish; no totals."),
    }
}
