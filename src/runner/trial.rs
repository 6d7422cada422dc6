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
use crate::model::{Cell, Status, utc_now};
use crate::workloads::process;

use super::compose::{self, Finished};
use super::config::{RunConfig, ScratchRoot};
use super::spawn::{self, WorkerRun};

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

/// `n` random characters from `[a-z0-9]`, from the kernel's generator.
pub(super) fn random_suffix(n: usize) -> String {
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
    let mut bytes = vec![0u8; n];
    if getrandom::fill(&mut bytes).is_err() {
        // No generator: the time's nanoseconds still differ between runs.
        let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
        bytes.iter_mut().enumerate().for_each(|(i, b)| *b = (t >> ((i % 16) * 8)) as u8);
    }
    bytes.iter().map(|b| ALPHABET[*b as usize % ALPHABET.len()] as char).collect()
}

impl Scratch {
    /// Makes the directory, or says why it cannot be made.
    fn create(root: &ScratchRoot, name: &str) -> Result<Scratch, String> {
        use std::os::unix::fs::DirBuilderExt;
        let stem = format!("{PREFIX}{}-{}-", std::process::id(), crate::model::file_name::bounded(name, 120));
        let mut last = None;
        // A taken name (another process's) is never reused: another is drawn.
        for _ in 0..16 {
            let path = root.path.join(format!("{stem}{}", random_suffix(RANDOM_LEN)));
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
            crate::report::terminal::to_stderr(&format!("proofbench: warning: could not remove {}: {e}\n", self.path.display()));
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
            Err(e) => crate::report::terminal::to_stderr(&format!(
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

/// Runs trial `trial` of `cell` in round `round`. `None` when a stop signal
/// ended it (the trial is incomplete and is not kept).
pub fn run(cfg: &RunConfig, dir: &RunDir, cell: &Cell, trial: u32, round: u32) -> anyhow::Result<Option<Finished>> {
    static STALE: Once = Once::new();
    STALE.call_once(|| {
        let (removed, unrecognised) = remove_stale(&cfg.scratch_root.path);
        for p in removed {
            crate::report::terminal::to_stderr(&format!("proofbench: removed {}, left by a run that ended\n", p.display()));
        }
        if !unrecognised.is_empty() {
            let names: Vec<String> = unrecognised.iter().map(|p| p.display().to_string()).collect();
            crate::report::terminal::to_stderr(&format!(
                "proofbench: warning: left alone {} {} named like a scratch directory but without a proofbench marker: {}\n",
                names.len(),
                if names.len() == 1 { "directory" } else { "directories" },
                names.join(", ")
            ));
        }
    });
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
    let wr = run_worker_in(cfg, cell, scratch, &[], log).with_context(|| format!("running the worker of {}", cell.row_id))?;
    if wr.interrupted {
        return Ok(None);
    }
    let stderr_tail = compose::log_tail(&dir.path().join(&log_rel), 10, worker_from);
    let (record, report) = compose::trial(&wr, cfg.timeout, &stderr_tail, trial, round, started_utc, utc_now());
    Ok(Some(Finished { record, report, log_rel, stderr_tail }))
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
