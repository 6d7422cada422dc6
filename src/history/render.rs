//! The page of a trend (`history show`): its SVG chart (each line's points
//! with their intervals, its noise floor a band, its change points dashed)
//! and the document around it (the table of rows, each line's floor). Made
//! from a [`Trend`] alone; writes nothing (the command writes the plot and
//! prints the document where asked).

use crate::text::document::{self, Align, Block, Document, Line, Table};
use crate::text::format;
use crate::text::plot::trend as chart;

use super::trend::Trend;

/// The trend's chart: the SVG, or why there is none (no line has a point).
pub fn chart(t: &Trend) -> Result<String, String> {
    let ticks: Vec<String> = t.ticks.iter().map(|id| format!("h:{id}")).collect();
    let series: Vec<chart::Series> = t
        .lines
        .iter()
        .map(|l| {
            let changes = l
                .changes
                .iter()
                .map(|m| {
                    let p = &m.point;
                    let note = format!(
                        "change point: {} from h:{} to h:{} (ratio {:.3}, 95% interval {:.3}..{:.3})",
                        p.verdict, p.last_before.id, p.first_after.id, p.ratio, p.ratio_ci95[0], p.ratio_ci95[1]
                    );
                    chart::Change { before: m.before, after: m.after, ratio: p.ratio, note }
                })
                .collect();
            chart::Series { label: l.label.clone(), points: l.points.clone(), band: l.band, changes }
        })
        .collect();
    chart::chart(&format!("{}: median per run", t.workload), t.unit, &ticks, &series)
}

/// The trend as a document: its title, the chart `svg` (as [`chart()`] made
/// it), the table of its rows and each line's noise floor.
pub fn document(t: &Trend, svg: Result<String, String>) -> Document {
    let mut table = Table::new(&[
        ("Run", Align::Left),
        ("Started", Align::Left),
        ("Label", Align::Left),
        ("Commit", Align::Left),
        ("Axes", Align::Left),
        ("Status", Align::Left),
        ("Median", Align::Right),
        ("95% CI", Align::Right),
        ("n", Align::Right),
    ])
    // A narrow terminal keeps the run and its median longest.
    .dropping(&[2, 8, 1, 3, 5, 7, 4, 6]);
    for r in &t.rows {
        let e = &t.runs[r.run];
        let median = r.bounds.map_or_else(|| "n/a".to_string(), |(m, _, _)| format::scaled(m, r.unit));
        let ci = match r.bounds {
            Some((m, lo, hi)) if r.has_interval => format::ci_relative(lo, hi, m),
            _ => "n/a".to_string(),
        };
        table.push(vec![
            format!("h:{}", e.id),
            e.started_utc.clone(),
            e.label.clone(),
            e.short_commit(),
            r.axes.clone(),
            r.status.as_str().to_string(),
            median,
            ci,
            r.n.to_string(),
        ]);
    }
    let floor_notes: Vec<Line> = t
        .lines
        .iter()
        .map(|l| match &l.floor {
            Ok(f) => {
                let (runs, builds) = (format::counted(f.runs, "run", "runs"), format::counted(f.builds, "build", "builds"));
                Line::from(format!("{}: {} (from {runs} of {builds})", l.label, format::percent(f.value)))
            }
            Err(why) => Line::from(format!("{}: ", l.label)).marked(why),
        })
        .collect();
    let changed = t.lines.iter().map(|l| l.changes.len()).sum::<usize>();
    let filter_text = if t.filters.is_empty() {
        String::new()
    } else {
        format!(" ({})", t.filters.pairs.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(", "))
    };
    let title = format!("{}{filter_text}: median per run", t.workload);
    Document {
        title: title.clone(),
        blocks: vec![
            Block::heading(1, title),
            Block::Chart(document::Chart {
                caption: match changed {
                    0 => "The median of each run (dot) with its 95% interval, each line's noise floor shaded; history changes finds \
                          no change point in them."
                        .to_string(),
                    n => format!(
                        "The median of each run (dot) with its 95% interval, each line's noise floor shaded; the {} history \
                         changes finds dashed, with the new level over the old.",
                        format::counted(n, "change point", "change points")
                    ),
                },
                svg,
            }),
            Block::Table(table),
            Block::Compact(vec![
                Block::paragraph("Noise floor (how far the median moves between runs of one build here; the band in the plot):"),
                Block::List(floor_notes),
            ]),
        ],
    }
}
