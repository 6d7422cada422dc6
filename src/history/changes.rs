//! history changes: the change points of each row series, where its level
//! shifted over the runs of one machine (`stats::changepoint`: PELT on the
//! log medians with a penalty, levels closer than the smallest change worth
//! naming merged). The series are those of `history regressions`
//! ([`super::regress::series`]: one per workload, axis values, system label
//! and machine identity, a Slurm node apart from its host included), so the
//! runs of several machines are never one series. The smallest change named
//! is the larger of `--noise` and the row's noise floor from the history;
//! the noise of one run (`sigma`) the larger of the floor's and the series'
//! own (its successive differences). A change's interval comes from the
//! runs' spread around the levels named (`Detector::changes`).
//!
//! Nothing is stored: each query rebuilds every series' detector from the
//! history's medians (the pushes an appended run would make, so the cost
//! of a query is that of the pushes; scripts/changepoints.sh prints the
//! time of one append to 10,000 runs). Pure: the caller reads the database.

use serde::Serialize;

use crate::compare::FloorLookup;
use crate::model::{Direction, Params, Unit};
use crate::stats::changepoint::{Change, Detector, MIN_SIZE, Settings, noise_of};
use crate::text::document::{Align, Block, Document, Line, Table};
use crate::text::format;

use super::RunEntry;
use super::regress::Series;

/// The schema of `history changes --format json`.
pub const CHANGES_SCHEMA: &str = "proofbench.changes/1";

/// A run as the changes name it.
#[derive(Clone, Debug, Serialize)]
pub struct RunRef {
    /// The history id (`h:ID`).
    pub id: i64,
    /// The commit of the system under test, where recorded.
    pub commit: Option<String>,
    pub started_utc: String,
}

impl RunRef {
    fn of(r: &RunEntry) -> RunRef {
        RunRef { id: r.id, commit: r.commit.clone(), started_utc: r.started_utc.clone() }
    }

    fn text(&self) -> String {
        let commit = self.commit.as_deref().map(|c| c.chars().take(10).collect()).unwrap_or_else(|| "-".to_string());
        format!("h:{} {commit}", self.id)
    }
}

/// One change point of a series.
#[derive(Clone, Debug, Serialize)]
pub struct ChangePoint {
    /// The last run at the old level and the first at the new one: the
    /// commit range the change came in.
    pub last_before: RunRef,
    pub first_after: RunRef,
    /// The levels (geometric means of the medians) before and after.
    pub level_before: f64,
    pub level_after: f64,
    /// `level_after / level_before`, with its 95% interval.
    pub ratio: f64,
    pub ratio_ci95: [f64; 2],
    /// `regressed` or `improved`, by the row's direction.
    pub verdict: &'static str,
    /// The history ids of the runs at each level.
    pub runs_before: Vec<i64>,
    pub runs_after: Vec<i64>,
}

/// One series examined.
#[derive(Clone, Debug, Serialize)]
pub struct SeriesChanges {
    pub workload: String,
    pub axes: String,
    pub params: Params,
    pub label: String,
    /// The machine its runs ran on.
    pub machine: String,
    pub unit: Unit,
    /// Its ok runs, oldest first.
    pub runs: Vec<i64>,
    /// The row's noise floor (a fraction), where it has one.
    pub floor: Option<f64>,
    /// Why it has none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub no_floor: Option<String>,
    /// The smallest change named (a fraction), and the noise of one run's
    /// log median the test assumed; absent when too few runs to examine.
    pub min_change: f64,
    pub sigma: Option<f64>,
    pub changes: Vec<ChangePoint>,
}

/// The whole answer, as `--format json` prints it.
#[derive(Clone, Debug, Serialize)]
pub struct Changes {
    pub schema: &'static str,
    /// `--noise`, a fraction.
    pub threshold: f64,
    /// Where the noise floors came from.
    pub floors: String,
    pub series: Vec<SeriesChanges>,
}

