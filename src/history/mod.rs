//! history: a SQLite store of runs (`results/history.sqlite` by default).
//!
//! Every `proofbench run` records itself at its end; `history import` records
//! stored run directories. The store keeps each run's run.json and each row's
//! JSON whole, next to the columns that queries need (label, commit, machine,
//! workload, axes, status, median, CI), so `history show`, `history
//! regressions` and `compare h:ID` work without the run directory. It only
//! reads runs; it never measures and never writes into a run directory.
//!
//! Concurrency: the database is in WAL mode with a busy timeout, and each run
//! is inserted in one immediate transaction, so several runs writing the same
//! database neither corrupt it nor lose a run. A run is identified by a hash
//! of its run.json (`uid`), so recording the same run twice keeps one copy.

pub mod command;
pub mod floors;
pub mod regress;

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context;
use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};

use crate::cli::UsageError;
use crate::envelope::Envelope;
use crate::evidence::dir::{parse_record, parse_row};
use crate::evidence::{RUN_SCHEMA, Row, RunRecord, Status, StoredRun, read_run};
use crate::report::axes_text;
use crate::report::terminal::to_stderr;

/// The database file name, beside the run directories.
pub const DB_FILE: &str = "history.sqlite";

/// The schema version this proofbench writes and reads.
pub const SCHEMA_VERSION: i64 = 1;

/// How long a writer waits for another's transaction before giving up.
const BUSY_TIMEOUT: Duration = Duration::from_secs(60);

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS schema_version (version INTEGER PRIMARY KEY);
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    uid TEXT NOT NULL UNIQUE,
    name TEXT NOT NULL,
    dir TEXT NOT NULL,
    started_utc TEXT NOT NULL,
    finished_utc TEXT,
    label TEXT NOT NULL,
    git_commit TEXT,
    machine TEXT NOT NULL,
    profile TEXT NOT NULL,
    tool_version TEXT NOT NULL,
    tool_commit TEXT NOT NULL,
    rows_total INTEGER NOT NULL,
    rows_ok INTEGER NOT NULL,
    complete INTEGER NOT NULL,
    recorded_utc TEXT NOT NULL,
    run_json TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS rows (
    run INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    row_id TEXT NOT NULL,
    workload TEXT NOT NULL,
    params TEXT NOT NULL,
    axes TEXT NOT NULL,
    status TEXT NOT NULL,
    unit TEXT NOT NULL,
    direction TEXT NOT NULL,
    median REAL,
    ci_lo REAL,
    ci_hi REAL,
    n INTEGER NOT NULL,
    row_json TEXT NOT NULL,
    PRIMARY KEY (run, row_id)
);
CREATE INDEX IF NOT EXISTS rows_by_workload ON rows (workload);
CREATE INDEX IF NOT EXISTS runs_by_time ON runs (started_utc);
";

/// One run as the history lists it.
#[derive(Clone, Debug, PartialEq)]
pub struct RunEntry {
    /// The history id (`h:ID`).
    pub id: i64,
    /// The run directory's name (run.json `id`).
    pub name: String,
    /// The run directory as recorded (it may since have moved).
    pub dir: String,
    pub started_utc: String,
    pub label: String,
    /// The commit of the system under test, where recorded.
    pub commit: Option<String>,
    /// `hostname, CPU model, N CPUs`.
    pub machine: String,
    pub profile: String,
    pub rows_total: i64,
    pub rows_ok: i64,
    /// `run`, or `noise` for the machine's noise profile (`proofbench noise`).
    pub kind: String,
}

impl RunEntry {
    /// The commit shortened to 10 characters, `-` when none.
    pub fn short_commit(&self) -> String {
        self.commit.as_deref().map(|c| c.chars().take(10).collect()).unwrap_or_else(|| "-".into())
    }
}

/// What recording a run did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Recorded {
    /// Inserted under this history id.
    New(i64),
    /// Already held under this history id; nothing changed.
    Existing(i64),
}

impl Recorded {
    /// The history id either way.
    pub fn id(self) -> i64 {
        match self {
            Recorded::New(id) | Recorded::Existing(id) => id,
        }
    }
}

