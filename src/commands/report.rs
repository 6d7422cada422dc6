//! `proofbench report DIR`: a stored run's report re-rendered from its
//! records (markdown, counters, an export, HTML, or the tables of a
//! document), never re-running anything.

use std::path::Path;
use std::process::ExitCode;

use crate::cli::{ReportArgs, ReportFormat};
use crate::evidence::{StoredRun, read_run};
use crate::model::UsageError;
use crate::report;
use crate::text::out::Out;

/// `proofbench report DIR`: a stored run's report for the terminal (its
/// tables fitted to its width, coloured on a terminal), or with `--format
/// markdown` its report.md, to stdout.
pub fn report(args: &ReportArgs) -> anyhow::Result<ExitCode> {
    let stored = read_run(&args.run_dir)?;
    for w in &stored.warnings {
        crate::text::out::to_stderr(&format!("proofbench: warning: {w}\n"));
    }
    if let Some(file) = &args.update_doc {
        return update_doc(file, &stored);
    }
    if let Some(target) = &args.html {
        return html(target.as_deref(), &stored);
    }
    if !(args.list_tables || args.export.is_some() || args.counters) {
        match args.format {
            ReportFormat::Markdown => Out::new().print(&report::render(stored))?,
            ReportFormat::Terminal => Out::new().print_styled(&report::render_terminal(stored, super::stdout_style()))?,
        }
        return Ok(ExitCode::SUCCESS);
    }
    let text = if args.list_tables {
        let tables = report::embed::tables(&stored);
        let width = tables.iter().map(|t| t.id.len()).max().unwrap_or(0);
        tables.iter().map(|t| format!("{:width$}  {}\n", t.id, t.description)).collect()
    } else if let Some(fmt) = args.export {
        report::export::render(&stored, fmt)?
    } else {
        report::render_counters(&stored)
    };
    Out::new().print(&text)?;
    Ok(ExitCode::SUCCESS)
}

/// `report --html [FILE]`: report.html to FILE (atomically), to
/// DIR/report.html without FILE, or to stdout for `-`.
fn html(target: Option<&Path>, stored: &StoredRun) -> anyhow::Result<ExitCode> {
    let page = report::page::render(stored);
    if let Some(file) = target {
        super::write_html(file, &page)?;
        return Ok(ExitCode::SUCCESS);
    }
    let file = stored.dir.join("report.html");
    crate::evidence::dir::write_atomic(&file, page.as_bytes())?;
    crate::text::out::to_stderr(&format!("proofbench: wrote {}\n", file.display()));
    Ok(ExitCode::SUCCESS)
}

/// `report --update-doc FILE`: rewrites FILE's marked blocks (atomically,
/// through a temporary file beside it); a malformed marker changes nothing.
fn update_doc(file: &Path, stored: &StoredRun) -> anyhow::Result<ExitCode> {
    let text = std::fs::read_to_string(file).map_err(|e| UsageError(format!("--update-doc {}: cannot read it: {e}", file.display())))?;
    let new = report::embed::update(&text, &report::embed::tables(stored))
        .map_err(|e| UsageError(format!("--update-doc {}: {e}", file.display())))?;
    if new != text {
        crate::evidence::dir::write_atomic(file, new.as_bytes()).map_err(|e| e.for_flag("--update-doc"))?;
    }
    let blocks = text.matches("<!-- proofbench:").count() / 2;
    crate::text::out::to_stderr(&format!(
        "proofbench: {} block(s) in {} {}\n",
        blocks,
        file.display(),
        if new == text { "already current" } else { "updated" }
    ));
    Ok(ExitCode::SUCCESS)
}
