//! report: renders stored rows. It never measures, and it reads nothing but
//! the records it is given, so `proofbench report DIR` reproduces report.md
//! byte for byte. [`sections`] builds the report as a [`document`] (typed
//! blocks and inline nodes) from the records; one renderer per output turns
//! it into text: markdown (report.md, `--update-doc`, `--counters`), HTML
//! (report.html, through [`html`]) and the terminal (what `run` prints).

pub mod counters;
pub mod doc;
pub mod document;
pub mod export;
pub mod html;
pub mod plot;
pub mod primitive;
pub mod scaling;
pub mod sections;
pub mod stats_tables;
pub mod strategies;
pub mod terminal;
pub mod variants;
pub mod workloads;

use crate::evidence::{Row, RunRecord, StoredRun};
use crate::text::format;

use document::{Block, markdown};

/// The whole report.md of a stored run, taking the run: its records are
/// let go once the document holds what the report says, before the text is
/// made (a run of many rows then never holds both its rows and their text).
pub fn render(stored: StoredRun) -> String {
    let doc = sections::document(&stored);
    drop(stored);
    markdown::render(&doc.blocks)
}

/// report.md and report.html of a stored run, from one document (its plots
/// drawn once).
pub fn render_md_and_html(stored: &StoredRun) -> (String, String) {
    let doc = sections::document(stored);
    (markdown::render(&doc.blocks), html::page(doc, &stored.rows))
}

/// The counters table of a group for the terminal, after a blank line (""
/// when no row has counters).
pub fn counters_section(rows: &[Row], group: &str) -> String {
    let blocks = sections::counters(rows, group);
    if blocks.is_empty() { String::new() } else { format!("\n{}", document::terminal::render(&blocks)) }
}

/// Only the counters tables of a stored run (`report --counters`).
pub fn render_counters(stored: &StoredRun) -> String {
    let blocks: Vec<_> = groups(&stored.run, &stored.rows).iter().flat_map(|g| sections::counters(&stored.rows, g)).collect();
    if blocks.is_empty() { "No row of this run has counters.\n".into() } else { markdown::render(&blocks) }
}

/// The section of one group (`run` writes its plots and prints it as the
/// group ends): `rows` are the group's, `verdicts` those of the run's
/// variants so far ([`variants::Verdicts::so_far`]).
pub fn group_section(rows: &[Row], group: &str, verdicts: &variants::Verdicts) -> Vec<Block> {
    sections::group(rows, group, verdicts)
}

/// The footer `run` prints at the end: the variants, the reproducibility
/// summary, every row that is not ok, the run totals.
pub fn footer(run: &RunRecord, rows: &[Row]) -> String {
    document::terminal::render(&sections::footer(run, rows))
}

/// Groups in plan order (then any found only in rows).
///
/// Cost: O(plan + rows).
pub fn groups(run: &RunRecord, rows: &[Row]) -> Vec<String> {
    let mut seen: std::collections::HashSet<&str> = std::collections::HashSet::new();
    run.plan.iter().map(|c| &c.group).chain(rows.iter().map(|r| &r.cell.group)).filter(|g| seen.insert(g)).cloned().collect()
}

/// Why planned cells have no row: the run has no finish record (killed, or
/// still running), or a signal ended it.
fn why_not_run(run: &RunRecord) -> &'static str {
    if run.finished_utc.is_none() && !run.interrupted {
        "the run has no finish record (it was killed, or it is still running)"
    } else {
        "the run was interrupted before them"
    }
}

/// `2 of 3 trials disturbed (others took 38-46% of their CPUs, ...)`, for a
/// row with disturbed trials.
pub fn disturbed_text(r: &Row) -> Option<String> {
    let hit: Vec<&crate::measure::interference::Interference> =
        r.trials.iter().filter(|t| t.disturbed()).filter_map(|t| t.facts.as_ref()?.interference.as_ref()).collect();
    if hit.is_empty() {
        return None;
    }
    let range = |f: &dyn Fn(&&crate::measure::interference::Interference) -> f64| {
        let (lo, hi) = hit.iter().map(f).fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| (a.min(v), b.max(v)));
        if (hi - lo) < 0.005 { format!("{:.0}%", 100.0 * hi) } else { format!("{:.0}-{:.0}%", 100.0 * lo, 100.0 * hi) }
    };
    let mut what = vec![format!("others took {} of their CPUs", range(&|i| i.others_share))];
    if hit.iter().any(|i| i.steal_ms > 0.0) {
        what.push(format!("the hypervisor stole {}", range(&|i| i.steal_share)));
    }
    if hit.iter().any(|i| i.pressure_share.is_some()) {
        what.push(format!("CPU pressure {}", range(&|i| i.pressure_share.unwrap_or(0.0))));
    }
    Some(format!("{} of {} trials disturbed ({})", hit.len(), r.trials.len(), what.join(", ")))
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

/// The axis values of a row as text (`workers=2`), or `-`.
pub fn axes_text(r: &Row) -> String {
    r.axes_text()
}

/// The warning of a run during which other work took the machine.
pub fn busy_warning(run: &RunRecord) -> Option<String> {
    let i = run.interference.as_ref().filter(|i| i.disturbed)?;
    Some(format!("the machine was busy with other work during the run: {}; its figures may not reproduce on a quiet machine", i.text()))
}

#[cfg(test)]
pub(crate) mod tests;

#[cfg(test)]
mod fuzz_tests;
