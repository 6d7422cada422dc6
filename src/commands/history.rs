//! `proofbench history ...`: import, list, show, regressions, changes,
//! over the store of `history`.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;

use crate::cli::{ChangesFormat, HistoryArgs, HistoryCommand};
use crate::compare;
use crate::envelope::Envelope;
use crate::evidence::Row;
use crate::history::floors::Floors;
use crate::history::{Recorded, RunEntry, Store, changes, regress};
use crate::model::UsageError;
use crate::text::document::{self, Align, Block, Document, Line, Table};
use crate::text::format;
use crate::text::out::{Out, to_stderr};
use crate::text::plot::trend;

/// `proofbench history`.
pub fn history(args: &HistoryArgs) -> anyhow::Result<ExitCode> {
    match &args.command {
        HistoryCommand::Import { dirs } => import(&args.db, dirs),
        HistoryCommand::List => list(&args.db),
        HistoryCommand::Show { workload, params, plot, html } => show(&args.db, workload, params, plot.as_deref(), html.as_deref()),
        HistoryCommand::Regressions {
            workload,
            noise,
            across_machines,
            equivalence,
            fail_on_regression,
            accept_disturbed,
            allow_unknown,
            html,
        } => {
            let judged = Judged {
                threshold: *noise / 100.0,
                across_machines: *across_machines,
                equivalence: equivalence.map(|p| p / 100.0),
                fail: *fail_on_regression,
                rules: compare::GateRules { accept_disturbed: *accept_disturbed, allow_unknown: *allow_unknown },
            };
            regressions(&args.db, workload.as_deref(), judged, html.as_deref())
        }
        HistoryCommand::Changes { workload, params, noise, format, html } => {
            changes(&args.db, workload.as_deref(), params, *noise / 100.0, *format, html.as_deref())
        }
    }
}

/// `history import DIR...`: the run directories named, or held by the
/// results directories named, recorded in one transaction (all or none).
fn import(db: &Path, args: &[PathBuf]) -> anyhow::Result<ExitCode> {
    let dirs = super::run_dirs(args)?;
    let mut store = Store::open_writer(db)?;
    let mut out = String::new();
    for (d, (recorded, warnings)) in dirs.iter().zip(store.import_dirs(&dirs)?) {
        for w in warnings {
            to_stderr(&format!("proofbench: warning: {w}\n"));
        }
        let what = match recorded {
            Recorded::New(id) => format!("h:{id} imported"),
            Recorded::Existing(id) => format!("h:{id} already held"),
            Recorded::Replaced(id) => format!("h:{id} updated (its record made before it finished is replaced)"),
        };
        let state = store.run(recorded.id())?.and_then(|e| e.state()).map(|s| format!(" ({s})")).unwrap_or_default();
        out.push_str(&format!("{what} {}{state}\n", d.display()));
    }
    out.push_str(&format!("History: {}\n", store.path().display()));
    Out::new().print(&out)?;
    Ok(ExitCode::SUCCESS)
}

fn list(db: &Path) -> anyhow::Result<ExitCode> {
    let store = Store::open_reader(db)?;
    let mut t = Table::new(&[
        ("Id", Align::Left),
        ("Started", Align::Left),
        ("Label", Align::Left),
        ("Commit", Align::Left),
        ("Machine", Align::Left),
        ("Profile", Align::Left),
        ("Kind", Align::Left),
        ("Rows ok/total", Align::Right),
        ("Run", Align::Left),
    ]);
    let runs = store.runs()?;
    for r in &runs {
        t.push(vec![
            format!("h:{}", r.id),
            r.started_utc.clone(),
            r.label.clone(),
            r.short_commit(),
            r.machine.clone(),
            r.profile.clone(),
            r.kind.clone(),
            r.rows_text(),
            r.name.clone(),
        ]);
    }
    let blocks = vec![
        Block::Table(t),
        Block::paragraph(Line::from(format::counted(runs.len(), "run", "runs")).text(" in ").text(store.path().display().to_string())),
    ];
    Out::new().print(&document::terminal::render(&blocks))?;
    Ok(ExitCode::SUCCESS)
}

