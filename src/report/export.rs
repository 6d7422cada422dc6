//! Exports of a stored run's rows for other tools: CSV, JSON, a markdown
//! table, and the Bencher Metric Format (BMF) JSON that continuous
//! benchmarking services ingest. One line (or entry) per row; only `ok` rows
//! carry figures.

use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::evidence::StoredRun;
use crate::model::{Direction, ExportFormat, Status, Unit, value_text};
use crate::text::csv::{csv_field, measure, opt};
use crate::text::format;
use crate::text::table::{Align, Grid};

/// The exported figures of one row.
#[derive(Clone, Debug, Serialize)]
pub struct ExportRow {
    pub row_id: String,
    pub workload: String,
    pub group: String,
    /// `name=value, ...` of the axes (`-` when none).
    pub axes: String,
    pub params: String,
    pub status: String,
    pub unit: Unit,
    pub direction: Direction,
    /// The headline: the median of the trial medians.
    pub median: Option<f64>,
    /// Its 95% interval over trials.
    pub ci95_lo: Option<f64>,
    pub ci95_hi: Option<f64>,
    /// Trials with timed samples.
    pub trials: Option<usize>,
    /// Timed samples over every trial (mean, stddev, CV, min and max are of them).
    pub n: Option<usize>,
    pub mean: Option<f64>,
    pub stddev: Option<f64>,
    pub cv: Option<f64>,
    pub min: Option<f64>,
    pub max: Option<f64>,
}

pub fn rows(stored: &StoredRun) -> Vec<ExportRow> {
    stored
        .rows
        .iter()
        .map(|r| {
            let s = (r.status == Status::Ok).then_some(r.stats.as_ref()).flatten().map(|st| &st.work);
            ExportRow {
                row_id: r.cell.row_id.clone(),
                workload: r.cell.workload.clone(),
                group: r.cell.group.clone(),
                axes: r.axes_text(),
                params: r.cell.params.iter().map(|(k, v)| format!("{k}={}", value_text(v))).collect::<Vec<_>>().join(" "),
                status: r.status.as_str().into(),
                unit: r.unit,
                direction: r.direction,
                median: r.median(),
                ci95_lo: r.interval().map(|i| i.0),
                ci95_hi: r.interval().map(|i| i.1),
                trials: r.headline().map(|h| h.trials),
                n: s.map(|s| s.n),
                mean: s.map(|s| s.mean),
                stddev: s.map(|s| s.stddev),
                cv: s.and_then(|s| s.cv),
                min: s.map(|s| s.min),
                max: s.map(|s| s.max),
            }
        })
        .collect()
}

/// The Bencher name of a row: workload, then its axes.
fn bench_name(r: &ExportRow) -> String {
    if r.axes == "-" { r.workload.clone() } else { format!("{} ({})", r.workload, r.axes) }
}

pub fn render(stored: &StoredRun, fmt: ExportFormat) -> anyhow::Result<String> {
    let rows = rows(stored);
    Ok(match fmt {
        ExportFormat::Json => format!("{}\n", serde_json::to_string_pretty(&rows)?),
        ExportFormat::Csv => {
            let mut out = String::from(
                "row_id,workload,group,axes,params,status,unit,direction,median,ci95_lo,ci95_hi,trials,n,mean,stddev,cv,min,max\n",
            );
            for r in &rows {
                let fields = [
                    csv_field(&r.row_id),
                    csv_field(&r.workload),
                    csv_field(&r.group),
                    csv_field(&r.axes),
                    csv_field(&r.params),
                    r.status.clone(),
                    r.unit.as_str().into(),
                    r.direction.as_str().into(),
                    opt(r.median),
                    opt(r.ci95_lo),
                    opt(r.ci95_hi),
                    r.trials.map(|n| n.to_string()).unwrap_or_default(),
                    r.n.map(|n| n.to_string()).unwrap_or_default(),
                    opt(r.mean),
                    opt(r.stddev),
                    opt(r.cv),
                    opt(r.min),
                    opt(r.max),
                ];
                out.push_str(&fields.join(","));
                out.push('\n');
            }
            out
        }
        ExportFormat::Markdown => {
            let mut t = Grid::new(&[
                ("Workload", Align::Left),
                ("Axes", Align::Left),
                ("Status", Align::Left),
                ("Median", Align::Right),
                ("95% CI", Align::Right),
                ("Trials", Align::Right),
                ("n", Align::Right),
                ("CV", Align::Right),
            ]);
            for r in &rows {
                t.push(vec![
                    r.workload.clone(),
                    r.axes.clone(),
                    r.status.clone(),
                    r.median.map(|m| format::scaled(m, r.unit)).unwrap_or_else(|| "n/a".into()),
                    match (r.ci95_lo, r.ci95_hi, r.median) {
                        (Some(lo), Some(hi), Some(m)) => format::ci_relative(lo, hi, m),
                        _ => "n/a".into(),
                    },
                    r.trials.map(|n| n.to_string()).unwrap_or_else(|| "n/a".into()),
                    r.n.map(|n| n.to_string()).unwrap_or_else(|| "n/a".into()),
                    r.cv.map(format::percent).unwrap_or_else(|| "n/a".into()),
                ]);
            }
            t.render()
        }
        ExportFormat::Bmf => {
            let mut out = Map::new();
            for r in rows.iter().filter(|r| r.median.is_some()) {
                let mut m = Map::new();
                m.insert("value".into(), json!(r.median));
                if let (Some(lo), Some(hi)) = (r.ci95_lo, r.ci95_hi)
                    && lo.is_finite()
                    && hi.is_finite()
                {
                    m.insert("lower_value".into(), json!(lo));
                    m.insert("upper_value".into(), json!(hi));
                }
                let mut measures = Map::new();
                measures.insert(measure(r.unit).into(), Value::Object(m));
                out.insert(bench_name(r), Value::Object(measures));
            }
            format!("{}\n", serde_json::to_string_pretty(&Value::Object(out))?)
        }
    })
}
