//! report: renders stored rows. It never measures, and it reads nothing but
//! the records it is given, so `proofbench report DIR` reproduces report.md
//! byte for byte. [`sections`] builds the report as a [`document`] (typed
//! blocks and inline nodes) from the records; one renderer per output turns
//! it into text: markdown (report.md, `--update-doc`, `--counters`), HTML
//! (report.html, through [`page`]) and the terminal (what `run` prints:
//! [`brief`]'s one line per row and short summary, or with `--tables` every
//! group's tables and the whole footer).

pub mod brief;
pub mod counters;
pub mod embed;
pub mod export;
pub mod facts;
pub mod overview;
pub mod page;
pub mod plot;
pub mod primitive;
pub mod profiles;
pub mod scaling;
pub mod sections;
pub mod stats_tables;
pub mod strategies;
pub mod variants;
pub mod workloads;

use crate::evidence::{Row, RunRecord, StoredRun};

use crate::text::document::terminal::{Style, Styled};
use crate::text::document::{self, Block, markdown};

/// The whole report.md of a stored run, taking the run: its records are
/// let go once the document holds what the report says, before the text is
/// made (a run of many rows then never holds both its rows and their text).
pub fn render(stored: StoredRun) -> String {
    let doc = sections::document(&stored);
    drop(stored);
    markdown::render(&doc.blocks)
}

/// The whole report of a stored run for the terminal under `style`
/// (`report DIR`), taking the run as [`render`] does.
pub fn render_terminal(stored: StoredRun, style: Style) -> Styled {
    let doc = sections::document(&stored);
    drop(stored);
    document::terminal::render_styled(&doc.blocks, style)
}

/// report.md and report.html of a stored run, from one document (its plots
/// drawn once).
pub fn render_md_and_html(stored: &StoredRun) -> (String, String) {
    let doc = sections::document(stored);
    (markdown::render(&doc.blocks), page::page(doc, &stored.rows))
}

/// The counters table of a group for the terminal under `style`, after a
/// blank line (nothing when no row has counters).
pub fn counters_section(rows: &[Row], group: &str, style: Style) -> Styled {
    let blocks = sections::counters(rows, group);
    let mut out = Styled::default();
    if !blocks.is_empty() {
        out.push(&Styled::plain("\n"));
        out.push(&document::terminal::render_styled(&blocks, style));
    }
    out
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

/// What `run` prints at its end, its directory `dir`: the short summary
/// ([`brief::end`]), or with `full` (`--tables`) report.md's whole footer
/// and where the report is.
pub fn end_of_run(run: &RunRecord, rows: &[Row], dir: &std::path::Path, full: bool, style: Style) -> Styled {
    let blocks = if full {
        let mut b = sections::footer(run, rows);
        b.push(Block::Paragraph(brief::paths(dir)));
        b
    } else {
        brief::end(run, rows, dir)
    };
    document::terminal::render_styled(&blocks, style)
}

#[cfg(test)]
pub(crate) mod tests;

#[cfg(test)]
mod fuzz_tests;
