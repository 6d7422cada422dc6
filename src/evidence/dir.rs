//! The results directory: the only code that writes a run's files.
//!
//! Whole files are written atomically (temp file + rename); `rows.jsonl` is
//! append-only and flushed to the disk as each row ends, and a row that
//! cannot be written whole is taken back, so the file never ends inside a
//! row this writer left. A directory in use is locked with `flock` on
//! `.lock`, which the kernel releases if the run dies. Every file and
//! directory is created with the modes the umask allows (0644 and 0755
//! under umask 022); a file rewritten in place keeps its mode.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use serde::Serialize;

pub use super::error::EvidenceError;
pub use super::read::parse_record;
use super::records::{Row, RunRecord};

/// A results directory being written by this run. Holds the lock until dropped.
pub struct RunDir {
    path: PathBuf,
    _lock: File,
    rows: File,
}

impl RunDir {
    /// Creates a fresh directory `<out>/<name>` (adding `-2`, `-3`, ... if
    /// the name is taken) and locks it. A directory it made but could not
    /// make a run directory of (a full disk) is removed.
    pub fn create_in(out: &Path, name: &str) -> Result<RunDir, EvidenceError> {
        fs::create_dir_all(out).map_err(|e| EvidenceError::io(out, e))?;
        for n in 1..1000 {
            let candidate = if n == 1 { out.join(name) } else { out.join(format!("{name}-{n}")) };
            match fs::create_dir(&candidate) {
                Ok(()) => {
                    return RunDir::create_at(&candidate).inspect_err(|_| {
                        let _ = fs::remove_dir_all(&candidate);
                    });
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(EvidenceError::io(&candidate, e)),
            }
        }
        Err(EvidenceError::HasRun { path: out.join(name) })
    }

    /// Uses exactly `path` (created if missing). Refused when another run
    /// holds its lock or when it already holds a run.
    pub fn create_at(path: &Path) -> Result<RunDir, EvidenceError> {
        fs::create_dir_all(path).map_err(|e| EvidenceError::io(path, e))?;
        let lock_path = path.join(".lock");
        let mut lock = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&lock_path)
            .map_err(|e| EvidenceError::io(&lock_path, e))?;
        // SAFETY: flock on a file descriptor we own; no memory is involved.
        let rc = unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        if rc != 0 {
            let err = io::Error::last_os_error();
            if err.raw_os_error() == Some(libc::EWOULDBLOCK) {
                let pid = fs::read_to_string(&lock_path).ok().and_then(|s| s.trim().parse().ok());
                return Err(EvidenceError::Locked { path: path.to_path_buf(), pid });
            }
            return Err(EvidenceError::io(&lock_path, err));
        }
        if path.join("run.json").exists() || path.join("rows.jsonl").exists() {
            return Err(EvidenceError::HasRun { path: path.to_path_buf() });
        }
        lock.set_len(0).and_then(|_| writeln!(lock, "{}", std::process::id())).map_err(|e| EvidenceError::io(&lock_path, e))?;
        for sub in ["raw", "logs", "plots"] {
            let p = path.join(sub);
            fs::create_dir_all(&p).map_err(|e| EvidenceError::io(&p, e))?;
        }
        let rows_path = path.join("rows.jsonl");
        let rows = OpenOptions::new().append(true).create(true).open(&rows_path).map_err(|e| EvidenceError::io(&rows_path, e))?;
        Ok(RunDir { path: path.to_path_buf(), _lock: lock, rows })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Writes run.json atomically.
    pub fn write_run(&self, run: &RunRecord) -> Result<(), EvidenceError> {
        write_json_atomic(&self.path.join("run.json"), run)
    }

    /// Appends one row to rows.jsonl and flushes it to the disk; a row that
    /// cannot be written whole (a full disk) is taken back.
    pub fn append_row(&mut self, row: &Row) -> Result<(), EvidenceError> {
        let p = self.path.join("rows.jsonl");
        let mut line = serde_json::to_string(row).map_err(|e| EvidenceError::Parse { path: p.clone(), line: None, why: e.to_string() })?;
        line.push('\n');
        append_whole(&mut self.rows, line.as_bytes()).map_err(|e| EvidenceError::io(&p, e))
    }

    /// Writes `raw/<row id>.csv` (every sample, warmup marked) and returns
    /// its path relative to the run directory.
    pub fn write_raw(&self, row: &Row) -> Result<String, EvidenceError> {
        let rel = format!("raw/{}.csv", row.id());
        write_atomic(&self.path.join(&rel), raw_csv(row).as_bytes())?;
        Ok(rel)
    }

    /// Opens `logs/<row id>.log` for a worker's stderr, appending: every
    /// trial of the row writes into it, one after the other.
    pub fn log_file(&self, row_id: &str) -> Result<(File, String), EvidenceError> {
        let rel = format!("logs/{row_id}.log");
        let p = self.path.join(&rel);
        let f = OpenOptions::new().append(true).create(true).open(&p).map_err(|e| EvidenceError::io(&p, e))?;
        Ok((f, rel))
    }

    /// Makes `profiles/<row id>/` for a row's profiling pass and returns
    /// it, and its path relative to the run directory. Only perf (which
    /// writes its own output files there) and this writer put files in it.
    pub fn profile_dir(&self, row_id: &str) -> Result<(PathBuf, String), EvidenceError> {
        let rel = format!("profiles/{row_id}");
        let p = self.path.join(&rel);
        fs::create_dir_all(&p).map_err(|e| EvidenceError::io(&p, e))?;
        Ok((p, rel))
    }

    /// Opens (creating or truncating) a file of a row's profiling pass
    /// (`rel`, under `profiles/`), for a process's stderr.
    pub fn profile_log(&self, rel: &str) -> Result<File, EvidenceError> {
        let p = self.path.join(rel);
        File::create(&p).map_err(|e| EvidenceError::io(&p, e))
    }

    /// Writes a whole file (report.md, ...) atomically.
    pub fn write_file(&self, rel: &str, text: &str) -> Result<(), EvidenceError> {
        write_atomic(&self.path.join(rel), text.as_bytes())
    }

    /// Writes a whole binary file (a PNG plot) atomically.
    pub fn write_bytes(&self, rel: &str, bytes: &[u8]) -> Result<(), EvidenceError> {
        write_atomic(&self.path.join(rel), bytes)
    }
}

/// The CSV of a row's samples.
pub fn raw_csv(row: &Row) -> String {
    let mut s = String::from("trial,index,phase,iters,ops,bytes,work_ns,total_ns,value,total_value\n");
    let opt = |v: Option<String>| v.unwrap_or_default();
    for x in &row.samples {
        s.push_str(&format!(
            "{},{},{},{},{},{},{},{},{},{}\n",
            x.trial,
            x.index,
            if x.warmup { "warmup" } else { "timed" },
            x.iters,
            x.ops,
            x.bytes,
            x.work_ns,
            opt(x.total_ns.map(|v| v.to_string())),
            x.value,
            opt(x.total_value.map(|v| v.to_string())),
        ));
    }
    s
}

/// What rows are appended to: rows.jsonl, or a stand-in in tests.
trait AppendFile {
    fn len(&self) -> io::Result<u64>;
    fn write_all(&mut self, bytes: &[u8]) -> io::Result<()>;
    fn sync(&self) -> io::Result<()>;
    fn truncate(&self, len: u64) -> io::Result<()>;
}

impl AppendFile for File {
    fn len(&self) -> io::Result<u64> {
        Ok(self.metadata()?.len())
    }
    fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
        Write::write_all(self, bytes)
    }
    fn sync(&self) -> io::Result<()> {
        self.sync_data()
    }
    fn truncate(&self, len: u64) -> io::Result<()> {
        self.set_len(len)
    }
}

