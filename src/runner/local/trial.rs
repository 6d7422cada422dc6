//! One trial: a fresh worker process for one cell, in a private scratch
//! directory, its stderr appended to the row's log, its end turned into a
//! trial record.
//!
//! A scratch directory is named `proofbench-<pid>-<row>-t<trial>-<random>`
//! and made with mode 0700, so that a name cannot be known, nor the
//! directory made, in advance by anyone else sharing the directory it goes
//! in. When it cannot be made (a read-only `--io-dir`, a missing `TMPDIR`),
//! a cell whose workload works on files is skipped with the reason and the
//! others run without one.
//!
//! The first trial of a local run also removes the scratch directories runs
//! that were killed left behind, and only those: a name proves nothing (a
//! user's `proofbench-2024-results` has one), so each scratch directory holds
//! a marker file written when it was made ([`MARKER`]: the run's pid, boot
//! and the directory's own name). A directory is removed only when it is a
//! directory (not a link) of this user with mode 0700, its marker is a
//! regular file of this user naming this directory and the pid in its name,
//! that run's process is gone (another boot, or no live process with the
//! pid), and no live run holds it (a run holds an `flock` on each of its
//! own, which a run in another pid namespace sharing the directory sees
//! too). Anything else is left alone; one with a scratch directory's full
//! name but no valid marker, whose run is gone, is named in a warning.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Once;

use anyhow::Context;

use crate::evidence::{ProcessRecord, RunDir, TrialRecord, WorkerReport};
use crate::measure::clock::utc_now;
use crate::model::{Cell, Status};
use crate::workloads::process;

use crate::measure::lockstep;
use crate::process::signals;
use crate::runner::config::{RunConfig, ScratchRoot};
use crate::runner::local::compose::{self, Finished};
use crate::runner::local::spawn::{self, WorkerRun};

/// The start of every scratch directory's name.
const PREFIX: &str = "proofbench-";

/// The marker file a run writes into each scratch directory it makes.
pub const MARKER: &str = ".proofbench-scratch";

/// The first line of a marker: what it is.
const MARKER_HEAD: &str = "proofbench scratch directory";

/// The length of the random end of a scratch directory's name.
const RANDOM_LEN: usize = 12;

/// A cell's private directory, removed with everything in it when dropped:
/// after its worker has ended, however it ended.
struct Scratch {
    path: PathBuf,
    /// The directory, open and locked while the run uses it.
    _lock: Option<std::fs::File>,
}

/// Opens directory `path` and takes an exclusive `flock` on it without
/// waiting: held by one process at a time, released when it ends however
/// it ends.
fn lock_dir(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::fd::AsRawFd;
    let f = std::fs::File::open(path)?;
    // SAFETY: flock on a descriptor this function owns; no memory involved.
    if unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(f)
}

impl Scratch {
    /// Makes the directory, or says why it cannot be made.
    fn create(root: &ScratchRoot, name: &str) -> Result<Scratch, String> {
        use std::os::unix::fs::DirBuilderExt;
        let stem = format!("{PREFIX}{}-{}-", std::process::id(), crate::model::file_name::bounded(name, 120));
        let mut last = None;
        // A taken name (another process's) is never reused: another is drawn.
        for _ in 0..16 {
            let path = root.path.join(format!("{stem}{}", crate::evidence::dir::random_suffix(RANDOM_LEN)));
            match std::fs::DirBuilder::new().mode(0o700).create(&path) {
                Ok(()) => {
                    // A filesystem without locks still has the pid check.
                    let lock = lock_dir(&path).ok();
                    // Without its marker (a full disk) the directory is
                    // only never removed by a later run's cleaner.
                    let _ = write_marker(&path);
                    return Ok(Scratch { path, _lock: lock });
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last = Some(e),
                Err(e) => return Err(format!("cannot create a scratch directory in {}: {e}", root.shown)),
            }
        }
        Err(format!("cannot create a scratch directory in {}: {}", root.shown, last.expect("16 attempts")))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if let Err(e) = std::fs::remove_dir_all(&self.path)
            && e.kind() != std::io::ErrorKind::NotFound
        {
            crate::text::out::to_stderr(&format!("proofbench: warning: could not remove {}: {e}\n", self.path.display()));
        }
    }
}

/// The pid in a scratch directory's name (`proofbench-<pid>-...`), if the
/// name is one.
fn owner_pid(name: &str) -> Option<libc::pid_t> {
    let rest = name.strip_prefix(PREFIX)?;
    let (pid, tail) = rest.split_once('-')?;
    if pid.is_empty() || tail.is_empty() || !pid.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    pid.parse().ok()
}

/// Whether `name` has the whole shape of a scratch directory's name,
/// `proofbench-<pid>-<row>-t<trial>-<random>`: one worth a warning when it
/// has no valid marker.
fn scratch_shaped(name: &str) -> bool {
    let Some((head, random)) = name.rsplit_once('-') else { return false };
    let trial = head.rsplit_once("-t").map(|(_, t)| t);
    owner_pid(name).is_some()
        && random.len() == RANDOM_LEN
        && random.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        && trial.is_some_and(|t| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()))
}

