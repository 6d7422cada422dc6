//! One trial: a fresh worker process for one cell, in a private scratch
//! directory, its stderr appended to the row's log, its end turned into a
//! trial record.
//!
//! A scratch directory is named `proofbench-<pid>-<row>-t<trial>-<random>`
//! and made with mode 0700, so that a name cannot be known, nor the
//! directory made, in advance by anyone else sharing the directory it goes
//! in. When it cannot be made (a read-only `--io-dir`, a missing `TMPDIR`),
//! a cell whose workload works on files is skipped with the reason and the
//! others run without one. The first trial of a local run also removes the
//! scratch directories runs that were killed left behind: only directories
//! of that name that belong to this user, whose pid is no live process's,
//! and which no live run holds (a run holds an `flock` on each of its own,
//! which a run in another pid namespace sharing the directory sees too).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Once;

use anyhow::Context;

use crate::evidence::{ProcessRecord, RunDir, TrialRecord, WorkerReport};
use crate::model::{Cell, Status, utc_now};
use crate::workloads::process;

use super::compose::{self, Finished};
use super::config::{RunConfig, ScratchRoot};
use super::launcher::Launcher;
use super::spawn;

/// The start of every scratch directory's name.
const PREFIX: &str = "proofbench-";

/// A cell's private directory, removed with everything in it when dropped:
/// after its worker has ended, however it ended. With a launcher it lives on
/// the launched side, made and removed through the launcher (`mkdir`, `rm -rf`).
struct Scratch<'a> {
    path: PathBuf,
    launcher: Option<&'a Launcher>,
    /// The directory, open and locked while the run uses it (local only).
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

/// `n` random characters from `[a-z0-9]`, from the kernel's generator.
fn random_suffix(n: usize) -> String {
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
    let mut bytes = vec![0u8; n];
    if getrandom::fill(&mut bytes).is_err() {
        // No generator: the time's nanoseconds still differ between runs.
        let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
        bytes.iter_mut().enumerate().for_each(|(i, b)| *b = (t >> ((i % 16) * 8)) as u8);
    }
    bytes.iter().map(|b| ALPHABET[*b as usize % ALPHABET.len()] as char).collect()
}

/// A piece of a directory name: safe characters only, not too long.
fn name_part(s: &str) -> String {
    s.chars().map(|c| if c.is_ascii_alphanumeric() || "._=-".contains(c) { c } else { '_' }).take(120).collect()
}