/// An open history database.
pub struct Store {
    conn: Connection,
    path: PathBuf,
}

/// FNV-1a, 64 bits: a stable hash with no dependency.
fn fnv64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3))
}

/// The identity of a run: a hash of its run.json with keys in a fixed order
/// (so reformatting the file does not change it).
pub fn run_uid(run_json: &str) -> anyhow::Result<String> {
    let v: serde_json::Value = serde_json::from_str(run_json).context("run.json is not JSON")?;
    Ok(format!("{:016x}", fnv64(serde_json::to_string(&v)?.as_bytes())))
}

/// `hostname, CPU model, N CPUs` from an envelope.
pub fn machine_of(e: &Envelope) -> String {
    let host = e.hostname.ok().cloned().unwrap_or_else(|| "unknown-host".into());
    let model = e.cpu.model_name.ok().cloned().unwrap_or_else(|| "unknown CPU".into());
    let cpus = e.cpu.logical_cpus.ok().map(|n| format!("{n} CPUs")).unwrap_or_else(|| "? CPUs".into());
    format!("{host}, {model}, {cpus}")
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

/// A history id as typed: `h:12` or `#12`.
pub fn parse_id(text: &str) -> Option<i64> {
    text.strip_prefix("h:").or_else(|| text.strip_prefix('#')).and_then(|n| n.parse().ok()).filter(|n| *n > 0)
}

/// The default database of a results root (`results/history.sqlite`).
pub fn default_db() -> PathBuf {
    Path::new("results").join(DB_FILE)
}

impl Store {
    /// Opens (creating if needed) the database at `path`, in WAL mode with a
    /// busy timeout, with the current schema.
    pub fn open(path: &Path) -> anyhow::Result<Store> {
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).with_context(|| format!("creating {}", parent.display()))?;
        }
        let conn = Connection::open(path).with_context(|| format!("opening the history database {}", path.display()))?;
        let store = Store { conn, path: path.to_path_buf() };
        store.prepare().with_context(|| format!("preparing the history database {}", path.display()))?;
        Ok(store)
    }

    /// Opens an existing database; a missing file is a usage error naming `--db`.
    pub fn open_existing(path: &Path) -> anyhow::Result<Store> {
        if !path.is_file() {
            return Err(UsageError(format!(
                "--db {}: no history database there (a run records itself in history.sqlite beside its run directory; or use 'proofbench history import DIR')",
                path.display()
            ))
            .into());
        }
        Store::open(path)
    }

    /// The database's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn prepare(&self) -> anyhow::Result<()> {
        self.conn.busy_timeout(BUSY_TIMEOUT)?;
        // Switching to WAL takes a lock of its own; another writer opening the
        // same new file at the same moment can hold it past the busy handler.
        let mut tries = 0;
        loop {
            match self.conn.query_row("PRAGMA journal_mode=WAL", [], |r| r.get::<_, String>(0)) {
                Ok(_) => break,
                Err(rusqlite::Error::SqliteFailure(e, _)) if e.code == rusqlite::ErrorCode::DatabaseBusy && tries < 600 => {
                    tries += 1;
                    std::thread::sleep(Duration::from_millis(100));
                }
                Err(e) => return Err(e.into()),
            }
        }
        self.conn.execute_batch("PRAGMA foreign_keys=ON; PRAGMA synchronous=NORMAL;")?;
        self.conn.execute_batch(&format!(
            "BEGIN IMMEDIATE; {SCHEMA} INSERT OR IGNORE INTO schema_version (version) VALUES ({SCHEMA_VERSION}); COMMIT;"
        ))?;
        let found: i64 = self.conn.query_row("SELECT MAX(version) FROM schema_version", [], |r| r.get(0))?;
        if found > SCHEMA_VERSION {
            return Err(UsageError(format!(
                "{}: history schema version {found} is newer than this proofbench reads ({SCHEMA_VERSION}); use a newer proofbench",
                self.path.display()
            ))
            .into());
        }
        Ok(())
    }

    /// Records the run directory `dir` (run.json and rows.jsonl).
    pub fn record_dir(&mut self, dir: &Path) -> anyhow::Result<Recorded> {
        let stored = read_run(dir).with_context(|| format!("reading run directory {}", dir.display()))?;
        let text = std::fs::read_to_string(dir.join("run.json")).with_context(|| format!("reading {}", dir.join("run.json").display()))?;
        self.record(&stored, &text)
    }

    /// Records a stored run whose run.json text is `run_json`, in one
    /// transaction; a run already held (same uid) is left as it is.
    pub fn record(&mut self, stored: &StoredRun, run_json: &str) -> anyhow::Result<Recorded> {
        let uid = run_uid(run_json)?;
        let run = &stored.run;
        let tx = self.conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        if let Some(id) = tx.query_row("SELECT id FROM runs WHERE uid = ?1", [&uid], |r| r.get(0)).optional()? {
            return Ok(Recorded::Existing(id));
        }
        let dir = std::fs::canonicalize(&stored.dir).unwrap_or_else(|_| stored.dir.clone());
        let ok = stored.rows.iter().filter(|r| r.status == Status::Ok).count();
        tx.execute(
            "INSERT INTO runs (uid, name, dir, started_utc, finished_utc, label, git_commit, machine, profile, tool_version,
                tool_commit, rows_total, rows_ok, complete, recorded_utc, run_json)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)",
            params![
                uid,
                run.id,
                dir.display().to_string(),
                run.started_utc,
                run.finished_utc,
                run.label,
                run.commit,
                machine_of(&run.envelope),
                run.profile.as_str(),
                run.envelope.tool.version,
                run.envelope.tool.git_commit,
                stored.rows.len() as i64,
                ok as i64,
                run.complete,
                crate::runner::utc_now(),
                run_json,
            ],
        )?;
        let id = tx.last_insert_rowid();
        {
            let mut insert = tx.prepare(
                "INSERT INTO rows (run, row_id, workload, params, axes, status, unit, direction, median, ci_lo, ci_hi, n, row_json)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
            )?;
            for row in &stored.rows {
                let work = row.stats.as_ref().map(|s| &s.work);
                let ci = row.interval();
                insert.execute(params![
                    id,
                    row.id(),
                    row.cell.workload,
                    serde_json::to_string(&row.cell.params)?,
                    axes_text(row),
                    row.status.as_str(),
                    row.unit.as_str(),
                    serde_json::to_value(row.direction)?.as_str().unwrap_or_default(),
                    row.median(),
                    ci.map(|c| c.0),
                    ci.map(|c| c.1),
                    work.map(|w| w.n as i64).unwrap_or(0),
                    serde_json::to_string(row)?,
                ])?;
            }
        }
        tx.commit()?;
        Ok(Recorded::New(id))
    }

    fn entry(r: &rusqlite::Row<'_>) -> rusqlite::Result<RunEntry> {
        Ok(RunEntry {
            id: r.get(0)?,
            name: r.get(1)?,
            dir: r.get(2)?,
            started_utc: r.get(3)?,
            label: r.get(4)?,
            commit: r.get(5)?,
            machine: r.get(6)?,
            profile: r.get(7)?,
            rows_total: r.get(8)?,
            rows_ok: r.get(9)?,
            kind: r.get(10)?,
        })
    }

    const ENTRY_COLUMNS: &'static str = "id, name, dir, started_utc, label, git_commit, machine, profile, rows_total, rows_ok, \
         COALESCE(json_extract(run_json, '$.kind'), 'run')";

    /// Every run, oldest first (by start time, then id).
    pub fn runs(&self) -> anyhow::Result<Vec<RunEntry>> {
        let mut q = self.conn.prepare(&format!("SELECT {} FROM runs ORDER BY started_utc, id", Store::ENTRY_COLUMNS))?;
        let v = q.query_map([], Store::entry)?.collect::<Result<Vec<_>, _>>()?;
        Ok(v)
    }

    /// The run with history id `id`, if held.
    pub fn run(&self, id: i64) -> anyhow::Result<Option<RunEntry>> {
        let q = format!("SELECT {} FROM runs WHERE id = ?1", Store::ENTRY_COLUMNS);
        Ok(self.conn.query_row(&q, [id], Store::entry).optional()?)
    }

    /// The distinct workload ids of every stored row.
    pub fn workloads(&self) -> anyhow::Result<Vec<String>> {
        let mut q = self.conn.prepare("SELECT DISTINCT workload FROM rows ORDER BY workload")?;
        let v = q.query_map([], |r| r.get(0))?.collect::<Result<Vec<String>, _>>()?;
        Ok(v)
    }

    /// Every stored row of `workload`, with the history id of its run.
    pub fn rows_of(&self, workload: &str) -> anyhow::Result<Vec<(i64, Row)>> {
        let mut q = self.conn.prepare("SELECT run, row_json FROM rows WHERE workload = ?1 ORDER BY run, row_id")?;
        let raw = q.query_map([workload], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?)))?.collect::<Result<Vec<_>, _>>()?;
        raw.into_iter()
            .map(|(run, text)| {
                let row: Row = parse_row(&text, &self.path, None).with_context(|| format!("a row of run h:{run}"))?;
                Ok((run, row))
            })
            .collect()
    }

    /// The envelope (from run.json) of run `id`.
    pub fn envelope(&self, id: i64) -> anyhow::Result<Envelope> {
        Ok(self.run_record(id)?.envelope)
    }

    fn run_record(&self, id: i64) -> anyhow::Result<RunRecord> {
        let text: Option<String> = self.conn.query_row("SELECT run_json FROM runs WHERE id = ?1", [id], |r| r.get(0)).optional()?;
        let text = text.ok_or_else(|| UsageError(format!("{}: no run h:{id} (see 'proofbench history list')", self.path.display())))?;
        parse_record(&text, RUN_SCHEMA, &self.path, None).with_context(|| format!("run h:{id}"))
    }

    /// Rebuilds run `id` from the database alone, as `read_run` reads a directory.
    pub fn load(&self, id: i64) -> anyhow::Result<StoredRun> {
        let run = self.run_record(id)?;
        let dir: String = self.conn.query_row("SELECT dir FROM runs WHERE id = ?1", [id], |r| r.get(0))?;
        let mut q = self.conn.prepare("SELECT row_json FROM rows WHERE run = ?1")?;
        let texts = q.query_map([id], |r| r.get::<_, String>(0))?.collect::<Result<Vec<_>, _>>()?;
        let mut rows: Vec<Row> = texts
            .iter()
            .map(|t| parse_row(t, &self.path, None).with_context(|| format!("a row of run h:{id}")))
            .collect::<anyhow::Result<_>>()?;
        rows.sort_by_key(|r| r.cell.index);
        Ok(StoredRun { dir: PathBuf::from(dir), run, rows, warnings: Vec::new() })
    }

    /// `PRAGMA integrity_check`: `ok` when the file is sound.
    pub fn integrity_check(&self) -> anyhow::Result<String> {
        Ok(self.conn.query_row("PRAGMA integrity_check", [], |r| r.get(0))?)
    }
}

/// The end of `proofbench run`: records the finished run directory in the
/// history database (`db`, else `history.sqlite` beside the run directory).
/// The run is already on the disk: a failure here is a warning, never an error.
pub fn record_after_run(run_dir: &Path, db: Option<&Path>, quiet: bool) {
    let db = db.map(Path::to_path_buf).unwrap_or_else(|| run_dir.parent().unwrap_or(Path::new(".")).join(DB_FILE));
    match Store::open(&db).and_then(|mut s| s.record_dir(run_dir)) {
        Ok(rec) if !quiet => to_stderr(&format!("proofbench: recorded as h:{} in {}\n", rec.id(), db.display())),
        Ok(_) => {}
        Err(e) => to_stderr(&format!(
            "proofbench: warning: the run is kept in {} but was not recorded in {}: {e:#}\n",
            run_dir.display(),
            db.display()
        )),
    }
}

#[cfg(test)]
pub(crate) mod tests;