/// This boot's identity (`/proc/sys/kernel/random/boot_id`), or "unknown".
fn boot_id() -> String {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id").map(|s| s.trim().to_string()).unwrap_or_else(|_| "unknown".into())
}

/// The text of the marker of the scratch directory named `name`, made by
/// process `pid` in boot `boot`.
fn marker_text(name: &str, pid: libc::pid_t, boot: &str) -> String {
    format!("{MARKER_HEAD}\npid={pid}\nboot={boot}\nname={name}\n")
}

/// Writes the marker into the scratch directory `dir` this process just
/// made (a new file, mode 0600). It is written under another name and
/// renamed into place, so a run killed at any moment leaves either no
/// marker or a whole one, never an empty or partial file that would make a
/// later run's cleaner leave the directory behind as unrecognised.
fn write_marker(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let name = dir.file_name().and_then(|n| n.to_str()).unwrap_or_default();
    let text = marker_text(name, std::process::id() as libc::pid_t, &boot_id());
    let partial = dir.join(format!("{MARKER}.partial"));
    let mut f = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(&partial)?;
    f.write_all(text.as_bytes())?;
    std::fs::rename(&partial, dir.join(MARKER))
}

/// What a valid marker says: the pid and boot of the run that made the
/// directory.
#[derive(Debug, PartialEq)]
struct Marker {
    pid: libc::pid_t,
    boot: String,
}

/// Reads the marker of directory `dir` (named `name`, owned by `uid`): a
/// regular file of that user, not a link, of at most 4 KiB, saying it is a
/// marker, naming `name`, and with the pid that `name` has.
fn read_marker(dir: &Path, name: &str, uid: u32) -> Option<Marker> {
    use std::io::Read;
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    let path = dir.join(MARKER);
    let meta = std::fs::symlink_metadata(&path).ok()?;
    if !meta.file_type().is_file() || meta.uid() != uid || meta.len() > 4096 {
        return None;
    }
    // O_NOFOLLOW: a link put there after the look above is not followed.
    let mut text = String::new();
    std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NOFOLLOW).open(&path).ok()?.take(4096).read_to_string(&mut text).ok()?;
    let mut lines = text.lines();
    if lines.next()? != MARKER_HEAD {
        return None;
    }
    let mut field = |key: &str| lines.next()?.strip_prefix(key)?.strip_prefix('=').map(str::to_string);
    let pid: libc::pid_t = field("pid")?.parse().ok()?;
    let boot = field("boot")?;
    let named = field("name")?;
    (named == name && Some(pid) == owner_pid(name)).then_some(Marker { pid, boot })
}

/// What the cleaner decided about one entry of the scratch root.
#[derive(Debug, PartialEq)]
enum Stale {
    /// A dead run's scratch directory, to remove.
    Remove,
    /// Not ours to judge: anything without a scratch directory's name, or
    /// whose run may still live.
    Leave,
    /// A scratch directory's full name without a valid marker: left alone,
    /// and named in a warning.
    Unrecognised,
}

/// Judges the entry `path` named `name` of the scratch root (see the module
/// documentation); `me` is this process's pid, `uid` its user, `boot` this boot.
fn judge_stale(path: &Path, name: &str, me: libc::pid_t, uid: u32, boot: &str) -> Stale {
    use std::os::unix::fs::MetadataExt;
    let Some(named) = owner_pid(name) else { return Stale::Leave };
    let Ok(meta) = std::fs::symlink_metadata(path) else { return Stale::Leave };
    if !meta.file_type().is_dir() || meta.uid() != uid {
        return Stale::Leave;
    }
    // A live process's directory is not worth a warning: another run's,
    // made a moment ago, may not hold its marker yet.
    let unrecognised = || if scratch_shaped(name) && named != me && !process::alive(named) { Stale::Unrecognised } else { Stale::Leave };
    if meta.mode() & 0o777 != 0o700 {
        return unrecognised();
    }
    let Some(marker) = read_marker(path, name, uid) else { return unrecognised() };
    let gone = marker.boot != boot || (marker.pid != me && !process::alive(marker.pid));
    if gone { Stale::Remove } else { Stale::Leave }
}

