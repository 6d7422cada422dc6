//! A comparison as a forest plot: each judged row's ratio and interval,
//! marked by its word and verdict, as the plain [`Interval`] that
//! [`crate::text::plot::forest`] draws. It lives with `compare` (its input
//! is a [`Comparison`]), so that the drawing sits in the output layer below
//! every stage and `compare`, `history` and the commands share it.

use crate::compare::{Comparison, RowComparison, Verdict, Word};
use crate::text::document::{Block, Chart};
use crate::text::plot::forest::{Interval, Mark, chart};

/// The forest plot of the page: each compared row's ratio on its 95%
/// interval, coloured by its word, the band of SAME shaded.
pub fn of_comparison(c: &Comparison) -> Block {
    let rows: Vec<Interval> = c
        .rows
        .iter()
        .filter_map(|r| of_row(r, if r.axes == "-" { r.workload.clone() } else { format!("{} {}", r.workload, r.axes) }, None))
        .collect();
    let svg = chart("Ratio of each row, candidate / base", "ratio (candidate / base)", &rows, Some(super::equivalence(&c.rows)));
    Block::Chart(Chart {
        caption: "Each row's ratio (dot) on its 95% interval (line), largest first, coloured by its verdict; the line at 1 is no \
                  change, the shaded band the band of SAME."
            .into(),
        svg,
    })
}

/// A judged row as a line of a forest plot, named `name`, with its own
/// noise `band` shaded where given; `None` without a word, a ratio or an
/// interval.
pub fn of_row(r: &RowComparison, name: String, band: Option<f64>) -> Option<Interval> {
    let mark = match (r.word?, r.verdict) {
        (Word::Different, Verdict::Regressed) => Mark::Worse,
        (Word::Different, _) => Mark::Better,
        (Word::Same, _) => Mark::Same,
        (Word::Unknown, _) => Mark::Unknown,
    };
    let (ratio, ci) = (r.ratio?, r.ratio_ci95?);
    let note = format!("{name}: ratio {ratio:.3} (95% interval {:.3}..{:.3}), {}", ci[0], ci[1], r.word_text());
    Some(Interval { name, ratio, ci, mark, band, note })
}
