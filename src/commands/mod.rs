//! commands: one handler per subcommand. Each turns what was typed (the
//! `cli` types) into the configuration of a stage (a run request, compare
//! options, a claims file...), checked first, then calls that stage and
//! prints what it returns. Only this layer knows the command line; the
//! stages below it take plain values.

pub(crate) mod bisect;
pub(crate) mod claims;
pub(crate) mod compare;
pub(crate) mod env;
pub(crate) mod fleet;
pub(crate) mod history;
pub(crate) mod internal;
pub(crate) mod list;
pub(crate) mod manual;
pub(crate) mod report;
pub(crate) mod run;
pub(crate) mod slurm;

use std::path::Path;
use std::process::ExitCode;

use clap::error::ErrorKind;

use crate::cli::{Cli, Command};
use crate::evidence::{StoredRun, read_run_or_id};
use crate::history::Store;
use crate::model::UsageError;
use crate::text::document::Document;
use crate::text::out::{Out, to_stderr};

/// Runs the subcommand `cli` names; returns its exit code.
pub fn dispatch(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Run(args) => run::run(&args),
        Command::Noise(args) => run::noise(&args),
        Command::List(args) => list::list(&args),
        Command::Env(args) => env::env(&args),
        Command::Report(args) => report::report(&args),
        Command::Compare(args) => compare::compare(&args),
        Command::Fleet(args) => fleet::fleet(&args),
        Command::History(args) => history::history(&args),
        Command::CheckClaims(args) => claims::check_claims(&args),
        Command::Bisect(args) => bisect::bisect(&args),
        Command::Slurm(args) => slurm::slurm(&args),
        Command::Completions(args) => manual::completions(&args),
        Command::Man(args) => manual::man(&args),
        Command::Worker(_) => internal::worker(),
        Command::Noop { token } => internal::noop(&token),
        Command::MallocProvider => internal::malloc_provider(),
        Command::RemoteRun => crate::runner::remote::serve(),
    }
}

/// Prints an error as one line on stderr; returns its exit code
/// (`exit_code_of`: 2 for input errors, 130 for a step a stop signal
/// ended, which is said as `proofbench: stopped: ...`, 1 otherwise).
pub fn error(e: &anyhow::Error) -> ExitCode {
    let code = crate::exit_code_of(e);
    let what = if code == crate::runner::EXIT_INTERRUPTED { "stopped" } else { "error" };
    to_stderr(&format!("proofbench: {what}: {e:#}\n"));
    ExitCode::from(code)
}

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
            let mut first = rendered.lines().next().unwrap_or("invalid arguments").trim_start_matches("error: ").to_string();
            if first.ends_with(':') {
                // "the following required arguments were not provided:" and the list below it, on one line.
                let listed: Vec<&str> = rendered.lines().skip(1).map(str::trim).take_while(|l| !l.is_empty()).collect();
                first = format!("{first} {}", listed.join(", "));
            }
            let tip = rendered.lines().map(str::trim).find(|l| l.starts_with("tip:")).map(|t| format!(" ({t})")).unwrap_or_default();
            to_stderr(&format!("proofbench: error: {first}{tip}; see 'proofbench --help'\n"));
            ExitCode::from(2)
        }
    }
}

/// Reads a run given as a directory or, when `arg` is a history id (`h:12`,
/// `#12`) and no such path exists, from the database `db`; prints the run's
/// warnings. Returns the run and the name to print for it.
pub(crate) fn read_run_arg(arg: &Path, db: &Path) -> anyhow::Result<(StoredRun, String)> {
    let (stored, name) = read_run_or_id(arg, |id| Store::open_reader(db)?.load(id))?;
    for w in &stored.warnings {
        to_stderr(&format!("proofbench: warning: {w}\n"));
    }
    Ok((stored, name))
}