/// Removes from `root` the scratch directories of runs that ended without
/// removing them (killed), and only those (see the module documentation).
/// Returns what it removed and the directories it left alone for want of a
/// valid marker although they have a scratch directory's name.
pub fn remove_stale(root: &Path) -> (Vec<PathBuf>, Vec<PathBuf>) {
    // SAFETY: geteuid has no preconditions.
    let uid = unsafe { libc::geteuid() };
    let me = std::process::id() as libc::pid_t;
    let boot = boot_id();
    let Ok(entries) = std::fs::read_dir(root) else { return (Vec::new(), Vec::new()) };
    let (mut removed, mut unrecognised) = (Vec::new(), Vec::new());
    for e in entries.flatten() {
        let Some(name) = e.file_name().to_str().map(str::to_string) else { continue };
        let path = e.path();
        match judge_stale(&path, &name, me, uid, &boot) {
            Stale::Leave => continue,
            Stale::Unrecognised => {
                unrecognised.push(path);
                continue;
            }
            Stale::Remove => {}
        }
        // Held while it is checked again and removed, so that no other run's
        // cleaner races this one, and no live run holds it.
        let Ok(_held) = lock_dir(&path) else { continue };
        if judge_stale(&path, &name, me, uid, &boot) != Stale::Remove {
            continue;
        }
        match std::fs::remove_dir_all(&path) {
            Ok(()) => removed.push(path),
            Err(e) => crate::text::out::to_stderr(&format!(
                "proofbench: warning: could not remove {}, left by a run that ended: {e}\n",
                path.display()
            )),
        }
    }
    (removed, unrecognised)
}

/// Whether the cell's workload works on files in its scratch directory.
fn needs_scratch(cell: &Cell) -> bool {
    cell.command.is_none() && crate::workloads::registry::find(&cell.workload).is_some_and(|w| w.needs_scratch())
}

/// A trial about to start its worker: its log (headed), scratch directory
/// and start time; or, when it cannot start, its record already.
enum Begun {
    Ready { log: std::fs::File, log_rel: String, scratch: Option<Scratch>, started_utc: String, worker_from: u64 },
    Done(Box<Finished>),
}

/// Removes what runs that ended left behind, once per process.
fn remove_stale_once(cfg: &RunConfig) {
    static STALE: Once = Once::new();
    STALE.call_once(|| {
        let (removed, unrecognised) = remove_stale(&cfg.scratch_root.path);
        for p in removed {
            crate::text::out::to_stderr(&format!(
                "proofbench: note: cleaned up {}, the scratch directory of an earlier run that is no longer running (nothing to do)\n",
                p.display()
            ));
        }
        if !unrecognised.is_empty() {
            let names: Vec<String> = unrecognised.iter().map(|p| p.display().to_string()).collect();
            crate::text::out::to_stderr(&format!(
                "proofbench: warning: left alone {} {} named like a scratch directory but without a proofbench marker: {}\n",
                names.len(),
                if names.len() == 1 { "directory" } else { "directories" },
                names.join(", ")
            ));
        }
    });
}

/// Opens trial `trial` of `cell`: its log's heading and its scratch directory.
fn begin(cfg: &RunConfig, dir: &RunDir, cell: &Cell, trial: u32, round: u32) -> anyhow::Result<Begun> {
    remove_stale_once(cfg);
    let (mut log, log_rel) = dir.log_file(&cell.row_id)?;
    writeln!(log, "=== proofbench: trial {} of {} (round {}) ===", trial + 1, cell.row_id, round + 1)
        .with_context(|| format!("writing {log_rel}"))?;
    let started_utc = utc_now();
    let scratch = match Scratch::create(&cfg.scratch_root, &format!("{}-t{trial}", cell.row_id)) {
        Ok(s) => Some(s),
        Err(why) if needs_scratch(cell) => {
            writeln!(log, "proofbench: {why}; this workload works on files: the trial is skipped")
                .with_context(|| format!("writing {log_rel}"))?;
            let report = WorkerReport::new(Status::Skipped, Some(why.clone()));
            let record = TrialRecord {
                started_utc,
                finished_utc: utc_now(),
                ..TrialRecord::from_report(trial, round, Status::Skipped, Some(why), ProcessRecord::default(), &report)
            };
            return Ok(Begun::Done(Box::new(Finished { record, report, log_rel, stderr_tail: String::new() })));
        }
        Err(why) => {
            writeln!(log, "proofbench: {why}; this workload needs no files: it runs without one")
                .with_context(|| format!("writing {log_rel}"))?;
            None
        }
    };
    // The worker's stderr follows what proofbench wrote above: its own lines start here.
    let worker_from = log.metadata().map(|m| m.len()).with_context(|| format!("reading the length of {log_rel}"))?;
    Ok(Begun::Ready { log, log_rel, scratch, started_utc, worker_from })
}

/// The record of a trial whose worker ran (`None`: a stop signal ended it).
#[allow(clippy::too_many_arguments)]
fn conclude(
    cfg: &RunConfig,
    dir: &RunDir,
    wr: &WorkerRun,
    log_rel: String,
    worker_from: u64,
    trial: u32,
    round: u32,
    started_utc: String,
) -> Option<Finished> {
    if wr.interrupted {
        return None;
    }
    let stderr_tail = compose::log_tail(&dir.path().join(&log_rel), 10, worker_from);
    let (record, report) = compose::trial(wr, cfg.timeout, &stderr_tail, trial, round, started_utc, utc_now());
    Some(Finished { record, report, log_rel, stderr_tail })
}

