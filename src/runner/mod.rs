//! runner: the parent side of a run. Checks what was asked into a run
//! configuration (`config`), then runs rounds of trials (`rounds`), each
//! trial a fresh worker process (`trial`, `spawn`), each row written and
//! flushed when its last trial is decided (`compose`) and handed to the
//! observers (`observe`: progress, terminal lines, JSON stream, plots and
//! HTML, history). A failing trial never stops the run; a stop signal ends
//! it early with every finished trial kept and the report still written.

pub mod compose;
pub mod config;
pub mod flame;
pub mod hosts;
pub mod launcher;
pub mod observe;
pub mod observer;
pub mod perf;
pub mod perf_check;
pub mod preload;
pub mod progress;
pub mod remote;
pub mod rounds;
pub mod spawn;
pub mod stream;
pub mod trial;

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use crate::compare;
use crate::evidence::{RUN_SCHEMA, RunCpu, RunDir, RunRecord, StatusCounts, read_run};
use crate::measure::affinity;
use crate::measure::interference::{self, Interference};
use crate::measure::rusage::Rusage;
use crate::report;
use crate::text::format::counted;
use crate::text::out::Out;

use config::RunConfig;
pub use config::{RunRequest, RunSpec};
use observe::Observers;
use rounds::Outcome;

/// Exit code of a run stopped by a signal (128 + SIGINT).
pub const EXIT_INTERRUPTED: u8 = 130;

/// The worse of two run exit codes: interrupted, then failures, then success.
fn worse(a: u8, b: u8) -> u8 {
    let rank = |c: u8| match c {
        EXIT_INTERRUPTED => 3,
        0 => 0,
        1 => 1,
        _ => 2,
    };
    if rank(b) > rank(a) { b } else { a }
}

