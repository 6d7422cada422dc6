//! runner::remote: a run through a launcher. The launched side runs the
//! whole plan as one process, `REMOTE_EXE remote-run` started once through
//! the launcher's prefix: it reads the checked run ([`RunSpec`]) as one JSON
//! line on its stdin, plans it for its own machine, runs its rounds, trials
//! and workers there, and writes what happens as one JSON line per
//! [`Event`] on its stdout. The launching side ([`drive`]) replays the
//! events ([`crate::runner::remote::stream`]) into the run directory and the observers
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
//!
//! Here too: the launcher itself (`launcher`: the prefix, the envelope
//! probe), the stream's events (`stream`), a run through one launcher on
//! both sides (`launched`), and every host of `--hosts` at once (`hosts`).

pub mod hosts;
pub mod launched;
pub mod launcher;
pub mod stream;

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ExitCode, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::evidence::{Row, RunDir, RunRecord, StatusCounts};
use crate::model::{Cell, Status, Stopped, UsageError};
use crate::text::out::to_stderr;

use crate::process::signals;
use crate::runner::config::{RunRequest, RunSpec};
use crate::runner::observe::Observers;
use crate::runner::record;
use crate::runner::remote::launcher::Launcher;
use crate::runner::remote::stream::{Event, STREAM_SCHEMA};

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

