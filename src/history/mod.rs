//! history: a SQLite store of runs (`results/history.sqlite` by default).
//!
//! Every `proofbench run` records itself at its end; `history import` records
//! stored run directories. The store keeps each run's run.json and each row's
//! JSON whole, next to the columns that queries need (label, commit, machine,
//! workload, axes, status, median, CI), so `history show`, `history
//! regressions` and `compare h:ID` work without the run directory. It only
//! reads runs; it never measures and never writes into a run directory.
//!
//! Writers and readers are apart: [`Store::open_writer`] (a run recording
//! itself, `history import`) marks the database as proofbench's, migrates an
//! older schema and switches it to WAL; [`Store::open_reader`] (`history
//! list|show|regressions|changes`, `compare`, `check-claims`) opens it read-only
//! and changes nothing, so a database this user cannot write, or on a
//! read-only mount, can be read. Either refuses a file that is not
//! proofbench's, leaving it as it was (see [`access`]).
//!
//! Concurrency: the database is in WAL mode with a busy timeout, and each run
//! is inserted in one immediate transaction, so several runs writing the same
//! database neither corrupt it nor lose a run, and readers read on while a
//! writer holds its lock. A run is identified by what
//! it is written with when it starts (`uid`: its name, start time, host and
//! command line), so recording the same run twice keeps one copy, and a run
//! recorded before it finished is replaced by its finished record.
//!
//! Every value read back is checked: a damaged one (text that is not UTF-8,
//! a record that is not JSON) is an error naming the database, the run and
//! the column.

pub mod access;
pub mod changes;
pub mod floors;
mod migrate;
pub mod regress;
pub mod render;
pub mod trend;

use std::ops::Deref;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context;
use rusqlite::config::DbConfig;
use rusqlite::types::ValueRef;
use rusqlite::{Connection, OpenFlags, OptionalExtension, TransactionBehavior, params};

use crate::envelope::Envelope;
use crate::evidence::read::{parse_record, parse_row};
use crate::evidence::{EvidenceError, RUN_SCHEMA, Row, RunRecord, StoredRun, check_not_running, incomplete_text, read_run};
use crate::model::{Status, UsageError};
use crate::text::out::to_stderr;

/// The database file name, beside the run directories.
pub const DB_FILE: &str = "history.sqlite";

/// The schema version this proofbench writes and reads (`PRAGMA
/// user_version` and `schema_version.version`). Version 2 identifies a run
/// by what it starts with rather than by its whole run.json; a writer brings
/// a database of version 1 to it in place, a reader reads it as it is.
pub const SCHEMA_VERSION: i64 = 2;

/// How long a connection waits for another's lock before giving up (a
/// writer for another writer's transaction; a reader only for the moments a
/// writer folds its log into the file or makes the database).
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
    /// The cells of the run's plan.
    pub cells_planned: i64,
    /// Whether the run has its finish record (run.json `finished_utc`).
    pub finished: bool,
    /// Whether a signal ended it early.
    pub interrupted: bool,
}

impl RunEntry {
    /// The commit shortened to 10 characters, `-` when none.
    pub fn short_commit(&self) -> String {
        self.commit.as_deref().map(|c| c.chars().take(10).collect()).unwrap_or_else(|| "-".into())
    }

    /// How a run that did not run every cell stands: `incomplete: N of M
    /// cells ran` without its finish record (killed, or recorded while it
    /// ran), `interrupted: N of M cells ran` when a signal ended it.
    pub fn state(&self) -> Option<String> {
        let (ran, planned) = (self.rows_total as usize, self.cells_planned as usize);
        incomplete_text(self.finished, ran, planned)
            .or_else(|| (self.interrupted && ran < planned).then(|| format!("interrupted: {ran} of {planned} cells ran")))
    }

    /// `ok/total` rows, and the state of a run that did not run every cell.
    pub fn rows_text(&self) -> String {
        let counts = format!("{}/{}", self.rows_ok, self.rows_total);
        self.state().map_or(counts.clone(), |s| format!("{counts} ({s})"))
    }
}

/// What recording a run did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Recorded {
    /// Inserted under this history id.
    New(i64),
    /// Already held under this history id; nothing changed.
    Existing(i64),
    /// Held under this history id as it was before it finished (or with
    /// fewer rows): replaced by this record, under the same id.
    Replaced(i64),
}

