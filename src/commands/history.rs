//! `proofbench history ...`: import, list, show, regressions, changes,
//! over the store of `history`: each parses its flags, calls `history`
//! (the trend, the steps, the change points, their documents), writes
//! where asked and prints.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;

use crate::cli::{ChangesFormat, HistoryArgs, HistoryCommand};
use crate::compare;
use crate::history::floors::Floors;
use crate::history::trend::{self, Filters};
use crate::history::{Recorded, Store, changes, regress, render};
use crate::model::UsageError;
use crate::model::settings::Gate;
use crate::text::document::{self, Align, Block, Line, Table};
use crate::text::format;
use crate::text::out::{Out, Styled, to_stderr};

/// `proofbench history`.
pub fn history(args: &HistoryArgs) -> anyhow::Result<ExitCode> {
    match &args.command {
        HistoryCommand::Import { dirs } => import(&args.db, dirs),
        HistoryCommand::List => list(&args.db),
        HistoryCommand::Show { workload, params, plot, html } => show(&args.db, workload, params, plot.as_deref(), html.as_deref()),
        HistoryCommand::Regressions { workload, noise, across_machines, equivalence, gate, html } => {
            let judged = Judged {
                threshold: *noise / 100.0,
                across_machines: *across_machines,
                equivalence: equivalence.map(|p| p / 100.0),
                gate: *gate,
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
    ])
    // A narrow terminal keeps the id and when it started longest.
    .dropping(&[8, 6, 5, 4, 2, 7, 3, 1]);
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
    Out::new().print_styled(&document::terminal::render_styled(&blocks, super::stdout_style()))?;
    Ok(ExitCode::SUCCESS)
}

/// `history show`: the trend of one workload ([`trend::trend`]), its plot
/// written where `--plot` asks, its page printed (or written by `--html`).
fn show(db: &Path, workload: &str, params: &[String], plot: Option<&Path>, html: Option<&Path>) -> anyhow::Result<ExitCode> {
    let filters = Filters::parse(params)?;
    let store = Store::open_reader(db)?;
    let found = trend::trend(&store, workload, &filters)?;
    let svg = render::chart(&found);
    // A plot file only where asked (--plot); the page draws it inline.
    let mut plot_line = None;
    if let Some(path) = plot {
        let drawn = svg.as_ref().map_err(|why| UsageError(format!("--plot {}: no plot to write: {why}", path.display())))?;
        crate::evidence::dir::write_atomic(path, drawn.as_bytes()).with_context(|| format!("writing the plot {}", path.display()))?;
        plot_line = Some(Block::paragraph(Line::from("Plot: ").text(path.display().to_string())));
    }
    let mut doc = render::document(&found, svg);
    doc.blocks.extend(plot_line);
    super::show(&document::terminal::render_styled(&doc.blocks, super::stdout_style()), &doc, html)?;
    Ok(ExitCode::SUCCESS)
}

/// How `history regressions` judges the steps, and whether a regressed
/// one fails it.
struct Judged {
    threshold: f64,
    across_machines: bool,
    equivalence: Option<f64>,
    gate: Gate,
}

fn regressions(db: &Path, pattern: Option<&str>, judged: Judged, html: Option<&Path>) -> anyhow::Result<ExitCode> {
    let Judged { threshold, across_machines, equivalence, gate } = judged;
    let store = Store::open_reader(db)?;
    let runs = store.runs()?;
    let mut rows = Vec::new();
    for w in trend::matching_workloads(&store, pattern)? {
        rows.extend(store.rows_of(&w)?);
    }
    let opts = compare::Options { threshold, across_machines, equivalence, ..compare::Options::default() };
    let (steps, floors) = trend::steps_of(&store, &runs, rows, &opts)?;
    let doc = regress::document(&steps, threshold, &floors);
    super::show(&document::terminal::render_styled(&doc.blocks, super::stdout_style()), &doc, html)?;
    if !gate.fail_on_regression {
        return Ok(ExitCode::SUCCESS);
    }
    // The gate of compare, over the steps judged together.
    let (code, why) = compare::gate(steps.iter().map(|s| &s.judged), &gate);
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
    let filters = Filters::parse(params)?;
    let store = Store::open_reader(db)?;
    let runs = store.runs()?;
    let workloads = trend::matching_workloads(&store, pattern)?;
    let mut rows = Vec::new();
    for w in &workloads {
        rows.extend(store.rows_of(w)?.into_iter().filter(|(_, r)| filters.pass(r)));
    }
    if rows.is_empty() && !filters.is_empty() {
        let p = params.join(" -p ");
        return Err(UsageError(format!("-p {p}: no rows of {} match", workloads.join(", "))).into());
    }
    let floors = Floors::load(&store, &workloads)?;
    let found = trend::changes_of(&store, &runs, rows, &floors, threshold);
    let doc = changes::document(&found);
    let text = match format {
        ChangesFormat::Json => Styled::plain(&format!("{}\n", serde_json::to_string_pretty(&found)?)),
        ChangesFormat::Markdown => Styled::plain(&document::markdown::render(&doc.blocks)),
        ChangesFormat::Terminal => document::terminal::render_styled(&doc.blocks, super::stdout_style()),
    };
    super::show(&text, &doc, html)?;
    Ok(ExitCode::SUCCESS)
}
