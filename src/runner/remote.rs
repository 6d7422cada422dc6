//! runner::remote: a run through a launcher. The launched side runs the
//! whole plan as one process, `REMOTE_EXE remote-run` started once through
//! the launcher's prefix: it reads the checked run ([`RunSpec`]) as one JSON
//! line on its stdin, plans it for its own machine, runs its rounds, trials
//! and workers there, and writes what happens as one JSON line per
//! [`Event`] on its stdout. The launching side ([`drive`]) replays the
//! events ([`super::stream`]) into the run directory and the observers
//! exactly as a local run writes them: run.json, rows, raw CSV, logs, plots, report, history.
//!
//! The launched side keeps nothing: its working run directory is removed
//! when it ends. Its stdin stays open for the whole run; when it closes (the
//! connection dropped, or the launching side was stopped) the launched side
//! stops as on a signal: its worker is killed, its scratch directories are
//! removed, and it ends. A launched side that is killed outright leaves what
//! a local run killed with SIGKILL leaves, and the next run there removes it.
//!
//! The launching side trusts nothing it reads: a row must be one of the
//! plan's cells, arrive once, and name its files the planner's way; the
//! files are written from the row by this side's own code.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ExitCode, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::evidence::{Row, RunDir, RunRecord, StatusCounts};
use crate::model::{Cell, UsageError};
use crate::report::terminal::to_stderr;

use super::config::{RunRequest, RunSpec};
use super::launcher::Launcher;
use super::observe::Observers;
use super::signals;
use super::stream::{Event, STREAM_SCHEMA};

/// The longest line of the stream: a row with every raw sample of a
/// `--runs 40000` cell and its log is a few MiB.
pub const MAX_LINE: usize = 256 << 20;

/// How long the launched side may stay silent past the per-trial timeout
/// (it reports every trial's start and end) before the launching side
/// takes it for gone.
pub const SILENCE_GRACE: Duration = Duration::from_secs(60);

/// How long a launched side asked to stop (its stdin closed) is given to
/// send what it has and end.
pub const STOP_GRACE: Duration = Duration::from_secs(30);

/// The start of the name of a launched side's working run directory.
const WORK_PREFIX: &str = "proofbench-remote-";

/// `proofbench remote-run`: the launched side. Reads the run from stdin,
/// runs it in a working directory under `TMPDIR` (else `/tmp`), streams it,
/// and removes the directory.
pub fn serve() -> anyhow::Result<ExitCode> {
    let mut first = Vec::new();
    let mut stdin = std::io::stdin().lock();
    (&mut stdin).take(MAX_LINE as u64).read_until(b'\n', &mut first)?;
    let spec: RunSpec = serde_json::from_slice(&first)
        .map_err(|e| UsageError(format!("remote-run: stdin does not start with a run's configuration ({e})")))?;
    drop(stdin);
    // Refusals come from planning it here (RunConfig::new), as for a local run.
    signals::install()?;
    // The launching side holds stdin open until it wants the run to stop.
    std::thread::spawn(|| {
        let mut sink = [0u8; 256];
        let mut stdin = std::io::stdin();
        while matches!(stdin.read(&mut sink), Ok(n) if n > 0) {}
        signals::stop();
    });
    let root = std::env::var_os("TMPDIR").filter(|v| !v.is_empty()).map(PathBuf::from).unwrap_or_else(|| PathBuf::from("/tmp"));
    remove_stale_work(&root);
    let work = tempfile::Builder::new()
        .prefix(WORK_PREFIX)
        .tempdir_in(&root)
        .map_err(|e| anyhow::anyhow!("creating the launched side's working directory in {}: {e}", root.display()))?;
    let req = RunRequest::streamed(spec, work.path().join("run"));
    let code = super::run_streamed(&req);
    drop(work);
    code.map(ExitCode::from)
}

/// Removes the working directories of launched runs that ended without
/// removing theirs (killed outright): those whose run directory's lock no
/// process holds.
fn remove_stale_work(root: &Path) {
    let Ok(entries) = std::fs::read_dir(root) else { return };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let path = e.path();
        if !name.starts_with(WORK_PREFIX) || !e.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        let run = path.join("run");
        if crate::evidence::check_not_running(&run).is_ok() && run.join(".lock").is_file() {
            let _ = std::fs::remove_dir_all(&path);
        }
    }
}

