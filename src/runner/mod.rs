//! runner: the parent side of a run. Checks what was asked into a run
//! configuration (`config`), then runs rounds of trials (`rounds`), each
//! trial a fresh worker process (`trial`, `spawn`), each row written and
//! flushed when its last trial is decided (`compose`) and handed to the
//! observers (`observe`: progress, terminal lines, JSON stream, plots and
//! HTML, history). A failing trial never stops the run; a stop signal ends
//! it early with every finished trial kept and the report still written.

pub mod compose;
pub mod config;
pub mod launcher;
pub mod observe;
pub mod observer;
pub mod pipes;
pub mod preload;
pub mod progress;
pub mod rounds;
pub mod signals;
pub mod spawn;
pub mod trial;

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use crate::compare::{self, Verdict};
use crate::evidence::{RUN_SCHEMA, RunCpu, RunDir, RunRecord, StatusCounts, read_run};
use crate::measure::affinity;
use crate::measure::interference::{self, Interference};
use crate::measure::rusage::Rusage;
use crate::model::utc_now;
use crate::report::{self, terminal::Out};
use crate::text::format::counted;

pub use config::RunRequest;
use config::{RunConfig, Target};
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
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status.lines().find_map(|l| l.strip_prefix("VmHWM:"))?.trim().trim_end_matches("kB").trim().parse().ok()
}

/// Runs what `req` asks for, here or through its launchers (once per host
/// of `--hosts`); returns the exit code (the worst of the runs). Every
/// launcher's side must answer before anything runs.
pub fn run(req: &RunRequest) -> anyhow::Result<ExitCode> {
    run_and_say_where(req).map(|(code, _)| code)
}

/// [`run`], returning also the run directories written, in order (one per
/// host of `--hosts`).
pub fn run_and_say_where(req: &RunRequest) -> anyhow::Result<(ExitCode, Vec<PathBuf>)> {
    let launchers = req.launchers.clone();
    if !req.per_host() {
        let target = match launchers.into_iter().next() {
            None => Target::Local,
            Some(l) => {
                let envelope = l.probe_envelope()?;
                Target::Launched(l, Box::new(envelope))
            }
        };
        return run_on(req, target, req.label.clone()).map(|(code, dir)| (ExitCode::from(code), vec![dir]));
    }
    let mut probes = Vec::new();
    for l in &launchers {
        probes.push(l.probe_envelope()?);
    }
    let (mut worst, mut dirs, mut written) = (0u8, Vec::new(), Vec::new());
    for (i, (l, probed)) in launchers.into_iter().zip(probes).enumerate() {
        if signals::interrupted() {
            break;
        }
        // The first probe is fresh; later hosts are read again just before they run.
        let envelope = if i == 0 { probed } else { l.probe_envelope()? };
        let host = l.host.clone().unwrap_or_default();
        let label = req.label.as_ref().map_or_else(|| host.clone(), |x| format!("{x}-{host}"));
        let (code, dir) = run_on(req, Target::Launched(l, Box::new(envelope)), Some(label))?;
        dirs.push(format!("  {host}  {}\n", dir.display()));
        written.push(dir);
        worst = worse(worst, code);
        if code == EXIT_INTERRUPTED {
            break;
        }
    }
    let text = format!("Runs by host:\n{}", dirs.concat());
    if req.json {
        report::terminal::to_stderr(&text)
    } else {
        Out::new().print(&text)?
    }
    Ok((ExitCode::from(worst), written))
}