impl Recorded {
    /// The history id in every case.
    pub fn id(self) -> i64 {
        match self {
            Recorded::New(id) | Recorded::Existing(id) | Recorded::Replaced(id) => id,
        }
    }
}

/// An open history database, for reading ([`Store::open_reader`]); a
/// [`Writer`] is one open for recording runs too.
pub struct Store {
    conn: Connection,
    path: PathBuf,
}

/// A history database open for writing ([`Store::open_writer`]): records
/// runs, and reads as a [`Store`] does.
pub struct Writer {
    store: Store,
}

impl Deref for Writer {
    type Target = Store;

    fn deref(&self) -> &Store {
        &self.store
    }
}

/// The identity of a run: a hash of what its run.json holds from the start
/// and never changes (its name, start time, host and command line), so the
/// record of a run before it finished and after are the same run, and
/// reformatting the file changes nothing.
pub fn run_uid(run_json: &str) -> anyhow::Result<String> {
    let v: serde_json::Value = serde_json::from_str(run_json).context("run.json is not JSON")?;
    Ok(uid_of(&v))
}

/// [`run_uid`] of run.json as JSON.
fn uid_of(run: &serde_json::Value) -> String {
    let e = &run["envelope"];
    let key = serde_json::json!([run["id"], run["started_utc"], e["hostname"], e["command_line"]]);
    format!("run-{:016x}", crate::model::file_name::fnv64(key.to_string().as_bytes()))
}

impl Store {
    /// Opens the database at `path` for recording runs, making it when there
    /// is none: only a file that is empty or proofbench's (see [`access`]),
    /// marked as proofbench's (`application_id`, `user_version`), with the
    /// current schema (an older one brought to it), in WAL mode with a busy
    /// timeout. Another program's file is a usage error naming `path`, and
    /// is left as it was.
    pub fn open_writer(path: &Path) -> anyhow::Result<Writer> {
        access::prepare_writer_path(path)?;
        // Not SQLITE_OPEN_CREATE: the file is there, and is not made again
        // through whatever may have taken its place.
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Connection::open_with_flags(path, flags).with_context(|| format!("opening the history database {}", path.display()))?;
        let mut writer = Writer { store: Store { conn, path: path.to_path_buf() } };
        // A refusal names the database already; SQLite's errors do not.
        writer
            .prepare()
            .map_err(|e| if e.is::<UsageError>() { e } else { e.context(format!("preparing the history database {}", path.display())) })?;
        Ok(writer)
    }

    /// Opens the existing database at `path` read-only (`SQLITE_OPEN_READ_ONLY`:
    /// no migration, no journal mode switch, no schema made, nothing waited
    /// for but a writer's brief exclusive moments; see
    /// [`access::ReadMode`] for a database this user cannot write). A missing
    /// file, another program's file or a database of a newer schema is a
    /// usage error naming `path`; one of an older schema is read as it is,
    /// with a note. An empty file reads as a history of no runs.
    pub fn open_reader(path: &Path) -> anyhow::Result<Store> {
        if !path.is_file() {
            return Err(UsageError(format!(
                "--db {}: no history database there (a run records itself in history.sqlite beside its run directory; or use 'proofbench history import DIR')",
                path.display()
            ))
            .into());
        }
        let context = || format!("reading the history database {}", path.display());
        let conn = match access::reader(path) {
            Ok(Some(conn)) => conn,
            // A history no run has written to yet: no runs.
            Ok(None) => {
                let conn = Connection::open_in_memory()?;
                conn.execute_batch(SCHEMA)?;
                conn.execute("INSERT INTO schema_version (version) VALUES (?1)", [SCHEMA_VERSION])?;
                conn
            }
            Err(e) if e.is::<UsageError>() => return Err(e),
            Err(e) => return Err(e.context(context())),
        };
        let store = Store { conn, path: path.to_path_buf() };
        let version = store.schema_version().with_context(context)?;
        if version > SCHEMA_VERSION {
            return Err(newer_schema(path, version));
        }
        if version < SCHEMA_VERSION {
            to_stderr(&format!(
                "proofbench: note: {}: history schema version {version} (an older proofbench's), read as it is: a run recorded \
                 before and after it finished may be listed twice until a writer (a run recording into it, or 'proofbench \
                 history import') brings it to version {SCHEMA_VERSION}\n",
                path.display()
            ));
        }
        Ok(store)
    }

    /// The database's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The schema version: the larger of `user_version` and
    /// `schema_version.version` (a database from before `user_version` was
    /// set has only the table); the current one when neither says.
    fn schema_version(&self) -> rusqlite::Result<i64> {
        schema_version_of(&self.conn)
    }
}