/// Runs trial `trial` of `cell` in round `round`. `None` when a stop signal
/// ended it (the trial is incomplete and is not kept).
pub fn run(cfg: &RunConfig, dir: &RunDir, cell: &Cell, trial: u32, round: u32) -> anyhow::Result<Option<Finished>> {
    let begun = begin(cfg, dir, cell, trial, round)?;
    alone(cfg, dir, cell, begun, trial, round)
}

/// Runs an opened trial's worker by itself (or returns the record of one
/// that could not start).
fn alone(cfg: &RunConfig, dir: &RunDir, cell: &Cell, begun: Begun, trial: u32, round: u32) -> anyhow::Result<Option<Finished>> {
    match begun {
        Begun::Done(f) => Ok(Some(*f)),
        Begun::Ready { log, log_rel, scratch, started_utc, worker_from } => {
            let wr = run_worker_in(cfg, cell, scratch, &[], log).with_context(|| format!("running the worker of {}", cell.row_id))?;
            Ok(conclude(cfg, dir, &wr, log_rel, worker_from, trial, round, started_utc))
        }
    }
}

/// The CPU a lockstep set of `cells` shares in trial `trial`: for cells of
/// one thread left to the scheduler, one of this process's CPUs, the next
/// one each trial (both sides on one CPU, taking turns: the CPU's speed
/// cancels in their ratio); `None` for cells of several threads or pinned
/// ones, which keep their own placement.
fn lockstep_cpu(cells: &[&Cell], trial: u32) -> Option<usize> {
    let single = cells.iter().all(|c| c.workers.unwrap_or(1) <= 1 && c.placement.cpus.is_none() && c.cpu_for(0).is_none());
    let allowed = crate::measure::affinity::current_thread().ok()?;
    (single && !allowed.is_empty()).then(|| allowed[trial as usize % allowed.len()])
}

/// Runs trial `trials[k]` of each of `cells` (the variants of one cell) as
/// one lockstep set (`crate::measure::lockstep`): every worker started
/// together, their timed samples taken in turn as the runner hands them
/// the token, on one CPU for cells of one thread. A side that dies, hangs
/// or fails ends the set: every side's trial is then failed with the
/// reason (a hung side is stopped at the timeout, as a timed-out worker is). A cell that
/// cannot start (no scratch directory for a workload that needs one) is
/// skipped and the others run in turn, without lockstep. A side skipped
/// (the cell does not apply, or the machine cannot run it) skips the others
/// too: nothing can be compared. A set on one CPU whose side the machine
/// could not run there (a cell that needs two CPUs while its workers
/// looked single) runs again on the CPUs the run has. `None` when a stop
/// signal ended the set.
pub fn run_set(cfg: &RunConfig, dir: &RunDir, cells: &[&Cell], trials: &[u32], round: u32) -> anyhow::Result<Option<Vec<Finished>>> {
    if let Some(why) = cells.iter().find_map(|c| no_turns(cfg, c)) {
        return in_turn(cfg, dir, cells, trials, round, &why);
    }
    let mut cpu = lockstep_cpu(cells, trials[0]);
    loop {
        let out = match run_set_on(cfg, dir, cells, trials, round, cpu)? {
            None => return Ok(None),
            Some(SetOutcome::Ran(out)) => out,
            Some(SetOutcome::NoTurns(k)) => {
                let exe = cfg.invocation(cells[k]).exe.unwrap_or_else(|| cfg.exe.display().to_string());
                let why = format!(
                    "not in lockstep: the worker {exe} finished its samples without taking turns (a build older than \
                     lockstep), so the variants ran one after another"
                );
                NO_TURNS.lock().unwrap_or_else(|e| e.into_inner()).insert(exe, why.clone());
                return in_turn(cfg, dir, cells, trials, round, &why);
            }
        };
        let machine_skip = |f: &Finished| f.record.status == Status::Skipped && f.record.skip != Some(crate::model::SkipKind::ByDesign);
        if cpu.is_some() && out.iter().any(machine_skip) {
            cpu = None;
            continue;
        }
        return Ok(Some(out));
    }
}

/// Worker programs seen to finish a lockstep set's samples without taking
/// turns (builds from before lockstep, run as `exe=` variants, e.g. by
/// `bisect`), with what their rows say: their later sets run in turn at
/// once, without spending a set to find out again.
static NO_TURNS: std::sync::Mutex<std::collections::BTreeMap<String, String>> = std::sync::Mutex::new(std::collections::BTreeMap::new());