impl<'a> Scratch<'a> {
    /// Makes the directory, or says why it cannot be made.
    fn create(root: &ScratchRoot, name: &str, launcher: Option<&'a Launcher>) -> Result<Scratch<'a>, String> {
        let stem = format!("{PREFIX}{}-{}-", std::process::id(), name_part(name));
        match launcher {
            None => {
                use std::os::unix::fs::DirBuilderExt;
                let mut last = None;
                // A taken name (another process's) is never reused: another is drawn.
                for _ in 0..16 {
                    let path = root.path.join(format!("{stem}{}", random_suffix(12)));
                    match std::fs::DirBuilder::new().mode(0o700).create(&path) {
                        Ok(()) => {
                            // A filesystem without locks still has the pid check.
                            let lock = lock_dir(&path).ok();
                            return Ok(Scratch { path, launcher, _lock: lock });
                        }
                        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last = Some(e),
                        Err(e) => return Err(format!("cannot create a scratch directory in {}: {e}", root.shown)),
                    }
                }
                Err(format!("cannot create a scratch directory in {}: {}", root.shown, last.expect("16 attempts")))
            }
            Some(l) => {
                let path = root.path.join(format!("{stem}{}", random_suffix(12)));
                l.run_helper(&["mkdir", "--", &path.display().to_string()])
                    .map_err(|e| format!("cannot create a scratch directory in {} on the launched side: {e}", root.shown))?;
                Ok(Scratch { path, launcher, _lock: None })
            }
        }
    }
}

impl Drop for Scratch<'_> {
    fn drop(&mut self) {
        match self.launcher {
            None => {
                if let Err(e) = std::fs::remove_dir_all(&self.path)
                    && e.kind() != std::io::ErrorKind::NotFound
                {
                    eprintln!("proofbench: warning: could not remove {}: {e}", self.path.display());
                }
            }
            Some(l) => {
                if let Err(e) = l.run_helper(&["rm", "-rf", "--", &self.path.display().to_string()]) {
                    eprintln!("proofbench: warning: could not remove {} on the launched side: {e}", self.path.display());
                }
            }
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

/// Removes from `root` the scratch directories of runs that ended without
/// removing them (killed): a directory (not a link) with a scratch
/// directory's name, owned by this user, whose pid is not this process's
/// and is no live process's, and on which no process holds a lock. Anything
/// else is left alone. Returns what it removed.
pub fn remove_stale(root: &Path) -> Vec<PathBuf> {
    use std::os::unix::fs::MetadataExt;
    // SAFETY: geteuid has no preconditions.
    let uid = unsafe { libc::geteuid() };
    let me = std::process::id() as libc::pid_t;
    let Ok(entries) = std::fs::read_dir(root) else { return Vec::new() };
    let mut removed = Vec::new();
    for e in entries.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(owner_pid) else { continue };
        let path = e.path();
        let ours = std::fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_dir() && m.uid() == uid);
        if !ours || pid == me || process::alive(pid) {
            continue;
        }
        // Held while it is removed, so that no other run's cleaner races this one.
        let Ok(_held) = lock_dir(&path) else { continue };
        match std::fs::remove_dir_all(&path) {
            Ok(()) => removed.push(path),
            Err(e) => eprintln!("proofbench: warning: could not remove {}, left by a run that ended: {e}", path.display()),
        }
    }
    removed
}

/// Whether the cell's workload works on files in its scratch directory.
fn needs_scratch(cell: &Cell) -> bool {
    cell.command.is_none() && crate::workloads::registry::find(&cell.workload).is_some_and(|w| w.needs_scratch())
}

/// Runs trial `trial` of `cell` in round `round`. `None` when a stop signal
/// ended it (the trial is incomplete and is not kept).
pub fn run(cfg: &RunConfig, dir: &RunDir, cell: &Cell, trial: u32, round: u32) -> anyhow::Result<Option<Finished>> {
    static STALE: Once = Once::new();
    if cfg.launcher.is_none() {
        STALE.call_once(|| {
            for p in remove_stale(&cfg.scratch_root.path) {
                eprintln!("proofbench: removed {}, left by a run that ended", p.display());
            }
        });
    }
    let (mut log, log_rel) = dir.log_file(&cell.row_id)?;
    writeln!(log, "=== proofbench: trial {} of {} (round {}) ===", trial + 1, cell.row_id, round + 1)
        .with_context(|| format!("writing {log_rel}"))?;
    let started_utc = utc_now();
    let scratch = match Scratch::create(&cfg.scratch_root, &format!("{}-t{trial}", cell.row_id), cfg.launcher.as_ref()) {
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
            return Ok(Some(Finished { record, report, log_rel, stderr_tail: String::new() }));
        }
        Err(why) => {
            writeln!(log, "proofbench: {why}; this workload needs no files: it runs without one")
                .with_context(|| format!("writing {log_rel}"))?;
            None
        }
    };
    // The worker's stderr follows what proofbench wrote above: its own lines start here.
    let worker_from = log.metadata().map(|m| m.len()).with_context(|| format!("reading the length of {log_rel}"))?;
    let cell = &Cell { scratch_dir: scratch.as_ref().map(|s| s.path.display().to_string()), ..cell.clone() };
    let cell_json = serde_json::to_string(cell).context("serializing a cell")?;
    let how = cfg.invocation(cell);
    let command = match &cfg.launcher {
        None => spawn::local(&cfg.exe, &how, &["worker"]),
        Some(l) => l.proofbench(&how, &["worker"]),
    };
    let report_limit = spawn::report_limit(&cell.measure, cell_json.len());
    let wr = spawn::run_worker(command, &cell_json, log, cfg.timeout, report_limit)
        .with_context(|| format!("running the worker of {}", cell.row_id))?;
    drop(scratch);
    if wr.interrupted {
        return Ok(None);
    }
    let stderr_tail = compose::log_tail(&dir.path().join(&log_rel), 10, worker_from);
    let (record, report) = compose::trial(&wr, cfg.timeout, &stderr_tail, trial, round, started_utc, utc_now());
    Ok(Some(Finished { record, report, log_rel, stderr_tail }))
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
        let a = Scratch::create(&root, "000-os.stat-t0", None).unwrap();
        let b = Scratch::create(&root, "000-os.stat-t0", None).unwrap();
        assert_ne!(a.path, b.path);
        let name = a.path.file_name().unwrap().to_str().unwrap().to_string();
        assert!(name.starts_with(&format!("proofbench-{}-000-os.stat-t0-", std::process::id())), "{name}");
        assert_eq!(std::fs::metadata(&a.path).unwrap().permissions().mode() & 0o777, 0o700);
        let (pa, pb) = (a.path.clone(), b.path.clone());
        drop((a, b));
        assert!(!pa.exists() && !pb.exists(), "removed when dropped");
        let missing = ScratchRoot { path: tmp.path().join("none"), shown: "TMPDIR=/none".into() };
        let held = Scratch::create(&root, "001-os.stat-t0", None).unwrap();
        assert!(lock_dir(&held.path).is_err(), "a live run's directory is locked");
        drop(held);
        let why = Scratch::create(&missing, "x", None).err().unwrap();
        assert!(why.starts_with("cannot create a scratch directory in TMPDIR=/none: No such file"), "{why}");
    }
}
