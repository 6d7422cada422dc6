//! Which files proofbench opens as its history database, and how.
//!
//! **Whose file.** A proofbench history database says so in its header:
//! `PRAGMA application_id` is [`APPLICATION_ID`], and `PRAGMA user_version`
//! is its schema version (kept equal to `schema_version.version`). A file is
//! taken as proofbench's only when it is empty (new, zero length, or a SQLite
//! database with no schema and neither pragma set) or proofbench's: marked
//! so, or made by a proofbench from before the mark (no `application_id` and
//! `user_version`, and the tables `schema_version`, `runs` and `rows` and no
//! others), which a writer then marks. Anything else is refused (exit 2),
//! and its bytes, its journal mode and its side files (`-wal`, `-shm`) are
//! left as they were. The first look ([`precheck`]) reads the file's
//! first 100 bytes and, when they carry no `application_id`, its schema
//! without a lock or a side file; a writer looks again inside its first
//! transaction ([`identity_of`]), where a log not yet folded into the file
//! is seen too, and a refusal there rolls back and closes without a
//! checkpoint.
//!
//! **Links.** A writer does not follow a symbolic link another user owns
//! (one planted where a run records by default, pointing at someone else's
//! file), and it makes a new database itself with `O_EXCL`, so that a
//! dangling link is never followed to make its target. A link this user
//! owns is followed. Readers follow links: reading through one writes
//! nothing.
//!
//! **Readers** open with `SQLITE_OPEN_READ_ONLY` and never migrate, switch
//! the journal mode or create the schema; see [`ReadMode`] for how they read
//! a database this user cannot write.

use std::fs::{self, OpenOptions};
use std::io::{self, Read};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use anyhow::Context;
use rusqlite::{Connection, OpenFlags};

use crate::model::UsageError;

/// proofbench's `PRAGMA application_id`: `pbhs` in ASCII (proofbench history
/// store). It stays the same across schema versions; `user_version` tells them apart.
pub const APPLICATION_ID: u32 = 0x7062_6873;

/// The tables a proofbench from before [`APPLICATION_ID`] made, all of them
/// (`sqlite_sequence` is SQLite's, for `AUTOINCREMENT`).
const LEGACY_TABLES: [&str; 4] = ["schema_version", "runs", "rows", "sqlite_sequence"];

/// Whose a database is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Identity {
    /// New or without a schema: proofbench may make it its own.
    Empty,
    /// proofbench's.
    Ours,
    /// Another program's, and why that is so.
    Foreign(String),
}

/// Whose a database is, from its `application_id`, its `user_version`, the
/// names of its tables and the number of its schema objects.
pub fn identity(application_id: i64, user_version: i64, tables: &[String], objects: usize) -> Identity {
    if application_id == i64::from(APPLICATION_ID) {
        return Identity::Ours;
    }
    if application_id != 0 {
        return Identity::Foreign(format!("its application_id is {:#010x}, not proofbench's", application_id as u32));
    }
    if objects == 0 && user_version == 0 {
        return Identity::Empty;
    }
    if user_version != 0 {
        return Identity::Foreign(format!("its user_version is {user_version} and it has no application_id"));
    }
    let others: Vec<&str> = tables.iter().map(String::as_str).filter(|t| !LEGACY_TABLES.contains(t)).collect();
    if !others.is_empty() {
        return Identity::Foreign(format!("it holds tables proofbench does not make: {}", names(&others)));
    }
    let missing: Vec<&str> = LEGACY_TABLES[..3].iter().copied().filter(|t| !tables.iter().any(|h| h == t)).collect();
    if missing.is_empty() { Identity::Ours } else { Identity::Foreign(format!("it lacks proofbench's tables {}", names(&missing))) }
}

/// Up to five names, each cut to 40 characters, comma-separated.
fn names(list: &[&str]) -> String {
    let mut shown: Vec<String> = list.iter().take(5).map(|n| n.chars().take(40).collect()).collect();
    if list.len() > 5 {
        shown.push(format!("and {} more", list.len() - 5));
    }
    shown.join(", ")
}

/// The refusal of a file that is not proofbench's: a usage error naming it.
pub fn not_ours(path: &Path, why: &str) -> anyhow::Error {
    UsageError(format!("{}: not a proofbench history database ({why}); it is left as it was", path.display())).into()
}

/// Whose the database on `conn` is, as the connection sees it (the log
/// included): inside a writer's transaction, or on a reader's connection.
pub fn identity_of(conn: &Connection) -> rusqlite::Result<Identity> {
    let application_id: i64 = conn.query_row("PRAGMA application_id", [], |r| r.get(0))?;
    let user_version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    let (tables, objects) = schema_of(conn)?;
    Ok(identity(application_id, user_version, &tables, objects))
}