/// `NAME=VALUE` filters, as typed to `--params`.
fn parse_filters(params: &[String]) -> anyhow::Result<Vec<(String, String)>> {
    params
        .iter()
        .map(|p| match p.split_once('=') {
            Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_string(), v.trim().to_string())),
            _ => Err(UsageError(format!("--params {p}: expected NAME=VALUE")).into()),
        })
        .collect()
}

/// The workloads held that `pattern` names: an id, a group, or a glob.
fn matching_workloads(store: &Store, pattern: Option<&str>) -> anyhow::Result<Vec<String>> {
    let all = store.workloads()?;
    let Some(p) = pattern else { return Ok(all) };
    let glob = glob::Pattern::new(p).ok();
    let hits: Vec<String> = all
        .iter()
        .filter(|w| w.as_str() == p || w.split('.').next() == Some(p) || glob.as_ref().is_some_and(|g| g.matches(w)))
        .cloned()
        .collect();
    if hits.is_empty() {
        let held = if all.is_empty() { "none".to_string() } else { all.join(", ") };
        return Err(UsageError(format!("no rows of '{p}' in {} (workloads held: {held})", store.path().display())).into());
    }
    Ok(hits)
}

/// A stored row with the history id of its run.
type Stored = (i64, Row);
/// A point of a trend: (x, median, lo, hi).
type Point = (f64, f64, f64, f64);

/// What `history show` keeps of a stored row: the columns of its table,
/// its point in the trend and what its noise floor is looked up by (never
/// its samples, so that a long history is not held whole).
struct Shown {
    /// Index into the runs.
    run: usize,
    index: usize,
    label: String,
    axes: String,
    params: crate::model::Params,
    status: crate::model::Status,
    unit: crate::model::Unit,
    /// `(median, lo, hi)` of an ok row, the bounds the median's without an interval.
    bounds: Option<(f64, f64, f64)>,
    has_interval: bool,
    n: usize,
}

/// The rows of a workload that pass every filter, in run order (then plan
/// order), and each ok one without its samples (history id of its run,
/// row: what the change points are found from); `runs` is every run,
/// oldest first. Cost: linear in the rows, plus a sort.
fn filtered_rows(
    store: &Store,
    runs: &[RunEntry],
    workload: &str,
    filters: &[(String, String)],
) -> anyhow::Result<(Vec<Shown>, Vec<Stored>)> {
    let pos: HashMap<i64, usize> = runs.iter().enumerate().map(|(i, r)| (r.id, i)).collect();
    let (mut rows, mut slim) = (Vec::new(), Vec::new());
    store.each_row_of(workload, |id, mut row| {
        let Some(&run) = pos.get(&id) else { return Ok(()) };
        if !filters.iter().all(|(k, v)| crate::model::params::param_matches(&row.cell.params, k, v)) {
            return Ok(());
        }
        if row.status == crate::model::Status::Ok {
            let mut kept = row.clone();
            kept.samples = Vec::new();
            kept.details = serde_json::Value::Null;
            kept.stderr_tail = String::new();
            slim.push((id, kept));
        }
        row.samples = Vec::new();
        rows.push(Shown {
            run,
            index: row.cell.index,
            axes: row.axes_text(),
            bounds: row.median_with_bounds(),
            has_interval: row.interval().is_some(),
            n: row.stats.as_ref().map_or(0, |s| s.work.n),
            status: row.status,
            unit: row.unit,
            label: row.cell.label,
            params: row.cell.params,
        });
        Ok(())
    })?;
    rows.sort_by_key(|r| (r.run, r.index));
    Ok((rows, slim))
}