/// How many events the reader of the stream may hold that this side has
/// not yet written.
const EVENTS_AHEAD: usize = 16;

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
    let code = launched::run_streamed(&req);
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
/// `req.output.out`. Errors before the run started (the launched side refused it:
/// a variant's binary missing there) are usage errors naming the launcher.
pub fn drive(req: &RunRequest, launcher: &Launcher, label: Option<String>, make: &mut MakeObservers) -> anyhow::Result<Received> {
    let mut spec = req.spec.clone();
    spec.label = label;
    let mut command = launcher.proofbench(&crate::runner::local::spawn::Invocation::default(), &["remote-run"]);
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
    // A few events read ahead, no more: a side that streams faster than
    // this one writes waits, and its rows are not held here meanwhile.
    let (tx, rx) = mpsc::sync_channel::<Result<Event, String>>(EVENTS_AHEAD);
    let stdout = child.stdout.take().expect("piped");
    let reader = std::thread::spawn(move || read_events(stdout, tx));
    let host = launcher.host.clone().unwrap_or_else(|| launcher.prefix.join(" "));
    let stderr = child.stderr.take().expect("piped");
    let err_reader = std::thread::spawn(move || forward_stderr(stderr, &host));
    let mut state = Replay::new(req, &spec, launcher);
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
    // A reader waiting to hand on an event gives up.
    drop(rx);
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
        if signals::interrupted() {
            return Err(Stopped(format!("{}: stopped before the run started; nothing was run", launcher.name())).into());
        }
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
/// until its end or the first line that is not an event. A long line's
/// buffer is let go once it is read: the stream holds one line at a time.
fn read_events(stdout: impl Read, tx: mpsc::SyncSender<Result<Event, String>>) {
    let mut r = BufReader::new(stdout);
    let mut line = Vec::new();
    loop {
        if line.capacity() > crate::runner::remote::stream::LOG_PIECE * 4 {
            line = Vec::new();
        }
        line.clear();
        match (&mut r).take(MAX_LINE as u64 + 1).read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => return,
            Ok(n) if n > MAX_LINE => {
                let _ = tx.send(Err(format!("it sent a line longer than {}", crate::process::helper::mib(MAX_LINE))));
                return;
            }
            Ok(_) => {}
        }
        if line.trim_ascii().is_empty() {
            continue;
        }
        let event = serde_json::from_slice::<Event>(&line).map_err(|e| {
            let shown: String = String::from_utf8_lossy(&line[..line.len().min(480)]).trim().chars().take(120).collect();
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

/// Writes a received row (its cell the plan's) as a local run does: its
/// log, its raw samples, its line in rows.jsonl. A row that cannot be
/// written whole (a full disk) leaves none of its files.
fn write_row(dir: &mut RunDir, row: &mut Row, log: &str) -> anyhow::Result<()> {
    // The paths are this side's, never the ones the row came with.
    (row.log, row.raw) = (format!("logs/{}.log", row.cell.row_id), None);
    let wrote = (|| -> anyhow::Result<()> {
        let (mut file, rel) = dir.log_file(&row.cell.row_id)?;
        file.write_all(log.as_bytes()).map_err(|e| anyhow::anyhow!("{rel}: {e}"))?;
        row.log = rel;
        row.raw = if row.samples.is_empty() { None } else { Some(dir.write_raw(row)?) };
        Ok(dir.append_row(row)?)
    })();
    if wrote.is_err() {
        for rel in [Some(row.log.clone()), row.raw.take()].into_iter().flatten() {
            let _ = std::fs::remove_file(dir.path().join(rel));
        }
    }
    wrote
}

/// The launching side's state while the events of one run arrive.
struct Replay<'a> {
    req: &'a RunRequest,
    /// The run as sent to the launched side (its label set).
    spec: &'a RunSpec,
    launcher: &'a Launcher,
    dir: Option<RunDir>,
    run: Option<RunRecord>,
    /// The statuses of the rows received (the rows are in the run
    /// directory, not held here).
    statuses: Vec<Status>,
    observers: Option<Observers>,
    /// Whether each cell of the plan has its row.
    received: Vec<bool>,
}

impl<'a> Replay<'a> {
    fn new(req: &'a RunRequest, spec: &'a RunSpec, launcher: &'a Launcher) -> Replay<'a> {
        Replay { req, spec, launcher, dir: None, run: None, statuses: Vec::new(), observers: None, received: Vec::new() }
    }

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
            Event::Log { cell, text } => self.log(cell, &text)?,
            Event::Row { row, log } => self.row(*row, &log)?,
            Event::End { run } => {
                self.end(*run);
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
    /// Of the start, this side takes the launched machine's envelope (its
    /// start time a timestamp); the plan, options, label and seed are the
    /// ones this side makes from the run it sent and that envelope, and the
    /// start's plan must be that plan.
    fn start(&mut self, run: RunRecord, make: &mut MakeObservers) -> anyhow::Result<()> {
        for (what, t) in [("start time", &run.started_utc), ("envelope's start time", &run.envelope.started_utc)] {
            if humantime::parse_rfc3339(t).is_err() {
                anyhow::bail!("its {what} '{}' is not a UTC timestamp", t.chars().take(80).collect::<String>());
            }
        }
        let (label, plan) =
            self.spec.plan_on(None, &run.envelope).map_err(|e| anyhow::anyhow!("its envelope does not plan the run: {e:#}"))?;
        if let Some(i) = (0..plan.cells.len().max(run.plan.len())).find(|&i| plan.cells.get(i) != run.plan.get(i)) {
            let named =
                |c: Option<&Cell>| c.map_or_else(|| "none".to_string(), |c| format!("'{}'", c.row_id.chars().take(80).collect::<String>()));
            anyhow::bail!(
                "its plan is not the one this run makes for its machine: cell {i} is {}, expected {}",
                named(run.plan.get(i)),
                named(plan.cells.get(i))
            );
        }
        // Until the end arrives every cell is not run, as a local run's first
        // record says: a launching side killed before the end leaves a record
        // that names them.
        let dir = crate::runner::life::create_run_dir(self.req, &run.envelope, &label)?;
        let started_utc = run.started_utc.clone();
        let mut mine = record::starting(self.spec, label, run.envelope, plan, &dir, self.req.output.commit.as_deref());
        mine.started_utc = started_utc;
        mine.launcher = Some(self.launcher.record());
        dir.write_run(&mine)?;
        self.received = vec![false; mine.plan.len()];
        self.observers = Some(make(&mine, dir.path()));
        self.dir = Some(dir);
        self.run = Some(mine);
        Ok(())
    }

    /// The run's end as the launched side tells it: of it, this side takes
    /// only what it cannot see itself (the rounds, the times, the machine
    /// after, what else took it, whether the launched side was stopped);
    /// the counts, the cells not run and whether the run is complete are
    /// recomputed from the rows received ([`Replay::finish`]).
    fn end(&mut self, end: RunRecord) {
        let mine = self.run.as_mut().expect("started");
        let finished = end.finished_utc.filter(|t| humantime::parse_rfc3339(t).is_ok()).unwrap_or_else(crate::measure::clock::utc_now);
        mine.finished_utc = Some(finished.clone());
        mine.envelope.finished_utc = Some(finished);
        mine.envelope.load_avg_after = end.envelope.load_avg_after;
        mine.wall_s = end.wall_s.filter(|w| w.is_finite() && *w >= 0.0);
        mine.cpu = end.cpu;
        mine.rounds = end.rounds;
        mine.interference = end.interference;
        mine.interrupted = end.interrupted;
    }

    /// The plan's cells whose rows have not arrived.
    fn missing(&self) -> Vec<String> {
        self.run
            .as_ref()
            .map_or_else(Vec::new, |run| run.plan.iter().filter(|c| !self.received[c.index]).map(|c| c.row_id.clone()).collect())
    }

    /// Appends a piece of a cell's log to its file, before its row.
    fn log(&mut self, index: usize, text: &str) -> anyhow::Result<()> {
        let cell = self.cell(index)?;
        if self.received[cell.index] {
            anyhow::bail!("it sent a piece of the log of the row {} after the row", cell.row_id);
        }
        let (mut file, rel) = self.dir.as_ref().expect("started").log_file(&cell.row_id)?;
        file.write_all(text.as_bytes()).map_err(|e| anyhow::anyhow!("{rel}: {e}"))?;
        Ok(())
    }

    /// Writes a row as a local run does: its raw samples, its log, its line.
    fn row(&mut self, mut row: Row, log: &str) -> anyhow::Result<()> {
        let planned = self.cell(row.cell.index)?;
        if planned.row_id != row.cell.row_id {
            anyhow::bail!(
                "it sent a row '{}' for cell {}, whose row is '{}'",
                row.cell.row_id.chars().take(80).collect::<String>(),
                planned.index,
                planned.row_id
            );
        }
        // The cell a worker ran has its scratch directory filled in; the
        // rest is the plan's.
        if (Cell { scratch_dir: None, ..row.cell.clone() }) != (Cell { scratch_dir: None, ..planned.clone() }) {
            anyhow::bail!("it sent the row {} with a cell that is not the plan's", planned.row_id);
        }
        if let Some(why) = row.status_contradiction() {
            anyhow::bail!("it sent the row {} {why}", planned.row_id);
        }
        if self.received[planned.index] {
            anyhow::bail!("it sent the row {} twice", planned.row_id);
        }
        // The statistics are this side's, from the samples received.
        row.stats = crate::evidence::RowStats::of(&row.samples, crate::stats::DEFAULT_NOISE);
        // The launched side runs no profiling pass (its files would stay
        // there): with --perf-pass, every row's is skipped, said here.
        let mode = self.run.as_ref().and_then(|r| r.options.measurement.perf_pass);
        row.profile = mode.map(|m| crate::evidence::ProfileRecord::skipped(m, crate::runner::perf::check::LAUNCHED));
        let dir = self.dir.as_mut().expect("started");
        // A row that could not be written (a full disk) was not received:
        // its cell stays among those not run.
        write_row(dir, &mut row, log).map_err(|e| e.context(format!("writing the row {}", planned.row_id)))?;
        self.received[planned.index] = true;
        self.statuses.push(row.status);
        let dir = self.dir.as_ref().expect("started");
        let observers = self.observers.as_mut().expect("started");
        observers.row_finished(&row, dir)
    }

    /// The run's record as it ends: the launched side's times and rounds
    /// when its end arrived, else the start's with the time of the cut; in
    /// both, the counts and the cells not run are those of the rows
    /// received, and the run is complete only when every row arrived in a
    /// stream that was not cut.
    fn finish(mut self, mut cut: Option<String>) -> Received {
        let missing = self.missing();
        // A cell whose row did not arrive, or could not be written, keeps
        // none of its files (the pieces of its log that came before).
        if let Some(dir) = &self.dir {
            for id in &missing {
                let _ = std::fs::remove_file(dir.path().join(format!("logs/{id}.log")));
            }
        }
        // An end that leaves cells without their rows, when nobody stopped
        // the run, is an end this side does not believe: the run was cut.
        let stopped = signals::interrupted() || self.run.as_ref().is_some_and(|r| r.interrupted);
        if cut.is_none() && !missing.is_empty() && !stopped {
            let planned = self.received.len();
            cut = Some(format!("it ended the run having sent {} of {planned} rows", planned - missing.len()));
        }
        if let Some(run) = self.run.as_mut() {
            if cut.is_some() {
                run.finished_utc = Some(crate::measure::clock::utc_now());
                run.envelope.finished_utc = run.finished_utc.clone();
            }
            run.interrupted |= signals::interrupted();
            run.complete = cut.is_none() && missing.is_empty() && !run.interrupted;
            run.not_run = missing;
            run.counts = Some(StatusCounts::of(self.statuses.iter()));
        }
        if let (Some(dir), Some(run)) = (&self.dir, &self.run)
            && let Err(e) = dir.write_run(run)
        {
            to_stderr(&format!("proofbench: warning: the run's record could not be finished: {e}\n"));
        }
        Received { dir: self.dir, observers: self.observers, run: self.run, rows: self.statuses.len(), cut }
    }
}

#[cfg(test)]
mod tests {
    //! The launching side against streams a launched side could send,
    //! honest or not: nothing is written outside the run directory, and
    //! nothing recorded is contradicted by the rows received.

    use std::collections::BTreeSet;

    use proptest::prelude::*;
    use serde_json::json;

    use super::*;

    /// A streamed request that writes a new run directory under its `out`
    /// (as the launching side does), not into exactly one.
    fn into_out(mut req: RunRequest) -> RunRequest {
        req.output.run_dir = None;
        req
    }
    use crate::evidence::{StoredRun, fake, read_run};
    use crate::model::{Status, Unit};
    use crate::runner::observe::Observer;

    /// Three cells: `selftest.tiny`, and `cpu.primes` at 1 and 2 workers.
    fn spec() -> RunSpec {
        let options = json!({
            "selection": ["selftest.tiny", "cpu.primes"], "profile": "quick", "workers": "1,2", "oversubscribe": false,
            "pin": ["none"], "runtime": null, "allocator": null, "compare": null, "runs": null, "time_budget_ms": null,
            "timeout_ms": 60000, "warmup": null, "settle_ms": null, "ci_target_pct": null, "params": ["range=20000"],
            "include_selftest": true, "io_dir": null, "inject_fault": null
        });
        RunSpec {
            options: serde_json::from_value(options).expect("options"),
            commands: Vec::new(),
            kind: Default::default(),
            argv: vec!["proofbench".into()],
            seed: 7,
            label: Some("lab".into()),
            timeout_given: false,
        }
    }

    /// The start an honest launched side sends: this machine's envelope
    /// and the plan made from it.
    fn honest_start(spec: &RunSpec) -> RunRecord {
        let envelope = fake::envelope();
        let (label, plan) = spec.plan_on(None, &envelope).expect("plans");
        let stored = fake::run(plan.cells.clone(), Vec::new()).run;
        RunRecord {
            label,
            seed: spec.seed,
            options: spec.options.clone(),
            trials: Some(plan.trials),
            started_utc: envelope.started_utc.clone(),
            envelope,
            finished_utc: None,
            complete: false,
            counts: None,
            ..stored
        }
    }

    /// A row of `cell` whose trials ended as `trials` say.
    fn row_of(cell: &Cell, trials: &[Status]) -> Row {
        let medians: Vec<f64> = (0..trials.len()).map(|i| 100.0 + i as f64).collect();
        let mut row = fake::row(cell.index, &cell.workload, &[], None, &medians, Unit::NsPerOp);
        row.cell = cell.clone();
        for (t, s) in row.trials.iter_mut().zip(trials) {
            t.status = *s;
        }
        row.status = trials.iter().copied().find(|s| *s != Status::Ok).unwrap_or(Status::Ok);
        row
    }

    struct Silent;
    impl Observer for Silent {}

    /// Strings a hostile side would put where a path or a name goes.
    fn hostile() -> impl Strategy<Value = String> {
        prop_oneof![
            Just("/tmp/x/PWN_ABS".to_string()),
            Just("../../x/PWN".to_string()),
            Just("..".to_string()),
            Just("a/../../b".to_string()),
            Just(String::new()),
            Just("2026-11-28T00:00:00Z".to_string()),
            Just("2026-11-28T00:00:00Z/../../x".to_string()),
            "[a-z./_-]{0,24}",
            any::<String>(),
        ]
    }

    fn status() -> impl Strategy<Value = Status> {
        prop_oneof![Just(Status::Ok), Just(Status::Failed), Just(Status::Invalid), Just(Status::Timeout), Just(Status::Skipped)]
    }

    /// What the stream does to the honest run.
    #[derive(Clone, Debug)]
    enum Lie {
        StartTime(String),
        EnvelopeTime(String),
        Label(String),
        Workload(usize, String),
        RowId(usize, String),
        DropCell,
        ExtraCell,
    }

    fn lie() -> impl Strategy<Value = Lie> {
        prop_oneof![
            hostile().prop_map(Lie::StartTime),
            hostile().prop_map(Lie::EnvelopeTime),
            hostile().prop_map(Lie::Label),
            (0usize..3, hostile()).prop_map(|(i, s)| Lie::Workload(i, s)),
            (0usize..3, hostile()).prop_map(|(i, s)| Lie::RowId(i, s)),
            Just(Lie::DropCell),
            Just(Lie::ExtraCell),
        ]
    }

    /// One row sent: the cell it names, what it says of itself.
    #[derive(Clone, Debug)]
    struct Sent {
        cell: usize,
        trials: Vec<Status>,
        claimed: Option<Status>,
        workload: Option<String>,
        row_id: Option<String>,
    }

    fn sent() -> impl Strategy<Value = Sent> {
        (
            0usize..5,
            prop::collection::vec(status(), 0..4),
            prop::option::weighted(0.3, status()),
            prop::option::weighted(0.15, hostile()),
            prop::option::weighted(0.15, hostile()),
        )
            .prop_map(|(cell, trials, claimed, workload, row_id)| Sent { cell, trials, claimed, workload, row_id })
    }

    /// The end sent: what it claims.
    #[derive(Clone, Debug)]
    struct End {
        ok: usize,
        complete: bool,
        not_run: Vec<String>,
        other_plan: bool,
        finished: String,
    }

    fn end() -> impl Strategy<Value = End> {
        (0usize..9, any::<bool>(), prop::collection::vec(hostile(), 0..2), any::<bool>(), hostile())
            .prop_map(|(ok, complete, not_run, other_plan, finished)| End { ok, complete, not_run, other_plan, finished })
    }

    /// Every path under `root`, directories too.
    fn tree(root: &Path) -> BTreeSet<PathBuf> {
        let mut out = BTreeSet::new();
        let mut todo = vec![root.to_path_buf()];
        while let Some(d) = todo.pop() {
            for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
                let p = e.path();
                if e.file_type().is_ok_and(|t| t.is_dir()) {
                    todo.push(p.clone());
                }
                out.insert(p);
            }
        }
        out
    }

    /// Feeds the events to the launching side as `drive` does, and returns
    /// what it kept.
    fn replay(req: &RunRequest, spec: &RunSpec, events: Vec<Event>) -> Received {
        let launcher =
            Launcher { template: "fake".into(), prefix: vec!["fake".into()], host: None, remote_exe: "pb".into(), submission: None };
        let mut state = Replay::new(req, spec, &launcher);
        let mut make = |run: &RunRecord, _: &Path| Observers::for_host(req, &run.plan, Box::new(Silent));
        let mut cut = Some("the stream ended before the run's end".to_string());
        for e in events {
            match state.apply(e, &mut make) {
                Ok(true) => {
                    cut = None;
                    break;
                }
                Ok(false) => {}
                Err(e) => {
                    cut = Some(format!("{e:#}"));
                    break;
                }
            }
        }
        state.finish(cut)
    }

    /// What the stored run may not say, given its rows.
    fn contradictions(stored: &StoredRun, plan: &[Cell]) -> Vec<String> {
        let mut bad = Vec::new();
        let run = &stored.run;
        if run.plan != plan {
            bad.push("the plan recorded is not the plan made here".to_string());
        }
        if run.counts.as_ref() != Some(&StatusCounts::of(stored.rows.iter().map(|r| &r.status))) {
            bad.push(format!("counts {:?} for rows {:?}", run.counts, stored.rows.iter().map(|r| r.status).collect::<Vec<_>>()));
        }
        let missing: Vec<String> =
            plan.iter().filter(|c| !stored.rows.iter().any(|r| r.cell.row_id == c.row_id)).map(|c| c.row_id.clone()).collect();
        if run.not_run != missing {
            bad.push(format!("not_run {:?} where {:?} have no row", run.not_run, missing));
        }
        if run.complete && !missing.is_empty() {
            bad.push("complete without every row".into());
        }
        for r in &stored.rows {
            if let Some(why) = r.status_contradiction() {
                bad.push(format!("row {} {why}", r.id()));
            }
            if !plan.contains(&r.cell) {
                bad.push(format!("row {} is not of a planned cell", r.id()));
            }
        }
        bad
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

        #[test]
        fn no_stream_writes_outside_its_run_directory_or_records_what_its_rows_contradict(
            lies in prop::collection::vec(lie(), 0..3),
            rows in prop::collection::vec(sent(), 0..6),
            end in prop::option::of(end()),
        ) {
            let tmp = tempfile::tempdir().unwrap();
            // Where a path from the stream would land if it were followed.
            std::fs::create_dir_all(tmp.path().join("x")).unwrap();
            std::fs::write(tmp.path().join("victim"), "keep").unwrap();
            let out = tmp.path().join("a").join("out");
            let spec = spec();
            let req = into_out(RunRequest::streamed(spec.clone(), out.clone()));
            let honest = honest_start(&spec);
            let plan = honest.plan.clone();
            let mut start = honest.clone();
            for l in &lies {
                match l {
                    Lie::StartTime(t) => start.started_utc = t.clone(),
                    Lie::EnvelopeTime(t) => start.envelope.started_utc = t.clone(),
                    Lie::Label(t) => start.label = t.clone(),
                    Lie::Workload(i, w) => { if let Some(c) = start.plan.get_mut(*i) { c.workload = w.clone() } }
                    Lie::RowId(i, w) => { if let Some(c) = start.plan.get_mut(*i) { c.row_id = w.clone() } }
                    Lie::DropCell => { start.plan.pop(); }
                    Lie::ExtraCell => { let mut c = plan[0].clone(); c.index = start.plan.len(); start.plan.push(c); }
                }
            }
            let mut events = vec![Event::Start { schema: STREAM_SCHEMA.into(), run: Box::new(start) }];
            for s in &rows {
                let cell = plan.get(s.cell).cloned().unwrap_or_else(|| Cell { index: s.cell, ..plan[0].clone() });
                let mut row = row_of(&cell, &s.trials);
                if s.trials.is_empty() { row.trials.clear(); }
                if let Some(c) = s.claimed { row.status = c; }
                if let Some(w) = &s.workload { row.cell.workload = w.clone(); }
                if let Some(w) = &s.row_id { row.cell.row_id = w.clone(); }
                row.log = "../../victim".into();
                events.push(Event::Row { row: Box::new(row), log: "a log line\n".into() });
            }
            if let Some(e) = &end {
                let mut run = honest.clone();
                run.complete = e.complete;
                run.counts = Some(StatusCounts { ok: e.ok, ..StatusCounts::default() });
                run.not_run = e.not_run.clone();
                run.finished_utc = Some(e.finished.clone());
                if e.other_plan { run.plan.truncate(1); }
                events.push(Event::End { run: Box::new(run) });
            }
            let received = replay(&req, &spec, events);
            let written: Vec<PathBuf> = tree(tmp.path()).into_iter().collect();
            let dir = received.dir.as_ref().map(|d| d.path().to_path_buf());
            drop(received);
            for p in &written {
                let inside = dir.as_ref().is_some_and(|d| p.starts_with(d)) || out.starts_with(p)
                    || *p == tmp.path().join("x") || *p == tmp.path().join("victim");
                prop_assert!(inside, "{} written outside the run directory {:?}", p.display(), dir);
            }
            prop_assert_eq!(std::fs::read_to_string(tmp.path().join("victim")).unwrap(), "keep");
            if let Some(d) = dir {
                let stored = read_run(&d).expect("the run directory reads back");
                let bad = contradictions(&stored, &plan);
                prop_assert!(bad.is_empty(), "{bad:?}");
                for r in &stored.rows {
                    prop_assert_eq!(&r.log, &format!("logs/{}.log", r.id()));
                }
            }
        }
    }

    #[test]
    fn an_honest_stream_is_kept_whole_and_complete() {
        let tmp = tempfile::tempdir().unwrap();
        let spec = spec();
        let req = into_out(RunRequest::streamed(spec.clone(), tmp.path().to_path_buf()));
        let honest = honest_start(&spec);
        let mut events = vec![Event::Start { schema: STREAM_SCHEMA.into(), run: Box::new(honest.clone()) }];
        for c in &honest.plan {
            events.push(Event::Row { row: Box::new(row_of(c, &[Status::Ok, Status::Ok])), log: String::new() });
        }
        let mut end = honest.clone();
        end.complete = true;
        end.wall_s = Some(3.0);
        events.push(Event::End { run: Box::new(end) });
        let received = replay(&req, &spec, events);
        assert_eq!(received.cut, None);
        let stored = read_run(received.dir.as_ref().unwrap().path()).unwrap();
        assert!(stored.run.complete && stored.run.not_run.is_empty());
        assert_eq!(stored.run.counts.as_ref().map(|c| c.ok), Some(3));
        assert_eq!(stored.run.wall_s, Some(3.0));
        assert_eq!(stored.rows.len(), 3);
    }

    #[test]
    fn a_row_that_cannot_be_written_is_not_received_and_leaves_no_file() {
        let tmp = tempfile::tempdir().unwrap();
        let spec = spec();
        let req = into_out(RunRequest::streamed(spec.clone(), tmp.path().to_path_buf()));
        let honest = honest_start(&spec);
        let launcher =
            Launcher { template: "fake".into(), prefix: vec!["fake".into()], host: None, remote_exe: "pb".into(), submission: None };
        let mut state = Replay::new(&req, &spec, &launcher);
        let mut make = |run: &RunRecord, _: &Path| Observers::for_host(&req, &run.plan, Box::new(Silent));
        state.apply(Event::Start { schema: STREAM_SCHEMA.into(), run: Box::new(honest.clone()) }, &mut make).unwrap();
        let dir = state.dir.as_ref().unwrap().path().to_path_buf();
        // The first record names every cell not run, as a local run's does.
        let first: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(dir.join("run.json")).unwrap()).unwrap();
        assert_eq!(first["not_run"].as_array().map(Vec::len), Some(honest.plan.len()), "{}", first["not_run"]);
        // The second row's raw file cannot be made, as on a full disk: a
        // directory that is not empty holds its name.
        let lost = &honest.plan[1].row_id;
        std::fs::create_dir_all(dir.join(format!("raw/{lost}.csv/x"))).unwrap();
        for c in &honest.plan {
            let row = Event::Row { row: Box::new(row_of(c, &[Status::Ok, Status::Ok])), log: "a log line\n".into() };
            let applied = state.apply(row, &mut make);
            assert_eq!(applied.is_err(), c.index == 1, "{:?}", applied.err());
        }
        let received = state.finish(None);
        assert!(received.cut.as_deref().is_some_and(|c| c.contains("having sent 2 of 3 rows")), "{:?}", received.cut);
        let stored = read_run(&dir).unwrap();
        assert_eq!(stored.run.not_run, std::slice::from_ref(lost));
        assert!(!stored.run.complete);
        assert_eq!(stored.run.counts.as_ref().map(|c| c.ok), Some(2));
        assert_eq!(stored.rows.len(), 2);
        assert!(!dir.join(format!("logs/{lost}.log")).exists(), "the lost row's log is left");
    }

    #[test]
    fn an_end_that_claims_rows_it_did_not_send_is_a_cut_run() {
        let tmp = tempfile::tempdir().unwrap();
        let spec = spec();
        let req = into_out(RunRequest::streamed(spec.clone(), tmp.path().to_path_buf()));
        let honest = honest_start(&spec);
        let mut end = honest.clone();
        (end.complete, end.counts) = (true, Some(StatusCounts { ok: 3, ..StatusCounts::default() }));
        let events = vec![Event::Start { schema: STREAM_SCHEMA.into(), run: Box::new(honest) }, Event::End { run: Box::new(end) }];
        let received = replay(&req, &spec, events);
        assert_eq!(received.cut.as_deref(), Some("it ended the run having sent 0 of 3 rows"));
        let stored = read_run(received.dir.as_ref().unwrap().path()).unwrap();
        assert!(!stored.run.complete);
        assert_eq!(stored.run.counts, Some(StatusCounts::default()));
        assert_eq!(stored.run.not_run.len(), 3);
    }

    #[test]
    fn a_row_whose_status_its_trials_contradict_cuts_the_stream() {
        let tmp = tempfile::tempdir().unwrap();
        let spec = spec();
        let req = into_out(RunRequest::streamed(spec.clone(), tmp.path().to_path_buf()));
        let honest = honest_start(&spec);
        let mut row = row_of(&honest.plan[0], &[Status::Ok, Status::Failed]);
        row.status = Status::Ok;
        let events = vec![
            Event::Start { schema: STREAM_SCHEMA.into(), run: Box::new(honest.clone()) },
            Event::Row { row: Box::new(row), log: String::new() },
        ];
        let received = replay(&req, &spec, events);
        let why = received.cut.clone().unwrap();
        assert!(why.contains("as ok, where its trial 2 is failed"), "{why}");
        assert_eq!(received.rows, 0);
    }

    #[test]
    fn a_start_time_that_is_a_path_is_refused_and_names_no_directory() {
        let tmp = tempfile::tempdir().unwrap();
        let spec = spec();
        let req = into_out(RunRequest::streamed(spec.clone(), tmp.path().join("out")));
        let mut start = honest_start(&spec);
        start.envelope.started_utc = tmp.path().join("PWN_ABS").display().to_string();
        let received = replay(&req, &spec, vec![Event::Start { schema: STREAM_SCHEMA.into(), run: Box::new(start) }]);
        assert!(received.dir.is_none());
        assert!(received.cut.unwrap().contains("is not a UTC timestamp"));
        assert_eq!(tree(tmp.path()), BTreeSet::new(), "nothing written");
        // The directory's name takes the digits of a timestamp alone.
        assert_eq!(crate::runner::life::run_dir_stamp("2026-11-28T00:12:46Z"), "20261128T001246Z");
        assert_eq!(crate::runner::life::run_dir_stamp("/tmp/x/../PWN"), "unknown-time");
    }
}