/// Appends `line` in one write and syncs it; when the write or the sync
/// fails (a full disk writes part of it), cuts the file back to its length
/// before, so that it never ends inside a row. The write's error is returned.
fn append_whole(file: &mut impl AppendFile, line: &[u8]) -> io::Result<()> {
    let before = file.len()?;
    let written = file.write_all(line).and_then(|_| file.sync());
    if written.is_err() {
        // Best effort: the error that matters is the write's.
        let _ = file.truncate(before).and_then(|_| file.sync());
    }
    written
}

/// Writes `bytes` to `path` through a temporary file in the same directory
/// and a rename, so readers see the old file or the new one, never half.
/// A new file gets the modes the umask allows; a file replaced keeps its
/// mode. What is not a regular file (a device such as /dev/stdout, a FIFO)
/// is written into, never replaced.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), EvidenceError> {
    let existing = fs::metadata(path).ok();
    if existing.as_ref().is_some_and(|m| !m.is_file() && !m.is_dir()) {
        let io_err = |e| EvidenceError::io(path, e);
        let mut f = OpenOptions::new().write(true).open(path).map_err(io_err)?;
        return Write::write_all(&mut f, bytes).map_err(io_err);
    }
    replace_atomic(path, bytes)
}

/// Writes `bytes` to `path` as [`write_atomic`] does, but whatever is at
/// `path` is replaced, never written into or through: a symbolic link
/// there (dangling or not) becomes the new file and its target is left
/// as it was. For files written into a directory that others may have
/// put links in (`man --dir`). A regular file replaced keeps its mode.
pub fn replace_atomic(path: &Path, bytes: &[u8]) -> Result<(), EvidenceError> {
    let io_err = |e| EvidenceError::io(path, e);
    let existing = fs::symlink_metadata(path).ok();
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let (tmp_path, mut tmp) = loop {
        let candidate = dir.join(format!(".{name}.{}-{}.tmp", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed)));
        match OpenOptions::new().write(true).create_new(true).mode(0o666).open(&candidate) {
            Ok(f) => break (candidate, f),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(io_err(e)),
        }
    };
    let mode = existing.filter(|m| m.is_file()).map(|m| fs::Permissions::from_mode(m.permissions().mode() & 0o7777));
    let written = mode
        .map_or(Ok(()), |m| tmp.set_permissions(m))
        .and_then(|_| Write::write_all(&mut tmp, bytes))
        .and_then(|_| tmp.sync_data())
        .and_then(|_| fs::rename(&tmp_path, path));
    if let Err(e) = written {
        let _ = fs::remove_file(&tmp_path);
        return Err(io_err(e));
    }
    Ok(())
}