/// Why `cell`'s worker cannot take lockstep turns, if it was seen not to.
fn no_turns(cfg: &RunConfig, cell: &Cell) -> Option<String> {
    let exe = cfg.invocation(cell).exe?;
    NO_TURNS.lock().unwrap_or_else(|e| e.into_inner()).get(&exe).cloned()
}

/// How a lockstep set ended.
enum SetOutcome {
    /// Every side's trial, concluded.
    Ran(Vec<Finished>),
    /// Side k's worker ended of itself, its measurement complete, before it
    /// took a turn: it does not speak lockstep (an older build).
    NoTurns(usize),
}

/// Trial `trials[k]` of each of `cells` one after another, without
/// lockstep, each record saying `why`. `None` when a stop signal ended it.
fn in_turn(cfg: &RunConfig, dir: &RunDir, cells: &[&Cell], trials: &[u32], round: u32, why: &str) -> anyhow::Result<Option<Vec<Finished>>> {
    let mut out = Vec::new();
    for (cell, &t) in cells.iter().zip(trials) {
        let b = begin(cfg, dir, cell, t, round)?;
        let Some(mut f) = alone(cfg, dir, cell, b, t, round)? else { return Ok(None) };
        f.record.not_in_lockstep = Some(why.to_string());
        out.push(f);
    }
    Ok(Some(out))
}