/// [`Store::schema_version`] of the database on `conn`.
fn schema_version_of(conn: &Connection) -> rusqlite::Result<i64> {
    let user_version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    let has_table: bool =
        conn.query_row("SELECT EXISTS (SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'schema_version')", [], |r| r.get(0))?;
    let table: Option<i64> = if has_table { conn.query_row("SELECT MAX(version) FROM schema_version", [], |r| r.get(0))? } else { None };
    Ok(match (user_version, table) {
        (0, None) => SCHEMA_VERSION,
        (u, t) => u.max(t.unwrap_or(0)),
    })
}

/// The refusal of a database of a newer schema than this proofbench's.
fn newer_schema(path: &Path, version: i64) -> anyhow::Error {
    UsageError(format!(
        "{}: history schema version {version} is newer than this proofbench reads ({SCHEMA_VERSION}); use a newer proofbench",
        path.display()
    ))
    .into()
}

impl Writer {
    /// Checks in one immediate transaction that the database is empty or
    /// proofbench's (the log included), marks it, brings its schema to the
    /// current one; then switches it to WAL. Until the check has passed, the
    /// connection closes without a checkpoint, so that a refused database's
    /// log is not folded into its file.
    fn prepare(&mut self) -> anyhow::Result<()> {
        let path = self.store.path.clone();
        let conn = &mut self.store.conn;
        conn.busy_timeout(BUSY_TIMEOUT)?;
        conn.set_db_config(DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, true)?;
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        if let access::Identity::Foreign(why) = access::identity_of(&tx)? {
            return Err(access::not_ours(&path, &why));
        }
        let found = schema_version_of(&tx)?;
        if found > SCHEMA_VERSION {
            return Err(newer_schema(&path, found));
        }
        tx.execute_batch(SCHEMA)?;
        let notes = if found < SCHEMA_VERSION { migrate::from_v1(&tx)? } else { Vec::new() };
        // Each pragma is written only when it changes, so that opening a
        // marked database of the current schema writes nothing.
        for (pragma, value) in [("application_id", i64::from(access::APPLICATION_ID)), ("user_version", SCHEMA_VERSION)] {
            if tx.query_row(&format!("PRAGMA {pragma}"), [], |r| r.get::<_, i64>(0))? != value {
                tx.pragma_update(None, pragma, value)?;
            }
        }
        tx.execute("INSERT OR IGNORE INTO schema_version (version) VALUES (?1)", [SCHEMA_VERSION])?;
        tx.commit()?;
        conn.set_db_config(DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, false)?;
        // Switching to WAL takes a lock of its own; another writer opening the
        // same new file at the same moment can hold it past the busy handler.
        let mut tries = 0;
        while conn.query_row("PRAGMA journal_mode", [], |r| r.get::<_, String>(0))? != "wal" {
            match conn.query_row("PRAGMA journal_mode=WAL", [], |r| r.get::<_, String>(0)) {
                Ok(_) => break,
                Err(rusqlite::Error::SqliteFailure(e, _)) if e.code == rusqlite::ErrorCode::DatabaseBusy && tries < 600 => {
                    tries += 1;
                    std::thread::sleep(Duration::from_millis(100));
                }
                Err(e) => return Err(e.into()),
            }
        }
        conn.execute_batch("PRAGMA foreign_keys=ON; PRAGMA synchronous=NORMAL;")?;
        for n in notes {
            crate::text::out::to_stderr(&format!("proofbench: note: {}: {n}\n", path.display()));
        }
        Ok(())
    }

    /// Records the run directory `dir` (run.json and rows.jsonl). The run
    /// that writes `dir` records itself this way, holding its lock.
    pub fn record_dir(&mut self, dir: &Path) -> anyhow::Result<Recorded> {
        let stored = read_run(dir)?;
        self.record_stored(&stored)
    }

    fn record_stored(&mut self, stored: &StoredRun) -> anyhow::Result<Recorded> {
        let p = stored.dir.join("run.json");
        let text = std::fs::read_to_string(&p).map_err(|e| EvidenceError::io(&p, e))?;
        self.record(stored, &text)
    }