fn show(db: &Path, workload: &str, params: &[String], plot: Option<&Path>, html: Option<&Path>) -> anyhow::Result<ExitCode> {
    let filters = parse_filters(params)?;
    let store = Store::open_reader(db)?;
    let names = matching_workloads(&store, Some(workload))?;
    if !names.iter().any(|n| n == workload) {
        return Err(UsageError(format!("'{workload}' is not a workload id held in {} (held: {})", db.display(), names.join(", "))).into());
    }
    let runs = store.runs()?;
    let (rows, slim) = filtered_rows(&store, &runs, workload, &filters)?;
    if rows.is_empty() {
        return Err(UsageError(format!("no rows of {workload} match --params {}", params.join(" "))).into());
    }
    let mut t = Table::new(&[
        ("Run", Align::Left),
        ("Started", Align::Left),
        ("Label", Align::Left),
        ("Commit", Align::Left),
        ("Axes", Align::Left),
        ("Status", Align::Left),
        ("Median", Align::Right),
        ("95% CI", Align::Right),
        ("n", Align::Right),
    ]);
    // The trend: one line per (axes, label); x = the position of the run
    // among the runs that hold this workload. Each line keeps its rows
    // (`members`, oldest first).
    let mut run_ticks: Vec<i64> = Vec::new();
    let mut lines: BTreeMap<String, Vec<(f64, f64, f64, f64)>> = BTreeMap::new();
    let mut members: HashMap<String, Vec<usize>> = HashMap::new();
    let labels: std::collections::BTreeSet<&str> = rows.iter().map(|r| r.label.as_str()).collect();
    let line_key = |r: &Shown| match (labels.len() > 1, r.axes.as_str()) {
        (_, "-") => r.label.clone(),
        (true, axes) => format!("{} {axes}", r.label),
        (false, axes) => axes.to_string(),
    };
    for (i, r) in rows.iter().enumerate() {
        let e = &runs[r.run];
        if run_ticks.last() != Some(&e.id) {
            run_ticks.push(e.id);
        }
        let median = r.bounds.map_or_else(|| "n/a".to_string(), |(m, _, _)| format::scaled(m, r.unit));
        let ci = match r.bounds {
            Some((m, lo, hi)) if r.has_interval => format::ci_relative(lo, hi, m),
            _ => "n/a".to_string(),
        };
        t.push(vec![
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
        if let Some((m, lo, hi)) = r.bounds {
            let key = line_key(r);
            lines.entry(key.clone()).or_default().push((run_ticks.len() as f64, m, lo, hi));
            members.entry(key).or_default().push(i);
        }
    }
    let unit = rows[0].unit;
    let ticks: Vec<String> = run_ticks.iter().map(|id| format!("h:{id}")).collect();
    let lines: Vec<(String, Vec<Point>)> = lines.into_iter().collect();
    // Each line's noise floor, from its newest row: a band around the
    // median of its runs. A run's machine is read once however many lines
    // it holds, and a floor looked up once however many rows share it.
    let floors = Floors::load(&store, &[workload.to_string()])?;
    let mut machines: HashMap<usize, String> = HashMap::new();
    let mut looked_up: HashMap<(String, String, String), crate::compare::FloorLookup> = HashMap::new();
    let mut floor_of = |r: &Shown| {
        let machine = machines
            .entry(r.run)
            .or_insert_with(|| store.envelope(runs[r.run].id).map(|env| env.machine_key()).unwrap_or_default())
            .clone();
        let params = serde_json::to_string(&r.params).unwrap_or_default();
        looked_up
            .entry((params, r.label.clone(), machine))
            .or_insert_with_key(|(_, _, m)| floors.of_cell(workload, &r.params, &r.label, m))
            .clone()
    };
    let mut floor_notes = Vec::new();
    let bands: Vec<Option<(f64, f64)>> = lines
        .iter()
        .map(|l| {
            // The newest row of the line with a floor (a line may mix
            // parameters, such as a treatment), else why the newest has none.
            let (label, points) = l;
            let mut lookups = members[label].iter().rev().map(|&i| floor_of(&rows[i]));
            let first = lookups.next()?;
            let found = if first.is_ok() { first } else { lookups.find(Result::is_ok).unwrap_or(first) };
            let center = crate::stats::median(&points.iter().map(|p| p.1).collect::<Vec<_>>());
            match found {
                Ok(f) => {
                    let (runs, builds) = (format::counted(f.runs, "run", "runs"), format::counted(f.builds, "build", "builds"));
                    floor_notes.push(Line::from(format!("{label}: {} (from {runs} of {builds})", format::percent(f.value))));
                    Some((center / (1.0 + f.value), center * (1.0 + f.value)))
                }
                Err(why) => {
                    floor_notes.push(Line::from(format!("{label}: ")).marked(&why));
                    None
                }
            }
        })
        .collect();
    // The change points of `history changes` (at its default --noise),
    // each on the line of its rows.
    let found = show_changes(&store, &runs, slim, &floors);
    let x_of = |id: i64| run_ticks.iter().position(|t| *t == id);
    let series: Vec<trend::Series> = lines
        .iter()
        .zip(&bands)
        .map(|((label, points), band)| {
            let changes = found
                .series
                .iter()
                .filter(|s| {
                    let axes = if s.axes == "-" {
                        s.label.clone()
                    } else if labels.len() > 1 {
                        format!("{} {}", s.label, s.axes)
                    } else {
                        s.axes.clone()
                    };
                    axes == *label
                })
                .flat_map(|s| &s.changes)
                .filter_map(|p| {
                    let note = format!(
                        "change point: {} from h:{} to h:{} (ratio {:.3}, 95% interval {:.3}..{:.3})",
                        p.verdict, p.last_before.id, p.first_after.id, p.ratio, p.ratio_ci95[0], p.ratio_ci95[1]
                    );
                    Some(trend::Change { before: x_of(p.last_before.id)?, after: x_of(p.first_after.id)?, ratio: p.ratio, note })
                })
                .collect();
            let points = points.iter().map(|p| (p.0 as usize - 1, p.1, p.2, p.3)).collect();
            trend::Series { label: label.clone(), points, band: *band, changes }
        })
        .collect();
    let changed = series.iter().map(|s| s.changes.len()).sum::<usize>();
    let svg = trend::chart(&format!("{workload}: median per run"), unit, &ticks, &series);
    // A plot file only where asked (--plot); the page draws it inline.
    let mut plot_line = None;
    if let Some(path) = plot {
        let drawn = svg.as_ref().map_err(|why| UsageError(format!("--plot {}: no plot to write: {why}", path.display())))?;
        crate::evidence::dir::write_atomic(path, drawn.as_bytes()).with_context(|| format!("writing the plot {}", path.display()))?;
        plot_line = Some(Block::paragraph(Line::from("Plot: ").text(path.display().to_string())));
    }
    let filter_text = if filters.is_empty() {
        String::new()
    } else {
        format!(" ({})", filters.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(", "))
    };
    let title = format!("{workload}{filter_text}: median per run");
    let doc = Document {
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
            Block::Table(t),
            Block::Compact(vec![
                Block::paragraph("Noise floor (how far the median moves between runs of one build here; the band in the plot):"),
                Block::List(floor_notes),
            ]),
        ],
    };
    let mut doc = doc;
    doc.blocks.extend(plot_line);
    super::show(&document::terminal::render(&doc.blocks), &doc, html)?;
    Ok(ExitCode::SUCCESS)
}

/// The change points `history changes` finds (at its default `--noise`
/// of 2%) in the ok rows `slim` of one workload (history id of the run, row).
fn show_changes(store: &Store, runs: &[RunEntry], slim: Vec<(i64, Row)>, floors: &Floors) -> changes::Changes {
    let envelopes: RefCell<HashMap<i64, Option<Envelope>>> = RefCell::new(HashMap::new());
    let envelope = |id: i64| envelopes.borrow_mut().entry(id).or_insert_with(|| store.envelope(id).ok()).clone();
    let machine = |id: i64| match envelope(id) {
        Some(e) => (e.machine_key(), e.machine_short_name()),
        None => (format!("unreadable envelope of h:{id}"), format!("h:{id} (envelope unreadable)")),
    };
    let series = regress::series(runs, slim, &machine);
    let floor = |s: &regress::Series| {
        let (run, row) = &s.points[s.points.len() - 1];
        match envelope(run.id) {
            Some(e) => floors.of(row, &e.machine_key()),
            None => Err("no floor: the run's envelope is unreadable".to_string()),
        }
    };
    changes::find(&series, 0.02, &floor, floors.source())
}

/// How `history regressions` judges the steps, and whether a regressed
/// one fails it.
struct Judged {
    threshold: f64,
    across_machines: bool,
    equivalence: Option<f64>,
    fail: bool,
    rules: compare::GateRules,
}

fn regressions(db: &Path, pattern: Option<&str>, judged: Judged, html: Option<&Path>) -> anyhow::Result<ExitCode> {
    let Judged { threshold, across_machines, equivalence, fail, rules } = judged;
    let store = Store::open_reader(db)?;
    let runs = store.runs()?;
    let mut rows = Vec::new();
    for w in matching_workloads(&store, pattern)? {
        rows.extend(store.rows_of(&w)?);
    }
    let envelopes: RefCell<HashMap<i64, Option<Envelope>>> = RefCell::new(HashMap::new());
    let envelope = |id: i64| envelopes.borrow_mut().entry(id).or_insert_with(|| store.envelope(id).ok()).clone();
    // One series per machine (a fleet's nodes are as many machines), unless
    // the steps are to span machines.
    let machine = |id: i64| match envelope(id) {
        _ if across_machines => (String::new(), String::new()),
        Some(e) => (e.machine_key(), e.machine_short_name()),
        None => (format!("unreadable envelope of h:{id}"), format!("h:{id} (envelope unreadable)")),
    };
    let series = regress::series(&runs, rows, &machine);
    let machines = |a: i64, b: i64| match (envelope(a), envelope(b)) {
        (Some(x), Some(y)) => x.machine_differences(&y),
        _ => vec!["envelope unreadable".to_string()],
    };
    let opts = compare::Options { threshold, across_machines, equivalence, ..compare::Options::default() };
    let floors = Floors::load(&store, &[])?;
    let floor = |id: i64, row: &Row| match envelope(id) {
        Some(e) => floors.of(row, &e.machine_key()),
        None => Err("no floor: the run's envelope is unreadable".to_string()),
    };
    let steps = regress::steps(&series, &opts, &machines, &floor);
    let doc = regress::document(&steps, threshold, floors.source());
    super::show(&document::terminal::render(&doc.blocks), &doc, html)?;
    if !fail {
        return Ok(ExitCode::SUCCESS);
    }
    // The gate of compare, over the steps judged together.
    let (code, why) = compare::gate(steps.iter().map(|s| &s.judged), rules);
    if let Some(why) = why {
        to_stderr(&format!("proofbench: {why} (--fail-on-regression)\n"));
    }
    Ok(ExitCode::from(code))
}

/// `history changes`: the change points of every series of the workloads
/// `pattern` names (rows filtered by `params`), one series per machine as
/// `history regressions` makes them.
fn changes(
    db: &Path,
    pattern: Option<&str>,
    params: &[String],
    threshold: f64,
    format: ChangesFormat,
    html: Option<&Path>,
) -> anyhow::Result<ExitCode> {
    let filters = parse_filters(params)?;
    let store = Store::open_reader(db)?;
    let runs = store.runs()?;
    let workloads = matching_workloads(&store, pattern)?;
    let mut rows = Vec::new();
    for w in &workloads {
        rows.extend(
            store
                .rows_of(w)?
                .into_iter()
                .filter(|(_, r)| filters.iter().all(|(k, v)| crate::model::params::param_matches(&r.cell.params, k, v))),
        );
    }
    if rows.is_empty() && !filters.is_empty() {
        let p = params.join(" -p ");
        return Err(UsageError(format!("-p {p}: no rows of {} match", workloads.join(", "))).into());
    }
    let envelopes: RefCell<HashMap<i64, Option<Envelope>>> = RefCell::new(HashMap::new());
    let envelope = |id: i64| envelopes.borrow_mut().entry(id).or_insert_with(|| store.envelope(id).ok()).clone();
    let machine = |id: i64| match envelope(id) {
        Some(e) => (e.machine_key(), e.machine_short_name()),
        None => (format!("unreadable envelope of h:{id}"), format!("h:{id} (envelope unreadable)")),
    };
    let series = regress::series(&runs, rows, &machine);
    let floors = Floors::load(&store, &workloads)?;
    // A series' floor from its newest row (its runs share one machine).
    let floor = |s: &regress::Series| {
        let (run, row) = &s.points[s.points.len() - 1];
        match envelope(run.id) {
            Some(e) => floors.of(row, &e.machine_key()),
            None => Err("no floor: the run's envelope is unreadable".to_string()),
        }
    };
    let found = changes::find(&series, threshold, &floor, floors.source());
    let doc = changes::document(&found);
    let text = match format {
        ChangesFormat::Json => format!("{}\n", serde_json::to_string_pretty(&found)?),
        ChangesFormat::Markdown => document::markdown::render(&doc.blocks),
        ChangesFormat::Terminal => document::terminal::render(&doc.blocks),
    };
    super::show(&text, &doc, html)?;
    Ok(ExitCode::SUCCESS)
}
