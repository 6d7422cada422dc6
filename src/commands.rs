//! The small commands (`list`, `env`, `report`) and usage errors. `run` is
//! the runner's.

use std::path::Path;
use std::process::ExitCode;

use clap::error::ErrorKind;

use crate::cli::{CompareFormat, EnvArgs, ListArgs, ReportArgs, UsageError};
use crate::envelope::Envelope;
use crate::evidence::read_run;
use crate::report::{self, table::Table, terminal::Out, workloads};
use crate::workloads::registry;

/// Prints a clap error: help and version as clap renders them, anything
/// else as one line naming what to fix, exit code 2.
pub fn usage_error(e: clap::Error) -> ExitCode {
    match e.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            let _ = e.print();
            if e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand { ExitCode::from(2) } else { ExitCode::SUCCESS }
        }
        _ => {
            let rendered = e.render().to_string();
            let first = rendered.lines().next().unwrap_or("invalid arguments").trim_start_matches("error: ");
            let tip = rendered.lines().map(str::trim).find(|l| l.starts_with("tip:")).map(|t| format!(" ({t})")).unwrap_or_default();
            report::terminal::to_stderr(&format!("proofbench: error: {first}{tip}; see 'proofbench --help'\n"));
            ExitCode::from(2)
        }
    }
}

/// `proofbench list`.
pub fn list(args: &ListArgs) -> anyhow::Result<ExitCode> {
    let defs = crate::workloads::command::load(&args.workloads, &registry::specs())?;
    let specs = crate::workloads::command::specs_with(registry::specs(), &defs);
    let specs: Vec<_> = specs.into_iter().filter(|s| args.include_selftest || !s.hidden()).collect();
    let text = if args.json {
        format!("{}\n", serde_json::to_string_pretty(&specs)?)
    } else if args.markdown {
        workloads::markdown(&specs)
    } else {
        let mut text = workloads::text(&specs);
        for d in defs.iter().filter(|d| d.verify.exit_code_only()) {
            text.push_str(&format!("warning: {}\n", d.exit_code_only_warning()));
        }
        text
    };
    Out::new().print(&text)?;
    Ok(ExitCode::SUCCESS)
}

/// `proofbench env`.
pub fn env(args: &EnvArgs) -> anyhow::Result<ExitCode> {
    let envelope = Envelope::collect(Path::new("/"), std::env::args().collect(), 0);
    let text = if args.json {
        format!("{}\n", serde_json::to_string_pretty(&envelope)?)
    } else {
        let mut t = Table::new(&[("Field", report::table::Align::Left), ("Value", report::table::Align::Left)]);
        for (k, v) in envelope.summary() {
            t.push(vec![k, v]);
        }
        let mut s = t.render();
        if let Some(w) = envelope.frequency_warning() {
            s.push_str(&format!("\nwarning: {w}\n"));
        }
        s.push_str("\nThe full record: proofbench env --json\n");
        s
    };
    Out::new().print(&text)?;
    Ok(ExitCode::SUCCESS)
}

/// `proofbench report DIR`: the report.md of a stored run, to stdout.
pub fn report(args: &ReportArgs) -> anyhow::Result<ExitCode> {
    let stored = read_run(&args.run_dir)?;
    for w in &stored.warnings {
        report::terminal::to_stderr(&format!("proofbench: warning: {w}\n"));
    }
    if let Some(file) = &args.update_doc {
        return update_doc(file, &stored);
    }
    if let Some(target) = &args.html {
        return html(target.as_deref(), &stored);
    }
    let text = if args.list_tables {
        let tables = report::doc::tables(&stored);
        let width = tables.iter().map(|t| t.id.len()).max().unwrap_or(0);
        tables.iter().map(|t| format!("{:width$}  {}\n", t.id, t.description)).collect()
    } else if let Some(fmt) = args.export {
        report::export::render(&stored, fmt)?
    } else if args.counters {
        report::render_counters(&stored)
    } else {
        report::render(&stored)
    };
    Out::new().print(&text)?;
    Ok(ExitCode::SUCCESS)
}

