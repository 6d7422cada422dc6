//! runner::life: one run on this machine, from start to end. Plans it,
//! opens its run directory with its first record, runs the rounds
//! (`local/`), finishes the record (`record`) whatever stopped the rounds,
//! then concludes: the report rendered from the stored records, the
//! observers' end (the history), the terminal's summary, the exit code.
//! The launched side of a run through a launcher lives the same life
//! ([`run_here`]), streamed instead of shown (`remote/launched.rs`).

use std::path::{Path, PathBuf};

use crate::evidence::{RunDir, RunRecord, StatusCounts, read_run};
use crate::report;
use crate::text::format::counted;
use crate::text::out::Out;

use super::EXIT_INTERRUPTED;
use super::config::{RunConfig, RunRequest};
use super::local::rounds::{self, Outcome};
use super::observe::Observers;
use super::perf::check as perf_check;
use super::record::{Start, finish_record, starting};
use super::remote::launcher;

/// Creates the run's directory: `--run-dir`, else a new one under `--out`
/// named after the start time, the host and the label. A path that cannot
/// be a run directory (a file, /proc) is the flag's error: exit 2, naming
/// it; a full disk is the machine's (exit 1).
pub(crate) fn create_run_dir(req: &RunRequest, envelope: &crate::envelope::Envelope, label: &str) -> anyhow::Result<RunDir> {
    Ok(match &req.output.run_dir {
        Some(p) => RunDir::create_at(p).map_err(|e| e.for_flag("--run-dir"))?,
        None => {
            let host = envelope.hostname.ok().map(String::as_str).unwrap_or("unknown-host");
            let part = |s: &str| crate::model::file_name::bounded(s, 48);
            let name = format!("{}-{}-{}", run_dir_stamp(&envelope.started_utc), part(host), part(label));
            RunDir::create_in(&req.output.out, &name).map_err(|e| e.for_flag("--out"))?
        }
    })
}

/// The start of a run directory's name: the start time as
/// `20260101T000000Z`. The time comes from the machine that ran the plan
/// (a launched side's stream among them), so it is read as a timestamp and
/// its digits alone make the name: nothing in it can name another
/// directory. A value that is not one gives `unknown-time`.
pub(crate) fn run_dir_stamp(started_utc: &str) -> String {
    if humantime::parse_rfc3339(started_utc).is_err() {
        return "unknown-time".into();
    }
    let stamp: String = started_utc.chars().filter(|c| c.is_ascii_digit() || matches!(c, 'T' | 'Z' | '.')).collect();
    crate::model::file_name::bounded(&stamp, 32)
}

/// One run here: plan, run the rounds, write the records and the report;
/// returns the exit code and the run directory.
pub(crate) fn run_local(req: &RunRequest) -> anyhow::Result<(u8, PathBuf)> {
    let (dir, run, mut observers, failed) = run_here(req, false, |run, dir| {
        if !req.output.quiet {
            announce(run, req, dir, None);
        }
        Observers::for_run(req, &run.plan)
    })?;
    let written = dir.write_run(&run);
    if let Some(e) = failed {
        if let Err(w) = written {
            crate::text::out::to_stderr(&format!("proofbench: warning: the run's record could not be finished: {w}\n"));
        }
        anyhow::bail!(e);
    }
    written?;
    let code = conclude(req, &dir, &mut observers, true, None)?.code;
    Ok((code, dir.path().to_path_buf()))
}

/// Plans `req` on this machine, opens its run directory with the run's
/// first record, hands that to `started` for the observers, and runs the
/// rounds. Returns the directory, the run's record finished (not yet
/// written), the observers, and the rounds' error if they failed: a run
/// that has started always finishes its record, with the rows written so
/// far and the cells without one named. `launched`: this is the launched
/// side of a run through `--launcher`, whose profiling pass is skipped.
pub(crate) fn run_here(
    req: &RunRequest,
    launched: bool,
    started: impl FnOnce(&RunRecord, &Path) -> Observers,
) -> anyhow::Result<(RunDir, RunRecord, Observers, Option<String>)> {
    let start = Start::now();
    let mut cfg = RunConfig::new(&req.spec, None)?;
    // The launched side profiles nothing: its files would stay there. The
    // launching side records every row's pass as skipped (remote.rs).
    cfg.perf = cfg.options.measurement.perf_pass.filter(|_| !launched).map(|mode| {
        let setup = perf_check::setup(mode, cfg.timeout);
        if let Some(why) = setup.unavailable()
            && !req.output.quiet
        {
            crate::text::out::to_stderr(&format!("proofbench: --perf-pass {}: skipped on every row: {why}\n", mode.as_str()));
        }
        setup
    });
    let mut dir = create_run_dir(req, &cfg.envelope, &cfg.label)?;
    let mut run = starting(&req.spec, cfg.label.clone(), cfg.envelope.clone(), cfg.plan.clone(), &dir, req.output.commit.as_deref());
    dir.write_run(&run)?;
    let mut observers = started(&run, dir.path());
    let outcome = rounds::execute(&cfg, &mut dir, &mut observers);
    let failed = outcome.as_ref().err().map(|e| format!("{e:#}"));
    let outcome = outcome.unwrap_or_else(|_| Outcome {
        rows: read_run(dir.path()).map(|s| s.rows).unwrap_or_default(),
        rounds: Vec::new(),
        interrupted: false,
        idle: None,
    });
    finish_record(&mut run, &cfg, &outcome, &start);
    Ok((dir, run, observers, failed))
}