/// What the launching side received from one launched run.
pub struct Received {
    /// The run directory written here (absent: the run never started).
    pub dir: Option<RunDir>,
    /// The observers that replayed the run, for its end.
    pub observers: Option<Observers>,
    /// The run's record as written (absent: the run never started).
    pub run: Option<RunRecord>,
    /// How many rows arrived.
    pub rows: usize,
    /// Why the stream ended before the run's end, when it did.
    pub cut: Option<String>,
}

/// Makes the observers of a launched run once its start arrives (its
/// record, its run directory here).
pub type MakeObservers<'a> = dyn FnMut(&RunRecord, &Path) -> Observers + 'a;

/// Runs `req` through `launcher` (its side's envelope already probed and
/// found to be this version's): starts `PREFIX REMOTE_EXE remote-run`,
/// sends the run, and writes what comes back into a run directory under
/// `req.out`. Errors before the run started (the launched side refused it:
/// a variant's binary missing there) are usage errors naming the launcher.
pub fn drive(req: &RunRequest, launcher: &Launcher, label: Option<String>, make: &mut MakeObservers) -> anyhow::Result<Received> {
    let mut spec = req.spec.clone();
    spec.label = label;
    let mut command = launcher.proofbench(&super::spawn::Invocation::default(), &["remote-run"]);
    command.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).process_group(0);
    let mut child = command.spawn().map_err(|e| UsageError(format!("{}: cannot start '{}': {e}", launcher.name(), launcher.prefix[0])))?;
    let group = child.id() as i32;
    // Written by a thread of its own: a launcher that never reads must not
    // hold this side up. The handle comes back when the line is written,
    // and is held open for the run.
    let mut stdin = child.stdin.take().map(|mut s| {
        let mut line = serde_json::to_string(&spec).unwrap_or_default();
        line.push('\n');
        std::thread::spawn(move || {
            // A launcher that ended at once is told by its exit below.
            let _ = s.write_all(line.as_bytes()).and_then(|_| s.flush());
            s
        })
    });
    let (tx, rx) = mpsc::channel::<Result<Event, String>>();
    let stdout = child.stdout.take().expect("piped");
    let reader = std::thread::spawn(move || read_events(stdout, tx));
    let host = launcher.host.clone().unwrap_or_else(|| launcher.prefix.join(" "));
    let stderr = child.stderr.take().expect("piped");
    let err_reader = std::thread::spawn(move || forward_stderr(stderr, &host));
    let mut state = Replay { req, launcher, dir: None, run: None, rows: Vec::new(), observers: None, received: Vec::new() };
    let silence = req.spec.timeout() + SILENCE_GRACE;
    let mut last = Instant::now();
    let mut stop_asked: Option<Instant> = None;
    let mut cut = None;
    let mut ended = false;
    loop {
        if signals::interrupted() && stop_asked.is_none() {
            if state.run.is_none() {
                cut = Some("the run was stopped before it started".into());
                break;
            }
            // Closing its stdin asks the launched side to stop and send what
            // it has. It started, so it has read the line: the writer is done.
            drop(stdin.take().map(std::thread::JoinHandle::join));
            stop_asked = Some(Instant::now());
        }
        if stop_asked.is_some_and(|t| t.elapsed() > STOP_GRACE) {
            cut = Some(format!("it did not end within {} s of being asked to stop", STOP_GRACE.as_secs()));
            break;
        }
        if last.elapsed() > silence {
            cut = Some(format!("it sent nothing for {} s", silence.as_secs()));
            break;
        }
        match rx.recv_timeout(Duration::from_millis(200)) {
            Ok(Ok(event)) => {
                last = Instant::now();
                match state.apply(event, make) {
                    Ok(true) => {
                        ended = true;
                        break;
                    }
                    Ok(false) => {}
                    Err(e) => {
                        cut = Some(format!("{e:#}"));
                        break;
                    }
                }
            }
            Ok(Err(why)) => {
                cut = Some(why);
                break;
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
    }
    let status = finish_child(&mut child, group, ended);
    // The group is gone: a write still blocked has failed.
    drop(stdin.map(std::thread::JoinHandle::join));
    let _ = reader.join();
    let last_line = err_reader.join().unwrap_or_default();
    let how = match status {
        Some(st) if st.code().is_some() => format!("`{}` exited with code {}", launcher.display(&[]), st.code().unwrap_or_default()),
        Some(_) => format!("`{}` was killed by a signal", launcher.display(&[])),
        None => format!("`{}` did not end", launcher.display(&[])),
    };
    let said = last_line.as_ref().map(|l| format!(": {l}")).unwrap_or_default();
    if state.run.is_none() {
        let refused = status.and_then(|s| s.code()) == Some(2);
        let why = cut.unwrap_or_else(|| format!("{how}{said}"));
        return Err(if refused {
            UsageError(format!("{}: the launched side refused the run: {}", launcher.name(), last_line.unwrap_or(why))).into()
        } else {
            anyhow::anyhow!("{}: the run did not start: {why}", launcher.name())
        });
    }
    if !ended && cut.is_none() {
        cut = Some(format!("the stream ended before the run's end ({how}{said})"));
    }
    Ok(state.finish(cut))
}

/// Waits for the launcher to end (it should, once the stream ended): a
/// little after a complete stream, not at all after a cut one, whose
/// process group is then killed.
fn finish_child(child: &mut Child, group: i32, ended: bool) -> Option<std::process::ExitStatus> {
    let patience = if ended { Duration::from_secs(10) } else { Duration::from_millis(500) };
    let until = Instant::now() + patience;
    loop {
        if let Ok(Some(st)) = child.try_wait() {
            // SAFETY: signalling the process group this module created; it may be empty.
            unsafe { libc::kill(-group, libc::SIGKILL) };
            return Some(st);
        }
        if Instant::now() >= until {
            // SAFETY: as above.
            unsafe { libc::kill(-group, libc::SIGKILL) };
            return child.wait().ok().filter(|_| ended);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Reads the stream's lines into events, each at most [`MAX_LINE`] long,
/// until its end or the first line that is not an event.
fn read_events(stdout: impl Read, tx: mpsc::Sender<Result<Event, String>>) {
    let mut r = BufReader::new(stdout);
    let mut line = Vec::new();
    loop {
        line.clear();
        match (&mut r).take(MAX_LINE as u64 + 1).read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => return,
            Ok(n) if n > MAX_LINE => {
                let _ = tx.send(Err(format!("it sent a line longer than {}", super::spawn::mib(MAX_LINE))));
                return;
            }
            Ok(_) => {}
        }
        let text = String::from_utf8_lossy(&line);
        if text.trim().is_empty() {
            continue;
        }
        let event = serde_json::from_str::<Event>(&text).map_err(|e| {
            let shown: String = text.trim().chars().take(120).collect();
            format!("it sent something that is not a proofbench stream ({e}): '{shown}'")
        });
        let bad = event.is_err();
        if tx.send(event).is_err() || bad {
            return;
        }
    }
}

/// The most of the launched side's stderr passed on; past it, what it
/// writes is read and dropped (a side blocked on a full pipe would stall
/// its run).
const STDERR_SHOWN: usize = 1 << 20;

/// Passes the launched side's stderr on, each line after the host's name,
/// until its end; returns its last non-empty line, for messages.
fn forward_stderr(stderr: impl Read, host: &str) -> Option<String> {
    let (mut shown, mut last) = (0usize, None);
    let mut r = BufReader::new(stderr);
    let mut buf = Vec::new();
    loop {
        buf.clear();
        // A line is read 64 KiB at most at a time: one without an end takes no more memory.
        match (&mut r).take(64 << 10).read_until(b'\n', &mut buf) {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        let line = String::from_utf8_lossy(&buf).trim_end().to_string();
        if line.is_empty() {
            continue;
        }
        if shown < STDERR_SHOWN {
            shown += line.len();
            to_stderr(&format!("[{host}] {}\n", line.chars().take(2000).collect::<String>()));
        }
        last = Some(line);
    }
    last
}

/// The launching side's state while the events of one run arrive.
struct Replay<'a> {
    req: &'a RunRequest,
    launcher: &'a Launcher,
    dir: Option<RunDir>,
    run: Option<RunRecord>,
    rows: Vec<Row>,
    observers: Option<Observers>,
    /// Whether each cell of the plan has its row.
    received: Vec<bool>,
}

impl Replay<'_> {
    /// Applies one event; true at the run's end.
    fn apply(&mut self, event: Event, make: &mut MakeObservers) -> anyhow::Result<bool> {
        if self.run.is_none() && !matches!(event, Event::Start { .. }) {
            anyhow::bail!("it sent an event before the run's start");
        }
        match event {
            Event::Start { schema, run } => {
                if schema != STREAM_SCHEMA {
                    anyhow::bail!("it speaks {schema}, this side {STREAM_SCHEMA}");
                }
                if self.run.is_some() {
                    anyhow::bail!("it started the run twice");
                }
                self.start(*run, make)?;
            }
            Event::RoundStarted { round, coming } => self.observers().round_started(round, &coming),
            Event::TrialStarted { cell, trial, round } => {
                let cell = self.cell(cell)?;
                self.observers().trial_started(&cell, trial, round);
            }
            Event::TrialFinished { cell, trial } => {
                let cell = self.cell(cell)?;
                self.observers().trial_finished(&cell, &trial);
            }
            Event::Row { row, log } => self.row(*row, &log)?,
            Event::End { run } => {
                let mine = self.run.as_mut().expect("started");
                // The run's own facts stay this side's: its id, command line, commit, launcher.
                let (id, commit, launcher) = (mine.id.clone(), mine.commit.clone(), mine.launcher.clone());
                *mine = RunRecord { id, commit, launcher, ..*run };
                return Ok(true);
            }
        }
        Ok(false)
    }

    fn observers(&mut self) -> &mut Observers {
        self.observers.as_mut().expect("made at the start")
    }

    /// The plan's cell `index`.
    fn cell(&self, index: usize) -> anyhow::Result<Cell> {
        let run = self.run.as_ref().expect("started");
        run.plan
            .get(index)
            .filter(|c| c.index == index)
            .cloned()
            .ok_or_else(|| anyhow::anyhow!("it named cell {index}, which the plan does not have"))
    }

    /// The run directory, named as a local run's, and its first record.
    fn start(&mut self, mut run: RunRecord, make: &mut MakeObservers) -> anyhow::Result<()> {
        for (i, c) in run.plan.iter().enumerate() {
            if c.index != i || !crate::model::file_name::is_plain(&c.row_id) {
                anyhow::bail!("its plan's cell {i} has the row id '{}', which is not one the planner makes", c.row_id);
            }
        }
        let dir = super::create_run_dir(self.req, &run.envelope, &run.label)?;
        run.id = dir.path().file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        run.commit = super::commit_of(self.req.commit.as_deref());
        run.launcher = Some(self.launcher.record());
        dir.write_run(&run)?;
        self.received = vec![false; run.plan.len()];
        self.observers = Some(make(&run, dir.path()));
        self.dir = Some(dir);
        self.run = Some(run);
        Ok(())
    }

    /// Writes a row as a local run does: its raw samples, its log, its line.
    fn row(&mut self, mut row: Row, log: &str) -> anyhow::Result<()> {
        let planned = self.cell(row.cell.index)?;
        if planned.row_id != row.cell.row_id {
            anyhow::bail!("it sent a row '{}' for cell {}, whose row is '{}'", row.cell.row_id, planned.index, planned.row_id);
        }
        if std::mem::replace(&mut self.received[planned.index], true) {
            anyhow::bail!("it sent the row {} twice", planned.row_id);
        }
        // The launched side runs no profiling pass (its files would stay
        // there): with --perf-pass, every row's is skipped, said here.
        let mode = self.run.as_ref().and_then(|r| r.options.perf_pass);
        row.profile = mode.map(|m| crate::evidence::ProfileRecord::skipped(m, super::perf_check::LAUNCHED));
        let dir = self.dir.as_mut().expect("started");
        let (mut file, _) = dir.log_file(&planned.row_id)?;
        file.write_all(log.as_bytes())?;
        row.raw = if row.samples.is_empty() { None } else { Some(dir.write_raw(&row)?) };
        dir.append_row(&row)?;
        self.rows.push(row);
        let dir = self.dir.as_ref().expect("started");
        let observers = self.observers.as_mut().expect("started");
        observers.row_finished(self.rows.last().expect("pushed"), &self.rows, dir)
    }

    /// The run's record as it ends: the launched side's, or, when the
    /// stream was cut, the start's with every cell that did not arrive
    /// named, and the run incomplete.
    fn finish(mut self, cut: Option<String>) -> Received {
        if let (Some(run), Some(_)) = (self.run.as_mut(), &cut) {
            run.not_run = run.plan.iter().filter(|c| !self.received[c.index]).map(|c| c.row_id.clone()).collect();
            run.complete = false;
            run.interrupted = signals::interrupted();
            run.finished_utc = Some(crate::model::utc_now());
            run.envelope.finished_utc = run.finished_utc.clone();
            run.counts = Some(StatusCounts::of(self.rows.iter().map(|r| &r.status)));
        }
        if let (Some(dir), Some(run)) = (&self.dir, &self.run)
            && let Err(e) = dir.write_run(run)
        {
            to_stderr(&format!("proofbench: warning: the run's record could not be finished: {e}\n"));
        }
        Received { dir: self.dir, observers: self.observers, run: self.run, rows: self.rows.len(), cut }
    }
}
