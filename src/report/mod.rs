//! report: renders stored rows. It never measures, and it reads nothing but
//! the records it is given, so `proofbench report DIR` reproduces report.md
//! byte for byte. [`sections`] builds the report as a [`document`] (typed
//! blocks and inline nodes) from the records; one renderer per output turns
//! it into text: markdown (report.md, `--update-doc`, `--counters`), HTML
//! (report.html, through [`page`]) and the terminal (what `run` prints).

pub mod counters;
pub mod embed;
pub mod export;
pub mod facts;
pub mod overview;
pub mod page;
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

use crate::text::document::{self, Block, markdown};

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
    (markdown::render(&doc.blocks), page::page(doc, &stored.rows))
}

/// The counters table of a group for the terminal, after a blank line (""
/// when no row has counters).
pub fn counters_section(rows: &[Row], group: &str) -> String {
    let blocks = sections::counters(rows, group);
    if blocks.is_empty() { String::new() } else { format!("\n{}", document::terminal::render(&blocks)) }
}

/// Only the counters tables of a stored run (`report --counters`).
pub fn render_counters(stored: &StoredRun) -> String {
    let blocks: Vec<_> = facts::groups(&stored.run, &stored.rows).iter().flat_map(|g| sections::counters(&stored.rows, g)).collect();
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

#[cfg(test)]
pub(crate) mod tests;

#[cfg(test)]
mod fuzz_tests;
