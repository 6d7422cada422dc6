//! The results directory: the only code that writes a run's files.
//!
//! Whole files are written atomically (temp file + rename); `rows.jsonl` is
//! append-only and flushed to the disk as each row ends. A directory in use is
//! locked with `flock` on `.lock`, which the kernel releases if the run dies.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde::de::DeserializeOwned;

use super::records::{ROW_SCHEMA, RUN_SCHEMA, Row, RunRecord};

/// Errors reading or writing a results directory.
#[derive(Debug, thiserror::Error)]
pub enum EvidenceError {
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: io::Error },
    #[error("{path} is in use by another proofbench run{pid}; wait for it or choose another --run-dir", pid = pid.map(|p| format!(" (pid {p})")).unwrap_or_default())]
    Locked { path: PathBuf, pid: Option<u32> },
    #[error("{path} already holds a run; choose another --run-dir")]
    HasRun { path: PathBuf },
    #[error("{path} is not a proofbench run directory (no run.json); pass a directory written by 'proofbench run'")]
    NotARunDir { path: PathBuf },
    #[error("{path}{line}: {why}", line = line.map(|l| format!(" line {l}")).unwrap_or_default())]
    Parse { path: PathBuf, line: Option<usize>, why: String },
    #[error("{path}: record schema {found} is newer than this proofbench reads ({supported}); use a newer proofbench")]
    NewerSchema { path: PathBuf, found: String, supported: String },
}

impl EvidenceError {
    fn io(path: &Path, source: io::Error) -> EvidenceError {
        EvidenceError::Io { path: path.to_path_buf(), source }
    }

    /// Whether the error is in what the user gave (exit code 2) rather than
    /// a failure of the machine.
    pub fn is_input_error(&self) -> bool {
        !matches!(self, EvidenceError::Io { .. })
    }
}

/// A results directory being written by this run. Holds the lock until dropped.
pub struct RunDir {
    path: PathBuf,
    _lock: File,
    rows: File,
}