/// Refuses a run directory whose run is still being written: its `.lock`
/// is held by the proofbench writing it. A directory without `.lock` (a
/// copy, an older run) is not running.
pub fn check_not_running(dir: &Path) -> Result<(), EvidenceError> {
    let lock_path = dir.join(".lock");
    let Ok(lock) = File::open(&lock_path) else { return Ok(()) };
    // SAFETY: flock on a file descriptor we own; no memory is involved. The
    // shared lock taken is released when `lock` is closed below.
    let rc = unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_SH | libc::LOCK_NB) };
    if rc != 0 && io::Error::last_os_error().raw_os_error() == Some(libc::EWOULDBLOCK) {
        let pid = fs::read_to_string(&lock_path).ok().and_then(|s| s.trim().parse().ok());
        return Err(EvidenceError::Running { path: dir.to_path_buf(), pid });
    }
    Ok(())
}

fn write_json_atomic<T: Serialize>(path: &Path, value: &T) -> Result<(), EvidenceError> {
    let mut text = serde_json::to_string_pretty(value).map_err(|e| EvidenceError::Parse {
        path: path.to_path_buf(),
        line: None,
        why: e.to_string(),
    })?;
    text.push('\n');
    write_atomic(path, text.as_bytes())
}

/// `n` random characters from `[a-z0-9]`, from the kernel's generator: the
/// part of a name (a scratch directory, a submission) nobody can predict.
pub fn random_suffix(n: usize) -> String {
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
    let mut bytes = vec![0u8; n];
    if getrandom::fill(&mut bytes).is_err() {
        // No generator: the time's nanoseconds still differ between runs.
        let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
        bytes.iter_mut().enumerate().for_each(|(i, b)| *b = (t >> ((i % 16) * 8)) as u8);
    }
    bytes.iter().map(|b| ALPHABET[*b as usize % ALPHABET.len()] as char).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_locked_directory_is_refused_and_a_used_one_too() {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path().join("run");
        let first = RunDir::create_at(&d).unwrap();
        let e = RunDir::create_at(&d).err().unwrap();
        assert!(matches!(e, EvidenceError::Locked { pid: Some(_), .. }), "{e}");
        assert!(e.to_string().contains("in use by another proofbench run"));
        drop(first);
        // Unlocked now, but it holds rows.jsonl: still refused.
        let e = RunDir::create_at(&d).err().unwrap();
        assert!(matches!(e, EvidenceError::HasRun { .. }), "{e}");
    }

    #[test]
    fn create_in_never_reuses_a_name() {
        let tmp = tempfile::tempdir().unwrap();
        let a = RunDir::create_in(tmp.path(), "same").unwrap();
        let b = RunDir::create_in(tmp.path(), "same").unwrap();
        assert_ne!(a.path(), b.path());
        assert!(b.path().ends_with("same-2"));
    }

    #[test]
    fn a_live_run_is_seen_as_running_until_its_lock_is_released() {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path().join("run");
        let live = RunDir::create_at(&d).unwrap();
        let e = check_not_running(&d).unwrap_err();
        assert!(matches!(e, EvidenceError::Running { pid: Some(_), .. }), "{e}");
        assert!(e.is_input_error() && e.to_string().contains("the run is still running"), "{e}");
        drop(live);
        check_not_running(&d).unwrap();
        check_not_running(tmp.path()).unwrap();
    }

    /// A file that takes `room` more bytes, then fails as a full disk
    /// does: after writing what fits.
    struct FullDisk {
        bytes: std::cell::RefCell<Vec<u8>>,
        room: usize,
    }

    impl AppendFile for FullDisk {
        fn len(&self) -> io::Result<u64> {
            Ok(self.bytes.borrow().len() as u64)
        }
        fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
            let fits = bytes.len().min(self.room);
            self.bytes.borrow_mut().extend_from_slice(&bytes[..fits]);
            self.room -= fits;
            if fits < bytes.len() { Err(io::Error::from_raw_os_error(libc::ENOSPC)) } else { Ok(()) }
        }
        fn sync(&self) -> io::Result<()> {
            Ok(())
        }
        fn truncate(&self, len: u64) -> io::Result<()> {
            self.bytes.borrow_mut().truncate(len as usize);
            Ok(())
        }
    }

    #[test]
    fn a_row_the_disk_cannot_hold_is_taken_back_whole() {
        let first = b"{\"row\":1}\n".to_vec();
        let mut f = FullDisk { bytes: first.clone().into(), room: 4096 };
        let long = format!("{{\"row\":\"{}\"}}\n", "x".repeat(8000));
        let e = append_whole(&mut f, long.as_bytes()).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::ENOSPC));
        assert_eq!(*f.bytes.borrow(), first, "cut back to the end of the last whole row");
        // A row that fits goes in whole.
        let mut f = FullDisk { bytes: Vec::new().into(), room: 100 };
        append_whole(&mut f, b"{\"row\":2}\n").unwrap();
        assert_eq!(*f.bytes.borrow(), b"{\"row\":2}\n");
    }

    #[test]
    fn a_rows_file_cut_back_takes_the_next_row_at_its_new_end() {
        // A real rows.jsonl (opened to append, as the run opens it): the part
        // a full disk let through is cut back, and the next row follows the cut.
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("rows.jsonl");
        std::fs::write(&p, "{\"row\":1}\n").unwrap();
        let mut file = OpenOptions::new().append(true).open(&p).unwrap();
        Write::write_all(&mut file, b"{\"row\":2, \"cut").unwrap();
        AppendFile::truncate(&file, 10).unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "{\"row\":1}\n");
        append_whole(&mut file, b"{\"row\":3}\n").unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "{\"row\":1}\n{\"row\":3}\n", "appends go after the cut");
    }

    #[test]
    fn a_file_replaced_through_a_link_leaves_the_links_target_alone() {
        let tmp = tempfile::tempdir().unwrap();
        let victim = tmp.path().join("victim");
        std::fs::write(&victim, "keep").unwrap();
        let link = tmp.path().join("page.1");
        std::os::unix::fs::symlink(&victim, &link).unwrap();
        replace_atomic(&link, b"page").unwrap();
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
        assert!(!std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
        assert_eq!(std::fs::read_to_string(&link).unwrap(), "page");
        // A dangling link's target is not created.
        let dangling = tmp.path().join("other.1");
        std::os::unix::fs::symlink(tmp.path().join("made"), &dangling).unwrap();
        replace_atomic(&dangling, b"page").unwrap();
        assert!(!tmp.path().join("made").exists());
        assert_eq!(std::fs::read_to_string(&dangling).unwrap(), "page");
    }

    #[test]
    fn files_written_whole_get_the_umask_modes_or_keep_their_own() {
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("report.md");
        write_atomic(&p, b"one").unwrap();
        let status = fs::read_to_string("/proc/self/status").unwrap();
        let mask = status.lines().find_map(|l| l.strip_prefix("Umask:")).map(|m| u32::from_str_radix(m.trim(), 8).unwrap()).unwrap();
        assert_eq!(fs::metadata(&p).unwrap().permissions().mode() & 0o777, 0o666 & !mask);
        fs::set_permissions(&p, fs::Permissions::from_mode(0o640)).unwrap();
        write_atomic(&p, b"two").unwrap();
        assert_eq!(fs::metadata(&p).unwrap().permissions().mode() & 0o777, 0o640);
        assert_eq!(fs::read_to_string(&p).unwrap(), "two");
        assert_eq!(fs::read_dir(tmp.path()).unwrap().count(), 1, "no temporary file is left");
    }
}