/// One run on one target: plan, run the rounds, write the records and the
/// report; returns the exit code and the run directory.
fn run_on(req: &RunRequest, target: Target, label: Option<String>) -> anyhow::Result<(u8, PathBuf)> {
    let start = Start::now();
    let cfg = RunConfig::new(req, target, label)?;
    // A path that cannot be a run directory (a file, /proc) is the flag's
    // error: exit 2, naming it; a full disk is the machine's (exit 1).
    let mut dir = match &req.run_dir {
        Some(p) => RunDir::create_at(p).map_err(|e| e.for_flag("--run-dir"))?,
        None => {
            let stamp: String = cfg.envelope.started_utc.chars().filter(|c| *c != '-' && *c != ':').collect();
            let host = cfg.envelope.hostname.ok().map(String::as_str).unwrap_or("unknown-host");
            let part = |s: &str| crate::model::file_name::bounded(s, 48);
            let name = format!("{stamp}-{}-{}", part(host), part(&cfg.label));
            RunDir::create_in(&req.out, &name).map_err(|e| e.for_flag("--out"))?
        }
    };
    let mut run = run_record(&cfg, req, &dir);
    dir.write_run(&run)?;
    signals::install()?;
    if !req.quiet {
        announce(&cfg, req, &dir);
    }
    let mut observers = Observers::for_run(req, &cfg.cells);
    let outcome = match rounds::execute(&cfg, &mut dir, &mut observers) {
        Ok(o) => o,
        Err(e) => {
            // A run that has started always finishes its record: the rows
            // written so far, the cells without one named, the run incomplete.
            let rows = read_run(dir.path()).map(|s| s.rows).unwrap_or_default();
            finish_record(&mut run, &cfg, &Outcome { rows, rounds: Vec::new(), interrupted: false }, &start);
            if let Err(w) = dir.write_run(&run) {
                report::terminal::to_stderr(&format!("proofbench: warning: the run's record could not be finished: {w}\n"));
            }
            return Err(e);
        }
    };
    finish_record(&mut run, &cfg, &outcome, &start);
    dir.write_run(&run)?;

    // The report is rendered from the records as stored, so that
    // `proofbench report DIR` gives the same bytes.
    let stored = read_run(dir.path())?;
    let (md, html) = report::render_md_and_html(&stored);
    dir.write_file("report.md", &md)?;
    dir.write_file("report.html", &html)?;
    observers.run_finished(dir.path())?;
    // The end: a short summary (or with --tables report.md's whole footer)
    // and where the report is; after the groups' lines, a blank line first.
    match (req.json, req.quiet) {
        (true, true) => {}
        (true, false) => report::terminal::to_stderr(
            report::end_of_run(&stored.run, &stored.rows, dir.path(), req.tables, report::terminal::Style::PLAIN).as_str(),
        ),
        (false, quiet) => {
            let mut text = report::terminal::Styled::plain(if quiet { "" } else { "\n" });
            text.push(&report::end_of_run(&stored.run, &stored.rows, dir.path(), req.tables, req.style));
            Out::deferring().print_styled(&text)?
        }
    }
    let mut code = match (run.interrupted, run.counts.as_ref().map_or(0, StatusCounts::failures)) {
        (true, _) => EXIT_INTERRUPTED,
        (false, 0) => 0,
        (false, _) => 1,
    };
    if req.fail_on_regression {
        let opts = compare::Options { threshold: crate::stats::DEFAULT_NOISE, ..compare::Options::default() };
        let regressed: usize = compare::paired::compare_run(&stored, &run.id, &opts).iter().map(|c| c.count(Verdict::Regressed)).sum();
        if regressed > 0 {
            eprintln!("proofbench: {regressed} row(s) regressed against the base variant (--fail-on-regression)");
            code = worse(code, 1);
        }
    }
    // The records, the report and the history are written: now the
    // terminal's failure, if it had one, can end the run.
    if let Some(e) = report::terminal::deferred_error() {
        anyhow::bail!("writing to stdout: {e} (the run's records are complete in {})", dir.path().display());
    }
    Ok((code, dir.path().to_path_buf()))
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
fn announce(cfg: &RunConfig, req: &RunRequest, dir: &RunDir) {
    let through = cfg.launcher.as_ref().map(|l| format!(", through `{}`", l.display(&[]))).unwrap_or_default();
    let t = &cfg.trials;
    let trials = if t.min == t.max {
        format!("{} each", counted(t.min as usize, "trial", "trials"))
    } else {
        format!("{} to {} trials each", t.min, t.max)
    };
    let variants = if cfg.variants.is_empty() {
        String::new()
    } else {
        let names: Vec<&str> = cfg.variants.iter().map(|v| v.name.as_str()).collect();
        format!(" ({} under each of the variants {}, interleaved)", cfg.groups.len(), names.join(", "))
    };
    report::terminal::to_stderr(&format!(
        "proofbench: {}{variants}, {trials}, profile {}{through}, writing {}\n",
        counted(cfg.cells.len(), "cell", "cells"),
        req.options.profile.as_str(),
        dir.path().display()
    ));
}

/// The run's record as it starts: the plan and the machine, nothing measured.
fn run_record(cfg: &RunConfig, req: &RunRequest, dir: &RunDir) -> RunRecord {
    RunRecord {
        schema: RUN_SCHEMA.to_string(),
        id: dir.path().file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
        label: cfg.label.clone(),
        commit: commit_of(req.commit.as_deref()),
        profile: req.options.profile,
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
        not_run: Vec::new(),
        launcher: cfg.launcher.as_ref().map(|l| l.record()),
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
    run.interrupted = outcome.interrupted || signals::interrupted();
    run.rounds = outcome.rounds.clone();
    run.not_run = cfg.cells.iter().filter(|c| !outcome.rows.iter().any(|r| r.cell.index == c.index)).map(|c| c.row_id.clone()).collect();
    run.complete = run.not_run.is_empty() && !run.interrupted;
    match &cfg.launcher {
        None => run.envelope.finish(Path::new("/")),
        Some(l) => {
            run.envelope.finished_utc = Some(utc_now());
            run.envelope.load_avg_after = Some(l.load_avg_now());
        }
    }
    run.finished_utc = run.envelope.finished_utc.clone();
    let wall_s = start.wall.elapsed().as_secs_f64();
    run.wall_s = Some(wall_s);
    let mut cpu = RunCpu { parent: Rusage::this_process().since(&start.cpu_self), workers: Rusage::children().since(&start.cpu_children) };
    if cfg.launcher.is_none() {
        // Everything the machine did that was not this run (parent and workers).
        let cpus = affinity::current_thread().unwrap_or_default();
        let own_ms = cpu.parent.plus(&cpu.workers).cpu_seconds() * 1e3;
        run.interference = Some(Interference::between(&start.machine, &interference::Snapshot::read(), &cpus, own_ms, wall_s * 1e3));
    }
    // Peaks are not differences: take this process's own high-water mark (reset at
    // exec) and the largest worker's.
    cpu.parent.max_rss_kib = own_peak_rss_kib().unwrap_or(0);
    cpu.workers.max_rss_kib =
        outcome.rows.iter().flat_map(|r| &r.trials).filter_map(|t| t.process.rusage.map(|u| u.max_rss_kib)).max().unwrap_or(0);
    run.cpu = Some(cpu);
    run.counts = Some(StatusCounts::of(outcome.rows.iter().map(|r| &r.status)));
}