impl RunDir {
    /// Creates a fresh directory `<out>/<name>` (adding `-2`, `-3`, ... if
    /// the name is taken) and locks it.
    pub fn create_in(out: &Path, name: &str) -> Result<RunDir, EvidenceError> {
        fs::create_dir_all(out).map_err(|e| EvidenceError::io(out, e))?;
        for n in 1..1000 {
            let candidate = if n == 1 { out.join(name) } else { out.join(format!("{name}-{n}")) };
            match fs::create_dir(&candidate) {
                Ok(()) => return RunDir::create_at(&candidate),
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

    /// Appends one row to rows.jsonl and flushes it to the disk.
    pub fn append_row(&mut self, row: &Row) -> Result<(), EvidenceError> {
        let p = self.path.join("rows.jsonl");
        let mut line = serde_json::to_string(row).map_err(|e| EvidenceError::Parse { path: p.clone(), line: None, why: e.to_string() })?;
        line.push('\n');
        self.rows.write_all(line.as_bytes()).and_then(|_| self.rows.sync_data()).map_err(|e| EvidenceError::io(&p, e))
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

/// Writes `bytes` to `path` through a temporary file in the same directory
/// and a rename, so readers see the old file or the new one, never half.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), EvidenceError> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(|e| EvidenceError::io(dir, e))?;
    tmp.write_all(bytes).and_then(|_| tmp.as_file().sync_data()).map_err(|e| EvidenceError::io(path, e))?;
    tmp.persist(path).map_err(|e| EvidenceError::io(path, e.error))?;
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

/// A run read back from its directory.
#[derive(Clone, Debug)]
pub struct StoredRun {
    pub dir: PathBuf,
    pub run: RunRecord,
    pub rows: Vec<Row>,
    /// Problems that did not stop the reading (e.g. a truncated last row).
    pub warnings: Vec<String>,
}

/// Reads run.json and rows.jsonl of a run directory, refusing records of a
/// newer schema major version.
pub fn read_run(dir: &Path) -> Result<StoredRun, EvidenceError> {
    let run_path = dir.join("run.json");
    if !dir.is_dir() {
        return Err(EvidenceError::NotARunDir { path: dir.to_path_buf() });
    }
    let text = match fs::read_to_string(&run_path) {
        Ok(t) => t,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(EvidenceError::NotARunDir { path: dir.to_path_buf() }),
        Err(e) => return Err(EvidenceError::io(&run_path, e)),
    };
    let run: RunRecord = parse_record(&text, RUN_SCHEMA, &run_path, None)?;
    let rows_path = dir.join("rows.jsonl");
    let mut rows = Vec::new();
    let mut warnings = Vec::new();
    match fs::read_to_string(&rows_path) {
        Ok(text) => {
            let lines: Vec<&str> = text.lines().collect();
            for (i, line) in lines.iter().enumerate() {
                if line.trim().is_empty() {
                    continue;
                }
                match parse_row(line, &rows_path, Some(i + 1)) {
                    Ok(r) => rows.push(r),
                    // A last line without its newline: the writer died mid-row.
                    Err(EvidenceError::Parse { .. }) if i + 1 == lines.len() && !text.ends_with('\n') => {
                        warnings.push(format!("{} line {}: truncated last row ignored", rows_path.display(), i + 1));
                    }
                    Err(e) => return Err(e),
                }
            }
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => warnings.push(format!("{}: missing, no rows", rows_path.display())),
        Err(e) => return Err(EvidenceError::io(&rows_path, e)),
    }
    // Rows are written as their last trial is decided; readers get plan order.
    rows.sort_by_key(|r| r.cell.index);
    Ok(StoredRun { dir: dir.to_path_buf(), run, rows, warnings })
}

/// Parses one row, upgrading a `proofbench.row/1` record (written before
/// trials: one worker per row, statistics over its samples) to the current
/// shape: one trial, its statistics recomputed.
pub fn parse_row(text: &str, path: &Path, line: Option<usize>) -> Result<Row, EvidenceError> {
    let mut value = parse_value(text, ROW_SCHEMA, path, line)?;
    let major = value.get("schema").and_then(|s| s.as_str()).and_then(schema_parts).map_or(0, |(_, m)| m);
    if major >= 2 {
        return from_value(value, path, line);
    }
    // The old statistics (a bootstrap over one process's samples) are not
    // the current ones: dropped and recomputed from the samples.
    if let Some(o) = value.as_object_mut() {
        o.insert("stats".into(), serde_json::Value::Null);
    }
    let mut row: Row = from_value(value, path, line)?;
    row.upgrade_from_v1();
    Ok(row)
}

/// Splits `proofbench.row/1` into ("row", 1).
fn schema_parts(s: &str) -> Option<(&str, u32)> {
    let rest = s.strip_prefix("proofbench.")?;
    let (kind, version) = rest.split_once('/')?;
    let major = version.split('.').next()?.parse().ok()?;
    Some((kind, major))
}

/// Parses one record, checking its schema kind and major version first.
pub fn parse_record<T: DeserializeOwned>(text: &str, expected: &str, path: &Path, line: Option<usize>) -> Result<T, EvidenceError> {
    from_value(parse_value(text, expected, path, line)?, path, line)
}

/// A record of a known schema as JSON, into its type.
fn from_value<T: DeserializeOwned>(value: serde_json::Value, path: &Path, line: Option<usize>) -> Result<T, EvidenceError> {
    let found = value.get("schema").and_then(|s| s.as_str()).unwrap_or_default().to_string();
    serde_json::from_value(value).map_err(|e| EvidenceError::Parse {
        path: path.to_path_buf(),
        line,
        why: format!("malformed {found} record ({e})"),
    })
}

/// Parses one record as JSON, checking its schema kind and major version.
fn parse_value(text: &str, expected: &str, path: &Path, line: Option<usize>) -> Result<serde_json::Value, EvidenceError> {
    let perr = |why: String| EvidenceError::Parse { path: path.to_path_buf(), line, why };
    let value: serde_json::Value = serde_json::from_str(text).map_err(|e| perr(format!("not JSON ({e})")))?;
    let found = value.get("schema").and_then(|s| s.as_str()).ok_or_else(|| perr("record has no \"schema\" field".into()))?.to_string();
    let (want_kind, want_major) = schema_parts(expected).expect("valid built-in schema");
    let (kind, major) = schema_parts(&found).ok_or_else(|| perr(format!("unrecognised schema '{found}'")))?;
    if kind != want_kind {
        return Err(perr(format!("expected a {expected} record, found {found}")));
    }
    if major > want_major {
        return Err(EvidenceError::NewerSchema { path: path.to_path_buf(), found: found.clone(), supported: expected.to_string() });
    }
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schema_versions_parse_and_newer_majors_are_refused() {
        assert_eq!(schema_parts("proofbench.row/2"), Some(("row", 2)));
        assert_eq!(schema_parts("proofbench.run/2.3"), Some(("run", 2)));
        assert_eq!(schema_parts("other.row/1"), None);
        let p = Path::new("x");
        let e = parse_record::<serde_json::Value>(r#"{"schema":"proofbench.row/9"}"#, ROW_SCHEMA, p, Some(1)).unwrap_err();
        assert!(matches!(e, EvidenceError::NewerSchema { .. }), "{e}");
        let e = parse_record::<serde_json::Value>(r#"{"schema":"proofbench.run/1"}"#, ROW_SCHEMA, p, Some(1)).unwrap_err();
        assert!(e.to_string().contains("expected a proofbench.row/2 record"), "{e}");
        let e = parse_record::<serde_json::Value>("{", ROW_SCHEMA, p, Some(4)).unwrap_err();
        assert!(e.to_string().contains("line 4"), "{e}");
    }

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
    fn reading_a_directory_without_run_json_names_the_problem() {
        let tmp = tempfile::tempdir().unwrap();
        let e = read_run(tmp.path()).unwrap_err();
        assert!(matches!(e, EvidenceError::NotARunDir { .. }));
        assert!(e.is_input_error());
        let e = read_run(&tmp.path().join("missing")).unwrap_err();
        assert!(e.to_string().contains("not a proofbench run directory"));
    }
}
