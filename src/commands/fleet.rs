//! `proofbench fleet DIR...`: many hosts' runs of the same rows, each host
//! set against the fleet's median (see `fleet`).

use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path};
use std::process::ExitCode;

use crate::cli::FleetArgs;
use crate::evidence::read_run;
use crate::model::UsageError;
use crate::text::document;
use crate::text::out::{Styled, stdout_style, to_stderr};

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
    // The page links each host's report from where the page is written.
    let page = match &args.html {
        Some(file) => {
            let from = match file.parent() {
                _ if file == Path::new("-") => Path::new("."),
                Some(p) if !p.as_os_str().is_empty() => p,
                _ => Path::new("."),
            };
            let reports: Vec<Option<String>> = dirs.iter().map(|d| report_href(from, d)).collect();
            crate::fleet::page(&fleet, &reports)
        }
        None => doc,
    };
    super::show(&text, &page, args.html.as_deref())?;
    Ok(ExitCode::SUCCESS)
}

/// The href of `run`'s report.html from the directory `from` (a relative
/// path, each part percent-encoded), `None` where the run has no report or
/// either path cannot be resolved.
fn report_href(from: &Path, run: &Path) -> Option<String> {
    let report = run.join("report.html");
    if !report.is_file() {
        return None;
    }
    let (to, from) = (report.canonicalize().ok()?, from.canonicalize().ok()?);
    let (a, b): (Vec<Component>, Vec<Component>) = (from.components().collect(), to.components().collect());
    let common = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let mut parts: Vec<String> = vec!["..".to_string(); a.len() - common];
    for c in &b[common..] {
        parts.push(crate::text::format::percent_encoded(c.as_os_str().as_bytes(), b""));
    }
    Some(parts.join("/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hosts_report_is_linked_by_a_relative_encoded_path() {
        let tmp = tempfile::tempdir().unwrap();
        let run = tmp.path().join("results/node 1#a");
        std::fs::create_dir_all(&run).unwrap();
        std::fs::create_dir_all(tmp.path().join("pages")).unwrap();
        assert_eq!(report_href(&tmp.path().join("pages"), &run), None, "no report, no link");
        std::fs::write(run.join("report.html"), "x").unwrap();
        assert_eq!(report_href(&tmp.path().join("pages"), &run).as_deref(), Some("../results/node%201%23a/report.html"));
        assert_eq!(report_href(tmp.path(), &run).as_deref(), Some("results/node%201%23a/report.html"));
    }
}
