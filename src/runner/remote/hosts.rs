//! runner::hosts: `--hosts a,b,c`. Every host's run goes at once (at most
//! `--max-parallel` at a time), each through its own launcher as one
//! launched process ([`crate::runner::remote`]), each into its own run directory.
//! A host that cannot be reached, or that refuses the run, fails alone,
//! with its reason in the summary; the others finish. The terminal shows
//! one progress line per host; the summary gives each host's rows, time,
//! what its report warns of (cut short, interrupted, busy, disturbed) and
//! its run directory whenever one was made, then the submission id that
//! every host's run of the invocation carries (named on this side:
//! [`crate::runner::remote::launcher::new_submission`]); the exit code is the worst of the
//! hosts'.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::evidence::{Row, RunDir, RunRecord, TrialRecord};
use crate::model::{Cell, Status, Stopped, UsageError};
use crate::text::format::{counted, seconds};
use crate::text::out::{Out, to_stderr};

use crate::process::signals;
use crate::runner::config::RunRequest;
use crate::runner::observe::Observer;
use crate::runner::observe::Observers;
use crate::runner::remote::launcher::Launcher;
use crate::runner::{EXIT_INTERRUPTED, Ran, worse};

/// How one host's run ended.
struct HostEnd {
    host: String,
    code: u8,
    /// Its run directory, when its run started.
    dir: Option<PathBuf>,
    /// One line: the rows by status and the time, or why it did not run.
    what: String,
}

/// Runs the plan on every host of `req` at once; prints one line per host
/// at the end. Returns the worst exit code and the run directories of the
/// hosts that started with their own codes, in `--hosts` order.
pub fn run_all(req: &RunRequest, launchers: &[Launcher], max_parallel: usize) -> anyhow::Result<Ran> {
    let n = launchers.len();
    let lines = Lines::new(req.output.quiet);
    let ends: Vec<Mutex<Option<HostEnd>>> = (0..n).map(|_| Mutex::new(None)).collect();
    let next = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..max_parallel.clamp(1, n.max(1)) {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::SeqCst);
                    if i >= n {
                        break;
                    }
                    let l = &launchers[i];
                    let end = if signals::interrupted() {
                        HostEnd { host: host_of(l), code: EXIT_INTERRUPTED, dir: None, what: "not started: the run was stopped".into() }
                    } else {
                        one_host(req, l, &lines)
                    };
                    if let Ok(mut slot) = ends[i].lock() {
                        *slot = Some(end);
                    }
                }
            });
        }
    });
    let ends: Vec<HostEnd> = ends.into_iter().filter_map(|m| m.into_inner().ok().flatten()).collect();
    let width = ends.iter().map(|e| e.host.chars().count()).max().unwrap_or(0);
    let mut text = String::from("Runs by host:\n");
    for e in &ends {
        let dir = e.dir.as_ref().map(|d| format!("  {}", d.display())).unwrap_or_default();
        text.push_str(&format!("  {:width$}  {}{dir}\n", e.host, e.what));
    }
    if let Some(s) = launchers.first().and_then(|l| l.submission.as_ref()) {
        text.push_str(&format!("Submission: {s} (every host's run carries it)\n"));
    }
    if req.output.json {
        to_stderr(&text)
    } else {
        Out::new().print(&text)?
    }
    let worst = ends.iter().fold(0u8, |w, e| worse(w, e.code));
    Ok(Ran { code: worst, runs: ends.into_iter().filter_map(|e| e.dir.map(|d| (d, e.code))).collect() })
}

/// The host a launcher of `--hosts` leads to.
fn host_of(l: &Launcher) -> String {
    l.host.clone().unwrap_or_default()
}