    /// Records a stored run whose run.json text is `run_json`, in one
    /// transaction. A run already held (same uid) is left as it is, unless
    /// the record held is of the run before it finished and this one is
    /// more: then this one replaces it, under the same history id.
    pub fn record(&mut self, stored: &StoredRun, run_json: &str) -> anyhow::Result<Recorded> {
        let tx = self.store.conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let recorded = record_in(&tx, stored, run_json)?;
        tx.commit()?;
        Ok(recorded)
    }

    /// `history import` of a set: records the run directories `dirs` in one
    /// transaction, all or none (a run already held is skipped, as
    /// [`Writer::record`] does). Every directory is read, and refused if its
    /// run is still running, before anything is written. Returns, per
    /// directory, what was done and the warnings of reading it.
    pub fn import_dirs(&mut self, dirs: &[PathBuf]) -> anyhow::Result<Vec<(Recorded, Vec<String>)>> {
        let mut read = Vec::new();
        for dir in dirs {
            check_not_running(dir)?;
            let stored = read_run(dir)?;
            let p = stored.dir.join("run.json");
            let text = std::fs::read_to_string(&p).map_err(|e| EvidenceError::io(&p, e))?;
            read.push((stored, text));
        }
        let tx = self.store.conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let mut out = Vec::new();
        for (stored, text) in read {
            let recorded = record_in(&tx, &stored, &text).with_context(|| format!("recording {}", stored.dir.display()))?;
            out.push((recorded, stored.warnings));
        }
        tx.commit()?;
        Ok(out)
    }
}

/// [`Writer::record`] inside the transaction `tx` (which the caller commits).
fn record_in(tx: &rusqlite::Transaction<'_>, stored: &StoredRun, run_json: &str) -> anyhow::Result<Recorded> {
    let uid = run_uid(run_json)?;
    let run = &stored.run;
    let held: Option<(i64, bool, i64)> = tx
        .query_row("SELECT id, finished_utc IS NOT NULL, rows_total FROM runs WHERE uid = ?1", [&uid], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })
        .optional()?;
    let replaces = match held {
        Some((id, finished, rows)) if !finished && (run.finished_utc.is_some() || stored.rows.len() as i64 > rows) => {
            tx.execute("DELETE FROM rows WHERE run = ?1", [id])?;
            tx.execute("DELETE FROM runs WHERE id = ?1", [id])?;
            Some(id)
        }
        Some((id, _, _)) => return Ok(Recorded::Existing(id)),
        None => None,
    };
    let dir = std::fs::canonicalize(&stored.dir).unwrap_or_else(|_| stored.dir.clone());
    let ok = stored.rows.iter().filter(|r| r.status == Status::Ok).count();
    tx.execute(
        "INSERT INTO runs (id, uid, name, dir, started_utc, finished_utc, label, git_commit, machine, profile, tool_version,
                tool_commit, rows_total, rows_ok, complete, recorded_utc, run_json)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17)",
        params![
            replaces,
            uid,
            run.id,
            dir.display().to_string(),
            run.started_utc,
            run.finished_utc,
            run.label,
            run.commit,
            run.envelope.machine_name(),
            run.profile.as_str(),
            run.envelope.tool.version,
            run.envelope.tool.git_commit,
            stored.rows.len() as i64,
            ok as i64,
            run.complete,
            crate::measure::clock::utc_now(),
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
                row.axes_text(),
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
    Ok(if replaces.is_some() { Recorded::Replaced(id) } else { Recorded::New(id) })
}

impl Store {
    /// A damaged value of run `run` in `column` (`runs.run_json`): an input
    /// error naming the database, the run and the column.
    pub(crate) fn damaged(&self, run: i64, column: &str, why: String) -> EvidenceError {
        EvidenceError::Parse { path: self.path.clone(), line: None, why: format!("run h:{run}, {column}: {why}") }
    }

    /// A record in `column` of run `run` that does not parse, placed.
    fn bad_record(&self, run: i64, column: &str, e: EvidenceError) -> EvidenceError {
        let why = match e {
            EvidenceError::Parse { why, .. } => why,
            EvidenceError::NewerSchema { found, supported, .. } => {
                format!("record schema {found} is newer than this proofbench reads ({supported}); use a newer proofbench")
            }
            other => other.to_string(),
        };
        self.damaged(run, column, why)
    }