/// The run directories `args` name: each one that holds a run.json, and
/// for each other directory every subdirectory of it that does (a results
/// directory), in name order; a run named twice (`RES RES/`, a link to
/// it, a directory and the results directory holding it) once, with a
/// warning. A path that is neither is a usage error naming it.
pub(crate) fn run_dirs(args: &[std::path::PathBuf]) -> anyhow::Result<Vec<std::path::PathBuf>> {
    let mut out = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let mut keep = |p: std::path::PathBuf, out: &mut Vec<std::path::PathBuf>| {
        if seen.insert(std::fs::canonicalize(&p).unwrap_or_else(|_| p.clone())) {
            out.push(p);
        } else {
            to_stderr(&format!("proofbench: warning: {} is named twice; it counts once\n", p.display()));
        }
    };
    for a in args {
        if a.join("run.json").is_file() {
            keep(a.clone(), &mut out);
            continue;
        }
        let entries = match std::fs::read_dir(a) {
            Ok(e) => e,
            Err(e) => return Err(UsageError(format!("{}: not a run directory ({e})", a.display())).into()),
        };
        let mut held: Vec<std::path::PathBuf> =
            entries.filter_map(Result::ok).map(|e| e.path()).filter(|p| p.is_dir() && p.join("run.json").is_file()).collect();
        if held.is_empty() {
            return Err(UsageError(format!("{}: not a run directory (no run.json), nor a directory holding any", a.display())).into());
        }
        held.sort();
        for p in held {
            keep(p, &mut out);
        }
    }
    Ok(out)
}

/// Writes `page` to FILE, as `--html FILE` asks (`report`, `compare`,
/// `check-claims`, `history show|regressions`, `noise`): atomically, with the
/// modes the umask allows, saying so on stderr; `-` prints it. A FILE that
/// cannot be written (a directory that does not exist) is the flag's error:
/// `--html FILE: ...`, exit 2.
pub(crate) fn write_html(file: &Path, page: &str) -> anyhow::Result<()> {
    if file == Path::new("-") {
        Out::new().print(page)?;
        return Ok(());
    }
    crate::evidence::dir::write_atomic(file, page.as_bytes()).map_err(|e| e.for_flag("--html"))?;
    to_stderr(&format!("proofbench: wrote {}\n", file.display()));
    Ok(())
}

/// How stdout shows a command's text: within the terminal's width (100
/// columns when it is not a terminal), coloured where the terminal has
/// colour and NO_COLOR is unset.
pub(crate) fn stdout_style() -> crate::text::out::Style {
    crate::text::out::stdout_style(crate::model::ColorWhen::Auto)
}

/// A command's document out: `text` (the document as the terminal
/// renderer made it, its colour codes kept, or as markdown or JSON) to
/// stdout and, with `--html FILE`, the document as a page to FILE, written
/// first (a FILE that cannot be written stops the command before it
/// prints). `--html -` prints the page instead of `text`.
pub(crate) fn show(text: &crate::text::out::Styled, doc: &Document, html: Option<&Path>) -> anyhow::Result<()> {
    if let Some(file) = html {
        write_html(file, &crate::report::page::html(doc))?;
        if file == Path::new("-") {
            return Ok(());
        }
    }
    Out::new().print_styled(text)?;
    Ok(())
}

/// Refuses, before any work, an `--html FILE` whose directory does not
/// exist (what `noise` checks before it measures): the same error writing
/// it would give.
pub(crate) fn check_html_target(file: &Path) -> anyhow::Result<()> {
    if file == Path::new("-") {
        return Ok(());
    }
    let dir = file.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    match std::fs::metadata(dir) {
        Ok(m) if m.is_dir() => Ok(()),
        Ok(_) => Err(crate::evidence::EvidenceError::io(file, std::io::Error::from_raw_os_error(libc::ENOTDIR)).for_flag("--html").into()),
        Err(e) => Err(crate::evidence::EvidenceError::io(file, e).for_flag("--html").into()),
    }
}