/// The names of the tables on `conn`, and the number of schema objects.
fn schema_of(conn: &Connection) -> rusqlite::Result<(Vec<String>, usize)> {
    let mut q = conn.prepare("SELECT type, CAST(name AS BLOB) FROM sqlite_schema")?;
    let mut rows = q.query([])?;
    let (mut tables, mut objects) = (Vec::new(), 0);
    while let Some(r) = rows.next()? {
        objects += 1;
        if r.get::<_, String>(0)? == "table" {
            tables.push(String::from_utf8_lossy(&r.get::<_, Vec<u8>>(1)?).into_owned());
        }
    }
    Ok((tables, objects))
}

/// What the first 100 bytes of a file say.
enum Header {
    /// Zero length.
    Empty,
    /// Not a regular file (a directory, a FIFO, a device).
    NotAFile,
    /// Not a SQLite database.
    NotSqlite,
    /// A SQLite database's header fields.
    Sqlite { application_id: i64, user_version: i64 },
}

/// Reads the header of the file at `path`, without waiting on a FIFO or
/// a device (`O_NONBLOCK`) and without writing.
fn header(path: &Path) -> io::Result<Header> {
    let f = OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY).open(path)?;
    if !f.metadata()?.is_file() {
        return Ok(Header::NotAFile);
    }
    let mut head = Vec::with_capacity(100);
    f.take(100).read_to_end(&mut head)?;
    if head.is_empty() {
        return Ok(Header::Empty);
    }
    if head.len() < 100 || !head.starts_with(b"SQLite format 3\0") {
        return Ok(Header::NotSqlite);
    }
    // Big-endian 32-bit fields: user_version at 60, application_id at 68,
    // both signed as the pragmas return them.
    let field = |at: usize| i64::from(i32::from_be_bytes([head[at], head[at + 1], head[at + 2], head[at + 3]]));
    Ok(Header::Sqlite { application_id: field(68), user_version: field(60) })
}

/// A `file:` URI of `path` with `query` (`mode=ro`, `immutable=1`): every
/// byte but letters, digits and `/-._~` percent-encoded, so that no file
/// name reads as a parameter.
fn uri(path: &Path, query: &str) -> String {
    let bytes = path.as_os_str().as_bytes();
    let mut s = String::from(if bytes.first() == Some(&b'/') { "file://" } else { "file:" });
    s.push_str(&crate::text::format::percent_encoded(bytes, b"/"));
    s.push('?');
    s.push_str(query);
    s
}

/// A read-only connection to `path` (`query`: `mode=ro` or `immutable=1`).
fn open_read_only(path: &Path, query: &str) -> rusqlite::Result<Connection> {
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_URI | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    Connection::open_with_flags(uri(path, query), flags)
}

/// The first look at the file at `path` (it exists), touching nothing: its
/// header, and when that carries no `application_id`, its schema read with
/// `immutable=1` (no lock, no side file; a log not yet folded into the file
/// is not seen, which is why a writer looks again).
pub fn precheck(path: &Path) -> anyhow::Result<Identity> {
    let header = header(path).with_context(|| format!("reading {}", path.display()))?;
    let (application_id, user_version) = match header {
        Header::Empty => return Ok(Identity::Empty),
        Header::NotAFile => return Ok(Identity::Foreign("it is not a regular file".into())),
        Header::NotSqlite => return Ok(Identity::Foreign("it is not a SQLite database".into())),
        Header::Sqlite { application_id, user_version } => (application_id, user_version),
    };
    if application_id != 0 {
        return Ok(identity(application_id, user_version, &[], 0));
    }
    // Without a lock, a page may be caught while another process writes it:
    // looked at again a little later before the file is called unreadable.
    let mut tries = 0;
    loop {
        match open_read_only(path, "immutable=1").and_then(|c| schema_of(&c)) {
            Ok((tables, objects)) => return Ok(identity(application_id, user_version, &tables, objects)),
            Err(_) if tries < 3 => {
                tries += 1;
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
            Err(e) => return Ok(Identity::Foreign(format!("SQLite cannot read its schema: {e}"))),
        }
    }
}

/// The effective user id of this process.
fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() }
}

/// Makes `path` ready for a writer to open without creating it: its
/// directory made; a new empty file made there when there is none (with
/// `O_EXCL`, so never through a link); a link another user owns refused;
/// and what is there already checked ([`precheck`]) to be empty or
/// proofbench's. Everything refused is a usage error naming `path`.
pub fn prepare_writer_path(path: &Path) -> anyhow::Result<()> {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        fs::create_dir_all(parent).with_context(|| format!("creating {}", parent.display()))?;
    }
    // Twice at most: another writer may make the file between our look and our making it.
    for _ in 0..2 {
        let meta = match fs::symlink_metadata(path) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => match OpenOptions::new().write(true).create_new(true).mode(0o644).open(path) {
                Ok(_) => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e).with_context(|| format!("creating the history database {}", path.display())),
            },
            Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
            Ok(meta) => meta,
        };
        if meta.file_type().is_symlink() && meta.uid() != euid() {
            return Err(UsageError(format!(
                "{}: a symbolic link owned by another user (uid {}); proofbench does not follow it (name the database itself with --db)",
                path.display(),
                meta.uid()
            ))
            .into());
        }
        return match precheck(path)? {
            Identity::Foreign(why) => Err(not_ours(path, &why)),
            Identity::Empty | Identity::Ours => Ok(()),
        };
    }
    Err(anyhow::anyhow!("{}: made and removed by another process while being opened", path.display()))
}