    /// The text in column `idx` of `r` (a value of run `run`, in `column`),
    /// `None` for NULL; anything else than UTF-8 text is damage.
    pub(crate) fn opt_text(&self, r: &rusqlite::Row<'_>, idx: usize, run: i64, column: &str) -> anyhow::Result<Option<String>> {
        let bytes = match r.get_ref(idx)? {
            ValueRef::Null => return Ok(None),
            ValueRef::Text(b) | ValueRef::Blob(b) => b,
            v => return Err(self.damaged(run, column, format!("{} where text belongs", v.data_type())).into()),
        };
        match std::str::from_utf8(bytes) {
            Ok(t) => Ok(Some(t.to_string())),
            Err(e) => Err(self.damaged(run, column, format!("not UTF-8 ({e})")).into()),
        }
    }

    /// [`Store::opt_text`] of a column that is never NULL.
    pub(crate) fn text(&self, r: &rusqlite::Row<'_>, idx: usize, run: i64, column: &str) -> anyhow::Result<String> {
        self.opt_text(r, idx, run, column)?.ok_or_else(|| self.damaged(run, column, "NULL where text belongs".into()).into())
    }

    fn entry(&self, r: &rusqlite::Row<'_>) -> anyhow::Result<RunEntry> {
        let id: i64 = r.get(0)?;
        if r.get::<_, i64>(11)? == 0 {
            return Err(self.damaged(id, "runs.run_json", "not JSON".into()).into());
        }
        Ok(RunEntry {
            id,
            name: self.text(r, 1, id, "runs.name")?,
            dir: self.text(r, 2, id, "runs.dir")?,
            started_utc: self.text(r, 3, id, "runs.started_utc")?,
            label: self.text(r, 4, id, "runs.label")?,
            commit: self.opt_text(r, 5, id, "runs.git_commit")?,
            machine: self.text(r, 6, id, "runs.machine")?,
            profile: self.text(r, 7, id, "runs.profile")?,
            rows_total: r.get(8)?,
            rows_ok: r.get(9)?,
            finished: r.get(10)?,
            kind: self.text(r, 12, id, "runs.run_json")?,
            cells_planned: r.get::<_, Option<i64>>(13)?.unwrap_or(0),
            interrupted: r.get::<_, Option<bool>>(14)?.unwrap_or(false),
        })
    }

    const ENTRY_COLUMNS: &'static str = "id, name, dir, started_utc, label, git_commit, machine, profile, rows_total, rows_ok, \
         finished_utc IS NOT NULL, json_valid(run_json), \
         CASE WHEN json_valid(run_json) THEN COALESCE(json_extract(run_json, '$.kind'), 'run') END, \
         CASE WHEN json_valid(run_json) THEN json_array_length(run_json, '$.plan') END, \
         CASE WHEN json_valid(run_json) THEN json_extract(run_json, '$.interrupted') END";

    /// The runs `sql` (`SELECT` of [`Store::ENTRY_COLUMNS`]) selects.
    fn entries(&self, sql: &str, args: impl rusqlite::Params) -> anyhow::Result<Vec<RunEntry>> {
        let mut q = self.conn.prepare(sql)?;
        let mut rows = q.query(args)?;
        let mut v = Vec::new();
        while let Some(r) = rows.next()? {
            v.push(self.entry(r)?);
        }
        Ok(v)
    }

    /// Every run, oldest first (by start time, then id).
    pub fn runs(&self) -> anyhow::Result<Vec<RunEntry>> {
        self.entries(&format!("SELECT {} FROM runs ORDER BY started_utc, id", Store::ENTRY_COLUMNS), [])
    }

    /// The run with history id `id`, if held.
    pub fn run(&self, id: i64) -> anyhow::Result<Option<RunEntry>> {
        Ok(self.entries(&format!("SELECT {} FROM runs WHERE id = ?1", Store::ENTRY_COLUMNS), [id])?.pop())
    }

    /// The distinct workload ids of every stored row.
    pub fn workloads(&self) -> anyhow::Result<Vec<String>> {
        let mut q = self.conn.prepare("SELECT workload, MIN(run) FROM rows GROUP BY workload ORDER BY workload")?;
        let mut rows = q.query([])?;
        let mut v = Vec::new();
        while let Some(r) = rows.next()? {
            v.push(self.text(r, 0, r.get(1)?, "rows.workload")?);
        }
        Ok(v)
    }

    /// The rows `sql` selects as (run, row_id, row_json), parsed.
    fn parsed_rows(&self, sql: &str, args: impl rusqlite::Params) -> anyhow::Result<Vec<(i64, Row)>> {
        let mut v = Vec::new();
        self.each_parsed_row(sql, args, |run, row| {
            v.push((run, row));
            Ok(())
        })?;
        Ok(v)
    }