/// `report --html [FILE]`: report.html to FILE (atomically), to
/// DIR/report.html without FILE, or to stdout for `-`.
fn html(target: Option<&Path>, stored: &crate::evidence::StoredRun) -> anyhow::Result<ExitCode> {
    let page = report::html::render(stored);
    if target == Some(Path::new("-")) {
        Out::new().print(&page)?;
        return Ok(ExitCode::SUCCESS);
    }
    let file = target.map(Path::to_path_buf).unwrap_or_else(|| stored.dir.join("report.html"));
    let written = crate::evidence::dir::write_atomic(&file, page.as_bytes());
    written.map_err(|e| if target.is_some() { e.for_flag("--html") } else { e })?;
    report::terminal::to_stderr(&format!("proofbench: wrote {}\n", file.display()));
    Ok(ExitCode::SUCCESS)
}

/// `report --update-doc FILE`: rewrites FILE's marked blocks (atomically,
/// through a temporary file beside it); a malformed marker changes nothing.
fn update_doc(file: &std::path::Path, stored: &crate::evidence::StoredRun) -> anyhow::Result<ExitCode> {
    let text = std::fs::read_to_string(file).map_err(|e| UsageError(format!("--update-doc {}: cannot read it: {e}", file.display())))?;
    let new = report::doc::update(&text, &report::doc::tables(stored))
        .map_err(|e| UsageError(format!("--update-doc {}: {e}", file.display())))?;
    if new != text {
        crate::evidence::dir::write_atomic(file, new.as_bytes()).map_err(|e| e.for_flag("--update-doc"))?;
    }
    let blocks = text.matches("<!-- proofbench:").count() / 2;
    report::terminal::to_stderr(&format!(
        "proofbench: {} block(s) in {} {}\n",
        blocks,
        file.display(),
        if new == text { "already current" } else { "updated" }
    ));
    Ok(ExitCode::SUCCESS)
}

/// `proofbench compare BASE CANDIDATE`: two runs, each row judged against
/// the larger of the noise band and its noise floor from the history at
/// `--db` (when there is one). `proofbench compare RUN`: the variants of one
/// run, paired by round.
pub fn compare(args: &crate::cli::CompareArgs) -> anyhow::Result<ExitCode> {
    use crate::compare::{self, Verdict};
    use crate::history::floors::Floors;
    let threshold = args.threshold.unwrap_or(args.noise) / 100.0;
    let opts = compare::Options { threshold, across_machines: args.across_machines, ignore_params: args.ignore_params.clone() };
    let (base, base_name) = crate::history::command::read_run_or_id(&args.base, &args.db)?;
    let (comparisons, warnings) = match &args.candidate {
        None => {
            let cs = compare::paired::compare(&base.rows, &base_name, &opts);
            if cs.is_empty() {
                return Err(UsageError(format!(
                    "{base_name}: the run has no variants; give two runs (compare BASE CANDIDATE), or measure with --variant"
                ))
                .into());
            }
            (cs, String::new())
        }
        Some(cand) => {
            let (candidate, candidate_name) = crate::history::command::read_run_or_id(cand, &args.db)?;
            let floors = if args.db.is_file() {
                Floors::load(&crate::history::Store::open_existing(&args.db)?, &[])?
            } else {
                Floors::none(&format!("no history database at {}", args.db.display()))
            };
            let machine = compare::machine_key(&base.run.envelope);
            let mut c = compare::compare(&base, &candidate, &base_name, &candidate_name, &opts, &|r| floors.of(r, &machine));
            c.floors = Some(floors.source().to_string());
            let warnings = compare::warnings(&c, args.across_machines);
            (vec![c], warnings)
        }
    };
    let text = match args.format {
        CompareFormat::Json if args.candidate.is_some() => format!("{}\n", serde_json::to_string_pretty(&comparisons[0])?),
        CompareFormat::Json => format!("{}\n", serde_json::to_string_pretty(&comparisons)?),
        CompareFormat::Markdown => {
            let quoted: String = warnings.lines().map(|l| format!("> {}\n", report::markdown::text(l))).collect();
            let tables: Vec<String> = comparisons.iter().map(compare::render).collect();
            if quoted.is_empty() { tables.join("\n") } else { format!("{quoted}\n{}", tables.join("\n")) }
        }
        CompareFormat::Terminal => {
            report::terminal::to_stderr(&warnings);
            comparisons.iter().map(compare::render).collect::<Vec<_>>().join("\n")
        }
    };
    Out::new().print(&text)?;
    if args.fail_on_regression && comparisons.iter().any(|c| c.count(Verdict::Regressed) > 0) {
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}