/// The change points of every series in `series` (each with at least one
/// point). `floor` gives a series' noise floor (from its newest row);
/// `threshold` is `--noise`. O(runs × candidates) per series.
pub fn find(series: &[Series], threshold: f64, floor: &dyn Fn(&Series) -> FloorLookup, floors: &str) -> Changes {
    let out = series
        .iter()
        .filter(|s| !s.points.is_empty())
        .map(|s| {
            let row = &s.points[s.points.len() - 1].1;
            let medians: Vec<(usize, f64)> = s
                .points
                .iter()
                .enumerate()
                .filter_map(|(i, (_, r))| r.median().filter(|m| *m > 0.0 && m.is_finite()).map(|m| (i, m)))
                .collect();
            let values: Vec<f64> = medians.iter().map(|p| p.1).collect();
            let floor = floor(s).map(|f| (f.value, f.sd));
            let min_change = threshold.max(floor.as_ref().map_or(0.0, |f| f.0));
            let mut out = SeriesChanges {
                workload: row.cell.workload.clone(),
                axes: row.axes_text(),
                params: row.cell.params.clone(),
                label: s.label.clone(),
                machine: s.machine.clone(),
                unit: row.unit,
                runs: medians.iter().map(|&(i, _)| s.points[i].0.id).collect(),
                floor: floor.as_ref().ok().map(|f| f.0),
                no_floor: floor.as_ref().err().cloned(),
                min_change,
                sigma: None,
                changes: Vec::new(),
            };
            if values.len() < 2 * MIN_SIZE {
                return out;
            }
            let sigma = floor.as_ref().map_or(0.0, |f| f.1).max(noise_of(&values).unwrap_or(0.0));
            let settings = Settings::new(sigma, min_change);
            let Ok(detector) = Detector::over(settings, &values) else { return out };
            out.sigma = Some(settings.sigma);
            let run = |k: usize| &s.points[medians[k].0].0;
            let level = |r: &std::ops::Range<usize>| (values[r.clone()].iter().map(|v| v.ln()).sum::<f64>() / r.len() as f64).exp();
            out.changes = detector
                .changes()
                .into_iter()
                .map(|c: Change| {
                    let worse = match row.direction {
                        Direction::LowerIsBetter => c.ratio > 1.0,
                        Direction::HigherIsBetter => c.ratio < 1.0,
                    };
                    ChangePoint {
                        last_before: RunRef::of(run(c.at - 1)),
                        first_after: RunRef::of(run(c.at)),
                        level_before: level(&c.before),
                        level_after: level(&c.after),
                        ratio: c.ratio,
                        ratio_ci95: [c.lo, c.hi],
                        verdict: if worse { "regressed" } else { "improved" },
                        runs_before: c.before.clone().map(|k| run(k).id).collect(),
                        runs_after: c.after.clone().map(|k| run(k).id).collect(),
                    }
                })
                .collect();
            out
        })
        .collect();
    Changes { schema: CHANGES_SCHEMA, threshold, floors: floors.to_string(), series: out }
}

/// The changes as a document: one table line per change point (the commit
/// range, the levels, the ratio with its interval, the runs at each
/// level), then what was examined and where the floors came from.
pub fn document(c: &Changes) -> Document {
    let title = "proofbench history changes";
    let mut t = Table::new(&[
        ("Workload", Align::Left),
        ("Axes", Align::Left),
        ("System", Align::Left),
        ("Machine", Align::Left),
        ("Last before", Align::Left),
        ("First after", Align::Left),
        ("Before", Align::Right),
        ("After", Align::Right),
        ("Ratio", Align::Right),
        ("95% CI", Align::Right),
        ("Runs", Align::Right),
        ("Change", Align::Left),
    ])
    // A narrow terminal keeps the row and what changed longest.
    .dropping(&[3, 2, 10, 6, 7, 9, 4, 5, 8, 1]);
    for s in &c.series {
        let value = |v: f64| format::scaled(v, s.unit);
        for p in &s.changes {
            t.push(vec![
                s.workload.clone(),
                s.axes.clone(),
                s.label.clone(),
                s.machine.clone(),
                p.last_before.text(),
                p.first_after.text(),
                value(p.level_before),
                value(p.level_after),
                format!("{:.3}", p.ratio),
                format!("{:.3}..{:.3}", p.ratio_ci95[0], p.ratio_ci95[1]),
                format!("{} -> {}", p.runs_before.len(), p.runs_after.len()),
                format!("{} (beyond {})", p.verdict, format::percent(s.min_change)),
            ]);
        }
    }
    let mut blocks = vec![
        Block::heading(1, title),
        Block::paragraph(format!(
            "Each series is one row (workload, axes, system label) on one machine, its ok runs in time order. A change point is \
             where its level shifted: found by PELT on the log medians (a change must explain more of the series' variation than \
             noise alone would, docs/METHODOLOGY.md), and named only when the levels differ by more than the smallest change \
             worth naming, the noise threshold of {} or the row's noise floor where that is larger. Ratio = level after / level \
             before (geometric means of the medians), with a 95% interval; Runs = runs at the level before -> after.",
            format::percent(c.threshold)
        )),
    ];
    let examined = c.series.iter().filter(|s| s.sigma.is_some()).count();
    let changes: usize = c.series.iter().map(|s| s.changes.len()).sum();
    let short = c.series.len() - examined;
    if changes > 0 {
        blocks.push(Block::Table(t));
    }
    let mut summary = vec![Line::from(format!(
        "{} examined, {} found{}.",
        format::counted(examined, "series", "series"),
        format::counted(changes, "change point", "change points"),
        match short {
            0 => String::new(),
            n => format!("; {} with fewer than {} ok runs not examined", format::counted(n, "series", "series"), 2 * MIN_SIZE),
        }
    ))];
    let floored = c.series.iter().filter(|s| s.floor.is_some()).count();
    summary.push(Line::from(format!("Noise floors from {}: {floored} of {} series have one.", c.floors, c.series.len())));
    blocks.push(Block::Paragraph(summary));
    Document { title: title.into(), blocks }
}