/// One host: probe it, run the plan there, and say how it ended.
fn one_host(req: &RunRequest, l: &Launcher, lines: &Lines) -> HostEnd {
    let host = host_of(l);
    let line = lines.add(&host);
    let started = Instant::now();
    line.say("probing");
    let failed = |e: anyhow::Error, line: &HostLine| {
        let code = if e.is::<Stopped>() {
            EXIT_INTERRUPTED
        } else if e.is::<UsageError>() {
            2
        } else {
            1
        };
        let what = if e.is::<Stopped>() { format!("{e:#}") } else { format!("failed: {e:#}") };
        line.end(&what);
        HostEnd { host: host.clone(), code, dir: None, what }
    };
    if let Err(e) = l.probe_envelope() {
        return failed(e, &line);
    }
    let label = req.spec.label.as_ref().map_or_else(|| host.clone(), |x| format!("{x}-{host}"));
    // The run directory once made: a run that fails after (a full disk
    // at its report) is named with it.
    let made = std::cell::RefCell::new(None);
    let make = |run: &RunRecord, dir: &Path| {
        line.started(run, dir);
        *made.borrow_mut() = Some(dir.to_path_buf());
        Observers::for_host(req, &run.plan, Box::new(line.clone()))
    };
    match super::launched::run_launched(req, l, Some(label), Some(&make)) {
        Ok(run) => {
            let what =
                [format!("{}, {}", run.counts, seconds(started.elapsed().as_secs_f64()))].into_iter().chain(run.states).collect::<Vec<_>>();
            let what = what.join("; ");
            line.end(&what);
            HostEnd { host: host.clone(), code: run.code, dir: run.dir, what }
        }
        Err(e) => HostEnd { dir: made.into_inner(), ..failed(e, &line) },
    }
}

/// The hosts' progress lines: one bar each on a terminal, plain lines
/// (each host's start and end) otherwise, nothing with `--quiet`.
struct Lines {
    multi: Option<MultiProgress>,
    quiet: bool,
}

impl Lines {
    fn new(quiet: bool) -> Lines {
        use std::io::IsTerminal;
        let multi = (!quiet && std::io::stderr().is_terminal()).then(|| MultiProgress::with_draw_target(ProgressDrawTarget::stderr()));
        Lines { multi, quiet }
    }

    fn add(&self, host: &str) -> HostLine {
        let bar = self.multi.as_ref().map(|m| {
            let bar = m.add(ProgressBar::new(0));
            bar.set_style(
                ProgressStyle::with_template("{prefix} [{elapsed_precise}] {bar:24} {pos}/{len} rows {wide_msg}")
                    .expect("valid template")
                    .progress_chars("=> "),
            );
            bar.set_prefix(host.to_string());
            bar.enable_steady_tick(Duration::from_secs(1));
            bar
        });
        HostLine { host: host.to_string(), bar, quiet: self.quiet, state: std::sync::Arc::new(Mutex::new(Counts::default())) }
    }
}

/// What a host's line counts.
#[derive(Default)]
struct Counts {
    trials: u64,
    not_ok: usize,
    round: u32,
}

/// One host's progress line; also the observer of its run.
#[derive(Clone)]
struct HostLine {
    host: String,
    bar: Option<ProgressBar>,
    quiet: bool,
    state: std::sync::Arc<Mutex<Counts>>,
}

impl HostLine {
    fn say(&self, what: &str) {
        match &self.bar {
            Some(b) => b.set_message(what.to_string()),
            None if !self.quiet => to_stderr(&format!("proofbench: {}: {what}\n", self.host)),
            None => {}
        }
    }

    fn started(&self, run: &RunRecord, dir: &Path) {
        if let Some(b) = &self.bar {
            b.set_length(run.plan.len() as u64);
        }
        self.say(&format!("{}, writing {}", counted(run.plan.len(), "cell", "cells"), dir.display()));
    }

    fn end(&self, what: &str) {
        match &self.bar {
            Some(b) => b.finish_with_message(what.to_string()),
            None => self.say(what),
        }
    }

    fn refresh(&self) {
        if let (Some(b), Ok(c)) = (&self.bar, self.state.lock()) {
            let bad = if c.not_ok > 0 { format!(", {} not ok", c.not_ok) } else { String::new() };
            b.set_message(format!("round {}, {}{bad}", c.round + 1, counted(c.trials as usize, "trial", "trials")));
        }
    }
}

impl Observer for HostLine {
    fn round_started(&mut self, round: u32, _coming: &crate::runner::observe::Coming) {
        if let Ok(mut c) = self.state.lock() {
            c.round = round;
        }
        self.refresh();
    }

    fn trial_finished(&mut self, _cell: &Cell, _trial: &TrialRecord) {
        if let Ok(mut c) = self.state.lock() {
            c.trials += 1;
        }
        self.refresh();
    }

    fn row_finished(&mut self, row: &Row, _dir: &RunDir) -> anyhow::Result<()> {
        if let Ok(mut c) = self.state.lock()
            && matches!(row.status, Status::Failed | Status::Invalid | Status::Timeout)
        {
            c.not_ok += 1;
        }
        if let Some(b) = &self.bar {
            b.inc(1);
        }
        self.refresh();
        Ok(())
    }
}