/// The commit of the system under test: `--commit REV` as given (`none`
/// for none), else `git rev-parse HEAD` in the current directory (none
/// outside a repository or without git).
pub fn commit_of(flag: Option<&str>) -> Option<String> {
    match flag {
        Some("none") => None,
        Some(rev) => Some(rev.to_string()),
        None => {
            let out = std::process::Command::new("git")
                .args(["rev-parse", "HEAD"])
                .stdin(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .output()
                .ok()?;
            let text = String::from_utf8_lossy(&out.stdout).trim().to_string();
            (out.status.success() && !text.is_empty()).then_some(text)
        }
    }
}

/// This process's peak resident set since its last exec (VmHWM), KiB.
fn own_peak_rss_kib() -> Option<u64> {
    <procfs_core::process::Status as procfs_core::FromRead>::from_file("/proc/self/status").ok()?.vmhwm
}

/// Runs what `req` asks for, here or through its launchers (every host of
/// `--hosts` at once, at most `--max-parallel`); returns the exit code (the
/// worst of the runs).
pub fn run(req: &RunRequest) -> anyhow::Result<ExitCode> {
    run_and_say_where(req).map(|(code, _)| code)
}

/// [`run`], returning also the run directories written, in order (one per
/// host of `--hosts` that started its run).
pub fn run_and_say_where(req: &RunRequest) -> anyhow::Result<(ExitCode, Vec<PathBuf>)> {
    crate::process::signals::install()?;
    if req.per_host() {
        return hosts::run_all(req);
    }
    let (code, dir) = match req.launchers.first() {
        None => run_local(req)?,
        Some(l) => {
            l.probe_envelope()?;
            let launched = run_launched(req, l, req.spec.label.clone(), None)?;
            (launched.code, launched.dir.expect("one launcher: a run that did not start is an error"))
        }
    };
    Ok((ExitCode::from(code), vec![dir]))
}

/// Creates the run's directory: `--run-dir`, else a new one under `--out`
/// named after the start time, the host and the label. A path that cannot
/// be a run directory (a file, /proc) is the flag's error: exit 2, naming
/// it; a full disk is the machine's (exit 1).
fn create_run_dir(req: &RunRequest, envelope: &crate::envelope::Envelope, label: &str) -> anyhow::Result<RunDir> {
    Ok(match &req.run_dir {
        Some(p) => RunDir::create_at(p).map_err(|e| e.for_flag("--run-dir"))?,
        None => {
            let host = envelope.hostname.ok().map(String::as_str).unwrap_or("unknown-host");
            let part = |s: &str| crate::model::file_name::bounded(s, 48);
            let name = format!("{}-{}-{}", run_dir_stamp(&envelope.started_utc), part(host), part(label));
            RunDir::create_in(&req.out, &name).map_err(|e| e.for_flag("--out"))?
        }
    })
}

/// The start of a run directory's name: the start time as
/// `20260101T000000Z`. The time comes from the machine that ran the plan
/// (a launched side's stream among them), so it is read as a timestamp and
/// its digits alone make the name: nothing in it can name another
/// directory. A value that is not one gives `unknown-time`.
fn run_dir_stamp(started_utc: &str) -> String {
    if humantime::parse_rfc3339(started_utc).is_err() {
        return "unknown-time".into();
    }
    let stamp: String = started_utc.chars().filter(|c| c.is_ascii_digit() || matches!(c, 'T' | 'Z' | '.')).collect();
    crate::model::file_name::bounded(&stamp, 32)
}

/// One run here: plan, run the rounds, write the records and the report;
/// returns the exit code and the run directory.
fn run_local(req: &RunRequest) -> anyhow::Result<(u8, PathBuf)> {
    let (dir, run, mut observers, failed) = run_here(req, false, |run, dir| {
        if !req.quiet {
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

/// The launched side of a launched run (`proofbench remote-run`): the plan
/// made and run here, every event streamed on stdout, nothing written but
/// the working run directory (`req.run_dir`), which the caller removes.
/// Returns the exit code.
fn run_streamed(req: &RunRequest) -> anyhow::Result<u8> {
    let (_dir, run, _observers, failed) = run_here(req, true, |run, _| {
        stream::StreamOut::new().send(&stream::Event::Start { schema: stream::STREAM_SCHEMA.into(), run: Box::new(run.clone()) });
        Observers::streamed()
    })?;
    stream::StreamOut::new().send(&stream::Event::End { run: Box::new(run.clone()) });
    if let Some(e) = failed {
        anyhow::bail!(e);
    }
    Ok(exit_code(&run))
}

/// Plans `req` on this machine, opens its run directory with the run's
/// first record, hands that to `started` for the observers, and runs the
/// rounds. Returns the directory, the run's record finished (not yet
/// written), the observers, and the rounds' error if they failed: a run
/// that has started always finishes its record, with the rows written so
/// far and the cells without one named. `launched`: this is the launched
/// side of a run through `--launcher`, whose profiling pass is skipped.
fn run_here(
    req: &RunRequest,
    launched: bool,
    started: impl FnOnce(&RunRecord, &Path) -> Observers,
) -> anyhow::Result<(RunDir, RunRecord, Observers, Option<String>)> {
    let start = Start::now();
    let mut cfg = RunConfig::new(&req.spec, None)?;
    // The launched side profiles nothing: its files would stay there. The
    // launching side records every row's pass as skipped (remote.rs).
    cfg.perf = cfg.options.perf_pass.filter(|_| !launched).map(|mode| {
        let setup = perf_check::setup(mode, cfg.timeout);
        if let Some(why) = setup.unavailable()
            && !req.quiet
        {
            crate::text::out::to_stderr(&format!("proofbench: --perf-pass {}: skipped on every row: {why}\n", mode.as_str()));
        }
        setup
    });
    let mut dir = create_run_dir(req, &cfg.envelope, &cfg.label)?;
    let mut run = run_record(&cfg, req, &dir);
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

/// Makes the observers of one host's run of `--hosts` at its start.
type HostObservers<'a> = dyn Fn(&RunRecord, &Path) -> Observers + 'a;

/// How a run ended, in brief: its exit code, its rows by status in one line
/// (`3 rows: 3 ok`), and what else a one-line summary of it must say
/// ([`report::brief::states`]: cut short, interrupted, busy, disturbed).
struct Concluded {
    code: u8,
    counts: String,
    states: Vec<String>,
}

/// A run through a launcher, concluded: how it ended, and its run
/// directory (absent when the launched side never started the run; that
/// is an error with one launcher, and `--hosts` reports it by host).
struct Launched {
    code: u8,
    dir: Option<PathBuf>,
    counts: String,
    states: Vec<String>,
}

/// One run through `launcher` (its side probed): the launched side runs
/// the plan and streams it; this side writes the run directory and the
/// report. `view` replaces the terminal's bar and lines (one line per host
/// with `--hosts`).
fn run_launched(
    req: &RunRequest,
    launcher: &launcher::Launcher,
    label: Option<String>,
    view: Option<&HostObservers>,
) -> anyhow::Result<Launched> {
    let received = remote::drive(req, launcher, label, &mut |run, dir| match view {
        Some(make) => make(run, dir),
        None => {
            if !req.quiet {
                announce(run, req, dir, Some(launcher));
            }
            Observers::for_run(req, &run.plan)
        }
    })?;
    let remote::Received { dir, observers, run, rows, cut } = received;
    let (Some(dir), Some(mut observers), Some(run)) = (dir, observers, run) else {
        return Ok(Launched { code: 1, dir: None, counts: "the run did not start".into(), states: Vec::new() });
    };
    if let Some(why) = &cut {
        let missing = &run.not_run;
        crate::text::out::to_stderr(&format!(
            "proofbench: {}: the run was cut short: {why}; {rows} of {} rows arrived and are kept in {}{}\n",
            launcher.name(),
            run.plan.len(),
            dir.path().display(),
            if missing.is_empty() {
                String::new()
            } else {
                format!("; did not arrive: {} (run.json lists them under not_run)", shortened_list(missing, 6))
            }
        ));
    }
    let end = conclude(req, &dir, &mut observers, view.is_none(), cut.as_deref())?;
    let code = if cut.is_some() { worse(end.code, 1) } else { end.code };
    Ok(Launched { code, dir: Some(dir.path().to_path_buf()), counts: end.counts, states: end.states })
}

/// The first `n` of `items`, and how many more.
fn shortened_list(items: &[String], n: usize) -> String {
    let shown = items.iter().take(n).cloned().collect::<Vec<_>>().join(", ");
    if items.len() > n { format!("{shown} and {} more", items.len() - n) } else { shown }
}

/// The exit code of a finished run's record: 130 if interrupted, 1 with a
/// failed row, else 0.
fn exit_code(run: &RunRecord) -> u8 {
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
/// exit code (with `--fail-on-regression`, a regressed variant fails it),
/// with the run in brief (`cut`: why its stream was cut, if it was).
fn conclude(req: &RunRequest, dir: &RunDir, observers: &mut Observers, say: bool, cut: Option<&str>) -> anyhow::Result<Concluded> {
    let stored = read_run(dir.path())?;
    let (md, html) = report::render_md_and_html(&stored);
    dir.write_file("report.md", &md)?;
    dir.write_file("report.html", &html)?;
    drop((md, html));
    // What is said of the stored run is made now, and the rows let go
    // before the observers' end (the history reads them again).
    let summary = match (say, req.json, req.quiet) {
        _ if req.silent => None,
        (false, _, _) | (true, true, true) => None,
        (true, true, false) => {
            Some((true, report::end_of_run(&stored.run, &stored.rows, dir.path(), req.tables, crate::text::out::Style::PLAIN)))
        }
        (true, false, quiet) => {
            // After the groups' lines, a blank line first.
            let mut text = crate::text::out::Styled::plain(if quiet { "" } else { "\n" });
            text.push(&report::end_of_run(&stored.run, &stored.rows, dir.path(), req.tables, req.style));
            Some((false, text))
        }
    };
    // The gate's code and line, made while the rows are held.
    let gated = req.fail_on_regression.then(|| {
        let opts = compare::Options { threshold: crate::stats::DEFAULT_NOISE, ..compare::Options::default() };
        let comparisons = compare::paired::compare_run(&stored, &stored.run.id, &opts);
        compare::gate(comparisons.iter().flat_map(|c| &c.rows), req.gate_rules)
    });
    let mut code = exit_code(&stored.run);
    let counts = crate::text::document::plain(&report::brief::counts(&stored.run, &stored.rows));
    let states = report::brief::states(&stored.run, &stored.rows, cut);
    drop(stored);
    observers.run_finished(dir.path())?;
    match summary {
        Some((true, text)) => crate::text::out::to_stderr(text.as_str()),
        Some((false, text)) => Out::deferring().print_styled(&text)?,
        None => {}
    }
    if let Some((gate, why)) = gated {
        if let Some(why) = why {
            crate::text::out::to_stderr(&format!("proofbench: {why} against the base variant (--fail-on-regression)\n"));
        }
        // A failed row or an interrupted run says more than a gate whose
        // regressions the load may explain.
        code = match (code, gate) {
            (0, g) => g,
            (c, 1) => worse(c, 1),
            (c, _) => c,
        };
    }
    // The records, the report and the history are written: now the
    // terminal's failure, if it had one, can end the run.
    if let Some(e) = crate::text::out::deferred_error() {
        anyhow::bail!("writing to stdout: {e} (the run's records are complete in {})", dir.path().display());
    }
    Ok(Concluded { code, counts, states })
}

/// What the run's end measures against: its start.
struct Start {
    wall: Instant,
    /// This process may have been exec'd by another (cargo run does that),
    /// whose CPU time and reaped children the kernel's counters still hold:
    /// the run counts from here.
    cpu_self: Rusage,
    cpu_children: Rusage,
    machine: interference::Snapshot,
}

impl Start {
    fn now() -> Start {
        Start {
            wall: Instant::now(),
            cpu_self: Rusage::this_process(),
            cpu_children: Rusage::children(),
            machine: interference::Snapshot::read(),
        }
    }
}

/// One line on stderr: how many cells and trials, and where the run goes.
fn announce(run: &RunRecord, req: &RunRequest, dir: &Path, launcher: Option<&launcher::Launcher>) {
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
        let how = if run.options.lockstep { "in lockstep" } else { "interleaved" };
        format!(" ({groups} under each of the variants {}, {how})", names.join(", "))
    };
    crate::text::out::to_stderr(&format!(
        "proofbench: {}{variants}, {trials}, profile {}{through}, writing {}\n",
        counted(run.plan.len(), "cell", "cells"),
        req.spec.options.profile.as_str(),
        dir.display()
    ));
}

/// The run's record as it starts: the plan and the machine, nothing
/// measured, every planned cell not run.
fn run_record(cfg: &RunConfig, req: &RunRequest, dir: &RunDir) -> RunRecord {
    RunRecord {
        schema: RUN_SCHEMA.to_string(),
        id: dir.path().file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
        label: cfg.label.clone(),
        commit: commit_of(req.commit.as_deref()),
        profile: req.spec.options.profile,
        seed: cfg.seed,
        options: cfg.options.clone(),
        envelope: cfg.envelope.clone(),
        plan: cfg.cells.clone(),
        started_utc: cfg.envelope.started_utc.clone(),
        finished_utc: None,
        wall_s: None,
        cpu: None,
        interrupted: false,
        complete: false,
        counts: None,
        // Nothing has run yet: a run killed before its finish record (a node
        // that failed) still lists every cell it did not finish.
        not_run: cfg.cells.iter().map(|c| c.row_id.clone()).collect(),
        launcher: None,
        trials: Some(cfg.trials.clone()),
        rounds: Vec::new(),
        interference: None,
        kind: cfg.kind,
        variants: cfg.variants.clone(),
    }
}

/// What the run's end adds to its record: how it ended, its rounds, the
/// machine after it, its wall and CPU time, what else took the machine
/// meanwhile, and the rows per status.
fn finish_record(run: &mut RunRecord, cfg: &RunConfig, outcome: &Outcome, start: &Start) {
    run.interrupted = outcome.interrupted || crate::process::signals::interrupted();
    run.rounds = outcome.rounds.clone();
    run.not_run = cfg.cells.iter().filter(|c| !outcome.rows.iter().any(|r| r.cell.index == c.index)).map(|c| c.row_id.clone()).collect();
    run.complete = run.not_run.is_empty() && !run.interrupted;
    run.envelope.finish(Path::new("/"));
    run.finished_utc = run.envelope.finished_utc.clone();
    let wall_s = start.wall.elapsed().as_secs_f64();
    run.wall_s = Some(wall_s);
    let mut cpu = RunCpu { parent: Rusage::this_process().since(&start.cpu_self), workers: Rusage::children().since(&start.cpu_children) };
    // Everything the machine did that was not this run (parent and workers).
    let cpus = affinity::current_thread().unwrap_or_default();
    let own_ms = cpu.parent.plus(&cpu.workers).cpu_seconds() * 1e3;
    run.interference = Some(Interference::between(&start.machine, &interference::Snapshot::read(), &cpus, own_ms, wall_s * 1e3));
    // Peaks are not differences: take this process's own high-water mark (reset at
    // exec) and the largest worker's.
    cpu.parent.max_rss_kib = own_peak_rss_kib().unwrap_or(0);
    cpu.workers.max_rss_kib =
        outcome.rows.iter().flat_map(|r| &r.trials).filter_map(|t| t.process.rusage.map(|u| u.max_rss_kib)).max().unwrap_or(0);
    run.cpu = Some(cpu);
    run.counts = Some(StatusCounts::of(outcome.rows.iter().map(|r| &r.status)));
}
