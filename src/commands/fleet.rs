//! `proofbench fleet DIR...`: many hosts' runs of the same rows, each host
//! set against the fleet's median (see `fleet`).

use std::process::ExitCode;

use crate::cli::FleetArgs;
use crate::evidence::read_run;
use crate::model::UsageError;
use crate::report::terminal::{Styled, stdout_style, to_stderr};
use crate::text::document;

/// `proofbench fleet DIR...`: the outliers' sentences and a count, then one
/// table per kind of machine; `--markdown`, `--export FORMAT` (one line per
/// host and row), `--html FILE`.
pub fn fleet(args: &FleetArgs) -> anyhow::Result<ExitCode> {
    if let Some(file) = &args.html {
        super::check_html_target(file)?;
    }
    let dirs = super::run_dirs(&args.dirs)?;
    if dirs.len() < 2 {
        let given: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
        return Err(UsageError(format!(
            "fleet needs the runs of at least two hosts; {} found ({}): give more run directories, or a results directory holding them",
            dirs.len(),
            given.join(", ")
        ))
        .into());
    }
    let mut runs = Vec::new();
    for d in &dirs {
        let stored = read_run(d)?;
        for w in &stored.warnings {
            to_stderr(&format!("proofbench: warning: {w}\n"));
        }
        runs.push((d.display().to_string(), stored));
    }
    let named: Vec<(&str, &crate::evidence::StoredRun)> = runs.iter().map(|(n, s)| (n.as_str(), s)).collect();
    let fleet = crate::fleet::build(&named, args.noise / 100.0);
    let doc = crate::fleet::document(&fleet);
    let text = match args.export {
        Some(fmt) => Styled::plain(&crate::fleet::export(&fleet, fmt)?),
        None if args.markdown => Styled::plain(&document::markdown::render(&doc.blocks)),
        None => document::terminal::render_styled(&doc.blocks, stdout_style(crate::model::ColorWhen::Auto)),
    };
    super::show_styled(&text, &doc, args.html.as_deref())?;
    Ok(ExitCode::SUCCESS)
}