/// How a reader opens a database; always `SQLITE_OPEN_READ_ONLY`.
///
/// A database in WAL mode is read through its log (`-wal`) and the log's
/// index (`-shm`); SQLite makes both when they are missing, even for a
/// read-only connection, and a read-only connection leaves them behind
/// (the next writer's close removes them). So:
///
/// - [`ReadMode::Shared`] (`mode=ro`): through SQLite's locks and the index,
///   so a writer at work is neither waited for nor read half-done. Used when
///   both side files exist, or when this user may make them: it owns the
///   database, or it is root (SQLite gives what it makes the database
///   owner's uid). Another user's database in a directory this user may
///   write to would otherwise get an index its owner's writers cannot write.
/// - [`ReadMode::Immutable`] (`immutable=1`): the file alone, without locks
///   or side files. Used when there is no log (so the file holds every
///   committed transaction) and `Shared` may not be used, or failed (a
///   read-only directory or mount). A writer that starts during such a read
///   and checkpoints under it can make the read fail as damaged; reading
///   again then reads it whole. On a read-only mount there is no such writer.
/// - A log without an index this user may make is refused, naming it,
///   rather than read without its last transactions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReadMode {
    /// `mode=ro`; `then_immutable`: fall back to `immutable=1` when it fails
    /// and there is no log.
    Shared {
        then_immutable: bool,
    },
    Immutable,
}

/// `path` with `suffix` appended to its file name (`-wal`, `-shm`).
fn side_file(path: &Path, suffix: &str) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(suffix);
    PathBuf::from(s)
}

/// How to read the database at `path` ([`ReadMode`]): from whether its
/// log and index exist and whether this user (`uid`) may make them for a
/// file owned by `owner`.
pub fn read_mode(path: &Path, owner: u32, uid: u32) -> anyhow::Result<ReadMode> {
    let (wal, shm) = (side_file(path, "-wal"), side_file(path, "-shm"));
    let may_make = uid == owner || uid == 0;
    match (wal.exists(), shm.exists() || may_make) {
        (true, true) => Ok(ReadMode::Shared { then_immutable: false }),
        (true, false) => Err(UsageError(format!(
            "{}: its write-ahead log {} has no index ({}) and this user may not make one; a writer must open the database first",
            path.display(),
            wal.display(),
            shm.display()
        ))
        .into()),
        (false, _) if may_make => Ok(ReadMode::Shared { then_immutable: true }),
        (false, _) => Ok(ReadMode::Immutable),
    }
}

/// A reader's connection to the proofbench database at `path` (an existing
/// regular file), or `None` when it is empty (no runs). Another program's
/// database is refused, touching nothing.
pub fn reader(path: &Path) -> anyhow::Result<Option<Connection>> {
    // A schema-less file may yet have its tables in a log: only a file of
    // zero length is empty without opening it.
    match precheck(path)? {
        Identity::Foreign(why) => return Err(not_ours(path, &why)),
        Identity::Empty if fs::metadata(path).is_ok_and(|m| m.len() == 0) => return Ok(None),
        Identity::Empty | Identity::Ours => {}
    }
    // SQLite keeps the side files beside the file a link points at.
    let real = fs::canonicalize(path).with_context(|| format!("reading {}", path.display()))?;
    let owner = fs::metadata(&real).with_context(|| format!("reading {}", path.display()))?.uid();
    let opened = |query: &str| -> rusqlite::Result<(Connection, Identity)> {
        let conn = open_read_only(&real, query)?;
        conn.busy_timeout(super::BUSY_TIMEOUT)?;
        let identity = identity_of(&conn)?;
        Ok((conn, identity))
    };
    let (conn, identity) = match read_mode(&real, owner, euid())? {
        ReadMode::Shared { then_immutable } => match opened("mode=ro") {
            Ok(c) => c,
            Err(_) if then_immutable && !side_file(&real, "-wal").exists() => opened("immutable=1")?,
            Err(e) => return Err(e.into()),
        },
        ReadMode::Immutable => opened("immutable=1")?,
    };
    match identity {
        Identity::Foreign(why) => Err(not_ours(path, &why)),
        Identity::Empty => Ok(None),
        Identity::Ours => Ok(Some(conn)),
    }
}