/// [`run_set`] with every side on `cpu`, or on the run's CPUs (`None`).
fn run_set_on(
    cfg: &RunConfig,
    dir: &RunDir,
    cells: &[&Cell],
    trials: &[u32],
    round: u32,
    cpu: Option<usize>,
) -> anyhow::Result<Option<SetOutcome>> {
    let mut begun = Vec::new();
    for (cell, &t) in cells.iter().zip(trials) {
        begun.push(begin(cfg, dir, cell, t, round)?);
    }
    if begun.iter().any(|b| matches!(b, Begun::Done(_))) {
        let mut out = Vec::new();
        for ((b, cell), &t) in begun.into_iter().zip(cells).zip(trials) {
            let Some(f) = alone(cfg, dir, cell, b, t, round)? else { return Ok(None) };
            out.push(f);
        }
        return Ok(Some(SetOutcome::Ran(out)));
    }
    let mut sides = Vec::new();
    let mut ends = Vec::new();
    for _ in cells {
        let (side, end) = lockstep::channel().context("making a lockstep set's pipes")?;
        sides.push(side);
        ends.push(end);
    }
    let pids: Vec<std::sync::Mutex<Option<i32>>> = cells.iter().map(|_| std::sync::Mutex::new(None)).collect();
    let m = &cells[0].measure;
    // `--runs N`: N sets; else the cell's sample bounds and a budget per side.
    let pace = match m.fixed_runs {
        Some(n) => lockstep::Pace { min: n.max(1), max: n.max(1), budget: std::time::Duration::ZERO },
        None => lockstep::Pace {
            min: m.min_samples.max(1),
            max: m.max_samples.max(m.min_samples).max(1),
            budget: std::time::Duration::from_millis(m.budget_ms * cells.len() as u64),
        },
    };
    let seed = cells[0].seed ^ u64::from(trials[0]);
    let (runs, fault) = std::thread::scope(|scope| -> anyhow::Result<_> {
        let mut handles = Vec::new();
        for (k, ((b, cell), end)) in begun.into_iter().zip(cells).zip(ends).enumerate() {
            let Begun::Ready { log, log_rel, scratch, started_utc, worker_from } = b else { unreachable!("no Done here") };
            let pid = &pids[k];
            handles.push(scope.spawn(move || -> anyhow::Result<_> {
                let cell = &Cell { scratch_dir: scratch.as_ref().map(|s| s.path.display().to_string()), ..(*cell).clone() };
                let cell_json = serde_json::to_string(cell).context("serializing a cell")?;
                let mut command = spawn::local(&cfg.exe, &cfg.invocation(cell), &["worker"]);
                end.inherit(&mut command);
                if let Some(cpu) = cpu {
                    pin_child(&mut command, cpu);
                }
                let limit = spawn::report_limit(&cell.measure, cell_json.len());
                let mut end = Some(end);
                // The runner's coordinator bounds each wait by the per-trial
                // timeout; a set takes turns, so each worker's own limit (the
                // backstop) is the timeout once per side and once more.
                let backstop = cfg.timeout * (cells.len() as u32 + 1);
                let wr = spawn::run_worker_then(command, &cell_json, log, backstop, limit, |p| {
                    *pid.lock().unwrap_or_else(|e| e.into_inner()) = Some(p);
                    // The worker holds its ends now; this side's copies would hide its death.
                    drop(end.take());
                })
                .with_context(|| format!("running the worker of {}", cell.row_id))?;
                drop(end);
                drop(scratch);
                Ok((wr, log_rel, worker_from, started_utc))
            }));
        }
        let mut coordinator = lockstep::Coordinator::new(sides, cfg.timeout, cfg.timeout);
        let result = coordinator.run(pace, seed, &signals::interrupted);
        if let Err(lockstep::Fault::Hung { side, .. } | lockstep::Fault::Garbled { side, .. }) = &result
            && let Some(p) = *pids[*side].lock().unwrap_or_else(|e| e.into_inner())
        {
            // As a timeout does: the guard takes SIGTERM and ends everything
            // the worker started (a command's own process group included).
            spawn::kill_group(p, libc::SIGTERM);
        }
        drop(coordinator);
        let mut runs = Vec::new();
        for h in handles {
            runs.push(h.join().map_err(|_| anyhow::anyhow!("a lockstep side's thread panicked"))??);
        }
        Ok((runs, result.err()))
    })?;
    let mut out: Vec<Finished> = Vec::new();
    for (k, (wr, log_rel, worker_from, started_utc)) in runs.into_iter().enumerate() {
        let Some(f) = conclude(cfg, dir, &wr, log_rel, worker_from, trials[k], round, started_utc) else { return Ok(None) };
        if matches!(fault, Some(lockstep::Fault::Stopped)) {
            return Ok(None);
        }
        out.push(f);
    }
    // A side skipped (it ended of itself, saying why): the set has nothing
    // to compare, so every side is skipped with its reason, not failed.
    if let Some(k) = out.iter().position(|f| f.record.status == Status::Skipped) {
        let (why, kind) = (out[k].record.reason.clone().unwrap_or_default(), out[k].record.skip);
        let name = |c: &Cell| c.variant.as_ref().map_or_else(|| c.row_id.clone(), |v| format!("variant {}", v.name));
        for (j, f) in out.iter_mut().enumerate() {
            if f.record.status != Status::Skipped {
                f.record.status = Status::Skipped;
                f.record.skip = kind;
                f.record.reason = Some(format!("{} of its lockstep set was skipped: {why}", name(cells[k])));
            }
            f.record.lockstep =
                Some(crate::evidence::LockstepRecord { side: j as u32, sides: cells.iter().map(|c| c.row_id.clone()).collect(), cpu });
        }
        return Ok(Some(SetOutcome::Ran(out)));
    }
    if let Some(lockstep::Fault::Died { side, pair: None }) = &fault
        && out[*side].record.status == Status::Ok
        && out[*side].record.timed_samples > 0
    {
        return Ok(Some(SetOutcome::NoTurns(*side)));
    }
    let concluded = std::mem::take(&mut out);
    for (k, mut f) in concluded.into_iter().enumerate() {
        // A side that died keeps what ended it (a signal, an exit); one that
        // hung or garbled was killed for it; every other side failed because
        // its set ended.
        if let Some(fault) = &fault {
            let killed = matches!(fault, lockstep::Fault::Hung { .. } | lockstep::Fault::Garbled { .. });
            let at_fault = fault.side() == Some(k);
            if !at_fault || killed || f.record.status == Status::Ok {
                f.record.status = Status::Failed;
                let what = if at_fault && killed { "; the runner stopped it" } else { "" };
                f.record.reason = Some(format!("{fault}{what} (this is side {} of {})", lockstep::side_name(k), cells.len()));
            }
        }
        f.record.lockstep =
            Some(crate::evidence::LockstepRecord { side: k as u32, sides: cells.iter().map(|c| c.row_id.clone()).collect(), cpu });
        out.push(f);
    }
    // Each side's window holds the others' turns: their CPU time is the
    // set's, not other work's.
    let own: Vec<f64> =
        out.iter().map(|f| f.record.facts.as_ref().and_then(|x| x.interference.as_ref()).map_or(0.0, |i| i.own_cpu_ms)).collect();
    let total: f64 = own.iter().sum();
    for (f, own) in out.iter_mut().zip(&own) {
        if let Some(i) = f.record.facts.as_mut().and_then(|x| x.interference.as_mut()) {
            *i = i.without_partners(total - own);
        }
    }
    Ok(Some(SetOutcome::Ran(out)))
}