/// How a run ended, in brief: its exit code, its rows by status in one line
/// (`3 rows: 3 ok`), and what else a one-line summary of it must say
/// ([`report::brief::states`]: cut short, interrupted, busy, disturbed).
pub(crate) struct Concluded {
    pub(crate) code: u8,
    pub(crate) counts: String,
    pub(crate) states: Vec<String>,
}

/// The exit code of a finished run's record: 130 if interrupted, 1 with a
/// failed row, else 0.
pub(crate) fn exit_code(run: &RunRecord) -> u8 {
    match (run.interrupted, run.counts.as_ref().map_or(0, StatusCounts::failures)) {
        (true, _) => EXIT_INTERRUPTED,
        (false, 0) => 0,
        (false, _) => 1,
    }
}

/// The end of a run whose records are final in `dir`: the report rendered
/// from them as stored (so that `proofbench report DIR` gives the same
/// bytes), the observers' end (the history), the terminal's summary when
/// `say` (a short one, or with --tables report.md's whole footer), and the
/// exit code, with the run in brief (`cut`: why its stream was cut, if it
/// was).
pub(crate) fn conclude(
    req: &RunRequest,
    dir: &RunDir,
    observers: &mut Observers,
    say: bool,
    cut: Option<&str>,
) -> anyhow::Result<Concluded> {
    let stored = read_run(dir.path())?;
    let (md, html) = report::render_md_and_html(&stored);
    dir.write_file("report.md", &md)?;
    dir.write_file("report.html", &html)?;
    drop((md, html));
    // What is said of the stored run is made now, and the rows let go
    // before the observers' end (the history reads them again).
    let summary = match (say, req.output.json, req.output.quiet) {
        _ if req.silent => None,
        (false, _, _) | (true, true, true) => None,
        (true, true, false) => {
            Some((true, report::end_of_run(&stored.run, &stored.rows, dir.path(), req.output.tables, crate::text::out::Style::PLAIN)))
        }
        (true, false, quiet) => {
            // After the groups' lines, a blank line first.
            let mut text = crate::text::out::Styled::plain(if quiet { "" } else { "\n" });
            text.push(&report::end_of_run(&stored.run, &stored.rows, dir.path(), req.output.tables, req.style()));
            Some((false, text))
        }
    };
    let code = exit_code(&stored.run);
    let counts = crate::text::document::plain(&report::brief::counts(&stored.run, &stored.rows));
    let states = report::brief::states(&stored.run, &stored.rows, cut);
    drop(stored);
    observers.run_finished(dir.path())?;
    match summary {
        Some((true, text)) => crate::text::out::to_stderr(text.as_str()),
        Some((false, text)) => Out::deferring().print_styled(&text)?,
        None => {}
    }
    // The records, the report and the history are written: now the
    // terminal's failure, if it had one, can end the run.
    if let Some(e) = crate::text::out::deferred_error() {
        anyhow::bail!("writing to stdout: {e} (the run's records are complete in {})", dir.path().display());
    }
    Ok(Concluded { code, counts, states })
}

/// One line on stderr: how many cells and trials, and where the run goes.
pub(crate) fn announce(run: &RunRecord, req: &RunRequest, dir: &Path, launcher: Option<&launcher::Launcher>) {
    let through = launcher.map(|l| format!(", through `{}`", l.display(&[]))).unwrap_or_default();
    let trials = match &run.trials {
        Some(t) if t.min == t.max => format!("{} each", counted(t.min as usize, "trial", "trials")),
        Some(t) => format!("{} to {} trials each", t.min, t.max),
        None => String::new(),
    };
    let variants = if run.variants.is_empty() {
        String::new()
    } else {
        let names: Vec<&str> = run.variants.iter().map(|v| v.name.as_str()).collect();
        let groups = run.plan.len() / run.variants.len().max(1);
        let how = if run.options.selection.lockstep { "in lockstep" } else { "interleaved" };
        format!(" ({groups} under each of the variants {}, {how})", names.join(", "))
    };
    crate::text::out::to_stderr(&format!(
        "proofbench: {}{variants}, {trials}, profile {}{through}, writing {}\n",
        counted(run.plan.len(), "cell", "cells"),
        req.spec.options.measurement.profile.as_str(),
        dir.display()
    ));
}