    /// Each row `sql` selects as (run, row_id, row_json), parsed and handed
    /// to `f` one at a time, so that a caller that keeps less than the whole
    /// row never holds them all.
    fn each_parsed_row(
        &self,
        sql: &str,
        args: impl rusqlite::Params,
        mut f: impl FnMut(i64, Row) -> anyhow::Result<()>,
    ) -> anyhow::Result<()> {
        let mut q = self.conn.prepare(sql)?;
        let mut rows = q.query(args)?;
        while let Some(r) = rows.next()? {
            let run: i64 = r.get(0)?;
            let row_id = self.text(r, 1, run, "rows.row_id")?;
            let column = format!("rows.row_json of {row_id}");
            let text = self.text(r, 2, run, &column)?;
            f(run, parse_row(&text, &self.path, None).map_err(|e| self.bad_record(run, &column, e))?)?;
        }
        Ok(())
    }

    /// Every stored row of `workload`, with the history id of its run, by
    /// run and row id. (Sorted here, not by SQLite: its sorter would carry
    /// every row's whole JSON through temporary files.)
    pub fn rows_of(&self, workload: &str) -> anyhow::Result<Vec<(i64, Row)>> {
        let mut v = self.parsed_rows("SELECT run, row_id, row_json FROM rows WHERE workload = ?1", [workload])?;
        v.sort_by(|(a, x), (b, y)| (a, x.id()).cmp(&(b, y.id())));
        Ok(v)
    }

    /// Each stored row of `workload` with the history id of its run, handed
    /// to `f` in no set order (as [`Store::rows_of`] without holding them).
    pub fn each_row_of(&self, workload: &str, f: impl FnMut(i64, Row) -> anyhow::Result<()>) -> anyhow::Result<()> {
        self.each_parsed_row("SELECT run, row_id, row_json FROM rows WHERE workload = ?1", [workload], f)
    }

    /// The envelope (from run.json) of run `id`.
    pub fn envelope(&self, id: i64) -> anyhow::Result<Envelope> {
        Ok(self.run_record(id)?.envelope)
    }

    fn run_record(&self, id: i64) -> anyhow::Result<RunRecord> {
        let mut q = self.conn.prepare("SELECT run_json FROM runs WHERE id = ?1")?;
        let mut rows = q.query([id])?;
        let Some(r) = rows.next()? else {
            return Err(UsageError(format!("{}: no run h:{id} (see 'proofbench history list')", self.path.display())).into());
        };
        let text = self.text(r, 0, id, "runs.run_json")?;
        Ok(parse_record(&text, RUN_SCHEMA, &self.path, None).map_err(|e| self.bad_record(id, "runs.run_json", e))?)
    }

    /// Rebuilds run `id` from the database alone, as `read_run` reads a directory.
    pub fn load(&self, id: i64) -> anyhow::Result<StoredRun> {
        let run = self.run_record(id)?;
        let dir =
            self.conn.query_row("SELECT dir FROM runs WHERE id = ?1", [id], |r| Ok(self.text(r, 0, id, "runs.dir")))?.map(PathBuf::from)?;
        let mut rows: Vec<Row> =
            self.parsed_rows("SELECT run, row_id, row_json FROM rows WHERE run = ?1", [id])?.into_iter().map(|(_, r)| r).collect();
        rows.sort_by_key(|r| r.cell.index);
        Ok(StoredRun { dir, run, rows, warnings: Vec::new() })
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
    match Store::open_writer(&db).and_then(|mut s| s.record_dir(run_dir)) {
        Ok(Recorded::Replaced(id)) if !quiet => {
            to_stderr(&format!("proofbench: recorded as h:{id} in {} (replacing its record made before it finished)\n", db.display()))
        }
        Ok(rec) if !quiet => to_stderr(&format!("proofbench: recorded as h:{} in {}\n", rec.id(), db.display())),
        Ok(_) => {}
        // A refusal names the database and says why.
        Err(e) if e.is::<UsageError>() => {
            to_stderr(&format!("proofbench: warning: the run is kept in {} but was not recorded: {e:#}\n", run_dir.display()))
        }
        Err(e) => to_stderr(&format!(
            "proofbench: warning: the run is kept in {} but was not recorded in {}: {e:#}\n",
            run_dir.display(),
            db.display()
        )),
    }
}

#[cfg(test)]
pub(crate) mod tests;
#[cfg(test)]
mod tests_trend;