/// Makes `command`'s process run on `cpu` alone (inherited by the worker).
fn pin_child(command: &mut std::process::Command, cpu: usize) {
    use std::os::unix::process::CommandExt;
    // SAFETY: the closure calls sched_setaffinity only (async-signal-safe)
    // on a set built before the fork.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `cpu` is one of this process's allowed CPUs, below CPU_SETSIZE.
    unsafe { libc::CPU_SET(cpu, &mut set) };
    // SAFETY: as above.
    unsafe {
        command.pre_exec(move || {
            if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

/// Runs `cell`'s worker once, in `scratch` when it has one (removed after
/// the run), under the variant's invocation with `prefix` in front, its
/// stderr into `log`, killed after the run's per-trial timeout.
fn run_worker_in(
    cfg: &RunConfig,
    cell: &Cell,
    scratch: Option<Scratch>,
    prefix: &[String],
    log: std::fs::File,
) -> anyhow::Result<WorkerRun> {
    let cell = &Cell { scratch_dir: scratch.as_ref().map(|s| s.path.display().to_string()), ..cell.clone() };
    let cell_json = serde_json::to_string(cell).context("serializing a cell")?;
    let mut how = cfg.invocation(cell);
    how.wrapper = prefix.iter().cloned().chain(how.wrapper).collect();
    let command = spawn::local(&cfg.exe, &how, &["worker"]);
    let report_limit = spawn::report_limit(&cell.measure, cell_json.len());
    let wr = spawn::run_worker(command, &cell_json, log, cfg.timeout, report_limit)?;
    drop(scratch);
    Ok(wr)
}

/// How a run of a cell's worker outside its trials ended ([`run_outside`]).
pub enum Outside {
    /// It ran: its trial-like record (never one of the row's trials) and
    /// the worker's run.
    Ran(Box<TrialRecord>),
    /// It could not start, and why (its scratch directory could not be made).
    NotRun(String),
    /// A stop signal ended it.
    Interrupted,
}

/// One more run of `cell`'s worker outside its trials (the profiling pass
/// of `run --perf-pass`), made like a trial's: in a scratch directory of its
/// own (`tag` in its name) when the workload works on files, under the
/// variant's invocation with `prefix` (perf's words) in front, its stderr
/// into `log`, killed after the run's per-trial timeout. Nothing of it goes
/// into the row.
pub fn run_outside(cfg: &RunConfig, cell: &Cell, tag: &str, prefix: &[String], log: std::fs::File) -> anyhow::Result<Outside> {
    let started_utc = utc_now();
    let scratch = match Scratch::create(&cfg.scratch_root, &format!("{}-{tag}", cell.row_id)) {
        Ok(s) => Some(s),
        Err(why) if needs_scratch(cell) => return Ok(Outside::NotRun(why)),
        Err(_) => None,
    };
    let wr = run_worker_in(cfg, cell, scratch, prefix, log).with_context(|| format!("running the worker of {} ({tag})", cell.row_id))?;
    if wr.interrupted {
        return Ok(Outside::Interrupted);
    }
    let (record, _) = compose::trial(&wr, cfg.timeout, "", 0, 0, started_utc, utc_now());
    Ok(Outside::Ran(Box::new(record)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_names_with_a_pid_and_more_are_scratch_names() {
        assert_eq!(owner_pid("proofbench-123-000-os.stat-t0-abc"), Some(123));
        assert_eq!(owner_pid("proofbench-123-000-os.stat-t0"), Some(123));
        for name in ["proofbench-123", "proofbench-123-", "proofbench--1-x", "proofbench-12a-x", "proofbench-results", "x-proofbench-1-a"] {
            assert_eq!(owner_pid(name), None, "{name}");
        }
    }

    #[test]
    fn scratch_directories_get_fresh_private_names_even_when_one_is_taken() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = tempfile::tempdir().unwrap();
        let root = ScratchRoot { path: tmp.path().to_path_buf(), shown: "--io-dir x".into() };
        let a = Scratch::create(&root, "000-os.stat-t0").unwrap();
        let b = Scratch::create(&root, "000-os.stat-t0").unwrap();
        assert_ne!(a.path, b.path);
        let name = a.path.file_name().unwrap().to_str().unwrap().to_string();
        assert!(name.starts_with(&format!("proofbench-{}-000-os.stat-t0-", std::process::id())), "{name}");
        assert_eq!(std::fs::metadata(&a.path).unwrap().permissions().mode() & 0o777, 0o700);
        let (pa, pb) = (a.path.clone(), b.path.clone());
        drop((a, b));
        assert!(!pa.exists() && !pb.exists(), "removed when dropped");
        let missing = ScratchRoot { path: tmp.path().join("none"), shown: "TMPDIR=/none".into() };
        let held = Scratch::create(&root, "001-os.stat-t0").unwrap();
        assert!(lock_dir(&held.path).is_err(), "a live run's directory is locked");
        drop(held);
        let why = Scratch::create(&missing, "x").err().unwrap();
        assert!(why.starts_with("cannot create a scratch directory in TMPDIR=/none: No such file"), "{why}");
    }

    /// A dead process's pid: a child's, once reaped.
    fn dead_pid() -> libc::pid_t {
        let mut c = std::process::Command::new("true").spawn().unwrap();
        let pid = c.id() as libc::pid_t;
        c.wait().unwrap();
        pid
    }

    /// Makes `root/name` with `mode` and, when given, a marker text and a file.
    fn plant(root: &Path, name: &str, mode: u32, marker: Option<String>) -> PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let d = root.join(name);
        std::fs::create_dir(&d).unwrap();
        std::fs::write(d.join("notes.txt"), b"a user's notes").unwrap();
        if let Some(m) = marker {
            std::fs::write(d.join(MARKER), m).unwrap();
        }
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(mode)).unwrap();
        d
    }

    #[test]
    fn a_directory_named_like_a_scratch_directory_without_a_marker_is_never_removed() {
        let tmp = tempfile::tempdir().unwrap();
        let dead = dead_pid();
        let users = [
            plant(tmp.path(), "proofbench-2024-results", 0o700, None),
            plant(tmp.path(), "proofbench-4000000-my-build", 0o700, None),
            plant(tmp.path(), &format!("proofbench-{dead}-000-os.stat-t0-ab3de9xk2m1q"), 0o700, None),
        ];
        let (removed, unrecognised) = remove_stale(tmp.path());
        assert!(removed.is_empty(), "{removed:?}");
        for d in &users {
            assert!(d.join("notes.txt").is_file(), "{} lost its contents", d.display());
        }
        // Only the one with a scratch directory's whole name is worth a warning.
        assert_eq!(unrecognised, vec![users[2].clone()]);
    }

    #[test]
    fn only_a_dead_run_s_private_marked_directory_is_removed() {
        let tmp = tempfile::tempdir().unwrap();
        let (dead, me, boot) = (dead_pid(), std::process::id() as libc::pid_t, boot_id());
        let name = |pid: libc::pid_t, n: u32| format!("proofbench-{pid}-00{n}-os.stat-t0-abcdefghij{n:02}");
        let marked = |pid: libc::pid_t, n: u32, boot: &str| Some(marker_text(&name(pid, n), pid, boot));
        let stale = plant(tmp.path(), &name(dead, 0), 0o700, marked(dead, 0, &boot));
        // The pid in the name is reused by a live process, but in another boot.
        let other_boot = plant(tmp.path(), &name(me, 1), 0o700, marked(me, 1, "another-boot"));
        let kept = [
            // This process's own.
            plant(tmp.path(), &name(me, 2), 0o700, marked(me, 2, &boot)),
            // Not private: not a run's.
            plant(tmp.path(), &name(dead, 3), 0o755, marked(dead, 3, &boot)),
            // A marker copied from another directory.
            plant(tmp.path(), &name(dead, 4), 0o700, marked(dead, 0, &boot)),
            // A marker whose pid is not the name's.
            plant(tmp.path(), &name(dead, 5), 0o700, Some(marker_text(&name(dead, 5), me, &boot))),
            // Not a marker at all.
            plant(tmp.path(), &name(dead, 6), 0o700, Some("pid=1\n".into())),
        ];
        // A marker that is a link to a valid marker elsewhere.
        let linked = plant(tmp.path(), &name(dead, 7), 0o700, None);
        let target = tmp.path().join("elsewhere");
        std::fs::write(&target, marker_text(&name(dead, 7), dead, &boot)).unwrap();
        std::os::unix::fs::symlink(&target, linked.join(MARKER)).unwrap();
        // A live run's that this process cannot see: it holds the lock.
        let locked = plant(tmp.path(), &name(dead, 8), 0o700, marked(dead, 8, &boot));
        let held = lock_dir(&locked).unwrap();
        let (mut removed, unrecognised) = remove_stale(tmp.path());
        removed.sort();
        let mut want = vec![stale.clone(), other_boot.clone()];
        want.sort();
        assert_eq!(removed, want);
        assert!(!stale.exists() && !other_boot.exists());
        for d in kept.iter().chain([&linked, &locked]) {
            assert!(d.join("notes.txt").is_file(), "{} lost its contents", d.display());
        }
        assert_eq!(unrecognised.len(), 5, "the unmarked, not private or wrongly marked are named: {unrecognised:?}");
        drop(held);
    }

    #[test]
    fn a_scratch_directory_carries_a_marker_that_names_it_and_its_run() {
        let tmp = tempfile::tempdir().unwrap();
        let root = ScratchRoot { path: tmp.path().to_path_buf(), shown: "--io-dir x".into() };
        let s = Scratch::create(&root, "000-os.stat-t0").unwrap();
        let name = s.path.file_name().unwrap().to_str().unwrap().to_string();
        assert!(scratch_shaped(&name), "{name}");
        // SAFETY: geteuid has no preconditions.
        let marker = read_marker(&s.path, &name, unsafe { libc::geteuid() }).expect("a valid marker");
        assert_eq!(marker, Marker { pid: std::process::id() as libc::pid_t, boot: boot_id() });
        // The marker was renamed into place: nothing else is in the directory.
        let entries: Vec<_> = std::fs::read_dir(&s.path).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(entries, [std::ffi::OsString::from(MARKER)]);
        // Its own run is alive and holds it: not removed.
        assert_eq!(remove_stale(tmp.path()), (vec![], vec![]));
        assert!(s.path.is_dir());
    }
}
