//! What the report says of a row or a run in words, shared by its
//! sections and pages: the groups in plan order, a row's trials, interval
//! and disturbance (`evidence::Row::disturbed_text`), the run's busy warning, why planned cells have no row.
//! A leaf of the report: it calls nothing else of it.

use std::collections::BTreeMap;

use crate::evidence::{Row, RunRecord};
use crate::model::Status;
use crate::model::isa::CodePath;
use crate::text::format;

/// Groups in plan order (then any found only in rows).
///
/// Cost: O(plan + rows).
pub fn groups(run: &RunRecord, rows: &[Row]) -> Vec<String> {
    let mut seen: std::collections::HashSet<&str> = std::collections::HashSet::new();
    run.plan.iter().map(|c| &c.group).chain(rows.iter().map(|r| &r.cell.group)).filter(|g| seen.insert(g)).cloned().collect()
}

/// Why planned cells have no row: the run has no finish record (killed, or
/// still running), or a signal ended it.
pub fn why_not_run(run: &RunRecord) -> &'static str {
    if run.finished_utc.is_none() && !run.interrupted {
        "the run has no finish record (it was killed, or it is still running)"
    } else {
        "the run was interrupted before them"
    }
}

/// A row's label in its workload's tables: its axis values
/// (`mode=pair, placement=same-cpu`), or, for a workload of one row, the
/// workload itself (`os.syscall`), never `-`.
pub fn row_label(r: &Row) -> String {
    if r.cell.axis_values().is_empty() { r.cell.workload.clone() } else { r.axes_text() }
}

/// The names of `rows` in one line, each workload written once for a run
/// of its rows: `hw.smt placement=alone, placement=siblings, os.syscall`.
pub fn names(rows: &[&Row]) -> String {
    let mut out: Vec<String> = Vec::with_capacity(rows.len());
    let mut last: Option<&str> = None;
    for r in rows {
        let name = r.cell.display_name();
        let axes = name[r.cell.workload.len()..].trim_start();
        if last == Some(r.cell.workload.as_str()) && !axes.is_empty() {
            out.push(axes.to_string());
        } else {
            out.push(name.clone());
        }
        last = Some(&r.cell.workload);
    }
    out.join(", ")
}

/// The rows that do not apply by design, by reason, in the order first
/// seen: each reason with its rows.
pub fn by_design(rows: &[Row]) -> Vec<(String, Vec<&Row>)> {
    let mut out: Vec<(String, Vec<&Row>)> = Vec::new();
    for r in rows.iter().filter(|r| r.skipped_by_design()) {
        let why = r.reason.clone().unwrap_or_default();
        match out.iter_mut().find(|(w, _)| *w == why) {
            Some((_, list)) => list.push(r),
            None => out.push((why, vec![r])),
        }
    }
    out
}

/// A row's trials: `3`, or `2 of 3` when it has fewer than planned.
pub fn trials_text(r: &Row) -> String {
    let n = r.trials.len();
    if (n as u32) < r.trials_planned { format!("{n} of {}", r.trials_planned) } else { n.to_string() }
}

/// A row's 95% interval relative to its median (`-1.20% / +2.31%`), or why
/// it has none (`n/a: 1 trial`).
pub fn interval_text(r: &Row) -> String {
    match (r.median(), r.interval(), r.headline()) {
        (Some(m), Some((lo, hi)), _) => format::ci_relative(lo, hi, m),
        (_, _, Some(h)) => format!("n/a: {}", h.no_interval.as_deref().unwrap_or("no interval")),
        _ => "n/a".into(),
    }
}

/// The warning of a run during which other work took the machine.
pub fn busy_warning(run: &RunRecord) -> Option<String> {
    let i = run.interference.as_ref().filter(|i| i.disturbed)?;
    Some(format!("the machine was busy with other work during the run: {}; its figures may not reproduce on a quiet machine", i.text()))
}

/// The warnings about a whole run, in the order the report says them: the
/// CPU frequency, a run without all its rows (and why), an interrupted run,
/// a machine busy with other work.
pub fn run_warnings(run: &RunRecord, rows: &[Row]) -> Vec<String> {
    let mut warnings = Vec::new();
    if let Some(w) = run.envelope.frequency_warning() {
        warnings.push(w);
    }
    if let Some(t) = run.incomplete(rows) {
        warnings.push(format!("{t}; {}", why_not_run(run)));
    }
    if run.interrupted {
        warnings.push(format!("the run was interrupted: {} planned cells have no row", run.not_run.len()));
    }
    warnings.extend(busy_warning(run));
    warnings.extend(code_paths_note(rows));
    warnings
}

/// The code paths the ok rows' kernels took, widest first, each with its
/// number of rows (empty when no row has a multiversioned kernel).
fn code_paths<'a>(rows: impl IntoIterator<Item = &'a Row>) -> BTreeMap<CodePath, usize> {
    let mut paths = BTreeMap::new();
    for p in rows.into_iter().filter(|r| r.status == Status::Ok).filter_map(Row::code_path) {
        *paths.entry(p).or_insert(0) += 1;
    }
    paths
}

/// `avx512f on 6 rows, baseline on 3 rows`.
fn paths_text(paths: &BTreeMap<CodePath, usize>) -> String {
    paths.iter().map(|(p, n)| format!("{p} on {}", format::counted(*n, "row", "rows"))).collect::<Vec<_>>().join(", ")
}

/// When the kernels of one run took different code paths: which, on how
/// many rows (a figure on `avx2` is not one on `avx512f`).
pub fn code_paths_note(rows: &[Row]) -> Option<String> {
    let paths = code_paths(rows);
    (paths.len() > 1).then(|| {
        format!(
            "the kernels took different code paths ({}): each row's path is beside its median, and a figure on one path is not one on another",
            paths_text(&paths)
        )
    })
}

/// A workload's line on its kernel's code paths: `Code path: avx512f on 6
/// rows.` (none for a workload without a multiversioned kernel).
pub fn code_paths_line(rows: &[&Row]) -> Option<String> {
    let paths = code_paths(rows.iter().copied());
    match paths.len() {
        0 => None,
        1 => Some(format!("Code path: {}.", paths_text(&paths))),
        _ => Some(format!("Code paths: {}.", paths_text(&paths))),
    }
}
